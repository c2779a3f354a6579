"""Host memory evidence: the run's footprint, headroom, and growth that projects exhaustion."""

from __future__ import annotations

from gpubottle.analysis.samples import Samples
from gpubottle.evidence import (
    FillingBuffer,
    GraphGrowth,
    HeapGrowth,
    KeptGrowth,
    LeakEvidence,
    MemoryEvidence,
)
from gpubottle.wire import LeakCensus, MemSample

MIN_GROWTH_SAMPLES = 10


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares slope and R^2."""
    return pooled_fit([list(zip(xs, ys))])


def pooled_fit(segments: list[list[tuple[float, float]]]) -> tuple[float, float]:
    """Least-squares slope and R^2 within segments, each about its own means: a level that steps
    up between segments (memory an evaluation pass rose to, kept by the allocator after it) is not
    growth; what rises inside each segment is."""
    sxx = syy = sxy = 0.0
    for seg in segments:
        if len(seg) < 2:
            continue
        mx = sum(x for x, _ in seg) / len(seg)
        my = sum(y for _, y in seg) / len(seg)
        sxx += sum((x - mx) ** 2 for x, _ in seg)
        syy += sum((y - my) ** 2 for _, y in seg)
        sxy += sum((x - mx) * (y - my) for x, y in seg)
    if sxx == 0:
        return 0.0, 0.0
    return sxy / sxx, (sxy * sxy) / (sxx * syy) if syy > 0 else 0.0


def training_growth(segments: list[list[tuple[float, float]]]) -> tuple[float, float]:
    """The lesser of two lines, with its R^2: the rise within the training's segments (a level an
    evaluation pass stepped up to is no growth) and the rise across them (memory each checkpoint or
    evaluation gives back, rising again after it, is a sawtooth: it climbs inside every segment and
    goes nowhere). Growth that projects exhaustion must do both."""
    within = pooled_fit(segments)
    if len(segments) < 2:
        return within
    across = pooled_fit([[p for seg in segments for p in seg]])
    return across if across[0] < within[0] else within


def _segments(points: list[tuple[float, float]], outside: list[tuple[float, float]]
              ) -> list[list[tuple[float, float]]]:
    """The points split where they fall in `outside` spans (sorted), those points left out."""
    out: list[list[tuple[float, float]]] = [[]]
    for t, y in points:
        if any(a <= t <= b for a, b in outside):
            if out[-1]:
                out.append([])
            continue
        out[-1].append((t, y))
    return [seg for seg in out if seg]


def memory_evidence(
    samples: Samples, main_pid: int, workers: set[int], window_start: float | None,
    window_end: float | None = None, outside: list[tuple[float, float]] | None = None,
) -> MemoryEvidence:
    """`outside`: the spans outside the training steps (evaluation passes, checkpoints), whose own
    memory is not the training's growth."""
    rows = samples.mem
    ev = MemoryEvidence(samples=len(rows))
    if not rows:
        return ev
    tree, mains, works, avail, used = [], [], [], [], []
    for r in rows:
        tree.append(sum(v[0] for v in r.procs.values()))
        mains.append(sum(v[0] for p, v in r.procs.items() if int(p) == main_pid))
        works.append(sum(v[0] for p, v in r.procs.items() if int(p) in workers))
        avail.append(int(r.available))
        used.append(int(r.cgroup_current) if (r.cgroup_limit and r.cgroup_current is not None)
                    else int(r.total) - int(r.available))
    last = rows[-1]
    total, cg_lim = int(last.total), last.cgroup_limit
    ev.total_bytes = total
    ev.limit_bytes = int(cg_lim) if cg_lim else total
    ev.limit_source = "cgroup" if cg_lim else "physical"
    ev.peak_tree_bytes = max(tree)
    ev.peak_main_bytes = max(mains)
    ev.peak_workers_bytes = max(works) if any(works) else None
    # Each worker's own memory (USS: pages no other process shares), at its highest: a worker
    # holding its own copy of the dataset (spawned, or forked and copying on read) shows here.
    own = [(sum(v[1] for p, v in r.procs.items() if int(p) in workers),
            sum(1 for p in r.procs if int(p) in workers)) for r in rows]
    per = [b / n for b, n in own if n]
    ev.per_worker_private_peak_bytes = int(max(per)) if per else None
    ev.min_available_bytes = min(avail)
    ev.peak_used_fraction = max(used) / ev.limit_bytes if ev.limit_bytes else None
    swaps = [int(r.swap) for r in rows]
    ev.swap_used_peak_bytes = max(swaps)
    ev.swap_growth_bytes = swaps[-1] - swaps[0]
    # Growth of the run's own footprint over the measured steps (after warm-up, before exit, while
    # the main process was there to measure): a leak or an unbounded cache.
    idx = [
        i for i, r in enumerate(rows)
        if (window_start is None or r.t >= window_start)
        and (window_end is None or r.t <= window_end)
        and str(main_pid) in r.procs
    ]
    if len(idx) >= MIN_GROWTH_SAMPLES:
        pts = [(float(rows[i].t), float(tree[i])) for i in idx]
        slope, r2 = training_growth(_segments(pts, outside or []) or [pts])
        ev.growth_bytes_per_s = slope
        ev.growth_r2 = r2
        ev.growth_span_s = round(pts[-1][0] - pts[0][0], 3)
        # The rise over the span's last third alone: a buffer that filled and stopped is flat there.
        tail = [p for p in pts if p[0] >= pts[-1][0] - ev.growth_span_s / 3]
        if len(tail) >= 4:
            ev.growth_tail_bytes_per_s = pooled_fit([tail])[0]
        ev.growth_with_workers = any(int(p) in workers for i in idx for p in rows[i].procs)
        headroom = ev.limit_bytes - used[-1]
        if slope > 0 and headroom > 0:
            ev.projected_exhaustion_s = headroom / slope
        _worker_growth(ev, rows, idx, workers, main_pid)
    step = max(1, len(rows) // 300)
    ev.series = [
        [round(float(rows[i].t), 3), float(tree[i]), float(avail[i])] for i in range(0, len(rows), step)
    ]
    return ev


def _worker_growth(ev: MemoryEvidence, rows: list[MemSample], idx: list[int], workers: set[int],
                   main_pid: int) -> None:
    """The DataLoader workers' private memory (USS) over the measured steps, and what the main
    process held before they started. A forked worker shares its parent's pages until it writes to
    them; reading Python objects writes their reference counts, so a worker that reads a dataset
    of Python objects copies it page by page, up to all of it."""
    pts = [(float(rows[i].t), float(sum(v[1] for p, v in rows[i].procs.items() if int(p) in workers)))
           for i in idx if any(int(p) in workers for p in rows[i].procs)]
    if len(pts) >= MIN_GROWTH_SAMPLES:
        slope, r2 = linear_fit([t for t, _ in pts], [b for _, b in pts])
        ev.workers_growth_bytes_per_s, ev.workers_growth_r2 = slope, r2
        ev.workers_growth_span_s = round(pts[-1][0] - pts[0][0], 3)
        ev.workers_private_bytes = int(pts[-1][1])
    before = [sum(v[0] for p, v in r.procs.items() if int(p) == main_pid) for r in rows
              if not any(int(p) in workers for p in r.procs)]
    ev.main_before_workers_bytes = int(max(before)) if before else None


def leak_evidence(censuses: list[LeakCensus]) -> LeakEvidence | None:
    """The group of tensors that grew most between the first two censuses, if any grew."""
    if len(censuses) < 2:
        return None
    first, second = sorted(censuses, key=lambda c: c.n)[:2]
    before = {str(k): (int(b), int(n)) for k, b, n in first.groups}
    best = None
    for k, b, n in second.groups:
        b0, n0 = before.get(str(k), (0, 0))
        if int(b) - b0 > 0 and (best is None or int(b) - b0 > best[1]):
            best = (str(k), int(b) - b0, int(n) - n0, int(b))
    if best is None:
        return None
    return LeakEvidence(label=best[0], grown_bytes=best[1], grown_count=best[2],
                        steps=max(0, int(second.step) - int(first.step)),
                        seconds=round(float(second.t) - float(first.t), 3), holder=second.holder,
                        total_bytes=best[3],
                        census_cost_s=round(max(float(first.cost_s), float(second.cost_s)), 4),
                        graph=second.graph)


# Allocators that return freed memory to the system, as LD_PRELOAD names them.
PRELOADS = ("jemalloc", "tcmalloc_minimal", "tcmalloc")


def preloads_found() -> list[str]:
    """The ones this machine has (the linker's cache, as ctypes finds libraries): the fix can then
    name a file that is there, not one to install."""
    import ctypes.util

    found: list[str] = []
    for name in PRELOADS:
        try:
            lib = ctypes.util.find_library(name)
        except Exception:
            lib = None
        if lib and not any(f.startswith(f"lib{name.split('_')[0]}") for f in found):
            found.append(lib)
    return found


def heap_growth(censuses: list[LeakCensus], found: list[str] | None = None) -> HeapGrowth | None:
    """glibc malloc's account between the first two censuses that read it: how much of what the
    run grew by it keeps free and how much it handed out."""
    read = sorted((c for c in censuses if c.heap and len(c.heap) >= 4), key=lambda c: c.n)
    if len(read) < 2:
        return None
    a, b = read[0], read[1]
    ha, hb = [int(x) for x in a.heap or []], [int(x) for x in b.heap or []]
    wraps = len(hb) > 4 and bool(hb[4])  # mallinfo's 32-bit fields: growth modulo 2**32

    def grew(now: int, then: int) -> int:
        d = now - then
        return (d + (1 << 31)) % (1 << 32) - (1 << 31) if wraps else d

    return HeapGrowth(
        seconds=round(float(b.t) - float(a.t), 3), steps=max(0, int(b.step) - int(a.step)),
        heap_grown_bytes=grew(hb[0] + hb[1], ha[0] + ha[1]), free_grown_bytes=grew(hb[3], ha[3]),
        used_grown_bytes=grew(hb[2] + hb[1], ha[2] + ha[1]), free_bytes=hb[3], heap_bytes=hb[0],
        preloads=preloads_found() if found is None else found)


def filling_buffers(censuses: list[LeakCensus]) -> list[FillingBuffer]:
    """The bounded buffers the latest census that saw any was filling (deques with a maxlen, and
    datasets' caches by sample index), with the pace they filled at where the census before it
    counted them too."""
    seen = sorted((c for c in censuses if c.filling), key=lambda c: c.n)
    out: list[FillingBuffer] = []
    before = {str(b[0]): (int(b[1]), float(c.t)) for c in seen[:-1] for b in c.filling or []}
    for last in seen[-1:]:
        for row in last.filling or []:
            holder, items, maxlen, size = row[:4]
            kind = row[4] if len(row) > 4 else None  # (a deque's row has none)
            b = FillingBuffer(str(holder), int(items), int(maxlen), int(size), float(last.t), int(last.step),
                              by_dataset=kind == "dataset",
                              capacity=str(row[6]) if kind == "capacity" and len(row) > 6 else None)
            prior = before.get(b.holder)
            # its length at the first census
            if kind is not None and len(row) > 5 and row[5] is not None and len(censuses) > 1:
                first = min(censuses, key=lambda c: c.n)
                prior = (int(row[5]), float(first.t))
            if prior is not None and last.t > prior[1] and b.items > prior[0]:
                b.items_per_s = round((b.items - prior[0]) / (float(last.t) - prior[1]), 3)
            out.append(b)
    return out


def kept_growth(censuses: list[LeakCensus]) -> KeptGrowth | None:
    """The script's container that grew most between the first two censuses, as the second saw it."""
    first_two = sorted(censuses, key=lambda c: c.n)[:2]
    if len(first_two) < 2 or not first_two[1].kept:
        return None
    a, b = first_two
    name, items, added, size, item = (b.kept or [])[:5]
    return KeptGrowth(str(name), int(items), int(added), int(size), str(item),
                      seconds=round(float(b.t) - float(a.t), 3), steps=max(0, int(b.step) - int(a.step)))


def graph_growth(censuses: list[LeakCensus]) -> GraphGrowth | None:
    """The tensor whose autograd graph grew between the first two censuses, where the second
    named what holds it (it names one only where the graph grew)."""
    first_two = sorted(censuses, key=lambda c: c.n)[:2]
    if len(first_two) < 2 or not first_two[1].chain or not first_two[0].chain:
        return None
    a, b = first_two
    nodes, capped, label, holder, where, spans = (b.chain or [])[:6]
    if not holder:
        return None
    return GraphGrowth(str(holder), str(label), int((a.chain or [0])[0]), int(nodes), bool(capped),
                       bool(spans), steps=max(0, int(b.step) - int(a.step)),
                       seconds=round(float(b.t) - float(a.t), 3), where=str(where) if where else None)
