"""Start-up's items in the run's account: Python and gpubottle starting, `import torch`, a pass over
a loader before training, the first batch (its workers starting), and what the main thread's
stacks show for the rest (other imports, the user's own functions)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpubottle.analysis.phases import Span, Timeline, merge, overlap, subtract
from gpubottle.analysis.stack_names import startup_items
from gpubottle.analysis.stacks import ThreadSamples
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import LoaderInfo
from gpubottle.evidence.account import PREPASS

# Batches drawn before the training's first, at least this many: a pass over a loader (one is a
# peek at a batch's shapes).
PREPASS_MIN_BATCHES = 2


def timed_stacks(ts: ThreadSamples | None) -> list[tuple[float, list[Any]]]:
    return list(zip(ts.times, ts.stacks)) if ts is not None else []


def startup_parts(ev: ChildEvents, tl: Timeline, spans: list[Span], main: ThreadSamples | None,
                  loaders: list[LoaderInfo], own_known: bool = False
                  ) -> tuple[dict[str, float], dict[str, str]]:
    """Start-up's items: Python and gpubottle starting, `import torch`, the first batch (workers
    starting), and what the main thread's stacks show for the rest (other imports, the user's own
    functions: a dataset parsing every file in __init__)."""
    total = sum(b - a for a, b in spans)
    parts: dict[str, float] = {}
    sites_first: dict[str, str] = {}
    known: list[Span] = []
    if ev.start is not None:
        # (gpubottle's part already out of `spans` where its span is known: Python's own start left)
        label = "Python starting" if own_known else "Python and gpubottle starting"
        parts[label] = overlap(tl.launch, float(ev.start.t), spans)
        known.append((tl.launch, float(ev.start.t)))
    t = ev.torch
    if t is not None and t.import_t0 is not None and t.import_t1 is not None:
        parts["import torch"] = overlap(float(t.import_t0), float(t.import_t1), spans)
        known.append((float(t.import_t0), float(t.import_t1)))
    intervals = ev.clock.intervals()
    if intervals:
        # Batches drawn before the training's first (a pass over a loader that no backward
        # followed: class weights, the inputs' statistics): each sample loaded an extra time.
        # (of one loader: zipped loaders draw one batch each before the first backward)
        before = [b for b in ev.batches if b.t1 <= intervals[0][0] and not b.ended]
        most = Counter(b.loader for b in before).most_common(1)
        early = sorted((b for b in before if most and b.loader == most[0][0]), key=lambda b: b.t0)
        if len(early) >= PREPASS_MIN_BATCHES:
            # (where that pass began iterating it, else where the loader was built)
            began = [i for i in ev.iters if i.loader == early[0].loader and i.t <= early[0].t0 and i.site]
            site = (max(began, key=lambda i: i.t).site if began else
                    next((lo.site for lo in loaders if lo.id == early[0].loader and lo.site), None))
            name = f"{PREPASS} ({len(early)} batches)"
            parts[name] = overlap(float(early[0].t0), float(early[-1].t1), spans)
            known.append((float(early[0].t0), float(early[-1].t1)))
            if site:
                sites_first[name] = site
    if intervals and tl.loop_from > intervals[0][0]:
        workers = max((lo.num_workers or 0 for lo in loaders if lo.batches), default=0)
        many = f"{workers} workers" if workers != 1 else "its worker"
        name = f"first batch ({many} starting)" if workers else "first batch"
        parts[name] = overlap(intervals[0][0], tl.loop_from, spans)
        known.append((intervals[0][0], tl.loop_from))
    rest_spans = subtract(spans, merge(known))
    rest = sum(b - a for a, b in rest_spans)
    sites: dict[str, str] = dict(sites_first)
    items = startup_items([st for t0, st in timed_stacks(main) if any(a <= t0 <= b for a, b in rest_spans)])
    named = 0.0
    for name, site, share in items[:3]:
        parts[name] = parts.get(name, 0.0) + rest * share
        named += rest * share
        if site:
            sites[name] = site
    if rest - named > 0.001 * max(total, 1e-9):
        parts["other"] = rest - named
    return {k: round(v, 4) for k, v in parts.items() if v > 0}, sites
