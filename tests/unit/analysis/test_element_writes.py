"""Statements that write a tensor one element at a time at the index of the loops around them
(analysis/element_writes.py), read from a real file; and the kind the stacks then say."""

from __future__ import annotations

from gpubottle.analysis.element_writes import element_write
from gpubottle.analysis.source_kinds import element_write_kind
from gpubottle.analysis.work_kinds import ELEMENT_WRITES, remedy, wasted

_SOURCE = """import numpy as np
import torch
import torch.nn.functional as F


def pad(ids):
    out = torch.zeros(len(ids), 300, dtype=torch.long)
    for i, x in enumerate(ids):
        for j, v in enumerate(x):
            out[i, j] = v
    return out


def grid(rows):
    g = np.empty((4, 4))
    for r in range(4):
        for c in range(4):
            g[r][c] += rows[r][c]
    return g


def listed(xs):
    kept = [0] * len(xs)
    for i, x in enumerate(xs):
        kept[i] = x
    first = torch.zeros(3)
    first[0] = xs[0]
    return kept, first


def batch(imgs, n):
    buf = torch.zeros(n, 3, 32, 32)
    for k in range(n):
        buf[k] = imgs[k].flip(-1)
    vals = torch.empty(len(imgs))
    for k in range(n):
        vals[k] = imgs[k].mean()
    named = torch.empty(n)  # (n may hold a shape: not assumed one-dimensional)
    for k in range(n):
        named[k] = imgs[k].mean()
    shaped = torch.zeros(imgs.shape)
    for k in range(n):
        shaped[k] = imgs[k]
    full = torch.full((n, 4), -1.0)
    for k in range(n):
        for c in range(4):
            full[k, c] = k
    return buf, vals, shaped, full


def padded(seqs):
    out = torch.zeros(len(seqs), 120, 16)
    for i, s in enumerate(seqs):
        for t in range(len(s)):
            out[i, t] = s[t]
    return out


def pairs(z, x):
    sim = torch.zeros(len(z), len(z))
    dist = torch.zeros(len(x), len(x))
    for i in range(len(z)):
        for j in range(len(z)):
            sim[i, j] = F.cosine_similarity(z[i], z[j], dim=0) / 0.1
            dist[i, j] = (x[i] - x[j]).norm()
    return sim, dist


def rows_at_once(ids, base):
    out = base.new_zeros(len(ids), 300)
    for i, x in enumerate(ids):
        out[i, :len(x)] = torch.tensor(x)
    return out
"""


def test_element_writes_at_the_loops_index_into_made_tensors_and_nothing_else(tmp_path):
    path = tmp_path / "collate.py"
    path.write_text(_SOURCE)
    lines = _SOURCE.splitlines()

    def at(text: str) -> int:
        return next(i for i, s in enumerate(lines, 1) if text in s)

    assert element_write(str(path), at("out[i, j] = v")) == "out[i, j]"
    assert element_write(str(path), at("g[r][c] += ")) == "g[r][c]"  # numpy, augmented
    assert element_write(str(path), at("kept[i] = x")) is None  # a list: not a tensor op
    assert element_write(str(path), at("first[0] = xs[0]")) is None  # not at a loop's index
    assert element_write(str(path), at("out[i, :len(x)]")) is None  # a row in one op: the remedy
    assert element_write(str(path), at("def pad")) is None
    # A sample a write into a batch is one op a sample, not an element's: as many indices as the
    # made tensor's dimensions, or two where its shape is not written out.
    assert element_write(str(path), at("buf[k] = ")) is None
    # A value a call computes from the loops' rows is a row computation (imgs.mean(dim=(1, 2, 3)),
    # all pairs in one op: analysis/row_loops), not a fill: a similarity matrix filled pair by pair
    # took 5.5 s of training where zn @ zn.T took ~0.2 s (backward ran each pair's nodes).
    assert element_write(str(path), at("vals[k] = ")) is None
    assert element_write(str(path), at("sim[i, j] = ")) is None
    assert element_write(str(path), at("dist[i, j] = ")) is None
    assert element_write(str(path), at("shaped[k] = ")) is None
    assert element_write(str(path), at("named[k] = ")) is None
    assert element_write(str(path), at("full[k, c] = k")) == "full[k, c]"
    # Two loops' variables: a sample's time steps written one row at a time into a 3-D batch,
    # where out[i, :len(s)] = s writes them in one op (a padding collate: 5.0 s -> 3.2 s a run)
    assert element_write(str(path), at("out[i, t] = s[t]")) == "out[i, t]"
    assert element_write(str(tmp_path / "missing.py"), 3) is None
    assert element_write_kind(str(path), at("out[i, j] = v")) == ELEMENT_WRITES
    assert "out[i, :len(x)] = torch.tensor(x)" in (remedy(ELEMENT_WRITES) or "")
    assert wasted(ELEMENT_WRITES)  # (its remedy comes before more workers)
    # A write that adds to the element (`g[r][c] += ...`, a confusion matrix's `cm[t, p] += 1`):
    # its positions may repeat, so its remedy adds them up in one op (bincount, accumulate=True),
    # at every step (counted every 10th step it would count a tenth)
    from gpubottle.analysis.element_writes import element_added
    from gpubottle.analysis.work_kinds import ELEMENT_ADDS, every_step

    assert element_added(str(path), at("g[r][c] += ")) and not element_added(str(path), at("out[i, j] = v"))
    assert element_write_kind(str(path), at("g[r][c] += ")) == ELEMENT_ADDS
    assert "torch.bincount" in (remedy(ELEMENT_ADDS) or "")
    assert wasted(ELEMENT_ADDS) and every_step(ELEMENT_ADDS)
