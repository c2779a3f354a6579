"""Long gaps between the steps (rules/phases/pauses.py): said as the run's where the stacks name
work of their own in them, at a regular step or once; not where the steps' own work was stretched
(preempted beside busy programs, at no regular step) or nothing was sampled."""

from __future__ import annotations

import pytest
from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.analysis.gaps import regular_every as _regular
from gpubottle.analysis.stacks import Frame, ThreadSamples, without_held
from gpubottle.analysis.work_kinds import COMPILING
from gpubottle.evidence import Evidence
from gpubottle.evidence.account import AccountEntry
from gpubottle.rules import diagnose
from gpubottle.rules.phases.pauses import pause_findings


def _ev(gaps_s: float, count: int, what: str | None = "difficulty", every: float | None = 100.0,
        samples: int = 30, usual: float | None = 0.0) -> Evidence:
    ev = evidence(steps=60, step_s=0.0012)
    ev.account = [AccountEntry(phase="startup", seconds=3.6, share=0.0),
                  AccountEntry(phase="train", seconds=0.7, share=0.0, count=600),
                  AccountEntry(phase="between-steps", seconds=gaps_s, share=0.0, count=count,
                               what=what, where="train.py:15" if what else None, every_steps=every,
                               samples=samples, in_steps_share=usual),
                  AccountEntry(phase="teardown", seconds=1.1, share=0.0)]
    return ev


def test_a_sort_at_each_epochs_start_is_said_with_its_function_and_how_often() -> None:
    """tests/scripts/real_code/sort_each_epoch.py: 5 gaps of 0.42 s, every 100 steps, 28% of the
    run; sorted once before the loop 7.3-8.4 s -> 5.3 s."""
    (f,) = pause_findings(_ev(2.1, 5))
    assert f.category == v.LOOP_OVERHEAD and f.phase == "between-steps" and f.severity == "warning"
    assert f.run_share == pytest.approx(2.1 / 7.5, abs=1e-3)
    assert f.summary == ("the loop stops between its steps 5 times, 28% of the run, in difficulty "
                         "(train.py:15)")
    assert f.evidence[0].text.startswith("the loop stops between its steps 5 times, 0.42 s each, every 100 "
                                         "steps: 2.1 s of the run's 7.5 s")
    (fix,) = f.fixes
    assert fix.where == "train.py:15" and "do it once before the loop" in fix.text
    assert fix.expected is None and fix.text.endswith("try it and time it")
    assert diagnose(_ev(2.1, 5)).findings[0].phase == "between-steps"  # the run's largest cost


def test_a_single_gap_of_a_known_kind_is_said_with_its_remedy() -> None:
    """A recompile mid-run (a new shape): once, 2.4 s, in work the steps hardly do."""
    (f,) = pause_findings(_ev(2.4, 1, what=f"loss = f(x): {COMPILING}", every=None, usual=0.06))
    assert f.summary.startswith("the loop stops between its steps once, 31% of the run, in loss = f(x): ")
    assert "for 2.4 s" in f.evidence[0].text
    assert f.fixes[0].text.startswith(f"{COMPILING}: ")


@pytest.mark.parametrize("kw", [
    {"every": None},  # gaps at no regular step: preemptions beside busy programs
    {"samples": 2},  # too few samples to name them
    {"what": None},  # nothing sampled in them
    {"count": 1, "every": None, "usual": 0.3},  # once, in what every step does (print(...) stretched)
    {"count": 1, "every": None, "usual": None},
])
def test_gaps_that_are_the_steps_own_work_stretched_or_unseen_are_not_said(kw: dict[str, object]) -> None:
    args: dict[str, object] = {"gaps_s": 2.1, "count": 5} | kw
    assert pause_findings(_ev(**args)) == []  # type: ignore[arg-type]


def test_gaps_under_a_tenth_of_the_run_or_a_second_are_not_said() -> None:
    assert pause_findings(_ev(0.7, 5)) == []  # 9% of the run
    ev = _ev(0.9, 5)
    ev.account = [e for e in ev.account if e.phase != "startup" and e.phase != "teardown"]
    assert pause_findings(ev) == []  # 56% of the run, but under a second


def test_regular_gaps_are_the_loops_schedule_and_random_ones_are_not() -> None:
    assert _regular([100, 200, 300, 400, 500]) == 100.0
    assert _regular([99, 200, 301, 399]) == pytest.approx(100.0)
    assert _regular([100, 200]) == 100.0  # (the first as far from the start as the second from it)
    assert _regular([37, 200]) is None
    assert _regular([12, 40, 41, 90, 230]) is None
    assert _regular([100]) is None
    assert _regular([16, 17, 18, 19, 20]) is None  # every step long: the steps' pace
    # A validation every 100 steps with one step among them that something else stretched (a
    # script evaluating without a DataLoader or model.eval(), its gaps ~0.22 s: under gpubottle
    # torch's last full garbage collection, 0.16 s, fell in step 314 of the loop, in plain python
    # before it), or several short ones (their time past the usual step under a quarter of the
    # gaps' median); random gaps stay random with one or the short ones left out.
    evals = [100, 200, 300, 314, 400, 500]
    assert _regular(evals) == 100.0
    assert _regular([100, 200, 272, 300, 310, 400, 500], [0.22, 0.21, 0.012, 0.23, 0.02, 0.22, 0.22]) == 100.0
    assert _regular([100, 200, 272, 300, 310, 400, 500]) is None  # two strays, their size unknown
    assert _regular([12, 40, 41, 90, 230], [0.2, 0.21, 0.19, 0.2, 0.22]) is None  # all alike: kept
    assert _regular([12, 40, 41, 90, 230, 231]) is None
    assert _regular([37, 200, 260]) is None  # (three: none left out)


def test_a_gaps_last_stack_held_into_the_steps_after_it_is_the_gaps() -> None:
    """py-spy writes a stack when it changes; on busy cores its next sample may come late and the
    gap's last stack is held past the gap's end: those repeats are the gap's, the first new stack
    after it is the steps'."""
    sort = [Frame("<module>", "t.py", 20), Frame("difficulty", "t.py", 15)]
    step = [Frame("<module>", "t.py", 25)]
    ts = ThreadSamples(1, [step, sort, sort, sort, sort, step, sort, step],
                       [0.9, 1.0, 1.1, 1.45, 1.5, 1.55, 1.6, 1.7])
    kept = without_held({1: ts}, [(1.0, 1.4)])[1]
    assert kept.times == [0.9, 1.0, 1.1, 1.55, 1.6, 1.7]  # (1.6: sorting again, seen anew)
    assert without_held({1: ts}, [])[1] is ts


def test_a_gap_in_no_function_of_its_own_is_named_by_the_statement_most_of_its_samples_are_on(
        tmp_path) -> None:
    """An evaluation inlined under no_grad every 50 steps (a generator expression at the top level
    into the model): no function of the user's to name, so its statement; the DataLoader's own
    samples (workers starting at an epoch's iter()) name nothing, for the input rules say them."""
    from gpubottle.analysis.gaps import spent_on as _spent_on

    script = tmp_path / "train.py"
    script.write_text("for xb, yb in loader:\n    step(xb)\n"
                      "    val = sum(f(model(v)) for v in VX.split(100))\n")
    user = str(script)
    torch_nn = "/site-packages/torch/nn/modules/module.py"
    val = [Frame("<module>", user, 3), Frame("<genexpr>", user, 3),
           Frame("Module._call_impl", torch_nn, 1789)]
    data = [Frame("<module>", user, 1), Frame("_BaseDataLoaderIter.__init__",
                                                "/site-packages/torch/utils/data/dataloader.py", 700)]
    main = ThreadSamples(1, [val] * 6 + [data] * 2, [1.0 + 0.1 * i for i in range(8)])
    what, where, called, _ = _spent_on(main, [(0.9, 1.8)])
    assert what == "val = sum(f(model(v)) for v in VX.split(100))"
    assert where is not None and where.endswith(":3") and called is None
    loading = ThreadSamples(1, [data] * 5, [1.0 + 0.1 * i for i in range(5)])
    assert _spent_on(loading, [(0.9, 1.5)])[:3] == (None, None, None)


def test_gaps_spent_in_a_loop_over_rows_one_at_a_time_are_told_to_run_them_at_once() -> None:
    """knn_eval's shape: a kNN evaluation after each epoch with no model.eval(), 94% of its samples
    in `for i in range(len(Xv)):` feeding one row a call: the batched ops lead, at the loop (the run
    4.8 s -> 2.8 s, the same accuracy); the generic "once, or cheaper, or rarer" stays second."""
    ev = _ev(1.4, 3, what="knn_accuracy", every=63.0)
    ev.account[2].row_loop, ev.account[2].row_loop_text = "knn_eval.py:19", "for i in range(len(Xv)):"
    ev.account[2].row_loop_share = 0.94
    (f,) = pause_findings(ev)
    assert f.summary.endswith("most of it one row at a time in a Python loop (knn_eval.py:19)"), f.summary
    assert any(e.name == "pauses_row_loop_share" and e.value == 0.94 for e in f.evidence)
    first, second = f.fixes
    assert first.where == "knn_eval.py:19" and "all rows at once" in first.text
    assert first.text.startswith("94% of knn_accuracy's time is a Python loop over rows")
    assert first.expected is None and first.text.endswith("try it and time it")
    assert second.where == "train.py:15" and "do it once before the loop" in second.text
    # without the loop, the one fix as before
    assert len(pause_findings(_ev(1.4, 3, what="knn_accuracy", every=63.0))[0].fixes) == 1
