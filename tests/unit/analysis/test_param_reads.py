"""A model written as tensors (analysis/param_reads.py): the names bound to tensors that require
grad or given to an optimizer, and the lines and functions that read them, which the loop's own
time leaves to the model."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.loop_time import named_time
from gpubottle.analysis.param_reads import parameter_names, reads_parameters
from gpubottle.analysis.stacks import Frame

SOURCE = """import torch
W1 = torch.randn(8, 8).requires_grad_()
b1 = torch.zeros(8, requires_grad=True)
W2 = torch.nn.Parameter(torch.randn(8, 2))
V = torch.randn(8, 8)
E = torch.zeros(8, requires_grad=False)
extra = [E]
opt = torch.optim.SGD([W1, b1, W2] + extra, lr=0.1)
opt2 = torch.optim.SGD(extra, lr=0.1)


def fwd(x):
    h = torch.relu(x @ W1 + b1)
    return h @ W2


def stats(x):
    return x.mean().item()


for step in range(10):
    x = torch.randn(4, 8)
    h = torch.relu(x @ W1 + b1)
    z = x @ V
    m = stats(z)
"""


def test_parameter_names_and_the_lines_that_read_them(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(SOURCE)
    p = str(path)
    assert parameter_names(p) == {"W1", "b1", "W2", "E"}  # (E: the list passed to an optimizer)
    assert reads_parameters(p, 23) and not reads_parameters(p, 24) and not reads_parameters(p, 25)
    assert reads_parameters(p, 13, function=True) and not reads_parameters(p, 18, function=True)
    assert not reads_parameters(str(tmp_path / "missing.py"), 3)


def test_the_loop_time_leaves_the_tensor_models_forward_to_the_model(tmp_path: Path) -> None:
    """A forward written as the loop's own line, or as a function it calls, was named "the loop's
    own code outside the model" (38% of a 5.5-ms step) and told to be made cheaper."""
    path = tmp_path / "model.py"
    path.write_text(SOURCE)
    p = str(path)
    top = [Frame("_run_code", "<frozen runpy>", 88)]
    line = [*top, Frame("<module>", p, 23)]
    func = [*top, Frame("<module>", p, 24), Frame("fwd", p, 13)]
    helper = [*top, Frame("<module>", p, 25), Frame("stats", p, 18)]
    named = {s.function for s in named_time([line] * 30 + [func] * 30 + [helper] * 20)}
    assert named == {"stats"}, named
