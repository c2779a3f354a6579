"""analysis/onehot_lookup.py on sources: an embedding lookup written as a one-hot matrix product is
found at the product, through the names it assigns or inline, by `@`, matmul or einsum; one_hot
made for a loss's targets (an elementwise product, a label smoothing) is not a lookup."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.onehot_lookup import onehot_lookup, onehot_products
from gpubottle.analysis.stacks import Frame

SOURCE = """import torch
import torch.nn.functional as F


class Bow(torch.nn.Module):
    def forward(self, ids):
        onehot = F.one_hot(ids, 100).float()
        vecs = onehot @ self.emb
        return vecs.mean(1)


def inline(ids, w):
    return torch.matmul(torch.nn.functional.one_hot(ids, 50).to(w.dtype), w)


def by_einsum(ids, w):
    oh = F.one_hot(ids, 50).float()
    return torch.einsum("blv,vd->bld", oh, w)


def targets(logits, y):
    t = F.one_hot(y, 10).float() * 0.9 + 0.01
    return -(t * logits.log_softmax(-1)).sum(-1).mean()
"""


def test_one_hot_products_are_found_at_the_product_and_targets_are_not(tmp_path: Path) -> None:
    path = tmp_path / "bow.py"
    path.write_text(SOURCE)
    found = {(name, line): lines for name, line, lines in onehot_products(str(path))}
    assert set(found) == {("Bow.forward", 8), ("inline", 13), ("by_einsum", 18)}, found
    assert found[("Bow.forward", 8)] == {7, 8}


def test_the_share_is_the_main_threads_samples_at_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "bow.py"
    path.write_text(SOURCE)
    module = Frame("<module>", str(path), 30)
    at = [[module, Frame("Bow.forward", str(path), line)] for line in (7, 8, 9)]
    found = onehot_lookup(at[0:1] * 3 + at[1:2] * 5 + at[2:3] * 2)
    assert found is not None and found.function == "Bow.forward" and found.share == 0.8, found
    assert found.location.endswith("bow.py:8")
    assert onehot_lookup(at[2:3] * 4) is None
