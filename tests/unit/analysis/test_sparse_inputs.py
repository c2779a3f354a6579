"""A large argument of the model's call that is almost all zeros (probes/sparse_args.py, on real
tensors), and where the module's forward multiplies it (analysis/sparse_inputs.py, on source): the
argument's text at the call and the product's line; said by the rule only with that line."""

from __future__ import annotations

from pathlib import Path

import torch

from gpubottle.analysis.sparse_inputs import sparse_inputs
from gpubottle.evidence import SparseInput
from gpubottle.probes.sparse_args import sparse_args
from gpubottle.rules.compute.sparse_input import mostly_zeros_fix, said

SOURCE = """import torch


class GCN(torch.nn.Module):
    def forward(self, adj, x):
        h = torch.relu(adj @ self.l1(x))
        norm = adj
        return torch.mm(norm, self.l2(h))


out = model(A_hat, X)
"""


def test_an_argument_mostly_zeros_is_recorded_and_a_dense_or_small_one_is_not() -> None:
    adj = torch.zeros(1200, 1200)
    adj[torch.arange(1200), torch.arange(1200)] = 1.0
    found = sparse_args((adj, torch.randn(1200, 8), torch.randn(1200, 1200)))
    assert found == [[0, [1200, 1200], round(1 / 1200, 6)]]
    assert sparse_args((torch.zeros(100, 100),)) is None  # (too small to matter)
    assert sparse_args((adj.requires_grad_(),)) is None  # (a parameter's gradient: not said)


def test_the_forward_line_that_multiplies_it_and_its_text_at_the_call(tmp_path: Path) -> None:
    (tmp_path / "gcn.py").write_text(SOURCE)
    [s] = sparse_inputs([["GCN", "gcn.py:11", 0, [6000, 6000], 0.0018]], ["model"], str(tmp_path))
    assert (s.argument, s.multiplied_at) == ("A_hat", "gcn.py:6"), s
    assert said([s]) is s and "A_hat = A_hat.to_sparse_csr()" in mostly_zeros_fix(s).text
    [x] = sparse_inputs([["GCN", "gcn.py:11", 1, [6000, 64], 0.001]], ["model"], str(tmp_path))
    assert x.multiplied_at is None and said([x]) is None  # (x is no operand of a product)
    assert said([SparseInput("GCN", "gcn.py:11", 0, [6000, 6000], 0.04, "A_hat", "gcn.py:6")]) is None
