"""The device-clock probe against a stand-in for torch.cuda's events: marks resolve without
waiting, only at the script's end is the device waited for (with the anchor mark), a CUDA graph
being captured gets no event, and any error turns the probe off and says so."""

from __future__ import annotations

import time
from typing import Any

import pytest
import torch
from recorders import ListRecorder

from gpubottle.probes.device_clock import DeviceClock
from gpubottle.wire import DeviceMarks, ProbeFailed


class _Device:
    """Events complete when `done` says; each knows its device time."""

    def __init__(self) -> None:
        self.clock = 0.0
        self.done = 0  # events completed so far, in record order
        self.recorded = 0
        self.synchronized = 0
        self.capturing = False
        self.broken = False

    def event_class(self) -> type:
        dev = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.n = -1

            def record(self) -> None:
                if dev.broken:
                    raise RuntimeError("CUDA error: an illegal memory access was encountered")
                dev.recorded += 1
                self.n = dev.recorded
                self.t = dev.clock

            def query(self) -> bool:
                return self.n <= dev.done

            def synchronize(self) -> None:
                dev.synchronized += 1
                dev.done = max(dev.done, self.n)

            def elapsed_time(self, end: Any) -> float:
                return (end.t - self.t) * 1000.0

        return Event


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> _Device:
    dev = _Device()
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: dev.capturing)
    monkeypatch.setattr(torch.cuda, "Event", dev.event_class())
    return dev


def _marks(rec: ListRecorder) -> list[list[Any]]:
    return [m for r in rec.records if isinstance(r, DeviceMarks) for m in r.marks]


def test_marks_resolve_as_the_device_gets_there_and_the_end_waits_once(device: _Device):
    rec = ListRecorder()
    clock = DeviceClock(rec)
    for step in range(1, 6):
        device.clock = 0.01 * step
        clock.fetch(True)
        clock.fetch(False)
        clock.on_step(step)
    assert device.synchronized == 0  # never waited for during the run
    device.done = 4  # the device has run the work before the 4th mark
    clock.on_step(6)
    clock.finish(None)
    marks = _marks(rec)
    assert device.synchronized >= 1
    assert [m[0] for m in marks[:4]] == ["a", "b", "s", "a"] and marks[-1][0] == "z"
    assert len(marks) == device.recorded
    assert all(len(m) == 4 for m in marks)


def test_no_event_while_a_cuda_graph_is_captured(device: _Device):
    clock = DeviceClock(ListRecorder())
    device.capturing = True
    clock.on_step(1)
    assert device.recorded == 0


def test_an_error_turns_it_off_and_says_so(device: _Device):
    rec = ListRecorder()
    clock = DeviceClock(rec)
    clock.on_step(1)
    device.broken = True
    clock.on_step(2)
    clock.on_step(3)
    failed = [r for r in rec.records if isinstance(r, ProbeFailed)]
    assert len(failed) == 1 and failed[0].probe == "device-clock" and "illegal memory" in failed[0].reason
    assert clock.on is False


def test_a_script_that_died_of_a_cuda_error_is_not_waited_for(device: _Device):
    clock = DeviceClock(ListRecorder())
    clock.on_step(1)
    clock.on_step(2)
    clock.finish(RuntimeError("CUDA error: device-side assert triggered"))
    assert device.synchronized == 0


def test_without_cuda_nothing_is_recorded(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    rec = ListRecorder()
    clock = DeviceClock(rec)
    clock.on_step(1)
    clock.finish(None)
    assert rec.records == []


def test_a_boundary_is_marked_on_the_device_before_any_heavier_probe_runs(tmp_path):
    """A leak census or the profiler window at a step boundary leaves the GPU idle while it runs;
    recorded after them, the device's mark would put that idle time into the step before (a
    measured step, read as a pause of the user's) instead of the instrumented one after."""
    from gpubottle.launch.session import step_probes
    from gpubottle.options import ChildConfig, WindowConfig
    from gpubottle.probes.recorder import Recorder

    cfg = ChildConfig(events=str(tmp_path / "events.jsonl"), census_request=str(tmp_path / "census"),
                      window=WindowConfig(start=5, steps=3, path=str(tmp_path / "trace.json")))
    recorder = Recorder(cfg.events, 1.0)
    try:
        hooks = step_probes(recorder, cfg)
    finally:
        recorder.close()  # its flushing thread would outlive the test
    assert [type(p).__name__ for p in hooks.probes] == ["DeviceClock", "LeakProbe", "CudaProbe",
                                                        "ModelCallCounter", "ZeroGradWindow",
                                                        "SubnormalProbe", "CheckpointProbe",
                                                        "RecompileProbe"]


class _Time:
    """A fake clock for the probe's own timing: a mark costs what the stand-in's record charges."""

    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


def _costly(device: _Device, clock: _Time, cost_s: float, behind_s: float) -> None:
    """Each record takes `cost_s` of the host's time; the device finishes the work queued before it
    `behind_s` after the host recorded it (but the first: the device is idle as the run begins)."""
    cls = torch.cuda.Event
    record = cls.record

    def timed(self: Any) -> None:
        device.clock = clock.now + (behind_s if device.recorded else 0.0)
        record(self)
        clock.now += cost_s

    cls.record = timed  # type: ignore[method-assign]


def _run_steps(monkeypatch: pytest.MonkeyPatch, device: _Device, behind_s: float, steps: int = 3000,
               step_s: float = 0.0025, cost_s: float = 45e-6) -> tuple[DeviceClock, list[list[Any]], _Time]:
    from gpubottle.probes import device_clock

    fake = _Time()
    monkeypatch.setattr(device_clock, "time", fake)
    _costly(device, fake, cost_s, behind_s)
    rec = ListRecorder()
    clock = DeviceClock(rec)
    for step in range(1, steps + 1):
        clock.fetch(True)
        clock.fetch(False)
        fake.now += step_s
        device.done = device.recorded  # the device keeps up: what was queued has run
        clock.on_step(step)
    clock.finish(None)
    return clock, _marks(rec), fake


def test_costly_marks_keep_to_the_budget_and_each_seen_step_is_whole(monkeypatch, device: _Device):
    """The H200 VM's 45-us event records on a 2.5-ms launch-bound loop: the clock's own time stays
    within its budget of the run, the steps it leaves unseen are spread over the run, and each step
    it does see has both ends and its fetch marked."""
    from gpubottle.analysis.device_clock import device_steps
    from gpubottle.clock import device_covers
    from gpubottle.probes.device_clock import BUDGET, GRACE_S

    clock, marks, fake = _run_steps(monkeypatch, device, behind_s=0.0)
    elapsed = fake.now - 100.0  # the steps and the marks' own time
    assert clock.spent_s <= GRACE_S + BUDGET * elapsed + 4 * 45e-6  # a seen step's marks at most over
    assert clock.skipped > 1500 and clock.seen + clock.skipped >= 2999  # most steps left unseen
    dev = device_steps(marks, 3000)
    assert dev is not None
    seen = [i for i, d in enumerate(dev.durations_s) if d is not None]
    assert len(seen) >= 50 and all(abs(dev.durations_s[i] - 0.0025 - 45e-6 * 3) < 1e-4 for i in seen[5:])
    assert device_covers(seen, list(range(100, 3000)))  # a sample spread over the measured steps
    fetch_steps = {m[1] for m in marks if m[0] in "ab"}
    assert all(dev.input_idle_s[k] is not None for k in fetch_steps if 0 < k < 3000)


def test_while_the_host_runs_ahead_its_marks_cost_nothing_and_every_step_is_seen(monkeypatch,
                                                                                   device: _Device):
    """A GPU-bound loop: the device finishes each step 20 ms after the host queued it, so the
    host's time in the marks slows nothing and the budget does not thin the clock."""
    clock, marks, _ = _run_steps(monkeypatch, device, behind_s=0.02)
    assert clock.skipped == 0 and clock.seen == 3000
    last = [r for r in clock.recorder.records if isinstance(r, DeviceMarks)][-1]
    assert (last.seen, last.skipped) == (3000, 0)


def test_a_clock_that_saw_part_of_the_run_does_not_cover_it():
    from gpubottle.clock import device_covers

    keep = list(range(1000))
    assert device_covers(keep[::10], keep)  # an even sample
    assert not device_covers(keep[:500], keep)  # started late or broke down half-way
    assert not device_covers(keep[::100], keep)  # too few
    assert device_covers(keep[:850], keep)  # most of it


def test_fetches_call_it_only_once_the_script_uses_cuda(monkeypatch: pytest.MonkeyPatch):
    """On a CPU run each fetch makes no call into the clock (two that did nothing cost 0.65-ms
    steps 13.5 us in place), and the clock itself asks to be called twice a second, not every
    step; from its first look with CUDA in use its fetch marks come."""
    from gpubottle.probes import hooks as hooks_mod
    from gpubottle.probes.hooks import CUDA_RECHECK_S, StepHooks

    class Clock:
        t = 50.0
        perf_counter = staticmethod(time.perf_counter)

        def monotonic(self) -> float:
            return self.t

    fake = Clock()
    monkeypatch.setattr(hooks_mod, "time", fake)
    hooks = StepHooks()
    clock = DeviceClock(ListRecorder(), hooks.listen)
    hooks.add(clock)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    hooks.on_step()
    assert hooks.fetchers == []
    dev = _Device()
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(torch.cuda, "Event", dev.event_class())
    hooks.on_step()
    assert hooks.fetchers == [] and clock.steps == 1  # not asked again yet
    fake.t += CUDA_RECHECK_S
    hooks.on_step()
    assert hooks.fetchers == [clock] and clock.steps == 3
    hooks.fetch(True)
    hooks.fetch(False)
    assert dev.recorded == 3  # the step's end, then the fetch's two marks
