"""Evaluations that autograd recorded: each eval() ... train() span, or evaluation pass of a
DataLoader (in a script that never calls eval()), whose first forward ran with gradients enabled
(probes/modes.py's EvalForward), grouped by the user's function and line, with their time and what
the main process's memory did within them.

Recording costs every forward the graph's bookkeeping, and a graph stays alive as long as an output
of it does: an evaluation that keeps its outputs (for a metric at the end) keeps every batch's
activations until the pass ends. That shows as the process's memory rising within a pass.
"""

from __future__ import annotations

import bisect

from gpubottle.analysis.phases import Span, subtract
from gpubottle.analysis.samples import Samples
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import EvalAutograd


def _spans(ev: ChildEvents, end: float, loader_evals: list[Span]
           ) -> list[tuple[Span, str | None, str | None, bool, float]]:
    """Each recorded evaluation, with the forward's function and line: from its eval() to the next
    train() (or the run's end), or else the evaluation pass of a DataLoader it fell in (a script
    that never calls eval()); not where a backward ran inside it. (Bisected: a loop that calls
    eval() and train() every step has as many of each as steps.)"""
    evals = sorted(float(m.t) for m in ev.modes if not int(m.training))
    trains = sorted(float(m.t) for m in ev.modes if int(m.training))
    backs = sorted(float(b.t0) for b in ev.backwards)
    passes = sorted(loader_evals)
    starts = [a for a, _ in passes]

    def backward_in(span: Span) -> bool:
        k = bisect.bisect_left(backs, span[0])
        return k < len(backs) and backs[k] <= span[1]

    out = []
    for f in ev.eval_forwards:
        if not int(f.grad):
            continue
        t = float(f.t)
        i = bisect.bisect_right(evals, t)
        j = bisect.bisect_right(trains, t)
        span: Span | None = None
        called = i > 0 and (j == 0 or trains[j - 1] < evals[i - 1])  # the model in eval mode
        if called:
            span = (evals[i - 1], max(trains[j] if j < len(trains) else end, t))
        else:
            p = bisect.bisect_right(starts, t) - 1
            if p >= 0 and passes[p][0] <= t <= passes[p][1]:
                span = passes[p]
        if span is None or backward_in(span):
            continue  # a backward ran: the graphs were used (a frozen teacher, saliency, an attack)
        out.append((span, f.function, f.site, called, t))
    return out


def _rise(times: list[float], pss: list[int], span: Span) -> int | None:
    """The main process's PSS (readings by time) at its highest within `span` over its last
    reading before it (None without a reading before it and one inside it). Not whether it fell
    after: the C allocator keeps freed memory for reuse, so the next pass may reuse it and show no
    rise at all."""
    lo, hi = bisect.bisect_right(times, span[0]), bisect.bisect_right(times, span[1])
    if lo == 0 or hi == lo:
        return None
    return max(0, max(pss[lo:hi]) - pss[lo - 1])


def eval_autograd(ev: ChildEvents, samples: Samples, main_pid: int, saves: list[Span], wall: float,
                  end: float, loader_evals: list[Span] | None = None) -> list[EvalAutograd]:
    """One entry per (function, line) whose evaluations autograd recorded; `saves`: checkpoint
    spans, which are not the evaluation's time; `loader_evals`: the DataLoaders' evaluation passes."""
    groups: dict[tuple[str | None, str | None], list[tuple[Span, float]]] = {}  # spans, first forwards
    called: dict[tuple[str | None, str | None], bool] = {}
    for span, function, site, by_eval, first in _spans(ev, end, loader_evals or []):
        groups.setdefault((function, site), []).append((span, first))
        called[(function, site)] = called.get((function, site), False) or by_eval
    key = str(main_pid)
    rows = sorted((float(r.t), int(r.procs[key][0])) for r in samples.mem if key in r.procs)
    times, pss = [t for t, _ in rows], [p for _, p in rows]
    out = []
    for (function, site), spans in groups.items():
        secs = sum(b - a for s, _ in spans for a, b in subtract([s], saves))
        # (from its first forward, not its eval(): what the script builds between them, a dataset
        # made after model.eval(), is not the pass's: 205 MiB of an inference script's 649)
        rises = [r for s, first in spans if (r := _rise(times, pss, (first, s[1]))) is not None]
        out.append(EvalAutograd(function, site, len(spans), round(secs, 4),
                                round(secs / wall, 4) if wall > 0 else 0.0,
                                max(rises) if rises else None, called[(function, site)]))
    return sorted(out, key=lambda e: -e.seconds)
