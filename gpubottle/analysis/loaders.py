"""DataLoaders as the script used them: one entry per construction site and configuration (a loader
built anew every epoch is one loader built N times), and the waits that were workers starting.

A loader's first batch after its iterator starts carries the workers' start-up (with spawn: a new
interpreter that imports the script and torch), unless its workers persist from an earlier epoch.
That wait is told apart from the steady wait for batches: the fixes differ (keep the workers alive,
vs load faster).
"""

from __future__ import annotations

import statistics
from collections import Counter

from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import LoaderInfo
from gpubottle.wire import Batch

_CONFIG = ("site", "num_workers", "batch_size", "dataset_class", "persistent_workers", "start_method",
           "pin_memory", "prefetch_factor", "iterable", "rebuilt_by")


def _key(cfg: dict[str, object]) -> tuple[object, ...]:
    return tuple(cfg.get(k) for k in _CONFIG)


def loader_infos(ev: ChildEvents, eval_batches: set[int] | None = None, off_loop: set[int] | None = None
                 ) -> tuple[list[LoaderInfo], dict[int, int]]:
    """Loader groups, and the group of each loader id (the probes' numbering). `eval_batches`: the
    id() of batches drawn in evaluation passes, counted apart from the training's; `off_loop`:
    those fetched on another thread than the loop's."""
    eval_batches = eval_batches or set()
    off_loop = off_loop or set()
    fetches: dict[int, list[float]] = {}
    groups: dict[tuple[object, ...], LoaderInfo] = {}
    group_of: dict[int, int] = {}
    for lid, cfg in sorted(ev.loaders.items()):
        known = {k: v for k, v in cfg.items() if k in LoaderInfo.__dataclass_fields__}
        key = _key(cfg) if cfg.get("site") else ("id", lid)
        info = groups.get(key)
        if info is None:
            info = groups[key] = LoaderInfo(**{**known, "id": lid})
        else:
            info.builds += 1
        group_of[lid] = info.id
    by_id = {info.id: info for info in groups.values()}

    def info_for(lid: int) -> LoaderInfo:
        gid = group_of.get(lid)
        if gid is None:  # an iterator or batch from a loader whose construction was not recorded
            by_id[lid] = LoaderInfo(id=lid)
            group_of[lid] = gid = lid
        return by_id[gid]

    sites: dict[int, Counter[str]] = {}
    for it in ev.iters:
        info = info_for(int(it.loader))
        info.iterators += 1
        if it.t0 is not None:
            info.iter_build_s = round(info.iter_build_s + max(0.0, float(it.t) - float(it.t0)), 6)
        if it.site:
            sites.setdefault(info.id, Counter())[it.site] += 1
        info.iter_cycled = info.iter_cycled or bool(it.cycled)
        for p in it.worker_pids or []:
            if p not in info.worker_pids:
                info.worker_pids.append(int(p))
    previous_first: dict[int, bool] = {}
    for b, first in _with_first_flags(ev):
        info = info_for(int(b.loader))
        if id(b) in eval_batches:
            info.eval_batches += int(not b.ended)
            continue
        if not b.ended:
            info.batches += 1
            if id(b) in off_loop:
                fetches.setdefault(info.id, []).append(b.t1 - b.t0)
            else:
                info.fetch_s += float(b.t1 - b.t0)
        if first and not previous_first.get(int(b.loader)):  # the epoch's very first batch
            info.first_batch_waits_s.append(round(b.t1 - b.t0, 6))
        previous_first[int(b.loader)] = first
    for leaves in ev.batch_leaves:
        info = info_for(int(leaves.loader))
        if info.batch_tensors is None and int(leaves.tensors) >= 0:
            info.batch_tensors, info.batch_objects = int(leaves.tensors), int(leaves.objects)
            info.batch_bytes = int(leaves.nbytes) if leaves.nbytes is not None else None
            info.batch_padding = list(leaves.padding) if leaves.padding else None
        if leaves.padding:
            info.padded_lengths.append(int(leaves.padding[1]))
    for gid, counts in sites.items():
        by_id[gid].iter_site = counts.most_common(1)[0][0]
    for gid, waits in fetches.items():
        if 2 * len(waits) > by_id[gid].batches:  # most of its batches: a loader the loop never calls
            by_id[gid].off_loop_fetch_s = round(statistics.median(waits), 6)
    for info in by_id.values():
        info.fetch_s = round(info.fetch_s, 6)
    return [by_id[k] for k in sorted(by_id)], group_of


def _with_first_flags(ev: ChildEvents) -> list[tuple[Batch, bool]]:
    """Each batch, and whether it is among the first its loader delivered after an iterator started:
    one per worker (each worker's first batch waits for that worker's start), or just the first
    without workers."""
    workers = {int(lid): int(cfg.get("num_workers") or 0) for lid, cfg in ev.loaders.items()}
    starts = sorted((float(it.t), int(it.loader)) for it in ev.iters)
    si = 0
    pending: dict[int, int] = {}  # loader -> first batches still to come
    out = []
    for b in sorted(ev.batches, key=lambda b: b.t0):
        while si < len(starts) and starts[si][0] <= b.t0:
            lid = starts[si][1]
            pending[lid] = max(1, workers.get(lid, 0))
            si += 1
        lid = int(b.loader)
        first = pending.get(lid, 0) > 0
        if first:
            pending[lid] -= 1
        out.append((b, first))
    return out


def start_up_waits(ev: ChildEvents, loaders: list[LoaderInfo], group_of: dict[int, int],
                   intervals: list[tuple[float, float]], eval_batches: set[int] | None = None
                   ) -> list[float]:
    """Per step: the part of its input wait that was workers stopping and starting again: an epoch's
    first batches from a loader with workers (one per worker, after the loader's first start, which
    happens whatever the settings) beyond the loader's usual wait, and the fetch that ends an epoch
    by stopping the workers."""
    by_id = {info.id: info for info in loaders}
    restarts: list[tuple[float, float, float]] = []  # t0, t1, seconds beyond the usual wait
    usual: dict[int, float] = {}
    flagged = [(b, f) for b, f in _with_first_flags(ev) if id(b) not in (eval_batches or set())]
    for gid in by_id:
        ordinary = sorted(b.t1 - b.t0 for b, first in flagged if not first and not b.ended
                          and group_of.get(int(b.loader)) == gid)
        usual[gid] = ordinary[len(ordinary) // 2] if ordinary else 0.0
    seen_start: dict[int, int] = {}  # group -> first batches of its very first start still to skip
    last_end = {group_of.get(int(b.loader)): b for b, _f in flagged if b.ended}
    for b, first in flagged:
        group = group_of.get(int(b.loader))
        loader = by_id.get(group) if group is not None else None
        if group is None or loader is None or not loader.num_workers:
            continue
        # The fetch that ends an epoch stops the workers (joins them) unless they persist: the other
        # half of starting them again. The run's last one happens whatever the settings.
        if b.ended and not (loader.persistent_workers and loader.builds == 1) and (
                last_end.get(group) is not b):
            restarts.append((b.t0, b.t1, b.t1 - b.t0))
            continue
        if not first:
            continue
        gid = group
        left = seen_start.setdefault(gid, loader.num_workers)
        if left > 0:  # the loader's first start happens whatever its settings
            seen_start[gid] = left - 1
            continue
        if loader.persistent_workers and loader.builds == 1:
            continue  # its later epochs reuse the same workers: nothing starts again
        extra = (b.t1 - b.t0) - usual.get(gid, 0.0)
        if extra > 0:
            restarts.append((b.t0, b.t1, extra))
    out = [0.0] * len(intervals)
    j = 0
    for i, (lo, hi) in enumerate(intervals):
        while j < len(restarts) and restarts[j][1] <= lo:
            j += 1
        k = j
        while k < len(restarts) and restarts[k][0] < hi:
            t0, t1, extra = restarts[k]
            out[i] += extra * max(0.0, min(t1, hi) - max(t0, lo)) / max(1e-9, t1 - t0)
            k += 1
    return out
