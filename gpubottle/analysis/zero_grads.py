"""Gradients cleared before they were used: in the zero_grad window (probes/zero_grads.py), the
backward passes, zero_grad() calls and optimizer steps in time order. A backward's gradients are
used by the next optimizer step; a zero_grad() before that step clears every backward since the
last step. A loop that accumulates over 4 micro-batches and zeroes before each backward clears 3 of
every 4; one that zeroes right after its step (or before its one backward) clears none."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpubottle.collect.events import ChildEvents
from gpubottle.evidence.account import GradsDiscarded, GradsForAnother


def grads_discarded(ev: ChildEvents) -> GradsDiscarded | None:
    if not ev.zero_grads:
        return None
    w = ev.zero_grads[0]
    t0, t1 = float(w.t0), float(w.t1)
    # (ties: a step before a zero_grad at the same instant; a backward's end before either)
    events = sorted([(float(b.t1), 0, None) for b in ev.backwards if t0 <= float(b.t1) <= t1]
                    + [(float(s.t), 1, None) for s in ev.opt_steps if t0 <= float(s.t) <= t1]
                    + [(float(c[0]), 2, c[1]) for c in w.calls if t0 <= float(c[0]) <= t1],
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


def grads_for_another(ev: ChildEvents) -> GradsForAnother | None:
    """Per optimizer (several: a GAN's two), in the window's time order: the backward passes that
    filled its watched parameter's gradient, its own steps, and its zero_grad() calls. A zero_grad
    after such passes with no step of its own between cleared them unused; counted where another
    optimizer stepped on that backward (else the one-optimizer reading above holds it). Upstream
    where its gradient was filled after another optimizer's in the same pass (autograd runs from
    the loss back to the inputs: its network fed the other's, and the whole of its backward there
    was for nothing); downstream (the discriminator in the generator's step) its backward was the
    way to the other's gradients. The optimizer with the most cleared, upstream first."""
    if not ev.zero_grads or not ev.zero_grads[0].grads:
        return None
    w = ev.zero_grads[0]
    t0, t1 = float(w.t0), float(w.t1)
    built = {int(o.opt): o.site for o in ev.optimizers}
    stepped = [s for s in ev.opt_steps if t0 <= float(s.t) <= t1]
    grads = [(float(g[0]), int(g[1]), g[2]) for g in w.grads or ()]
    passes = [(float(b.t0), float(b.t1)) for b in ev.backwards if t0 <= float(b.t1) <= t1]
    best: GradsForAnother | None = None
    for opt in sorted({g[1] for g in grads}):
        events = sorted([(t, 0, site) for t, o, site in grads if o == opt]
                        + [(float(s.t), 1, None) for s in stepped if int(s.opt) == opt]
                        + [(float(c[0]), 2, c[1]) for c in w.calls if len(c) > 2 and c[2] == opt],
                        key=lambda e: (e[0], e[1]))
        filled = steps = 0
        pending: list[tuple[float, Any]] = []
        cleared: Counter[tuple[Any, Any]] = Counter()
        upstream = 0
        for t, kind, site in events:
            if kind == 0:
                filled += 1
                pending.append((t, site))
            elif kind == 1:
                steps += 1
                pending = []
            else:
                for tb, b in pending:
                    cleared[(b, site)] += 1
                    upstream += _after_another(tb, opt, grads, passes)
                pending = []
        if not steps or not cleared or all(int(s.opt) == opt for s in stepped):
            continue
        (backward, zero), _ = cleared.most_common(1)[0]
        n = sum(cleared.values())
        found = GradsForAnother(built.get(opt), backward, zero, n, filled, steps, upstream * 2 > n)
        if best is None or (found.upstream, found.cleared) > (best.upstream, best.cleared):
            best = found
    return best


def _after_another(t: float, opt: int, grads: list[tuple[float, int, Any]],
                   passes: list[tuple[float, float]]) -> bool:
    """Another optimizer's watched gradient was filled before `opt`'s (at `t`) in the same backward
    pass (one of `passes`, by its span)."""
    span = next(((a, b) for a, b in passes if a <= t <= b), None)
    if span is None:
        return False
    return any(o != opt and span[0] <= tg < t for tg, o, _ in grads)
