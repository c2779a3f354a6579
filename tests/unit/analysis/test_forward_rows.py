"""A row-by-row loop in the model's own forward (analysis/forward_rows.py): a graph layer summing
its edges' messages edge by edge (`for s, d in edges: out[d] = out[d] + msg[s]`), named from the
forward's samples at its `for`, with whether it writes rows in place; a loop over a dict's items,
a forward with no loop, or a loop holding under half the forward are not."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.forward_rows import ROW_WRITES, forward_row_loop
from gpubottle.analysis.row_loops import row_loop_at, writes_rows
from gpubottle.analysis.stacks import Frame
from gpubottle.rules.compute.decide import forward_loop_cost

SCRIPT = """import torch


class GraphLayer(torch.nn.Module):
    def forward(self, h, edges):
        msg = self.lin(h)
        out = torch.zeros_like(msg)
        for s, d in edges:
            out[d] = out[d] + msg[s]
        rows = []
        for i in order:
            rows.append(msg[i] * 2)
        for k, v in self.extra.items():
            h[k] = v
        return out
"""
MODULE = "/usr/lib/python3/site-packages/torch/nn/modules/module.py"
GRAPH = "/usr/lib/python3/site-packages/torch/autograd/graph.py"


def _forward(path: str, line: int) -> list[Frame]:
    return [Frame("<module>", path, 40), Frame("Module._call_impl", MODULE, 1750),
            Frame("GraphLayer.forward", path, line)]


def _backward(path: str) -> list[Frame]:
    return [Frame("<module>", path, 42), Frame("_engine_run_backward", GRAPH, 829)]


def _script(tmp_path: Path) -> str:
    path = str(tmp_path / "gnn.py")
    Path(path).write_text(SCRIPT)
    return path


def test_a_loop_whose_items_index_rows_is_a_row_loop_only_where_asked(tmp_path: Path) -> None:
    path = _script(tmp_path)
    assert row_loop_at(path, 9) is None  # (outside a forward a subscript may be a dict's)
    assert row_loop_at(path, 9, any_index=True) == (8, "for s, d in edges:")
    assert row_loop_at(path, 12, any_index=True) == (11, "for i in order:")
    assert row_loop_at(path, 14, any_index=True) is None  # a dict's items
    assert writes_rows(path, 8) and not writes_rows(path, 11) and not writes_rows(path, 99)


def test_the_forwards_loop_is_named_with_its_share_and_its_writes(tmp_path: Path) -> None:
    path = _script(tmp_path)
    stacks = [_forward(path, 9)] * 8 + [_forward(path, 6)] * 2 + [_backward(path)] * 30
    found = forward_row_loop(stacks)
    assert found is not None and found.function == "GraphLayer.forward"
    assert found.location.endswith("gnn.py:8") and found.row_loop == found.location
    assert found.row_loop_text == "for s, d in edges:" and found.kind == ROW_WRITES
    assert found.share == 0.2  # 8 of 40 samples
    other = forward_row_loop([_forward(path, 12)] * 3 + [_forward(path, 6)])
    assert other is not None and other.kind is None and other.location.endswith("gnn.py:11")
    assert forward_row_loop([_forward(path, 9)] * 4 + [_forward(path, 6)] * 5) is None  # under half
    assert forward_row_loop([_forward(path, 6)] * 5 + [_backward(path)] * 5) is None
    assert forward_row_loop([]) is None


def test_the_loops_cost_takes_backward_in_proportion_to_its_part_of_the_forward() -> None:
    assert forward_loop_cost(0.1, 0.1, 0.8) == 0.9
    assert abs(forward_loop_cost(0.05, 0.1, 0.5) - 0.3) < 1e-9
    assert forward_loop_cost(0.2, 0.0, 0.5) == 0.2


MASKED = """import torch


class TinyLM(torch.nn.Module):
    def forward(self, x):
        T = x.shape[1]
        mask = torch.zeros(T, T)
        for i in range(T):
            for j in range(i + 1, T):
                mask[i, j] = float("-inf")
        return self.enc(self.emb(x), mask=mask)
"""


def test_a_mask_filled_entry_by_entry_is_an_element_fill_at_its_outer_for(tmp_path: Path) -> None:
    """A causal mask built entry by entry at every call (causal_mask_loop.py): its writes index
    elements, not rows, so no row loop holds it; named as ELEMENT_FILL at the outer `for`,
    whatever its part of the forward (rules/compute weighs its share of the step)."""
    from gpubottle.analysis.element_writes import fill_loop
    from gpubottle.analysis.forward_rows import ELEMENT_FILL

    path = str(tmp_path / "lm.py")
    Path(path).write_text(MASKED)
    assert row_loop_at(path, 10, any_index=True) is None
    assert fill_loop(path, 10) == (8, "for i in range(T):") and fill_loop(path, 11) is None
    stacks = [_forward(path, 10)] * 3 + [_forward(path, 11)] * 7 + [_backward(path)] * 10
    found = forward_row_loop(stacks)
    assert found is not None and found.kind == ELEMENT_FILL and found.location.endswith("lm.py:8")
    assert found.share == 0.15 and found.row_loop_text == "for i in range(T):"
    # A row loop holding most of the forward is named before a fill
    gnn = _script(tmp_path)
    rows = forward_row_loop([_forward(gnn, 9)] * 6 + [_forward(path, 10)] * 2)
    assert rows is not None and rows.kind == ROW_WRITES


VALUES = """import math
import torch


def embed(t, dim):
    rows = []
    for ti in t.tolist():
        row = []
        for i in range(dim // 2):
            row.append(math.sin(ti * math.exp(-i)))
            row.append(math.cos(ti * math.exp(-i)))
        rows.append(row)
    return torch.tensor(rows)


class Net(torch.nn.Module):
    def forward(self, x, t):
        mask = torch.tensor([[j > i for j in range(8)] for i in range(8)])
        kept = []
        for v in x:
            kept.append(v * 2)
        return self.lin(x) + embed(t, 8)
"""


def test_values_made_as_python_numbers_are_named_at_their_outer_for_or_their_call(tmp_path: Path) -> None:
    """A tensor's values made one at a time as Python numbers and then built by torch.tensor (a
    sinusoidal embedding by math.sin, a mask as a comprehension of comparisons): VALUES_LOOP, at
    the outermost `for` that fills the lists (the conversion's own line counted with it) or at the
    call whose comprehension makes them, with what makes each value. A loop appending to a list
    no tensor is built from is not; nor a line outside it."""
    from gpubottle.analysis.forward_rows import VALUES_LOOP
    from gpubottle.analysis.list_tensor import per_value, values_loop

    path = str(tmp_path / "diff.py")
    Path(path).write_text(VALUES)
    for line in (7, 8, 10, 11, 12, 13):
        assert values_loop(path, line) == (7, "for ti in t.tolist():"), line
    assert values_loop(path, 5) is None and values_loop(path, 21) is None  # no list a tensor reads
    assert values_loop(path, 18) == (18, "mask = torch.tensor([[j > i for j in range(8)] for i in range(8)])")
    assert values_loop(path, 23) is None
    assert set(per_value(path, 7).split(", ")) == {"math.sin", "math.cos", "math.exp"}
    assert per_value(path, 18) == "comparisons"
    emb = [Frame("<module>", path, 40), Frame("Module._call_impl", MODULE, 1750),
           Frame("Net.forward", path, 22), Frame("embed", path, 10)]
    found = forward_row_loop([emb] * 6 + [_forward(path, 22)] * 4 + [_backward(path)] * 10)
    assert found is not None and found.kind == VALUES_LOOP and found.function == "embed"
    assert found.location.endswith("diff.py:7") and found.share == 0.3
    assert found.per_value is not None and "math.sin" in found.per_value


def test_an_embedding_looked_up_and_reduced_per_sample_is_a_bag(tmp_path) -> None:
    """probes/inner_calls.py's repeated record of an nn.Embedding called once per sample from a
    line that takes each lookup's mean (or sum): what nn.EmbeddingBag does at once. A lookup kept
    whole (a sequence's embeddings), or called a few times, is not."""
    from gpubottle.analysis.forward_loops import bag_lookups

    (tmp_path / "m.py").write_text(
        "vecs = torch.stack([self.emb(torch.tensor(ids)).mean(0) for ids in batch])\n"
        "tot = [torch.sum(self.tok(x), 0) for x in xs]\n"
        "seqs = [self.emb(torch.tensor(ids)) for ids in batch]\n")
    records = [["Embedding", "self.emb", "m.py:1", 128, [12], None],
               ["Embedding", "self.tok", "m.py:2", 64, [9], None],
               ["Embedding", "self.emb", "m.py:3", 128, [12], None],
               ["Embedding", "self.emb", "m.py:1", 4, [12], None],
               ["Linear", "self.emb", "m.py:1", 128, [12], None]]
    found = bag_lookups(records, str(tmp_path))
    assert [(b.name, b.site, b.calls, b.mode) for b in found] == [
        ("self.emb", "m.py:1", 128, "mean"), ("self.tok", "m.py:2", 64, "sum")]
