"""compute-bound (the model's own arithmetic dominates: the healthy state, fixed by faster math) and
loop-overhead (the loop's own code outside the model sets the pace)."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Finding
from gpubottle.rules import thresholds as th
from gpubottle.rules.compute import words
from gpubottle.rules.compute.debug import debug_first
from gpubottle.rules.compute.decide import decide_compute, decide_loop_overhead
from gpubottle.rules.compute.growth import decide_growth
from gpubottle.rules.compute.subnormal import subnormal_first


def loop_overhead(ev: Evidence) -> list[Finding]:
    """The loop's own code outside the model (logging, metrics, Python bookkeeping) takes a large
    share of each step: named with its function and share, never folded into compute-bound."""
    d = decide_loop_overhead(ev)
    if d is None:
        return []
    grows = decide_growth(ev)
    if grows is not None and grows.named and grows.growth.location == d.top.location:
        # (its time grows with the run: the growth's finding says so, with the fix for its cause;
        # "call it every 10 steps" would drop most of what a concatenation gathers)
        return []
    # Below the share that sets the loop's pace it is said beside the verdict, as info.
    severity = th.severity_for_share(d.share) if d.share >= th.LOOP_OVERHEAD_SHARE else "info"
    return [Finding(v.LOOP_OVERHEAD, severity, round(d.share, 4),
                    words.overhead_summary(d), words.overhead_facts(d), words.overhead_fixes(d))]


def compute_bound(ev: Evidence) -> list[Finding]:
    d = decide_compute(ev)
    if d is None:
        return []
    return [Finding(v.COMPUTE_BOUND, "info", round(d.share, 4), words.compute_summary(d),
                    words.compute_facts(d), debug_first(ev) + subnormal_first(ev) + words.compute_fixes(d),
                    words.compute_question(d))]
