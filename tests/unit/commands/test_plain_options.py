"""Option values taken without pydantic (gpubottle/plain_options.py) are the values typer's own
coercion gives, for every parameter of every command, well-formed, malformed and default; and a
command line parsed that way never imports pydantic."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any, List

import pytest
import typer.main
from typer import _coercion, core

from gpubottle import plain_options
from gpubottle.cli import app

INPUTS: dict[Any, list[Any]] = {
    int: ["3", "-2", "+7", "007", " 5", "5 ", "3.0", "1_000", "abc", "", "1e3", 5, 0],
    float: ["1", "2.5", "-1e3", ".5", "5.", "nan", "inf", "-1e400", "1_0.5", "x", "", " 2", 10, 2.5],
    str: ["x", "", "-o", "a b", "é"],
    bool: [True, False],
}
LISTS: list[Any] = [["a", "-b"], ("x",), []]


def _params() -> list[core._TyperParameter]:
    root = typer.main.get_command(app)
    out = []
    for cmd in [root, *getattr(root, "commands", {}).values()]:
        out += [p for p in cmd.params if isinstance(p, core._TyperParameter)]
    return out


def _outcome(runtime: Any, param: Any, value: Any) -> tuple[str, Any]:
    try:
        got = runtime.coerce(value, param=param, ctx=None)
    except Exception as exc:  # typer's BadParameter: the same kind either way
        return "error", type(exc).__name__
    if isinstance(got, float) and math.isnan(got):
        return "nan", None
    return type(got).__name__, got


def test_every_parameter_takes_the_value_typer_would_give():
    assert plain_options.install()
    checked = 0
    for param in _params():
        desc = param.type_descriptor
        ann = desc.annotation
        ours = param.get_runtime_param()
        theirs = _coercion.build_runtime_param(desc)  # typer's own, through pydantic
        values = INPUTS.get(ann) or (LISTS if ann in (List[str], list[str]) else [])
        assert values, f"{param.name}: {ann!r} has no inputs here; add them"
        for value in [*values, None]:
            assert _outcome(ours, param, value) == _outcome(theirs, param, value), (param.name, value)
            checked += 1
        assert type(ours).__name__ == "PlainRuntimeParam", (param.name, ann)
    assert checked > 300


def test_a_malformed_value_gets_typers_own_message(capsys: pytest.CaptureFixture[str]):
    from gpubottle.cli import main

    assert main(["run", "--steps", "abc", "x.py"]) == 2
    assert "Invalid value for '--steps'" in capsys.readouterr().err


def test_only_plain_annotations_are_taken():
    from typing import Literal, Optional, Union

    info = typer.models.OptionInfo()
    assert plain_options.converter(int, info) is not None
    assert plain_options.converter(List[str], info) is not None
    for ann in (Optional[int], Union[int, str], Literal["a"], List[int], tuple, bytes):
        assert plain_options.converter(ann, info) is None, ann
    parsed = typer.models.OptionInfo(parser=int)
    assert plain_options.converter(int, parsed) is None  # the option's own parser: typer's way


def test_a_command_line_never_imports_pydantic(tmp_path):
    code = ("import sys; from gpubottle.cli import main; "
            f"main(['run', '--steps', '3', '--duration', '2.5', '--out', {str(tmp_path)!r}, "
            "'missing.py', '--lr', '1']); "
            "main(['report', '--format', 'json', 'missing.json']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
