"""Run every rule, order the findings, pick the primary verdict.

The primary verdict is the finding that most limits the run: `oom-risk` at critical severity first
(the run may not finish at all), then the largest share of step time a fix could win back, then
`compute-bound` (the healthy state) when nothing else stands out; `inconclusive` when the evidence is
too thin to say.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Finding, Fix, RankVerdict, Report
from gpubottle.rules import thresholds as th
from gpubottle.rules.compute import compute_bound, loop_overhead
from gpubottle.rules.compute.debug import debug_mode
from gpubottle.rules.compute.discarded import discarded_gradients
from gpubottle.rules.compute.emulated import emulated_math
from gpubottle.rules.compute.growth import slowing_steps
from gpubottle.rules.compute.optimizer import optimizer_rebuilt
from gpubottle.rules.compute.subnormal import subnormal_math
from gpubottle.rules.compute.untimed import untimed_model
from gpubottle.rules.compute.untrained_layers import untrained_layers
from gpubottle.rules.contention import cpu_contention
from gpubottle.rules.contention.gil import gil_contention
from gpubottle.rules.gpu import (
    communication,
    cuda_oom,
    gpu_compute_bound,
    gpu_growth,
    gpu_memory,
    launch_bound,
    nvml_findings,
    sync_bound,
    transfer_bound,
)
from gpubottle.rules.input import input_pipeline
from gpubottle.rules.input.replayed import replayed_batches
from gpubottle.rules.input.unsplit import unsplit_stream
from gpubottle.rules.memory import host_memory
from gpubottle.rules.phases import (
    checkpoint_findings,
    eval_findings,
    model_eval_findings,
    on_the_run,
    startup_findings,
)
from gpubottle.rules.phases.eval_autograd import eval_autograd
from gpubottle.rules.phases.eval_batch import eval_small_batches
from gpubottle.rules.phases.eval_mode import eval_mode_training
from gpubottle.rules.phases.pauses import pause_findings
from gpubottle.rules.phases.teardown import teardown_findings
from gpubottle.rules.post.frameworks import in_framework_terms
from gpubottle.rules.post.notes import run_notes
from gpubottle.rules.post.one_value import one_value_per_setting
from gpubottle.rules.post.places import in_user_code
from gpubottle.rules.post.terms import in_user_terms
from gpubottle.rules.post.timed import measured_fix, trial_notes, without_timed_losers
from gpubottle.rules.ranks import rank_straggler, uneven_ranks, unsharded_data

Rule = Callable[[Evidence], list[Finding]]
RULES: list[Rule] = [
    input_pipeline, host_memory, compute_bound, loop_overhead, cpu_contention, gil_contention,
    transfer_bound, gpu_memory, gpu_compute_bound, launch_bound, sync_bound, communication,
    cuda_oom, gpu_growth, nvml_findings, eval_findings, model_eval_findings, checkpoint_findings,
    startup_findings, teardown_findings, pause_findings,
    unsharded_data, unsplit_stream, uneven_ranks, debug_mode, eval_autograd,
    optimizer_rebuilt, slowing_steps, subnormal_math, replayed_batches, eval_mode_training,
    discarded_gradients, eval_small_batches, untrained_layers, emulated_math, untimed_model,
]


def _order_key(f: Finding) -> tuple[int, float, int, float]:
    critical_oom = f.category == v.OOM_RISK and f.severity == "critical"
    # Among memory that runs out, the sooner first (an OOM that happened has no time left).
    eta = f.exhaustion_s or 0.0
    return (
        0 if critical_oom else 1,
        eta if critical_oom else 0.0,
        -v.SEVERITY_RANK.get(f.severity, 0),
        -_impact(f),
    )


def worth_it(ev: Evidence, fix: Fix) -> bool:
    """A fix that promises a step (or a run) less than MIN_FIX_GAIN faster is no fix."""
    m = ev.measured()
    if fix.expected_step_s is not None and m is not None and m.mean_step_s > 0:
        return m.mean_step_s / max(fix.expected_step_s, 1e-12) >= 1 + th.MIN_FIX_GAIN
    wall = ev.run.duration_s
    if fix.expected_run_s is not None and wall:
        return wall / max(fix.expected_run_s, 1e-12) >= 1 + th.MIN_FIX_GAIN
    return True


def _impact(f: Finding) -> float:
    """What a finding costs: its share of the run where known, else of the step."""
    if f.run_share is not None:
        return f.run_share
    return f.share if f.share is not None else -1.0


# Findings about the run rather than the step's verdict: they lead when they cost the run more.
_RUN_KINDS = (v.CHECKPOINT_BOUND, v.STARTUP_BOUND, v.TEARDOWN_BOUND, v.LOOP_OVERHEAD, v.EVAL_BOUND,
              v.UNSHARDED_DATA, v.GIL_CONTENTION)


def _run_rival(findings: list[Finding], head: Finding | None) -> Finding | None:
    rivals = [f for f in findings if f is not head and (f.category in _RUN_KINDS or f.phase != "train")
              and v.SEVERITY_RANK[f.severity] >= v.SEVERITY_RANK["warning"]]
    if not rivals:
        return None
    best = max(rivals, key=_impact)
    if head is None or head.category == v.COMPUTE_BOUND:
        return best
    if head.category == v.OOM_RISK:
        # Memory that runs out comes first; a warning of it (a projection nothing seen explains)
        # only before what is no graver
        return best if head.severity != "critical" and best.severity == "critical" else None
    if _impact(head) < 0:
        return None  # a cost not known cannot be outweighed
    return best if _impact(best) > _impact(head) else None


def pick_primary(findings: list[Finding]) -> str:
    ranked = sorted(
        (f for f in findings if f.category in v.CATEGORIES and f.category != v.COMPUTE_BOUND
         and v.SEVERITY_RANK[f.severity] >= v.SEVERITY_RANK["warning"]),
        key=_order_key,
    )
    if ranked:
        return ranked[0].category
    if any(f.category == v.COMPUTE_BOUND for f in findings):
        return v.COMPUTE_BOUND
    return v.INCONCLUSIVE


def diagnose(ev: Evidence, verdicts: list[RankVerdict] | None = None) -> Report:
    """The report of one process's evidence, or of a job's shown rank with every rank's row
    (`verdicts`: each rank's own diagnosis, rules/jobs.py)."""
    verdicts = verdicts or []
    findings: list[Finding] = []
    rules: list[tuple[str, Callable[[], list[Finding]]]] = [
        (rule.__name__, functools.partial(rule, ev)) for rule in RULES]
    rules.append(("rank_straggler", functools.partial(rank_straggler, ev, verdicts)))
    for name, rule in rules:
        try:
            findings.extend(rule())
        except Exception as exc:  # a broken rule is missing evidence, not a crashed report
            findings.append(Finding(v.RULE_ERROR, "info", None, f"{name} failed: {exc!r}"))
    findings = on_the_run(ev, findings)
    findings = [dataclasses.replace(f, fixes=[x for x in f.fixes if worth_it(ev, x)]) for f in findings]
    findings.sort(key=_order_key)
    findings = in_user_code(in_user_terms(in_framework_terms(without_timed_losers(findings, ev), ev), ev), ev)
    primary = pick_primary(findings)
    # The verdict's own finding leads (a warning beside a compute-bound run stays second), unless a
    # cost of the run outside the step's verdict (evaluation, checkpoints, start-up, the loop's
    # own code) takes more of the run: that leads, and the verdict follows it.
    head = next((i for i, f in enumerate(findings) if f.category == primary), None)
    if head is not None:
        findings.insert(0, findings.pop(head))
        measured = measured_fix(findings, ev)  # --try-fixes: the fastest setting leads the fixes
        if measured is not None:
            # The timed change replaces the predicted one it measured (its prediction is quoted).
            findings[0] = dataclasses.replace(findings[0], fixes=[measured] + [
                x for x in findings[0].fixes if not x.change or x.proposed() != measured.proposed()])
    rival = _run_rival(findings, findings[0] if head is not None else None)
    if rival is not None:
        findings.insert(0, findings.pop(findings.index(rival)))
    findings = one_value_per_setting(findings)
    return Report(primary=primary, findings=findings, evidence=ev,
                  notes=run_notes(ev, primary, verdicts, named=any(
                      v.SEVERITY_RANK[f.severity] >= v.SEVERITY_RANK["warning"] for f in findings))
                  + trial_notes(ev), ranks=list(verdicts))
