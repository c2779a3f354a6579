"""The faster-math settings a script already uses, on the real torch APIs (probes/math_modes.py),
and compute-bound's fix, which then offers only what is not in use (rules/compute/words.py)."""

from __future__ import annotations

import types

import pytest
import torch
from factories import evidence
from recorders import ListRecorder

from gpubottle.evidence import MathInUse
from gpubottle.probes.math_modes import install_math_modes
from gpubottle.rules import diagnose
from gpubottle.wire import MathMode


def test_autocast_is_recorded_once_per_device_and_dtype_and_compile_at_each_call(
        monkeypatch: pytest.MonkeyPatch):
    cls = torch.amp.autocast_mode.autocast
    monkeypatch.setattr(cls, "__init__", cls.__init__)
    # torch.compile itself, on a stand-in module: the real one imports the compiler stack (~4 s).
    stand_in = types.SimpleNamespace(amp=torch.amp, compile=lambda model, **kw: model)
    rec, status = ListRecorder(), {}
    install_math_modes(rec, stand_in, status)
    assert status == {"math-modes": None}
    for _ in range(3):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            pass
    with torch.autocast("cpu", enabled=False):  # off: nothing in use
        pass
    with pytest.warns(FutureWarning), torch.cpu.amp.autocast(dtype=torch.float16):  # the older spelling
        pass
    layer = torch.nn.Linear(2, 2)
    assert stand_in.compile(layer, mode="reduce-overhead") is layer
    got = [(r.kind, r.detail) for r in rec.records if isinstance(r, MathMode)]
    assert got == [("autocast", "cpu bfloat16"), ("autocast", "cpu float16"),
                   ("torch.compile", "reduce-overhead")]
    assert all(r.site and "test_math_modes.py" in r.site for r in rec.records)


def test_compute_bound_offers_only_the_faster_math_not_in_use():
    ev = evidence(step_s=0.1, wait_s=0.0005, wait_cpu_s=0.0005, main=1.9, tree=1.9, cores=2,
                  torch_threads=2)
    assert ev.cpu is not None
    ev.cpu.bf16 = True
    ev.math_in_use = [MathInUse("autocast", "cpu bfloat16", "train.py:7")]
    fix = diagnose(ev).findings[0].fixes[-1].text
    assert fix == ("run the math faster: torch.compile(model) (compiling adds 15-20 s at the start for "
                   "a small MLP on a test machine, a few on later runs from its cache: it pays off "
                   "over long runs), or a GPU; already in use: autocast to bfloat16 at train.py:7")
    ev.math_in_use.append(MathInUse("torch.compile", "", "train.py:5"))
    fix = diagnose(ev).findings[0].fixes[-1].text
    assert fix == ("run the math faster: a GPU; already in use: torch.compile at train.py:5 and "
                   "autocast to bfloat16 at train.py:7")
    ev.math_in_use = [MathInUse("autocast", "cuda float16", "train.py:7")]  # not the CPU's math
    assert "bfloat16 autocast (torch.autocast('cpu'" in diagnose(ev).findings[0].fixes[-1].text


def test_float16_autocast_on_a_cpu_without_float16_is_the_first_fix():
    ev = evidence(step_s=0.1, wait_s=0.0005, wait_cpu_s=0.0005, main=1.9, tree=1.9, cores=2,
                  torch_threads=2)
    assert ev.cpu is not None
    ev.cpu.bf16, ev.cpu.fp16 = True, False
    ev.math_in_use = [MathInUse("autocast", "cpu float16", "train.py:7")]
    found = diagnose(ev).findings
    f = found[0]
    assert f.category == "compute-bound" and "in float16" in f.summary
    assert f.fixes[0].where == "train.py:7" and "emulated-math, below" in f.fixes[0].text
    [e] = [x for x in found if x.category == "emulated-math"]
    assert e.fixes[0].where == "train.py:7" and "no float16 instructions" in e.fixes[0].text
    # Said from the setting alone: a run too short for step statistics still hears it.
    ev.steps.durations_s = ev.steps.durations_s[:2]
    assert any(x.category == "emulated-math" for x in diagnose(ev).findings)
    ev = evidence(step_s=0.1, wait_s=0.0005, wait_cpu_s=0.0005, main=1.9, tree=1.9, cores=2,
                  torch_threads=2)
    assert ev.cpu is not None
    ev.cpu.bf16, ev.cpu.fp16 = True, None  # the CPU does not say (Arm): as before, in use
    ev.math_in_use = [MathInUse("autocast", "cpu float16", "train.py:7")]
    found = diagnose(ev).findings
    assert "already in use: autocast to float16" in found[0].fixes[-1].text
    assert not any(x.category == "emulated-math" for x in found)
    ev.cpu.fp16, ev.math_in_use, ev.params_dtype = False, [], "float16"  # model.half()
    [e] = [x for x in diagnose(ev).findings if x.category == "emulated-math"]
    assert e.fixes[0].text.startswith("the model's parameters are float16")
