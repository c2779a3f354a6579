"""Evaluations that autograd recorded: each eval() ... train() span whose first forward ran with
gradients enabled (probes/modes.py's EvalForward), grouped by the user's function and line, with
their time and what the main process's memory did within them.

Recording costs every forward the graph's bookkeeping, and a graph stays alive as long as an output
of it does: an evaluation that keeps its outputs (for a metric at the end) keeps every batch's
activations until the pass ends. That shows as the process's memory rising within a pass.
"""

from __future__ import annotations

from gpubottle.analysis.phases import Span, subtract
from gpubottle.analysis.samples import Samples
from gpubottle.collect.events import ChildEvents
from gpubottle.evidence import EvalAutograd


def _spans(ev: ChildEvents, end: float) -> list[tuple[Span, str | None, str | None]]:
    """Each recorded evaluation: from its eval() to the next train() (or the run's end), with the
    forward's function and line; not where a backward ran inside it."""
    evals = sorted(((float(m.t), int(m.training)) for m in ev.modes), key=lambda m: m[0])
    out = []
    for f in ev.eval_forwards:
        if not int(f.grad):
            continue
        t = float(f.t)
        began = max((m for m in evals if m[0] <= t and not m[1]), default=None, key=lambda m: m[0])
        if began is None:
            continue
        after = max(min((m[0] for m in evals if m[0] > t and m[1]), default=end), t)
        if any(began[0] <= float(b.t0) <= after for b in ev.backwards):
            continue  # a backward ran: the graphs were used (a frozen teacher, saliency, an attack)
        out.append(((began[0], after), f.function, f.site))
    return out


def _rise(samples: Samples, main_pid: int, span: Span) -> int | None:
    """The main process's PSS at its highest within `span` over its last reading before it (None
    without a reading before it and one inside it). Not whether it fell after: the C allocator
    keeps freed memory for reuse, so the next pass may reuse it and show no rise at all."""
    key = str(main_pid)
    rows = [(float(r.t), int(r.procs[key][0])) for r in samples.mem if key in r.procs]
    before = [pss for t, pss in rows if t <= span[0]]
    inside = [pss for t, pss in rows if span[0] < t <= span[1]]
    if not before or not inside:
        return None
    return max(0, max(inside) - before[-1])


def eval_autograd(ev: ChildEvents, samples: Samples, main_pid: int, saves: list[Span], wall: float,
                  end: float) -> list[EvalAutograd]:
    """One entry per (function, line) whose evaluations autograd recorded; `saves`: checkpoint
    spans, which are not the evaluation's time."""
    groups: dict[tuple[str | None, str | None], list[Span]] = {}
    for span, function, site in _spans(ev, end):
        groups.setdefault((function, site), []).append(span)
    out = []
    for (function, site), spans in groups.items():
        secs = sum(b - a for s in spans for a, b in subtract([s], saves))
        rises = [r for s in spans if (r := _rise(samples, main_pid, s)) is not None]
        out.append(EvalAutograd(function, site, len(spans), round(secs, 4),
                                round(secs / wall, 4) if wall > 0 else 0.0,
                                max(rises) if rises else None))
    return sorted(out, key=lambda e: -e.seconds)
