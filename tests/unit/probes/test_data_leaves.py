"""The data a model's input is cut from, where it requires grad (probes/data_leaves.py): found
through the input's graph, a module's own weights not; reported only where backward filled its
gradient and no optimizer holds it."""

from __future__ import annotations

import torch
from torch import nn

from gpubottle.probes.data_leaves import data_leaves, filled_rows


def test_the_data_an_indexed_input_is_cut_from_is_found_and_reported_once_filled() -> None:
    X = torch.randn(5000, 8, requires_grad=True)
    lin = nn.Linear(8, 1)
    batch = X[torch.randint(0, 5000, (32,))].float() * 2
    refs = data_leaves(batch, least=1024)
    assert [r() is X for r in refs] == [True]
    names, sites = {1: "model"}, {1: "train.py:20"}
    assert filled_rows({1: refs}, set(), 9, names, sites) == []  # no backward yet: no gradient
    lin(batch).sum().backward()
    rows = filled_rows({1: refs}, set(), 9, names, sites)
    assert rows == [["model", "train.py:20", 40000, 9, 1, 0, 0, 0, 1, None, [5000, 8]]]
    assert filled_rows({1: refs}, {id(X)}, 9, names, sites) == []  # an optimizer holds it: trained


def test_weights_small_tensors_and_inputs_without_a_graph_are_not_data() -> None:
    lin = nn.Linear(64, 64)  # (a model's output fed on: its graph's leaves are Parameters)
    out = lin(torch.randn(4, 64))
    assert data_leaves(out, least=16) == []
    small = torch.randn(10, 3, requires_grad=True)
    assert data_leaves(small[:4], least=1024) == []
    assert data_leaves(torch.randn(4, 4), least=1) == []  # no grad_fn
    assert data_leaves(object(), least=1) == []  # (anything else: nothing, no error)
    # An adversarial perturbation added to the batch (its .grad read by the script) is no dataset
    x, delta = torch.randn(32, 64), torch.zeros(32, 64, requires_grad=True)
    assert data_leaves(x + delta, least=16) == []
