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
