"""A gradient the script differentiates again (create_graph=True), read from its source
(analysis/double_backward.py): torch.compile's backward refuses it, so the faster-math fix offers
torch.compile only on the modules that gradient does not pass through, naming the line."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.double_backward import double_backward
from gpubottle.rules.compute.words import compile_call, faster_math

PENALTY = """import torch


def penalty(critic, x):
    x.requires_grad_(True)
    (g,) = torch.autograd.grad(critic(x).sum(), x,
                               create_graph=True)
    return g.pow(2).mean()
"""


def test_a_gradient_asked_with_create_graph_is_found_at_its_call(tmp_path: Path) -> None:
    (tmp_path / "gp.py").write_text(PENALTY)
    (tmp_path / "plain.py").write_text("import torch\nloss.backward(create_graph=False)\n"
                                       "torch.autograd.grad(y, x, retain_graph=True)\n")
    (tmp_path / "hvp.py").write_text("import torch\n\nloss.backward(create_graph=flag)\n")
    assert double_backward(["plain.py", "gp.py"], str(tmp_path)) == "gp.py:6"
    assert double_backward(["plain.py"], str(tmp_path)) is None  # create_graph=False: once
    assert double_backward(["hvp.py"], str(tmp_path)) == "hvp.py:3"  # a variable may be True
    assert double_backward([None, "missing.py", "cell [3]"], str(tmp_path)) is None


def test_torch_compile_is_offered_only_off_that_gradients_path() -> None:
    said = compile_call(["G", "D"], twice="gp.py:6")
    assert "G = torch.compile(G)" not in said and "gp.py:6" in said and "double backward" in said
    text = faster_math(True, names=["G", "D"], twice="gp.py:6")
    assert "only on modules the gradient at gp.py:6 does not pass through" in text
    assert "bfloat16 autocast" in text  # (autocast differentiates twice: measured on a WGAN-GP loop)
    assert compile_call(["G", "D"]).startswith("torch.compile on each module the step calls (G = ")
