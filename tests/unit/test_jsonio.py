"""The run's JSON files read back as the json module wrote them, whichever encoder wrote them."""

from __future__ import annotations

import io
import json
import math

import pytest

from gpubottle import jsonio


@pytest.mark.parametrize("indent", [None, 1])
def test_what_is_written_reads_back_the_same(indent):
    data = {"steps": [0.001, 1e-7, 12345.678, 3], "name": "gpubottle", "nested": {"a": [True, None]},
            "t": (1, 2), "empty": {}}
    out = jsonio.dumps(data, indent)
    assert json.loads(out) == json.loads(json.dumps(data))
    # the same layout (floats may differ in form only: msgspec's 1e-7 is json's 1e-07)
    assert len(out.splitlines()) == len(json.dumps(data, indent=indent).splitlines())


def test_non_ascii_text_is_escaped_as_the_json_module_does():
    data = {"where": "train_µ.py:3", "sign": "≥"}
    assert jsonio.dumps(data).isascii() and json.loads(jsonio.dumps(data)) == data
    buf = io.StringIO()
    jsonio.write(buf, data, indent=1)
    assert buf.getvalue() == json.dumps(data, indent=1)


def test_what_msgspec_refuses_the_json_module_writes():
    data = {1: "an int key", "x": float("nan")}
    back = json.loads(jsonio.dumps(data))
    assert back["1"] == "an int key" and (back["x"] is None or math.isnan(back["x"]))
