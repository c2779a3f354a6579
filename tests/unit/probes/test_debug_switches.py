"""The debugging switches the probes record, on the real torch APIs: set_detect_anomaly(True),
`with detect_anomaly():` and CUDA_LAUNCH_BLOCKING (probes/debug_switches.py), and what the
analysis and the rules make of them (analysis/debug.py, rules/compute/debug.py)."""

from __future__ import annotations

import types

import pytest
import torch
from factories import evidence
from recorders import ListRecorder

from gpubottle import vocabulary as v
from gpubottle.analysis.debug import debug_settings
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import CudaMemoryEvidence, DebugSetting
from gpubottle.probes.debug_switches import install_debug_switches
from gpubottle.rules import diagnose
from gpubottle.wire import DebugSwitch, End


def test_both_anomaly_apis_are_recorded_at_the_users_line(monkeypatch: pytest.MonkeyPatch):
    rec, status = ListRecorder(), {}
    # A stand-in module with torch's own function: the wrapper goes on it, not on torch itself.
    fake = types.SimpleNamespace(set_anomaly_enabled=torch.set_anomaly_enabled)
    monkeypatch.setattr(torch, "set_anomaly_enabled", torch.set_anomaly_enabled)
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    install_debug_switches(rec, fake, status)  # type: ignore[arg-type]
    monkeypatch.setattr(torch, "set_anomaly_enabled", fake.set_anomaly_enabled)
    try:
        torch.autograd.set_detect_anomaly(True); line = _line("set_detect_anomaly(True); line")  # noqa: E702
        torch.autograd.set_detect_anomaly(False)
        with torch.autograd.detect_anomaly():
            assert torch.is_anomaly_enabled()
    finally:
        torch.set_anomaly_enabled(False)
    assert status == {"debug-switches": None}
    launch, on, off, enter, leave, *_ = rec.records
    assert launch.name == v.DEBUG_LAUNCH_BLOCKING and launch.site == "the environment"
    assert on.name == v.DEBUG_ANOMALY and on.on and on.site.endswith(f"test_debug_switches.py:{line}")
    assert not off.on and enter.on and not leave.on


def _line(text: str) -> int:
    return next(i for i, s in enumerate(open(__file__).read().splitlines(), 1) if text in s)


def test_the_share_of_the_measured_steps_a_switch_was_on():
    ev = ChildEvents()
    for rec in (DebugSwitch(v.DEBUG_ANOMALY, True, 10.0, "train.py:5"),
                DebugSwitch(v.DEBUG_ANOMALY, False, 15.0, "train.py:9"),
                DebugSwitch(v.DEBUG_LAUNCH_BLOCKING, True, 1.0, "the environment"),
                End("completed", None, 30.0)):
        ev.add(rec)
    got = {d.name: d for d in debug_settings(ev, 10.0, 20.0)}
    assert got[v.DEBUG_ANOMALY] == DebugSetting(v.DEBUG_ANOMALY, "train.py:5", 0.5)
    assert got[v.DEBUG_LAUNCH_BLOCKING].on_share == 1.0
    assert debug_settings(ev, 16.0, 20.0)[0].name == v.DEBUG_LAUNCH_BLOCKING  # anomaly off by then
    assert [d.name for d in debug_settings(ev, None, None)] == [v.DEBUG_LAUNCH_BLOCKING, v.DEBUG_ANOMALY]


def test_a_switch_left_on_is_said_and_comes_before_faster_math():
    ev = evidence(step_s=0.1, wait_s=0.0, cores=2.0, tree=1.0, main=1.0)
    ev.debug = [DebugSetting(v.DEBUG_ANOMALY, "train.py:5", 1.0),
                DebugSetting(v.DEBUG_LAUNCH_BLOCKING, "the environment", 1.0)]
    r = diagnose(ev)
    [f] = [f for f in r.findings if f.category == v.DEBUG_MODE]  # no CUDA here: no launch blocking
    assert f.summary.startswith("anomaly detection is on (train.py:5) for 100% of the measured steps")
    assert f.fixes[0].where == "train.py:5" and f.fixes[0].expected_step_s is None
    compute = next(x for x in r.findings if x.category == v.COMPUTE_BOUND)
    assert compute.fixes[0].text.startswith("first turn off anomaly detection")
    # With CUDA in use, CUDA_LAUNCH_BLOCKING is said too, with no line to point at.
    ev.cuda_memory = CudaMemoryEvidence()
    found = [f for f in diagnose(ev).findings if f.category == v.DEBUG_MODE]
    assert [f.fixes[0].where for f in found] == ["train.py:5", None]
    # On for a moment only (a debugging block around one step): not said.
    ev.debug = [DebugSetting(v.DEBUG_ANOMALY, "train.py:5", 0.1)]
    assert not [f for f in diagnose(ev).findings if f.category == v.DEBUG_MODE]
