"""Gradients cleared before they were used: in the zero_grad window (probes/zero_grads.py), the
backward passes, zero_grad() calls and optimizer steps in time order. A backward's gradients are
used by the next optimizer step; a zero_grad() before that step clears every backward since the
last step. A loop that accumulates over 4 micro-batches and zeroes before each backward clears 3 of
every 4; one that zeroes right after its step (or before its one backward) clears none."""

from __future__ import annotations

from collections import Counter

from gpubottle.collect.events import ChildEvents
from gpubottle.evidence.account import GradsDiscarded


def grads_discarded(ev: ChildEvents) -> GradsDiscarded | None:
    if not ev.zero_grads:
        return None
    w = ev.zero_grads[0]
    t0, t1 = float(w.t0), float(w.t1)
    # (ties: a step before a zero_grad at the same instant; a backward's end before either)
    events = sorted([(float(b.t1), 0, None) for b in ev.backwards if t0 <= float(b.t1) <= t1]
                    + [(float(s.t), 1, None) for s in ev.opt_steps if t0 <= float(s.t) <= t1]
                    + [(float(t), 2, site) for t, site in w.calls if t0 <= float(t) <= t1],
                    key=lambda e: (e[0], e[1]))
    backwards = discarded = steps = pending = 0
    sites: Counter[str | None] = Counter()
    for _, kind, site in events:
        if kind == 0:
            backwards += 1
            pending += 1
        elif kind == 1:
            steps += 1
            pending = 0
        else:
            if pending:
                discarded += pending
                sites[site] += pending
            pending = 0
    if steps == 0:
        return None
    kept = bool(w.kept and w.kept[0])
    return GradsDiscarded(backwards, discarded, steps, sites.most_common(1)[0][0] if sites else None,
                          kept, w.kept[1] if kept and w.kept else None)
