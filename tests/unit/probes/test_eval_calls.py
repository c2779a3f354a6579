"""An evaluation's model calls, one sample at a time (probes/modes.py's EvalCalls) on real torch
modules, the account's entry that carries them (analysis/account.py) and the eval-bound finding's
first fix (rules/phases): a validation loop calling the model on one row at a time was told only
"evaluate every 1000 steps" and "on fewer batches" (3,000 rows of a small MLP here: 67 ms a pass
one row a call, 0.7 ms 256 a call)."""

from __future__ import annotations

import pytest
import torch
from factories import evidence
from recorders import ListRecorder
from torch import nn

from gpubottle import vocabulary as v
from gpubottle.evidence.account import EVAL, AccountEntry
from gpubottle.probes.modes import install_modes
from gpubottle.rules import diagnose
from gpubottle.wire import EvalCalls


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> ListRecorder:
    monkeypatch.setattr(nn.Module, "train", nn.Module.train)  # restored after the test
    rec = ListRecorder()
    install_modes(rec, {})
    return rec


def test_the_first_pass_of_each_module_counts_its_calls_and_rows(recorded: ListRecorder):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    xv = torch.randn(50, 4)

    def validate(step: int) -> None:
        model.eval()
        with torch.no_grad():
            for i in range(0, len(xv), step):
                model(xv[i:i + step])
        model.train()

    validate(1)
    validate(5)  # a second pass: counted too (a first may come before any training step)
    validate(1)  # a third: not counted
    other = nn.Linear(4, 1)
    other.eval()
    other(torch.randn(4))  # one sample's features, unbatched: one row
    other(torch.randn(4))
    other.train()
    first, again, second = [r for r in recorded.records if isinstance(r, EvalCalls)]
    assert (first.calls, first.rows, first.module) == (50, 50, "Sequential")
    assert (again.calls, again.rows) == (10, 50)
    assert first.site is not None and "test_eval_calls.py" in first.site
    assert (second.calls, second.rows, second.module) == (2, 2, "Linear")
    assert not torch.nn.modules.module._global_forward_pre_hooks  # removed at train()


def test_counting_stops_at_its_cap_where_the_pass_never_ends(recorded: ListRecorder):
    """Inference after model.eval() with no train() to end the pass: the hook goes at the cap, and
    the record says there were more calls."""
    from gpubottle.probes.modes import PASS_CALLS_MAX

    model = nn.Linear(4, 2)
    model.eval()
    with torch.no_grad():
        for _ in range(PASS_CALLS_MAX + 10):
            model(torch.randn(1, 4))
    assert not torch.nn.modules.module._global_forward_pre_hooks
    [rec] = [r for r in recorded.records if isinstance(r, EvalCalls)]
    assert (rec.calls, rec.rows, rec.whole) == (PASS_CALLS_MAX, PASS_CALLS_MAX, 0)
    model.train()
    model.eval()  # its second pass (counted), ended by train()
    model(torch.randn(1, 4))
    model.train()
    assert [r.calls for r in recorded.records if isinstance(r, EvalCalls)] == [PASS_CALLS_MAX, 1]


def test_a_model_scripted_in_eval_mode_sees_no_hook_of_ours(recorded: ListRecorder):
    """torch.jit.script compiles a module's own hooks: an export after eval() must not meet ours."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.eval()
    assert not model._forward_pre_hooks
    scripted = torch.jit.script(model)
    assert scripted(torch.randn(2, 4)).shape == (2, 2)
    model.train()


def _ev(calls: int | None, rows: int | None, capped: bool = False):
    ev = evidence(step_s=0.0005, wait_s=0.0, main=1.0, tree=1.0, cores=2)
    ev.account = [AccountEntry("train", 1.1, 0.2, count=3000),
                  AccountEntry(EVAL, 2.0, 0.36, where="eval_loop.py:32", count=30, every_steps=100.0,
                               what="validate() (model.eval() at eval_loop.py:15, no DataLoader)",
                               function="validate", model_calls=calls, model_rows=rows,
                               model_site="eval_loop.py:19", model_calls_capped=capped),
                  AccountEntry("startup", 2.5, 0.44)]
    return ev


def test_an_evaluation_one_row_a_call_is_told_to_call_it_on_batches_first():
    f = next(f for f in diagnose(_ev(3000, 3000)).findings if f.category == v.EVAL_BOUND)
    assert "the model called 3,000 times a pass, one row a call" in f.summary, f.summary
    first = f.fixes[0]
    assert first.text.startswith("validate() calls the model one sample at a time"), first.text
    assert "call it on batches of rows instead, under torch.no_grad()" in first.text
    assert first.where == "eval_loop.py:19" and first.expected is None  # a try
    assert any("evaluate every 1000 training steps" in x.text for x in f.fixes[1:])
    # Its rows, not batches it draws: a fixed subset of them.
    assert any(x.text.startswith("evaluate on fewer rows: ") for x in f.fixes[1:])
    assert not any("eval_iters" in x.text for x in f.fixes)


def test_batches_already_or_no_count_keep_the_old_fixes():
    capped = next(f for f in diagnose(_ev(2048, 2048, capped=True)).findings if f.category == v.EVAL_BOUND)
    assert "the model called over 2,048 times a pass" in capped.summary, capped.summary
    # An agent acting in eval() mode (each state from acting on the call before's output): no batch.
    acting = _ev(3000, 3000)
    acting.account[1].model_feeds_back = True
    f = next(f for f in diagnose(acting).findings if f.category == v.EVAL_BOUND)
    assert not any("one sample at a time" in x.text for x in f.fixes), f.fixes[0].text
    for calls, rows in ((30, 3000), (None, None), (40, 40)):  # batches; not counted; few calls
        f = next(f for f in diagnose(_ev(calls, rows)).findings if f.category == v.EVAL_BOUND)
        assert not any("one sample at a time" in x.text for x in f.fixes), (calls, f.fixes[0].text)
        assert "times a pass" not in f.summary
        assert any(x.text.startswith("evaluate on fewer batches: ") for x in f.fixes)


def test_a_trace_after_eval_is_not_counted_and_warns_nothing_of_ours(recorded: ListRecorder):
    """torch.jit.trace after model.eval() (an export): reading the traced input's shape warned
    "Converting a tensor to a Python integer" from gpubottle's line into the user's run."""
    import warnings

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.eval()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.jit.trace(model, torch.randn(2, 4))
    assert not [w for w in seen if "gpubottle" in str(w.filename)], [str(w.message) for w in seen]
    model.train()
    # (the trace itself uncounted; jit's check of it runs the module once, eagerly)
    assert all(r.calls <= 1 for r in recorded.records if isinstance(r, EvalCalls))


def test_a_module_frozen_in_eval_mode_loses_the_hook_at_the_first_training_step(monkeypatch):
    """A teacher or a pretrained encoder put in eval() once, never train(): a global hook slows every
    module call in the process (3-5% of a 3.6-ms step of 24 MLP blocks here) until its cap of calls,
    which a module called per sample in the workers, or never, may not reach. The first backward or
    optimizer step after eval() removes it, recording nothing; an evaluation pass still counts."""
    from gpubottle.clock import StepClock
    from gpubottle.probes.hooks import StepHooks

    monkeypatch.setattr(nn.Module, "train", nn.Module.train)
    rec, hooks, clock = ListRecorder(), StepHooks(), StepClock()
    install_modes(rec, {}, hooks, clock)
    hooked = torch.nn.modules.module._global_forward_pre_hooks
    teacher, student = nn.Linear(4, 2), nn.Linear(4, 2)
    teacher.eval()
    assert hooked
    hooks.on_step()  # a step of the clock with no training in it (an inference loop's fetch)
    assert hooked
    student(torch.randn(8, 4)).sum().backward()
    clock.backward(0.0, 1.0)
    hooks.on_step()
    assert not hooked and not [r for r in rec.records if isinstance(r, EvalCalls)]
    student.eval()  # an evaluation pass between steps: counted as before
    student(torch.randn(3, 4))
    student.train()
    [calls] = [r for r in rec.records if isinstance(r, EvalCalls)]
    assert (calls.calls, calls.rows) == (1, 3)
    import gpubottle.probes.modes as modes

    teacher.eval()  # armed again (its second pass), and forgotten in a forked child
    counter = next(p for p in hooks.probes if isinstance(p, modes._PassCalls))
    assert counter.handle is not None and counter.handle.id in hooked
    counter.forget()
    assert counter.handle is None
    assert not any(getattr(h, "__self__", None) is counter for h in hooked.values())
