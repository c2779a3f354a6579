"""probes/zero_grads.py on real torch: the window wraps zero_grad for a few steps, records each
call with the user's line, puts the originals back, and costs nothing outside it."""

from __future__ import annotations

import torch
from recorders import ListRecorder

from gpubottle.probes.zero_grads import WINDOW_FROM, WINDOW_STEPS, ZeroGradWindow
from gpubottle.wire import ZeroGrads


def test_the_window_records_both_zero_grads_and_puts_the_originals_back() -> None:
    opt_zero, module_zero = torch.optim.Optimizer.zero_grad, torch.nn.Module.zero_grad
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = ListRecorder()
    probe = ZeroGradWindow(rec)  # type: ignore[arg-type]
    for step in range(1, WINDOW_FROM + 1):
        probe.on_step(step)
    assert torch.optim.Optimizer.zero_grad is not opt_zero  # wrapped, in the window
    opt.zero_grad()  # the optimizer's
    model.zero_grad()  # the module's
    for step in range(WINDOW_FROM + 1, WINDOW_FROM + WINDOW_STEPS + 1):
        probe.on_step(step)
    assert torch.optim.Optimizer.zero_grad is opt_zero and torch.nn.Module.zero_grad is module_zero
    [w] = [r for r in rec.records if isinstance(r, ZeroGrads)]
    assert len(w.calls) == 2 and w.t0 <= w.calls[0][0] <= w.calls[1][0] <= w.t1
    assert w.calls[0][1].endswith("test_zero_grad_window.py:22") and w.calls[1][1].endswith(":23")
    opt.zero_grad()  # after the window: nothing recorded
    assert len(w.calls) == 2
    probe.finish(None)
    assert len([r for r in rec.records if isinstance(r, ZeroGrads)]) == 1


def test_a_run_that_ends_inside_the_window_still_reports_it_and_unwraps() -> None:
    opt_zero = torch.optim.Optimizer.zero_grad
    rec = ListRecorder()
    probe = ZeroGradWindow(rec)  # type: ignore[arg-type]
    for step in range(1, WINDOW_FROM + 1):
        probe.on_step(step)
    probe.finish(None)
    assert torch.optim.Optimizer.zero_grad is opt_zero
    assert [r for r in rec.records if isinstance(r, ZeroGrads)]
