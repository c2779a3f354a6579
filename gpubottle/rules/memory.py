"""oom-risk on host memory: near the limit, growing toward it, or already killed by it."""

from __future__ import annotations

import signal

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, LeakEvidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import main_loader
from gpubottle.rules.worker_memory import copy_on_read
from gpubottle.units import duration, gib, pct


def leak_named(leak: LeakEvidence | None) -> tuple[Fact, Fix] | None:
    """The tensor census's answer, when memory climbed: what piled up, and where it is kept. Not a
    group that barely grew (the loop's current batch caught in one census and not the other: a few
    tensors, little memory)."""
    if leak is None or leak.grown_count < 2 or (
            leak.grown_count < th.LEAK_MIN_COUNT and leak.grown_bytes < th.LEAK_MIN_BYTES):
        return None
    rate = f", about {leak.grown_count / leak.steps:.1f} per step" if leak.steps else ""
    held = f", held in {leak.holder}" if leak.holder else ""
    fact = Fact(f"tensors of {leak.label} referenced from Python grew by {leak.grown_count} "
                f"({gib(leak.grown_bytes)}) in {leak.steps} steps{rate}{held}",
                "leak_bytes", leak.grown_bytes)
    fix = Fix(text=(f"{leak.holder.split(' ')[0]} keeps" if leak.holder else "something keeps")
              + f" a {leak.label} tensor every step: store only what is needed, as a number "
              "(loss.item()) or detached on the CPU, or bound it (a deque with maxlen)")
    return fact, fix


def host_memory(ev: Evidence) -> list[Finding]:
    m = ev.memory
    if m is None or not m.samples or not m.limit_bytes:
        return []
    facts: list[Fact] = []
    severity = None
    reasons: list[str] = []
    run = ev.run
    killed = run.signal == signal.SIGKILL or run.exit_code in (-9, 137)
    mem_error = bool(run.exception and run.exception.startswith("MemoryError"))
    used = m.peak_used_fraction
    if used is not None:
        facts.append(Fact(
            f"memory in use peaked at {pct(used)} of the {gib(m.limit_bytes)} "
            f"{'cgroup limit' if m.limit_source == 'cgroup' else 'of RAM'}; this run's own share "
            f"(PSS) peaked at {gib(m.peak_tree_bytes or 0)}",
            "host_used_fraction", round(used, 4),
        ))
        if used >= th.MEM_WARNING:
            severity = "critical" if used >= th.MEM_CRITICAL else "warning"
            reasons.append(f"host memory reached {pct(used)} of its limit")
    if mem_error or (killed and used is not None and used >= th.MEM_WARNING):
        severity = "critical"
        reasons.insert(0, "the run died of memory exhaustion" if mem_error
                       else "the run was killed (SIGKILL) with memory nearly full: the OOM killer")
    g = m.growth_bytes_per_s
    eta: float | None = None
    cow = copy_on_read(ev)
    if cow is not None:  # the workers copying the dataset: growth with a bound, not a straight line
        facts += cow.facts
        reasons.append(cow.reason)
        severity = max((x for x in (severity, cow.severity) if x), key=lambda x: v.SEVERITY_RANK[x])
    elif (
        g is not None and m.growth_r2 is not None and g >= th.GROWTH_MIN_BYTES_PER_S
        and m.growth_r2 >= th.GROWTH_MIN_R2 and len(m.series) >= th.GROWTH_MIN_SAMPLES
        and m.series and g * (m.series[-1][0] - m.series[0][0]) >= th.GROWTH_MIN_TOTAL_BYTES
    ):
        eta = m.projected_exhaustion_s
        facts.append(Fact(
            f"the run's memory grows steadily by {gib(g * 60)}/min (R^2 {m.growth_r2:.2f})"
            + (f"; at this rate memory runs out in about {duration(eta)}" if eta else ""),
            "growth_bytes_per_s", round(g, 1),
        ))
        if eta is not None:
            facts.append(Fact(f"{gib(m.min_available_bytes or 0)} was still available at the lowest "
                              "point", "exhaustion_s", round(eta, 1)))
        if eta is not None and eta <= th.EXHAUSTION_CRITICAL_S:
            severity = "critical"
            reasons.append(f"memory grows and runs out in about {duration(eta)}")
        elif eta is not None and eta <= th.EXHAUSTION_WARNING_S:
            severity = severity or "warning"
            reasons.append(f"memory grows and would run out in about {duration(eta)}")
    if severity is None:
        return []
    fixes: list[Fix] = [cow.fix] if cow is not None else []
    named = leak_named(m.leak) if cow is None else None
    if named is not None:
        facts.append(named[0])
        fixes.append(named[1])
    if g is not None and any("grows" in r for r in reasons) and not fixes:
        fixes.append(Fix(
            text="find what is kept across steps: tensors appended to lists or summed for logging "
            "(use loss.item() / .detach()), caches without a bound, or a dataset that stores what "
            "it loads",
        ))
    lo = main_loader(ev)
    if cow is None and lo is not None and m.peak_workers_bytes and lo.num_workers and (
            used is not None and used >= th.MEM_WARNING):
        per = m.peak_workers_bytes / lo.num_workers
        fixes.append(Fix(
            text=f"each DataLoader worker holds about {gib(per)} of its own: fewer workers hold less "
            "(try it and compare the speed), or keep the dataset in numpy arrays rather than Python "
            "objects, which forked workers share instead of copying",
            where=lo.site,
            change={"num_workers": [lo.num_workers, max(1, lo.num_workers // 2)]},
        ))
    near_limit = used is not None and used >= th.MEM_WARNING
    if near_limit and lo is not None and lo.batch_size and lo.batch_size > 1:
        fixes.append(Fix(
            text="a smaller batch lowers peak memory (use gradient accumulation to keep the "
            "effective batch)",
            where=lo.site,
            change={"batch_size": [lo.batch_size, max(1, lo.batch_size // 2)]},
        ))
    summary = "; ".join(reasons)
    exhaust = [x for x in (eta, cow.exhaustion_s if cow is not None else None) if x is not None]
    return [Finding(v.OOM_RISK, severity, None, summary, facts, fixes,
                    exhaustion_s=round(min(exhaust), 1) if exhaust else None)]
