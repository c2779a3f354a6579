"""The activation-checkpointing probe (probes/checkpointing.py) on real torch: torch.utils.checkpoint
.checkpoint wrapped as the probes wrap it at `import torch`, real blocks run forward and backward
under it, the step boundaries given as StepHooks gives them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
import torch.utils.checkpoint as cp
from recorders import ListRecorder
from torch import nn

from gpubottle.probes.checkpointing import WINDOW_FROM, WINDOW_STEPS, CheckpointProbe, block_name
from gpubottle.wire import Checkpointed


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.ff(x)


@pytest.fixture
def probe() -> Iterator[tuple[CheckpointProbe, ListRecorder]]:
    orig = cp.checkpoint
    rec = ListRecorder()
    p = CheckpointProbe(rec)  # type: ignore[arg-type]
    status: dict[str, object] = {}
    p.patch_torch(torch, status)
    assert status == {"checkpoint": None} and cp.checkpoint is not orig
    try:
        yield p, rec
    finally:
        cp.checkpoint = orig


def _train(p: CheckpointProbe, steps: int, checkpointed: bool = True) -> int:
    torch.manual_seed(0)
    blocks = nn.ModuleList(Block() for _ in range(2))
    opt = torch.optim.SGD(blocks.parameters(), 0.01)
    line = 0
    for step in range(1, steps + 1):
        x = torch.randn(32, 64)
        for b in blocks:
            if checkpointed:
                x = cp.checkpoint(b, x, use_reentrant=False); line = _line()  # noqa: E702
            else:
                x = b(x)
        with torch.no_grad():  # an evaluation's call: no backward runs it again
            cp.checkpoint(blocks[0], x, use_reentrant=False)
        x.sum().backward()
        opt.step()
        opt.zero_grad()
        p.on_step(step)
    return line


def _line() -> int:
    import sys
    return sys._getframe(1).f_lineno


def test_the_window_times_each_steps_checkpointed_forwards_against_the_step(probe) -> None:
    p, rec = probe
    line = _train(p, WINDOW_FROM + WINDOW_STEPS + 5)
    [r] = [r for r in rec.records if isinstance(r, Checkpointed)]
    assert len(r.steps) == WINDOW_STEPS
    for seconds, in_blocks, calls in r.steps:
        assert calls == 2 and 0 < in_blocks < seconds, r.steps  # (the no_grad call left out)
    assert r.site is not None and r.site.endswith(f"test_checkpointing.py:{line}"), r.site
    assert r.via is None and r.blocks == ["Block"]


def test_a_run_that_never_checkpoints_records_nothing(probe) -> None:
    p, rec = probe
    _train(p, WINDOW_FROM + WINDOW_STEPS + 5, checkpointed=False)
    assert not [r for r in rec.records if isinstance(r, Checkpointed)]


def test_a_run_ending_inside_the_window_records_the_steps_it_had(probe) -> None:
    p, rec = probe
    _train(p, WINDOW_FROM + 4)
    p.finish(None)
    [r] = [r for r in rec.records if isinstance(r, Checkpointed)]
    assert len(r.steps) == 4


def test_a_checkpoint_inside_a_checkpointed_block_is_the_outer_calls(probe) -> None:
    p, rec = probe

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Block()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return cp.checkpoint(self.inner, x, use_reentrant=False)

    torch.manual_seed(0)
    outer = Outer()
    for step in range(1, WINDOW_FROM + 3):
        cp.checkpoint(outer, torch.randn(8, 64), use_reentrant=False).sum().backward()
        p.on_step(step)
    p.finish(None)
    [r] = [r for r in rec.records if isinstance(r, Checkpointed)]
    assert [c for _, _, c in r.steps] == [1, 1] and r.blocks == ["Outer"]


def test_what_a_call_wraps_is_named_as_the_user_wrote_it() -> None:
    import functools

    b = Block()
    assert block_name(b) == "Block" and block_name(b.__call__) == "Block"
    assert block_name(functools.partial(b.forward)) == "Block" and block_name(_line) == "_line"


def test_checkpoint_sequential_is_named_as_the_call_the_user_wrote(probe) -> None:
    """Its segments are closures of torch's own (run_function.<locals>.forward): named by it, with
    the user's checkpoint_sequential(...) line, one call per checkpointed segment."""
    p, rec = probe
    torch.manual_seed(0)
    model = nn.Sequential(*(Block() for _ in range(4)))
    for step in range(1, WINDOW_FROM + 3):
        cp.checkpoint_sequential(model, 4, torch.randn(8, 64), use_reentrant=False).sum().backward()
        line = _line() - 1
        p.on_step(step)
    p.finish(None)
    [r] = [r for r in rec.records if isinstance(r, Checkpointed)]
    assert r.blocks == ["checkpoint_sequential"] and [c for _, _, c in r.steps] == [3, 3], r
    assert r.site is not None and r.site.endswith(f"test_checkpointing.py:{line}"), r.site


def test_a_closure_over_a_module_is_named_by_the_module() -> None:
    def create_custom_forward(module: nn.Module):  # (the pattern diffusers and older transformers use)
        def custom_forward(*inputs: torch.Tensor) -> torch.Tensor:
            return module(*inputs)
        return custom_forward

    assert block_name(create_custom_forward(Block())) == "Block"
    assert block_name(lambda x: x) == "<lambda>"


def test_checkpoint_sequential_from_two_lines_is_each_line_s(probe) -> None:
    """Its frame is one for every caller: the line that called it most is the record's, not the
    first one seen."""
    p, rec = probe
    torch.manual_seed(0)
    model = nn.Sequential(*(Block() for _ in range(2)))
    for step in range(1, WINDOW_FROM + 3):
        cp.checkpoint_sequential(model, 2, torch.randn(8, 64), use_reentrant=False).sum().backward()
        for _ in range(2):
            cp.checkpoint_sequential(model, 2, torch.randn(8, 64), use_reentrant=False).sum().backward()
            line = _line() - 1
        p.on_step(step)
    p.finish(None)
    [r] = [r for r in rec.records if isinstance(r, Checkpointed)]
    assert r.site is not None and r.site.endswith(f"test_checkpointing.py:{line}"), r.site
