"""A tensor whose autograd graph grows across steps (`running += loss`), in-process: the census
finds it by its graph's size, tells one graph across the steps from a graph that is only larger,
names what holds it and the line that adds to it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch

from gpubottle.probes import graph_growth, leaks
from gpubottle.probes.graph_growth import adds_to, largest_graph
from gpubottle.probes.leaks import LeakProbe
from gpubottle.wire import LeakCensus

MODEL = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


def _loss() -> torch.Tensor:
    loss = MODEL(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    return loss


def _unrolled(n: int) -> torch.Tensor:
    """A loss over a loop unrolled n times: a larger graph for a longer input, kept by nothing."""
    h = torch.zeros(1, 8)
    for _ in range(n):
        h = torch.tanh(MODEL[0](h))
    return h.sum()


def test_the_running_sum_has_the_largest_graph_and_holds_the_first_root():
    running = _loss()
    for _ in range(20):
        running += _loss()
    first = largest_graph([running])
    assert first is not None and first.tensor is running and first.nodes > 20 * 5
    root = first.root
    for _ in range(30):
        running += _loss()
    last = _loss()
    big = largest_graph([last, running, torch.zeros(3)], mark=root)
    assert big is not None and big.tensor is running and big.spans and not big.capped
    assert big.nodes > first.nodes + 30 * 5


def test_a_graph_that_is_only_larger_holds_nothing_of_the_first():
    short = _unrolled(5)
    first = largest_graph([short])
    long = _unrolled(60)
    big = largest_graph([long], mark=first.root if first else None)
    assert big is not None and big.nodes > (first.nodes if first else 0) + 100 and not big.spans


def test_the_walk_stops_at_its_cap(monkeypatch):
    monkeypatch.setattr(graph_growth, "NODES_CAP", 50)
    running = _loss()
    for _ in range(40):
        running += _loss()
    big = largest_graph([running])
    assert big is not None and big.capped and 50 <= big.nodes <= 55  # (a node's inputs all counted)


def test_a_capped_walk_goes_down_the_sum_first_and_still_finds_the_first_root(monkeypatch):
    """Each step's graph wider than the cap allows for (an unrolled loop's), the sum's own chain
    walked first: the first census's root is reached before the walk stops."""
    monkeypatch.setattr(graph_growth, "NODES_CAP", 400)
    running = _unrolled(50)
    first = largest_graph([running])
    assert first is not None
    for _ in range(30):
        running = running + _unrolled(50)
    big = largest_graph([running], mark=first.root)
    assert big is not None and big.capped and big.spans


def test_the_line_that_adds_to_it_is_found_in_the_function(tmp_path):
    src = tmp_path / "train.py"
    src.write_text("def other():\n    running += 1\n\n"
                   "def main():\n    running = 0.0\n    for x in data:\n        running = running + x\n\n"
                   "class T:\n    def step(self, loss):\n        self.total += loss\n")
    assert adds_to(str(src), "running", "main") == 7
    assert adds_to(str(src), "running", None) == 2  # at module level: the first in the file
    assert adds_to(str(src), "total", None) == 11
    assert adds_to(str(src), "nothing", "main") is None
    assert adds_to(str(tmp_path / "gone.py"), "running", "main") is None


def test_two_censuses_name_the_running_sum_and_its_line(tmp_path, monkeypatch):
    """Through the census: the second names the local that keeps every step's graph."""
    clock = [1000.0]
    monkeypatch.setattr(leaks, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    records: list[object] = []
    probe = LeakProbe(SimpleNamespace(emit=records.append), str(tmp_path / "census-request"))  # type: ignore[arg-type]
    running = torch.zeros(())
    for step in range(300):  # (from step 150, ~1,200 nodes, its graph is the heap's largest)
        loss = _loss()
        running += loss  # the line the fix names
        if step in (150, 299):
            clock[0] += 60
            probe.census_now(step)
    censuses = [r for r in records if isinstance(r, LeakCensus)]
    rows = [c.chain for c in censuses]
    assert len(rows) == 2 and all(rows), rows
    first, second = rows
    nodes, capped, label, holder, where, spans = second  # type: ignore[misc]
    assert label == "() float32 cpu" and spans == 1 and not capped and nodes > first[0] + 100 * 5  # type: ignore[index]
    assert holder == ("running (a local Tensor in "
                      "test_two_censuses_name_the_running_sum_and_its_line, "
                      "tests/unit/probes/test_graph_growth.py)")
    source = Path(__file__).read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if text.endswith("# the line the fix names"))
    assert where == f"tests/unit/probes/test_graph_growth.py:{line}"
    assert first[3] is None and first[4] is None  # type: ignore[index]


def test_an_earlier_value_of_the_sum_that_a_list_keeps_is_named_by_the_sum_and_its_line():
    """`running = running + loss; history.append(running)`: the census may pick one of history's
    items (bound to no variable) as the largest graph; the variable whose running sum holds it is
    named, with its line, where the fix goes. A tensor no variable's graph holds is not."""
    history = []
    running = torch.zeros(())
    for _ in range(40):
        running = running + _loss()  # the sum's line
        history.append(running)
    found = graph_growth.named(history[20])
    source = Path(__file__).read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if text.endswith("# the sum's line"))
    assert found == ("running (a local Tensor in test_an_earlier_value_of_the_sum_that_a_list_keeps_is_named_"
                     "by_the_sum_and_its_line, tests/unit/probes/test_graph_growth.py)",
                     f"tests/unit/probes/test_graph_growth.py:{line}"), found
    alone = graph_growth.named([_loss()][0])  # (outside the assert: pytest binds its parts)
    assert alone is None
