"""Host memory evidence: the run's footprint, headroom, and growth that projects exhaustion."""

from __future__ import annotations

from typing import Any

from gpubottle.analysis.samples import Samples
from gpubottle.evidence import LeakEvidence, MemoryEvidence

MIN_GROWTH_SAMPLES = 10


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares slope and R^2."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    if sxx == 0:
        return 0.0, 0.0
    slope = sxy / sxx
    r2 = (sxy * sxy) / (sxx * syy) if syy > 0 else 0.0
    return slope, r2


def memory_evidence(
    samples: Samples, main_pid: int, workers: set[int], window_start: float | None,
    window_end: float | None = None,
) -> MemoryEvidence:
    rows = samples.mem
    ev = MemoryEvidence(samples=len(rows))
    if not rows:
        return ev
    tree, mains, works, avail, used = [], [], [], [], []
    for _t, procs, available, total, _swap, cg_cur, cg_lim, _load in rows:
        tree.append(sum(v[0] for v in procs.values()))
        mains.append(sum(v[0] for p, v in procs.items() if int(p) == main_pid))
        works.append(sum(v[0] for p, v in procs.items() if int(p) in workers))
        avail.append(int(available))
        used.append(int(cg_cur) if (cg_lim and cg_cur is not None) else int(total) - int(available))
    last = rows[-1]
    total, cg_lim = int(last[3]), last[6]
    ev.total_bytes = total
    ev.limit_bytes = int(cg_lim) if cg_lim else total
    ev.limit_source = "cgroup" if cg_lim else "physical"
    ev.peak_tree_bytes = max(tree)
    ev.peak_main_bytes = max(mains)
    ev.peak_workers_bytes = max(works) if any(works) else None
    ev.min_available_bytes = min(avail)
    ev.peak_used_fraction = max(used) / ev.limit_bytes if ev.limit_bytes else None
    swaps = [int(r[4]) for r in rows]
    ev.swap_used_peak_bytes = max(swaps)
    ev.swap_growth_bytes = swaps[-1] - swaps[0]
    # Growth of the run's own footprint over the measured steps (after warm-up, before exit, while
    # the main process was there to measure): a leak or an unbounded cache.
    idx = [
        i for i, r in enumerate(rows)
        if (window_start is None or float(r[0]) >= window_start)
        and (window_end is None or float(r[0]) <= window_end)
        and str(main_pid) in r[1]
    ]
    if len(idx) >= MIN_GROWTH_SAMPLES:
        xs = [float(rows[i][0]) for i in idx]
        ys = [float(tree[i]) for i in idx]
        slope, r2 = linear_fit(xs, ys)
        ev.growth_bytes_per_s = slope
        ev.growth_r2 = r2
        headroom = ev.limit_bytes - used[-1]
        if slope > 0 and headroom > 0:
            ev.projected_exhaustion_s = headroom / slope
    step = max(1, len(rows) // 300)
    ev.series = [
        [round(float(rows[i][0]), 3), float(tree[i]), float(avail[i])] for i in range(0, len(rows), step)
    ]
    return ev


def leak_evidence(censuses: list[list[Any]]) -> LeakEvidence | None:
    """The group of tensors that grew most between the first two censuses, if any grew."""
    if len(censuses) < 2:
        return None
    (_, s1, t1, c1, g1, _), (_, s2, t2, c2, g2, holder) = sorted(censuses, key=lambda c: c[0])[:2]
    before = {str(k): (int(b), int(n)) for k, b, n in g1}
    best = None
    for k, b, n in g2:
        b0, n0 = before.get(str(k), (0, 0))
        if int(b) - b0 > 0 and (best is None or int(b) - b0 > best[1]):
            best = (str(k), int(b) - b0, int(n) - n0, int(b))
    if best is None:
        return None
    return LeakEvidence(label=best[0], grown_bytes=best[1], grown_count=best[2],
                        steps=max(0, int(s2) - int(s1)), seconds=round(float(t2) - float(t1), 3),
                        holder=holder, total_bytes=best[3],
                        census_cost_s=round(max(float(c1), float(c2)), 4))
