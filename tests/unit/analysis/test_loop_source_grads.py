"""A model called once per sample in a loop that also takes each sample's gradients
(analysis/loop_source.grads_per_call): DP-SGD's per-sample gradients, which one batched loss
would sum; a loop that only collects per-sample losses is not it."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.loop_source import grads_per_call

SCRIPT = """import torch

for i in range(len(x)):
    loss = f(model(x[i:i + 1]), y[i:i + 1])
    g = torch.autograd.grad(loss, params)
losses = []
for i in range(len(x)):
    losses.append(f(model(x[i:i + 1]), y[i:i + 1]))
for i in range(len(x)):
    out = model(x[i:i + 1])
    out.sum().backward()
"""


def test_a_loop_taking_gradients_per_call_is_told_from_one_collecting_losses(tmp_path: Path) -> None:
    path = str(tmp_path / "dp.py")
    Path(path).write_text(SCRIPT)
    assert grads_per_call((path, 4))
    assert not grads_per_call((path, 8))
    assert grads_per_call((path, 10))
    assert not grads_per_call((path, 1))  # no loop around it
    assert not grads_per_call((str(tmp_path / "gone.py"), 4))
