"""The step-boundary hub times its probes' calls: the short ones are the per-step cost the
account's own line adds; a long one is a heavier probe's, measured by the steps it slowed."""

from __future__ import annotations

import time

from gpubottle.options import ChildConfig
from gpubottle.probes.hooks import STEADY_CALL_MAX_S, StepHooks


class Probe:
    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s
        self.marks = 0

    def on_step(self, step: int) -> None:
        if self.sleep_s:
            end = time.perf_counter() + self.sleep_s
            while time.perf_counter() < end:
                pass

    def fetch(self, began: bool) -> None:
        self.marks += 1

    def finish(self, exc: BaseException | None) -> None:
        pass

    def reset(self, cfg: ChildConfig) -> None:
        pass


def test_short_calls_are_summed_and_a_heavier_probes_long_one_is_left_out():
    hooks = StepHooks()
    probe = Probe(0.0002)
    hooks.add(probe)
    for _ in range(5):
        hooks.on_step()
        hooks.fetch(True)
        hooks.fetch(False)
    assert probe.marks == 10
    short = hooks.spent_s
    # (a call preempted past STEADY_CALL_MAX_S on a busy machine is left out as a heavier probe's,
    # as it should be: a fresh clone's suite lost one of the five and summed 0.82 ms)
    assert 3 * 0.0002 <= short < 5 * STEADY_CALL_MAX_S + 10 * STEADY_CALL_MAX_S
    probe.sleep_s = 2 * STEADY_CALL_MAX_S  # the profiler window starting, say
    hooks.on_step()
    assert hooks.spent_s == short
    hooks.reset(ChildConfig(events="events.jsonl"))
    assert hooks.spent_s == 0.0 and hooks.steps == 0


class FakeTime:
    """The hub's clock: monotonic moved by hand, perf_counter real (the calls' own timing)."""

    def __init__(self) -> None:
        self.t = 100.0
        self.perf_counter = time.perf_counter

    def monotonic(self) -> float:
        return self.t


class Scheduled:
    """A probe that asks for its next call: `wakes` in turn (None: the next step)."""

    def __init__(self, *wakes: tuple[int, float] | None, fails_at: int = 0) -> None:
        self.wakes = list(wakes)
        self.fails_at = fails_at
        self.calls: list[int] = []

    def on_step(self, step: int) -> tuple[int, float] | None:
        self.calls.append(step)
        if step == self.fails_at:
            raise RuntimeError("broken")
        return self.wakes.pop(0) if self.wakes else None

    def finish(self, exc: BaseException | None) -> None:
        pass

    def reset(self, cfg: ChildConfig) -> None:
        pass


def test_each_probe_is_called_when_it_asked_by_step_or_by_time(monkeypatch):
    """A CPU run's probes are idle between looks: each says when it wants the next call (a step,
    a time, whichever first) and the hub calls nothing until one is due."""
    import math
    import sys

    from gpubottle.probes import hooks as hooks_mod
    from gpubottle.probes.hooks import NEVER

    clock = FakeTime()
    monkeypatch.setattr(hooks_mod, "time", clock)
    hooks = StepHooks()
    every = Scheduled()  # None each time: every step
    by_step = Scheduled((4, math.inf), (6, math.inf), NEVER)
    by_time = Scheduled((sys.maxsize, 100.5), (sys.maxsize, 101.0))
    for p in (every, by_step, by_time):
        hooks.add(p)
    for _ in range(3):  # steps 1-3, no time passing
        hooks.on_step()
    assert every.calls == [1, 2, 3] and by_step.calls == [1] and by_time.calls == [1]
    clock.t = 100.6  # by_time is due at its next step
    every.wakes = [NEVER] * 10  # and the every-step probe goes quiet
    hooks.on_step()
    assert by_time.calls == [1, 4] and by_step.calls == [1, 4] and every.calls == [1, 2, 3, 4]
    for _ in range(4):  # steps 5-8: by_step wants step 6, then never
        hooks.on_step()
    assert by_step.calls == [1, 4, 6] and by_time.calls == [1, 4] and every.calls == [1, 2, 3, 4]
    clock.t = 101.0
    hooks.on_step()
    assert by_time.calls == [1, 4, 9]
    # A probe added later is called at the next step; reset() makes every probe due again.
    late = Scheduled(NEVER)
    hooks.add(late)
    hooks.on_step()
    assert late.calls == [10] and every.calls == [1, 2, 3, 4]
    hooks.reset(ChildConfig(events="events.jsonl"))
    hooks.on_step()
    assert every.calls[-1] == by_step.calls[-1] == late.calls[-1] == 1


def test_a_probe_that_raises_is_dropped_and_the_others_keep_their_schedule(monkeypatch):
    from gpubottle.probes import hooks as hooks_mod

    monkeypatch.setattr(hooks_mod, "time", FakeTime())
    hooks = StepHooks()
    broken = Scheduled(fails_at=2)
    fine = Scheduled()
    hooks.add(broken)
    hooks.add(fine)
    for _ in range(4):
        hooks.on_step()
    assert broken.calls == [1, 2] and fine.calls == [1, 2, 3, 4]
    assert hooks.probes == [fine]
