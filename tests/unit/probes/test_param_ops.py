"""The parameter-ops mode of the counted step (probes/param_ops.py) on real torch: a penalty written
over the parameters tensor by tensor is counted at its line; the model's own forward, the
optimizer's step, zero_grad and an EMA under no_grad are not; the mode leaves torch's stack."""

from __future__ import annotations

import sys

import torch
from torch import nn
from torch.overrides import _get_current_function_mode

from gpubottle.probes import param_ops


def _line() -> int:
    return sys._getframe(1).f_lineno


def test_a_penalty_over_the_parameters_is_counted_at_its_line_and_nothing_else() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ema = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    depth = [0]
    pre = nn.modules.module.register_module_forward_pre_hook(lambda m, a: depth.__setitem__(0, depth[0] + 1))
    post = nn.modules.module.register_module_forward_hook(lambda m, a, o: depth.__setitem__(0, depth[0] - 1))
    try:
        mode = param_ops.start([opt], lambda: depth[0])
        out = model(torch.randn(8, 16))
        loss = nn.functional.cross_entropy(out, torch.randint(0, 4, (8,)))
        l2 = sum(p.pow(2).sum() for p in model.parameters()); line = _line()  # noqa: E702
        (loss + 1e-4 * l2).backward()
        opt.step()
        opt.zero_grad()
        with torch.no_grad():
            for e, p in zip(ema.parameters(), model.parameters()):
                e.lerp_(p, 0.01)
        rows = param_ops.stop(mode)
    finally:
        pre.remove()
        post.remove()
    assert _get_current_function_mode() is None
    assert rows is not None and len(rows) == 1, rows
    site, ops, on_params, seconds, functions, called_at = rows[0]
    assert site.endswith(f"test_param_ops.py:{line}") and on_params == 4 and ops >= 8, rows
    assert seconds > 0 and functions == ["pow"] and called_at is None  # (pytest called this test)


def test_ops_torch_dispatches_in_python_are_the_user_line_s_and_timed_as_theirs() -> None:
    """`w ** 2` and Tensor.backward come through torch's own dispatch (overrides.py), one frame for
    all of them: each is still its user line's, and a helper's `return sum(...)` is said with the
    line that called it. (The backward was once counted, 2 ms of it, on the penalty's line.)"""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def penalty(m: nn.Module) -> torch.Tensor:
        return sum((w ** 2).sum() for w in m.parameters()); # noqa: E703

    mode = param_ops.start([opt], lambda: 0)
    try:
        l2 = penalty(model); at = _line()  # noqa: E702
        (model(torch.randn(4, 16)).sum() + l2).backward(); back = _line()  # noqa: E702
    finally:
        rows = param_ops.stop(mode)
    assert rows is not None and len(rows) == 1, rows
    site, ops, on_params, _, functions, called_at = rows[0]
    assert on_params == 4 and functions == ["pow"] and called_at.endswith(f":{at}"), rows
    assert any(s and s.endswith(f":{back}") for s in mode.sites), mode.sites  # the backward's own


def test_without_an_optimizer_nothing_is_counted() -> None:
    assert param_ops.start([], lambda: 0) is None
    assert _get_current_function_mode() is None


def test_a_mode_the_script_pushed_on_top_stays_and_this_one_passes_through() -> None:
    from torch.overrides import BaseTorchFunctionMode

    p = nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([p], lr=0.1)
    mode = param_ops.start([opt], lambda: 0)
    theirs = BaseTorchFunctionMode()
    theirs.__enter__()
    try:
        assert param_ops.stop(mode) is None
        assert _get_current_function_mode() is theirs
        (p * 2).sum()  # passes through, uncounted
        assert not mode.sites
    finally:
        theirs.__exit__(None, None, None)
        mode.__exit__(None, None, None)
    assert _get_current_function_mode() is None


def test_a_forward_written_without_modules_is_no_penalty() -> None:
    """`h = torch.tanh(h @ W + b)` over a list of weights, outside any module: each op meets the
    batch's tensor, so none is an op on the parameters alone; a penalty's beside it still is."""
    torch.manual_seed(0)
    params = [torch.randn(16, 16, requires_grad=True) for _ in range(4)]
    biases = [torch.zeros(16, requires_grad=True) for _ in range(4)]
    opt = torch.optim.SGD(params + biases, lr=0.1)
    mode = param_ops.start([opt], lambda: 0)
    try:
        h = torch.randn(8, 16)
        for W, b in zip(params, biases):
            h = torch.tanh(h @ W + b); forward = _line()  # noqa: E702
        l2 = sum((W * W).sum() for W in params); penalty = _line()  # noqa: E702
        (h.sum() + l2).backward()
    finally:
        rows = param_ops.stop(mode)
    assert rows is not None and [r[0].rsplit(":", 1)[1] for r in rows] == [str(penalty)], rows
    assert mode.sites[next(s for s in mode.sites if s and s.endswith(f":{forward}"))][1] == 0
