"""What is said of a loop that makes its own batches: each sentence form once, from decisions built
by hand (tests/e2e/test_stacks.py runs the real generator loop)."""

from __future__ import annotations

from gpubottle.evidence import StackFrameShare
from gpubottle.rules.input import loop_words as words
from gpubottle.rules.input.loop import LoopInput
from gpubottle.rules.input.plan import Plan


def _loop(plan: Plan) -> LoopInput:
    return LoopInput(0.6, 120, StackFrameShare("batches", "train.py:20", 0.55), 1.0, 4.0, 0.1, plan)


def test_workers_in_parallel_with_the_step() -> None:
    d = _loop(Plan(workers=2, step_s=0.045, needed=2, limit="compute", load=0.3))
    assert d.parallel and abs(d.gain - 0.1 / 0.045) < 1e-9
    assert words.loop_summary(d) == ("the loop makes its own batches 60% of the time while CPU capacity "
                                     "sits unused: move batch making into DataLoader workers")
    assert [(f.name, f.value) for f in words.loop_facts(d)] == [
        ("input_share", 0.6), ("hot_share", 0.55), ("run_cores", 1.0)]
    (fix,) = words.loop_fixes(d)
    assert fix.change == {"num_workers": [0, 2]} and fix.where == "train.py:20"
    assert fix.expected == "step 100.0 ms -> about 45.0 ms (2.2x)" and fix.expected_step_s == 0.045
    d.plan.load = 0.99  # on busy cores: an experiment, no promise
    (fix,) = words.loop_fixes(d)
    assert fix.text.startswith("try (up to 2.2x, but the cores would be 99% busy") and fix.expected is None


def test_no_room_to_parallelise() -> None:
    d = _loop(Plan(workers=2, step_s=0.095, needed=2, limit="cpu", load=0.99))
    assert not d.parallel
    assert words.loop_summary(d).endswith("the CPU is already busy: the batch-making work must get cheaper")
    (fix,) = words.loop_fixes(d)
    assert fix.text.startswith("make the batch-making code cheaper: it costs 60.0 ms per 100.0 ms step")
