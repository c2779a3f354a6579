"""GPU evidence from a trace's collected data: where the device's time went within the steps."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import Any

from gpubottle.evidence import CopyEvidence, GpuEvidence, SyncEvidence
from gpubottle.trace.breakdown import Breakdown
from gpubottle.trace.collect import TraceData
from gpubottle.trace.kernels import kernel_mix, short_kernel_name, unclassified_share
from gpubottle.trace.ranges import Ranges, intersect, merge, merge_in_place, overlap, subtract, total


def _idle_split(d: TraceData, steps: Ranges) -> tuple[float, float]:
    """GPU idle time inside the steps: (nothing submitted yet = waiting on the host, work submitted
    but not running = gaps between kernels). Device work is walked once in start order into busy
    periods held in arrays, each gap before one marked by whether its next work was launched after
    the device fell idle; no list of tuples as long as the trace's kernels is built."""
    on_device = set(d.dev_corr)  # only the launches of device work: a fraction of the runtime calls
    launch = {c: s for c, s in zip(d.rt_corr, d.rt_start) if c in on_device}
    del on_device
    starts, ends, corrs = d.dev_start, d.dev_end, d.dev_corr
    busy_s, busy_e = array("d"), array("d")
    host_gap = array("b")  # per busy period after the first: was the gap before it the host's?
    busy_until = float("-inf")
    for i in sorted(range(len(starts)), key=starts.__getitem__):
        s, e = starts[i], ends[i]
        if not busy_s or s > busy_until:
            if busy_s:
                host_gap.append(launch.get(corrs[i], s) > busy_until)
            busy_s.append(s)
            busy_e.append(e)
            busy_until = e
        elif e > busy_until:
            busy_until = busy_e[-1] = e
    del launch

    def gaps(host: bool) -> Iterator[tuple[float, float]]:
        return ((busy_e[k], busy_s[k + 1]) for k in range(len(host_gap)) if host_gap[k] == host)

    merged_steps = merge(list(steps))
    # Idle before the first work and after the last one inside a step is waiting on the host too.
    edges: Ranges = []
    for s, e in merged_steps:
        first = bisect_right(busy_e, s)  # the first busy period that ends inside or after the step
        last = bisect_left(busy_e, e, first)  # ... and the last that starts before its end
        if last >= len(busy_s) or busy_s[last] >= e:
            last -= 1
        if last < first:
            edges.append((s, e))
            continue
        lo, hi = max(s, busy_s[first]), min(e, busy_e[last])
        if lo > s:
            edges.append((s, lo))
        if hi < e:
            edges.append((hi, e))
    # Host gaps and edges overlap where a gap crosses a step's start or end: count that once.
    host = overlap(gaps(True), merged_steps) + total(edges) - overlap(gaps(True), edges)
    between = overlap(gaps(False), merged_steps)
    return host, between


def _sync_bubbles(syncs: Ranges, host_steps: Ranges, device: Ranges) -> Ranges:
    """The device's idle time that the steps' own synchronising calls cause: from when the device
    drained during the call to when work reached it again after the call returned (the host had
    nothing queued). A sync while the device stays busy (a GPU-bound loop with .item() every step)
    costs nothing; one issued outside the steps' host spans (the profiler's flush when its window
    closes) is not the loop's."""
    out: Ranges = []
    ends = [e for _s, e in device]
    for s, e in sorted(syncs):
        k = bisect_right(host_steps, (s, float("inf"))) - 1
        if k < 0 or s >= host_steps[k][1]:
            continue  # not called from inside a step
        i = bisect_right(ends, e)  # the first busy period still running, or starting, after the call
        if i < len(device) and device[i][0] <= e:
            continue  # the device was still busy when the call returned: no bubble
        drained = device[i - 1][1] if i > 0 else s
        nxt = device[i][0] if i < len(device) else host_steps[k][1]
        lo = max(drained, s)
        if nxt > lo:
            out.append((lo, nxt))
    return merge(out)


def gpu_evidence(d: TraceData, bd: Breakdown, meta: dict[str, Any]) -> GpuEvidence | None:
    steps = bd.steps
    if not steps:
        return None
    step_total = sum(e - s for s, e in steps)
    ev = GpuEvidence(source="trace", steps=len(steps), dropped_tail_steps=bd.dropped_tail_steps,
                     uses_gpu=bd.uses_gpu or d.kernels > 0)
    props = meta.get("deviceProperties") or []
    if props and isinstance(props, list) and isinstance(props[0], dict):
        ev.device_name = props[0].get("name")
        mem = props[0].get("totalGlobalMem")
        ev.total_memory_bytes = int(mem) if mem else None
        if props[0].get("computeMajor") is not None:
            ev.compute_capability = f"{props[0].get('computeMajor')}.{props[0].get('computeMinor', 0)}"
    if step_total <= 0:
        return ev
    shares = bd.shares()
    ev.step_s = bd.avg_step_us * 1e-6
    ev.breakdown = {k: round(v, 6) for k, v in shares.items()}
    comm = bd.role_ranges["communication"]
    if comm:
        comm_in = intersect(comm, merge(list(steps)))
        ev.communication_share = total(comm_in) / step_total
        # Overlap with compute: kernels on a GPU, CPU ops in a CPU-only trace.
        compute = bd.role_ranges["kernel"] or bd.role_ranges.get("cpu_op", [])
        overlap = total(intersect(comm_in, compute))
        ev.communication_overlap = overlap / total(comm_in) if total(comm_in) > 0 else None
    if not ev.uses_gpu:
        return ev
    ev.kernel_share = shares.get("kernel")
    mm, mix, top = kernel_mix(d.kernel_us)
    if d.kernel_us:
        ev.matmul_share, ev.matmul_precision = mm, mix
        ev.top_kernels = [[short_kernel_name(n), s] for n, s in top]
        ev.unclassified_kernel_share = unclassified_share(d.kernel_us)
    device = merge(bd.role_ranges["kernel"] + bd.role_ranges["memcpy"] + bd.role_ranges["memcpy_device"]
                   + bd.role_ranges["memset"] + bd.role_ranges["communication"])
    busy = total(intersect(merge(list(steps)), device))
    ev.idle_share = max(0.0, 1 - busy / step_total)
    host, between = _idle_split(d, steps)
    ev.idle_host_share = host / step_total
    ev.idle_between_share = between / step_total
    ev.copy_share = shares.get("memcpy")
    ev.device_copy_share = shares.get("memcpy_device") if d.device_copies else None
    ev.copies = [
        CopyEvidence(direction=k.split()[0], memory=k.split()[1], count=v.count,
                     seconds=round(v.seconds, 6), bytes=v.bytes or None)
        for k, v in sorted(d.copies.items(), key=lambda kv: -kv[1].seconds)
    ]
    host_steps = merge(sorted((s, e) for s, e, _n in d.steps))
    # The loop's own wait for data after a sync is the input's cost, not the sync's.
    bubbles = subtract(_sync_bubbles(d.sync_spans.pairs(), host_steps, device),
                       merge_in_place(d.roles["dataloader"].pairs()))
    ev.sync_share = total(intersect(bubbles, merge(list(steps)))) / step_total
    ev.syncs = [SyncEvidence(call=k, count=v.count, seconds=round(v.seconds, 6))
                for k, v in sorted(d.syncs.items(), key=lambda kv: -kv[1].seconds)]
    if d.peak_allocated:
        ev.peak_allocated_bytes = int(max(d.peak_allocated.values()))
        ev.allocated_relative = d.allocated_relative
    if d.peak_reserved:
        ev.peak_reserved_bytes = int(max(d.peak_reserved.values()))
    return ev
