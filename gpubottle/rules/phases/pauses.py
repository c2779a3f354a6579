"""Long gaps between the training steps that no phase explains (the account's between-steps), when
they are a share of the run: a sort by a key recomputed at each epoch's start, a statistic over
the whole dataset, a collection. The step statistics leave those steps out (they are pauses, not
the step's pace), and the stacks inside them are not the steps' either, so without this the run's
time there was said only in the account. Said with what the main thread's stacks saw in them."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.analysis.work_kinds import remedy
from gpubottle.evidence import Evidence
from gpubottle.evidence.account import BETWEEN_STEPS
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import entry
from gpubottle.rules.phases.decide import kind_of, wall
from gpubottle.units import pct, seconds


@dataclass
class Pauses:
    total_s: float  # the run's wall time
    gaps_s: float  # the gaps' time in all
    count: int
    what: str  # what the stacks saw in them: a function, a kind of library work, or both
    where: str | None
    every: float | None  # the training steps from one gap to the next (regular: the loop's schedule)
    called_at: str | None  # the loop's line that calls the function named
    row_loop: str | None = None  # file:line of a Python loop over rows one at a time, most of them
    row_loop_text: str | None = None
    row_loop_share: float | None = None

    @property
    def share(self) -> float:
        return self.gaps_s / self.total_s


def decide_pauses(ev: Evidence) -> Pauses | None:
    total = wall(ev)
    e = entry(ev, BETWEEN_STEPS)
    if total is None or e is None or not e.count:
        return None
    if e.seconds / total < th.PAUSES_MIN_SHARE or e.seconds < th.PAUSES_FLOOR_S:
        return None
    # Work of their own, seen: not the steps' usual work stretched (preempted), nor nothing sampled.
    if e.what is None or (e.samples or 0) < th.PAUSES_MIN_SAMPLES:
        return None
    # ...at a regular step (each epoch's start, every N steps: preemptions come at random), or
    # once, in work the steps themselves hardly do (a recompile).
    if e.count > 1 and e.every_steps is None:
        return None
    if e.count == 1 and (e.in_steps_share is None or e.in_steps_share > th.PAUSES_USUAL_MAX):
        return None
    return Pauses(total, e.seconds, int(e.count), e.what, e.where, e.every_steps, e.called_at,
                  e.row_loop, e.row_loop_text, e.row_loop_share)


def pause_findings(ev: Evidence) -> list[Finding]:
    d = decide_pauses(ev)
    if d is None:
        return []
    each = d.gaps_s / d.count
    gaps = f"{d.count} times" if d.count > 1 else "once"
    lasting = f"{seconds(each)} each" if d.count > 1 else f"for {seconds(each)}"
    doing = f"in {d.what}" + (f" ({d.where})" if d.where else "") + (
        f", called at {d.called_at}" if d.called_at else "") + (
        f", most of it one row at a time in a Python loop ({d.row_loop})" if d.row_loop else "")
    often = f", every {d.every:g} steps" if d.every else ""
    facts = [Fact(f"the loop stops between its steps {gaps}, {lasting}{often}: "
                  f"{seconds(d.gaps_s)} of the run's {seconds(d.total_s)} (left out of the step "
                  "statistics)", "pauses_share", round(d.share, 4))]
    kind = kind_of(d.what)
    fix = remedy(kind)
    name = f"{d.what} at {d.where}" if d.where else d.what
    call = f" (called at {d.called_at})" if d.called_at else ""
    if d.count == 1 and kind and fix:  # a one-off of a known kind (a recompile): its remedy
        text = f"{kind}: {fix}"
    else:  # work the loop repeats on a schedule: once, where it can be; then cheaper, or rarer
        cheaper = f"make it cheaper ({kind}: {fix})" if kind and fix else "make it cheaper"
        text = (f"{name}{call} stops the loop {gaps}, {lasting}{often}: where it computes the same "
                "each time (from data the loop does not change: a dataset built again, a sort key, a "
                f"statistic of the dataset), do it once before the loop and keep the result; else "
                f"{cheaper}, or run it less often; try it and time it")
    where = d.called_at or d.where
    fixes = [Fix(text=text, where=where)]
    if d.row_loop and d.row_loop_share is not None:
        facts.append(Fact(f"{pct(d.row_loop_share)} of the main thread's samples in them are in a Python "
                          f"loop that takes a tensor's rows one at a time ({d.row_loop}: "
                          f"`{d.row_loop_text}`)", "pauses_row_loop_share", d.row_loop_share))
        fixes.insert(0, Fix(text=rows_at_once(d.row_loop_share, f"{d.what}'s time", d.row_loop_text or ""),
                            where=d.row_loop))
    return [Finding(v.LOOP_OVERHEAD, th.severity_for_run_share(d.share), None,
                    f"the loop stops between its steps {gaps}, {pct(d.share)} of the run, {doing}",
                    facts, fixes, phase=BETWEEN_STEPS, run_share=round(d.share, 4))]


def rows_at_once(share: float, whose: str, header: str) -> str:
    """The row loop's fix: its ops on all the rows at once (analysis/row_loops.py: measured)."""
    return (f"{pct(share)} of {whose} is a Python loop over rows, one at a "
            f"time (`{header}`): each op in its body pays its call's cost once a row. Run "
            "the same ops on all rows at once, along a batch dimension: the model on the whole "
            "tensor, model(X) (or 256 rows a call where that does not fit), then the loop's other "
            "ops on all those results (a reduction or a top-k over dim=1, a comparison summed): "
            "the same results in a few calls. A kNN evaluation of 1,000 queries on a test machine: "
            "0.53 s a pass one row at a time, 0.03 s at once; try it and time it")
