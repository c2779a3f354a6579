"""The script's own work after its last training step, when it is a large share of the run: a
report, an export, or (the case that brought it) a torch.profiler left on over the whole run, whose
recorded events are turned into Python objects when it is left and printed (measured here: 30 s
after 0.75 s of training). Said with what the stacks saw it do and the line that did it."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.analysis.work_kinds import remedy
from gpubottle.evidence import Evidence
from gpubottle.evidence.account import TEARDOWN, TRAIN
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import entry
from gpubottle.rules.phases.decide import kind_of, wall
from gpubottle.rules.phases.pauses import rows_at_once
from gpubottle.units import pct, seconds

AFTER = "after the last step"
EXIT = "exit (workers and interpreter)"


@dataclass
class AfterTraining:
    total_s: float  # the run's wall time
    after_s: float  # the script's own time after its last step
    exit_s: float  # the interpreter's (and workers') exit after that
    what: str | None  # what the stacks saw: a function, a kind of library work, or both
    where: str | None
    train_s: float | None
    row_loop: str | None = None  # a Python loop over rows one at a time most of it is in, its header
    row_loop_text: str | None = None
    row_loop_share: float | None = None

    @property
    def share(self) -> float:
        return self.after_s / self.total_s


def decide_teardown(ev: Evidence) -> AfterTraining | None:
    total = wall(ev)
    e = entry(ev, TEARDOWN)
    if total is None or e is None:
        return None
    after = e.parts.get(AFTER, 0.0)
    if after / total < th.TEARDOWN_MIN_SHARE or after < th.TEARDOWN_FLOOR_S:
        return None
    train = entry(ev, TRAIN)
    return AfterTraining(total, after, e.parts.get(EXIT, 0.0), e.what, e.where,
                         train.seconds if train is not None else None, e.row_loop, e.row_loop_text,
                         e.row_loop_share)


def teardown_findings(ev: Evidence) -> list[Finding]:
    d = decide_teardown(ev)
    if d is None:
        return []
    doing = f"in {d.what}" if d.what else "in its own code (the stacks did not sample it)"
    at = f" at {d.where}" if d.where else ""
    facts = [Fact(f"after its last training step the script runs {seconds(d.after_s)} of the run's "
                  f"{seconds(d.total_s)}" + (f" (the training itself {seconds(d.train_s)})"
                                             if d.train_s is not None else ""),
                  "after_last_step_share", round(d.share, 4))]
    if d.exit_s >= th.TEARDOWN_FLOOR_S:
        facts.append(Fact(f"then the interpreter's exit takes {seconds(d.exit_s)}: freeing what the "
                          "script built", "exit_s", round(d.exit_s, 3)))
    kind = kind_of(d.what)
    fix = remedy(kind)
    text = (f"{kind}: {fix}" if kind and fix else
            f"{d.what or 'the work after the last step'}{at} takes {seconds(d.after_s)} once the "
            "training is done: make it cheaper, or leave it out of runs that do not need it")
    fixes = [Fix(text=text, where=d.where)]
    if d.row_loop and d.row_loop_share is not None and not kind:
        at += f", one row at a time in a Python loop ({d.row_loop})"
        fixes.insert(0, Fix(text=rows_at_once(d.row_loop_share, "the work after the last step",
                                              d.row_loop_text or ""), where=d.row_loop))
    return [Finding(v.TEARDOWN_BOUND, th.severity_for_run_share(d.share), None,
                    f"after its last step the script spends {pct(d.share)} of the run {doing}{at}",
                    facts, fixes, phase=TEARDOWN, run_share=round(d.share, 4))]
