"""Host memory's oom-risk finding, said: its facts, summary and fixes."""

from __future__ import annotations

from gpubottle.evidence import Evidence, GraphGrowth, HeapGrowth, KeptGrowth, LeakEvidence
from gpubottle.report import Fact, Fix
from gpubottle.rules.memory import buffers
from gpubottle.rules.memory import decide as md
from gpubottle.rules.memory import worker_words as copies_words
from gpubottle.rules.memory.decide import HostMemory
from gpubottle.units import duration, gib, pct


def leak_words(leak: LeakEvidence) -> tuple[Fact, Fix]:
    """What piled up, and where it is kept (host or GPU memory alike)."""
    rate = f", about {leak.grown_count / leak.steps:.1f} per step" if leak.steps else ""
    if leak.graph and leak.graph == leak.label and leak.holder:
        # The kept tensors carry their graphs themselves (history.append(loss)): their own bytes
        # are a few; the graphs' nodes and what those hold are the memory that grows.
        fact = Fact(f"tensors of {leak.label} with their autograd graphs (grad_fn) grew by "
                    f"{leak.grown_count} in {leak.steps} steps{rate}, held in {leak.holder}: each "
                    "keeps its step's graph alive, its nodes and any activations backward did not "
                    f"free (a graph retained or never backpropagated), beyond their own "
                    f"{gib(leak.grown_bytes)}", "leak_bytes", leak.grown_bytes)
        keep = ("loss.item() (a number) or loss.detach()" if leak.label.startswith("()") else
                "its .detach() (the values without the graph)")
        return fact, Fix(text=f"{leak.holder.split(' ')[0]} keeps a {leak.label} tensor with its "
                         f"autograd graph (grad_fn) every step: keep {keep} instead")
    if leak.graph and leak.holder:
        # Nothing of the script's holds them: autograd graphs it keeps do (a loss appended with
        # its grad_fn, its graph retained), each with the step's saved activations.
        held = (f", kept by the autograd graphs of {leak.graph} tensors (with grad_fn) held in "
                f"{leak.holder}")
    else:
        held = f", held in {leak.holder}" if leak.holder else ""
    fact = Fact(f"tensors of {leak.label} referenced from Python grew by {leak.grown_count} "
                f"({gib(leak.grown_bytes)}) in {leak.steps} steps{rate}{held}",
                "leak_bytes", leak.grown_bytes)
    if leak.graph and leak.holder:
        return fact, Fix(text=f"{leak.holder.split(' ')[0]} keeps a {leak.graph} tensor with its autograd "
                         f"graph (grad_fn), and the graph keeps that step's {leak.label} tensors: "
                         "keep loss.item() (a number) or loss.detach() instead")
    fix = Fix(text=(f"{leak.holder.split(' ')[0]} keeps" if leak.holder else "something keeps")
              + f" a {leak.label} tensor every step: store only what is needed, as a number "
              "(loss.item()) or detached on the CPU, or bound it (a deque with maxlen)")
    return fact, fix


def _reason(d: HostMemory, cause: str) -> str:
    eta = d.growth.exhaustion_s if d.growth is not None else None
    if cause == md.MEMORY_ERROR:
        return "the run died of memory exhaustion"
    if cause == md.OOM_KILLED:
        return "the run was killed (SIGKILL) with memory nearly full: the OOM killer"
    if cause == md.NEAR_LIMIT:
        return f"host memory reached {pct(d.used or 0.0)} of its limit"
    held = " (most of it memory malloc keeps after the script freed it)" if d.fragmented else ""
    if cause == md.GROWS_CRITICAL:
        return f"memory grows{held} and runs out in about {duration(eta or 0.0)}"
    if cause == md.GROWS_WARNING:
        return f"memory grows{held} and would run out in about {duration(eta or 0.0)}"
    assert cause == md.WORKER_COPIES and d.copies is not None
    return copies_words.reason(d.copies)


def summary(d: HostMemory) -> str:
    return "; ".join(_reason(d, c) for c in d.causes)


def facts(d: HostMemory) -> list[Fact]:
    out: list[Fact] = []
    if d.used is not None:
        out.append(Fact(
            f"memory in use peaked at {pct(d.used)} of the {gib(d.limit_bytes)} "
            f"{'cgroup limit' if d.limit_source == 'cgroup' else 'of RAM'}; this run's own share "
            f"(PSS) peaked at {gib(d.peak_tree_bytes or 0)}",
            "host_used_fraction", round(d.used, 4),
        ))
    if d.copies is not None:
        out += copies_words.facts(d.copies)
    g = d.growth
    if g is not None:
        eta = g.exhaustion_s
        out.append(Fact(
            f"the run's memory grows steadily by {gib(g.bytes_per_s * 60)}/min (R^2 {g.r2:.2f})"
            + (f"; at this rate memory runs out in about {duration(eta)}" if eta else ""),
            "growth_bytes_per_s", round(g.bytes_per_s, 1),
        ))
        if eta is not None:
            out.append(Fact(f"{gib(g.min_available_bytes or 0)} was still available at the lowest "
                            "point", "exhaustion_s", round(eta, 1)))
    if d.fragmented is not None:
        out.append(heap_fact(d.fragmented))
    if d.buffer is not None:
        out.append(Fact(buffers.fact(d.buffer), "buffer_full_in_s", round(d.buffer.full_in_s, 1)))
    if d.leak is not None:
        out.append(leak_words(d.leak)[0])
    if d.kept is not None:
        out.append(kept_fact(d.kept))
    if d.graph is not None:
        out.append(graph_fact(d.graph))
    return out


def graph_fact(g: GraphGrowth) -> Fact:
    if not g.capped:
        grew = (f"it grew from {g.nodes_before:,} to {g.nodes:,} nodes in {g.steps} steps"
                + (f" (about {(g.nodes - g.nodes_before) / g.steps:.0f} a step)" if g.steps else ""))
    elif g.spans:
        grew = f"it still holds the graph it had {g.steps} steps before, at least {g.nodes:,} nodes"
    else:
        grew = f"it had at least {g.nodes:,} nodes at both looks, {g.steps} steps apart"
    return Fact(f"{g.holder} holds one autograd graph across the steps: {grew}; every step's "
                "graph stays alive with what its nodes hold, as long as it does", "graph_nodes", g.nodes)


def graph_fix(g: GraphGrowth) -> Fix:
    name = g.holder.split(" ")[0]
    keep = "loss.item() (a number)" if g.label.startswith("()") else "a detached tensor (.detach())"
    return Fix(text=f"{name} adds tensors that carry their autograd graph (grad_fn) every step: add "
               f"{keep} instead, so that each step's graph is freed after its backward",
               where=g.where)


def kept_fact(k: KeptGrowth) -> Fact:
    rate = f", about {k.added / k.steps:.1f} a step" if k.steps else ""
    return Fact(f"{k.holder} gained {k.added:,} items in {k.steps} steps{rate}, each {k.item} "
                f"holding about {gib(k.item_bytes)} ({gib(k.grown_bytes)} in all; {k.items:,} held)",
                "kept_grown_bytes", k.grown_bytes)


def kept_fix(k: KeptGrowth) -> Fix:
    name = k.holder.split(" ")[0]
    bound = ("give it a maxlen" if " deque" in k.holder else
             "or bound it (collections.deque(maxlen=...))")
    return Fix(text=f"{name} keeps {k.item} every step and never lets go: keep only what is needed "
               "(a running sum or mean, the numbers that are reported), write them out as the run "
               f"goes, {bound}")


def heap_fact(h: HeapGrowth) -> Fact:
    """How much of the heap's growth glibc's malloc holds free: what the script freed and it kept."""
    return Fact(
        f"between two looks {duration(h.seconds)} apart ({h.steps} steps) glibc malloc's heap "
        f"grew {gib(max(0, h.heap_grown_bytes))}, {gib(h.free_grown_bytes)} of it memory the "
        "script had freed: the steps' tensors are freed, but blocks the loop keeps (arrays or "
        f"tensors it stores each step: {gib(max(0, h.used_grown_bytes))} more in use) sit inside "
        "the freed spans, so malloc can neither fit the next step's tensors there nor give the "
        "spans back (fragmentation)", "heap_free_grown_bytes", h.free_grown_bytes)


def heap_fixes(h: HeapGrowth) -> list[Fix]:
    """An allocator that gives freed memory back (the one found here, else one to install), and
    glibc's own setting that stops the growth at a cost in speed."""
    lib = h.preloads[0] if h.preloads else None
    preload = (f"LD_PRELOAD={lib} where the job is launched ({lib} is on this machine)" if lib else
               "jemalloc (Debian/Ubuntu: apt install libjemalloc2; conda: conda install -c "
               "conda-forge jemalloc) with LD_PRELOAD=libjemalloc.so.2 where the job is launched")
    return [
        Fix(text=f"run it with an allocator that gives freed memory back: {preload}; it replaces "
            "malloc for the whole process, so compare the memory and the step time (a try)"),
        Fix(text="or keep glibc and set MALLOC_MMAP_THRESHOLD_=131072 in the environment: each "
            "block over 128 KB is then mapped on its own and given back when freed, which stops "
            "this growth, but maps every large tensor anew: steps may be slower (time it)"),
    ]


def _same_holder(leak: LeakEvidence, graph: GraphGrowth | None) -> bool:
    """The census's tensors and the growing graph kept by one name (history.append(running),
    running summing each loss): one fix says it."""
    return graph is not None and leak.holder is not None and leak.graph == leak.label \
        and leak.holder.split(" ")[0] == graph.holder.split(" ")[0]


def fixes(d: HostMemory) -> list[Fix]:
    out: list[Fix] = [copies_words.fix(d.copies)] if d.copies is not None else []
    # The growing graph's fix first: it names the line that adds to it, and a list of the sum's
    # values (history.append(running)) then keeps numbers too.
    kept: list[Fix] = [graph_fix(d.graph)] if d.graph is not None else []
    if d.leak is not None and not _same_holder(d.leak, d.graph):
        kept.append(leak_words(d.leak)[1])
    if d.kept is not None:
        kept.append(kept_fix(d.kept))
    # What the script keeps first where it pins a fragmenting heap: it stops both growths at no
    # cost, where the allocator's fixes leave the kept part growing. Measured on a loop summing
    # each loss with its graph (tests/scripts/fixes/graph_pins_heap.py, plain python, 500 steps):
    # 556 MiB/min as written; MALLOC_MMAP_THRESHOLD_=131072 38 MiB/min at 64 ms a step against 42;
    # loss.item() summed none, at 42 ms.
    out += kept + (heap_fixes(d.fragmented) if d.fragmented is not None else [])
    if d.growth is not None and d.grows and not out:
        out.append(Fix(
            text="find what is kept across steps: tensors appended to lists or summed for logging "
            "(use loss.item() / .detach()), caches without a bound, or a dataset that stores what "
            "it loads",
        ))
    if d.fewer_workers is not None:
        out.append(Fix(
            text=f"each DataLoader worker holds about {gib(d.per_worker_bytes or 0)} of its own: fewer "
            "workers hold less (try it and compare the speed), or keep the dataset in numpy arrays "
            "rather than Python objects, which forked workers share instead of copying",
            where=d.loader_site,
            change={"num_workers": list(d.fewer_workers)},
        ))
    if d.smaller_batch is not None:
        out.append(Fix(
            text="a smaller batch lowers peak memory (use gradient accumulation to keep the "
            "effective batch)",
            where=d.loader_site,
            change={"batch_size": list(d.smaller_batch)},
        ))
    return out


def memory_notes(ev: Evidence) -> list[str]:
    """Growth that levels off below the limit, said why no oom-risk is projected."""
    d = md.leveled_off(ev)
    if d is None or ev.memory is None or not ev.memory.growth_bytes_per_s:
        return []
    return [buffers.note(d, ev.memory.growth_bytes_per_s)]


def unexplained(ev: Evidence) -> str:
    """Why a growth with no seen cause is projected as a line, and what would tell."""
    m = ev.memory
    span = m.growth_span_s if m is not None and m.growth_span_s is not None else None
    over = f"over the {duration(span)} measured" if span else "over a short run"
    looked = ("no tensors referenced from Python piled up between two censuses, none of the "
              "script's lists or dicts filled, no bounded buffer was filling, malloc's heap did not "
              "keep it free" if m is not None and m.censuses >= 2
              else "the run ended before a second census of what the script holds")
    return (f"nothing seen explains the growth: {looked}; what a library keeps (its caches) and "
            "memory outside Python are not counted, and memory that climbs for a while and levels "
            f"off (a cache filling, the allocator settling) looks the same {over}: a longer run "
            "tells")
