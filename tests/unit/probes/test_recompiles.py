"""probes/recompiles.py: dynamo's own record of failed guards (code object -> reasons), read at
the script's end; the run itself is untouched."""

from __future__ import annotations

import sys
import types

from recorders import ListRecorder

from gpubottle.probes import recompiles
from gpubottle.wire import Recompiles


def forward(x):  # (a compiled function's code object, as dynamo keys it)
    return x


def loss_fn(x):
    return x


def test_each_function_compiled_again_is_recorded_most_recompiled_first(monkeypatch) -> None:
    failures = {forward.__code__: ["0/0: tensor 'x' size mismatch at index 1. expected 16, actual 24",
                                   "tensor 'x' size mismatch at index 1. expected 24, actual 40"],
                loss_fn.__code__: ["L['w'] == 3"], (lambda: 0).__code__: []}
    got = recompiles.recompiled(failures)
    assert [f[0] for f in got] == ["forward", "loss_fn"] and [f[2] for f in got] == [2, 1]
    assert got[0][1].endswith(f"test_recompiles.py:{forward.__code__.co_firstlineno}")
    assert got[0][3].startswith("tensor 'x' size mismatch at index 1")
    # At the script's end, from torch._dynamo.utils where it was imported; nothing where not.
    rec = ListRecorder()
    probe = recompiles.RecompileProbe(rec)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", types.SimpleNamespace(guard_failures={}))
    probe.finish(None)
    assert rec.records == []
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", types.SimpleNamespace(guard_failures=failures))
    probe.finish(None)
    [r] = rec.records
    assert isinstance(r, Recompiles) and r.functions == got
    assert probe.on_step(1) == recompiles.NEVER
