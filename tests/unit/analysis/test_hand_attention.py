"""Attention written by hand (analysis/hand_attention.py): a softmax of q @ k^T whose probabilities
are multiplied by v, however the script spells the products (`@`, matmul, bmm, einsum) and
through the names it assigns; not a softmax over x @ W (a gate, a classifier), not the probabilities
alone, not a function already calling scaled_dot_product_attention. Its share: the main thread's
samples at those statements."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.hand_attention import attention_lines, hand_attention
from gpubottle.analysis.stacks import Frame

SOURCE = '''import math
import torch
import torch.nn.functional as F


class Attn(torch.nn.Module):
    def forward(self, q, k, v, mask):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        return y


def einsum_att(q, k, v):
    s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.size(-1))
    p = s.softmax(dim=-1)
    p = F.dropout(p, 0.1)
    return torch.einsum("bhij,bhjd->bhid", p, v)


def bmm_att(q, k, v):
    w = torch.bmm(q, k.transpose(1, 2))
    return torch.bmm(torch.softmax(w, dim=2), v)


def gate(x, W, experts):
    gates = F.softmax(x @ W, dim=-1)
    return gates @ experts


def probs_only(q, k):
    return (q @ k.transpose(-1, -2)).softmax(-1)


def fused(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class ModuleSoftmax(torch.nn.Module):
    def forward(self, q, k, v):
        w = self.softmax(torch.matmul(q, k.transpose(-1, -2)))
        return torch.matmul(self.drop(w), v)
'''


def _write(tmp_path: Path) -> str:
    path = tmp_path / "model.py"
    path.write_text(SOURCE)
    return str(path)


def test_the_spellings_of_attention_are_found_and_a_gate_or_probabilities_alone_are_not(tmp_path: Path):
    found = {name: (line, sorted(lines)) for name, line, lines in attention_lines(_write(tmp_path))}
    assert found == {"Attn.forward": (10, [8, 9, 10, 11]), "einsum_att": (17, [16, 17, 19]),
                     "bmm_att": (24, [23, 24]), "ModuleSoftmax.forward": (42, [42, 43])}, found
    assert attention_lines(str(tmp_path / "missing.py")) == ()


def test_the_share_is_of_the_samples_at_its_statements_innermost(tmp_path: Path):
    path = _write(tmp_path)
    torch_fn = Frame("softmax", "/venv/lib/python3.11/site-packages/torch/nn/functional.py", 2140)
    top = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", path, 60)]
    at = [[*top, Frame("Attn.forward", path, line), torch_fn] for line in (8, 10, 11)]
    elsewhere = [*top, Frame("Attn.forward", path, 12)]
    found = hand_attention(at * 2 + [elsewhere] * 4)
    assert found is not None and found.function == "Attn.forward", found
    assert found.location.endswith("model.py:10") and found.share == 0.6
    # The forward's samples elsewhere only: none.
    assert hand_attention([elsewhere] * 5) is None and hand_attention([]) is None
