"""A tensor that keeps every step's autograd graph (`running += loss`): named as the growth's cause
with the line that adds to it where its graph holds the first census's (or both walks stopped at
their cap); not a graph that is only larger at the second look; from the census records through
the analysis."""

from __future__ import annotations

from factories import evidence

from gpubottle.analysis.memory import graph_growth
from gpubottle.evidence import Evidence, GraphGrowth, MemoryEvidence
from gpubottle.rules import diagnose
from gpubottle.rules.memory.decide import decide_host_memory
from gpubottle.wire import LeakCensus

HOLDER = "running (a local Tensor in main, train.py)"


def _ev(g: GraphGrowth | None) -> Evidence:
    e = evidence(memory=MemoryEvidence(
        samples=100, total_bytes=16 << 30, limit_bytes=16 << 30, limit_source="physical",
        peak_tree_bytes=2 << 30, peak_used_fraction=0.2, growth_bytes_per_s=15 << 20, growth_r2=0.99,
        projected_exhaustion_s=900.0, growth_span_s=30.0, censuses=2,
        series=[[float(t), 0.0, 0.0] for t in range(100)]))
    assert e.memory is not None
    e.memory.graph = g
    return e


def _g(before: int = 1_200, nodes: int = 2_800, capped: bool = False, spans: bool = True) -> GraphGrowth:
    return GraphGrowth(HOLDER, "() float32 cpu", before, nodes, capped, spans, steps=160, seconds=20.0,
                       where="train.py:48")


def test_a_graph_held_across_the_steps_is_the_growths_named_cause_with_its_line():
    f = next(x for x in diagnose(_ev(_g())).findings if x.category == "oom-risk")
    assert f.open_question is None  # explained: not "nothing seen explains the growth"
    assert any(e.text.startswith(f"{HOLDER} holds one autograd graph across the steps: it grew from "
                                 "1,200 to 2,800 nodes in 160 steps (about 10 a step)") for e in f.evidence)
    assert f.fixes[0].where == "train.py:48"
    assert f.fixes[0].text.startswith("running adds tensors that carry their autograd graph (grad_fn) "
                                      "every step: add loss.item() (a number) instead")
    capped = decide_host_memory(_ev(_g(before=30_000, nodes=30_000, capped=True, spans=False)))
    assert capped is not None and capped.graph is not None  # both walks stopped at the cap


def test_a_graph_only_larger_or_barely_grown_is_not_named():
    for g in (_g(spans=False), _g(nodes=1_250), None):
        d = decide_host_memory(_ev(g))
        assert d is not None and d.graph is None and d.unexplained
        f = next(x for x in diagnose(_ev(g)).findings if x.category == "oom-risk")
        assert f.open_question is not None and f.open_question.startswith("nothing seen explains")


def test_the_census_rows_become_the_evidence_only_where_the_second_named_a_holder():
    def census(n: int, step: int, chain: list[object] | None) -> LeakCensus:
        return LeakCensus(n, step, 100.0 + 10 * n, 0.1, [], None, chain=chain)

    first = census(1, 40, [1_200, 0, "() float32 cpu", None, None, 0])
    g = graph_growth([census(2, 200, [2_800, 0, "() float32 cpu", HOLDER, "train.py:48", 1]), first])
    assert g == GraphGrowth(HOLDER, "() float32 cpu", 1_200, 2_800, False, True, 160, 10.0, "train.py:48")
    assert graph_growth([first, census(2, 200, [1_300, 0, "() float32 cpu", None, None, 0])]) is None
    assert graph_growth([first]) is None
    assert graph_growth([census(1, 40, None), census(2, 90, [900, 0, "x", HOLDER, None, 0])]) is None


def test_the_graphs_fix_comes_before_a_fragmenting_heaps_allocators_and_is_said_once():
    """A running sum's graphs pinning a fragmenting heap (tests/scripts/fixes/graph_pins_heap.py,
    measured when written, plain python: 556 MiB/min as written, 38 MiB/min with
    MALLOC_MMAP_THRESHOLD_=131072 at 64 ms a step against 42, none with loss.item() at 42 ms): the
    script's fix first, the allocators after it. The census's tensors kept by the same name as the
    graph: one fix, not two; kept by another name (a list of the sum's values): both, the graph's
    first."""
    from gpubottle.evidence import HeapGrowth, LeakEvidence

    def fixes(leak_holder: str) -> list[str]:
        e = _ev(_g())
        assert e.memory is not None
        e.memory.heap = HeapGrowth(seconds=7.0, steps=167, heap_grown_bytes=72 << 20,
                                   free_grown_bytes=66 << 20, used_grown_bytes=6 << 20,
                                   free_bytes=66 << 20, heap_bytes=400 << 20)
        e.memory.leak = LeakEvidence("() float32 cpu", 167 << 10, 167, 167, 7.0, holder=leak_holder,
                                     graph="() float32 cpu")
        f = next(x for x in diagnose(e).findings if x.category == "oom-risk")
        assert "most of it memory malloc keeps" in f.summary, f.summary
        return [x.text for x in f.fixes]

    same = fixes(HOLDER)
    assert same[0].startswith("running adds tensors that carry their autograd graph")
    assert same[1].startswith("run it with an allocator") and "MALLOC_MMAP_THRESHOLD_" in same[2]
    assert len(same) == 3
    other = fixes("history (train.py, a module-level list)")
    assert other[0].startswith("running adds tensors") and other[1].startswith("history keeps a () float32")
    assert other[2].startswith("run it with an allocator")
