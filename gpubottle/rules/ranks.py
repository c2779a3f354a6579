"""Which rank of a job sets the pace, and why: pure functions over the ranks' rows (a job's ranks,
or a folder of ranks' traces) and, for a job, each rank's own verdict.

Words: the rank the others wait for is the *pace-setter* (the `straggler` finding names it); the
rank whose evidence the report shows is the *shown* rank: the first that failed, else the
pace-setter, else the lowest rank that took steps.

Ranks in step with each other (DDP, FSDP: a collective every step) all take the slowest one's
time, so their step times say nothing about who is slow. What differs is how each spends the step:
the slow rank works all of it (computing, or waiting for its own data), the others finish early and
wait for it at the next collective, idle (gloo waits blocked, and NCCL's waiting shows as
communication kernels in the profiler window). So the rank with the most of its own work sets the
pace. Ranks that do not wait for each other (no collectives) differ in step time instead.
"""

from __future__ import annotations

import statistics

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, RankEvidence
from gpubottle.report import Fact, Finding, Fix, RankVerdict
from gpubottle.rules import thresholds as th
from gpubottle.units import cores, ms, pct


def own_share(r: RankEvidence) -> float | None:
    """The share of its step a rank spends on its own work, not waiting for the other ranks."""
    if r.communication_share is not None:
        return max(0.0, 1.0 - r.communication_share)
    if r.input_share is None and r.busy_share is None:
        return None
    return min(1.0, (r.input_share or 0.0) + (r.busy_share or 0.0))


def _verdict(verdicts: list[RankVerdict], r: RankEvidence) -> RankVerdict | None:
    return next((v for v in verdicts if v.rank == r.rank and v.node == r.node), None)


def pace_setter(ranks: list[RankEvidence], verdicts: list[RankVerdict] | None = None
                ) -> tuple[RankEvidence, float, str] | None:
    """(the rank the others wait for, the share of their step they lose to it, how it was told:
    'step' when step times differ, 'work' when ranks in step differ in their own work)."""
    verdicts = verdicts or []
    rows = [r for r in ranks if r.mean_step_s]
    if len(rows) < 2:
        return None
    slow = max(rows, key=lambda r: r.mean_step_s or 0.0)
    med = statistics.median(r.mean_step_s or 0.0 for r in rows if r is not slow)
    if med > 0 and (slow.mean_step_s or 0.0) / med >= th.STRAGGLER_RATIO:
        return slow, 1.0 - med / (slow.mean_step_s or 1.0), "step"
    owns = [(r, o) for r in rows if (o := own_share(r)) is not None]
    if len(owns) < 2:
        return None
    slow, top = max(owns, key=lambda x: x[1])
    others = statistics.median(o for r, o in owns if r is not slow)
    if top - others < th.STRAGGLER_OWN_GAP or top < th.STRAGGLER_OWN_RATIO * others:
        return None
    # Alike ranks with the same problem split their waits unevenly: the one whose loader is a hair
    # slower sets the pace, the others' workers fill their prefetch buffers and they wait at the
    # collective instead (measured: 87% vs 24% input wait, identical loaders, both data-starved).
    # The others must have another diagnosis (or none) for this one to be the straggler.
    mine = _verdict(verdicts, slow)
    known = [v for r, _ in owns if r is not slow and (v := _verdict(verdicts, r)) is not None]
    if mine is not None and known and sum(v.verdict == mine.verdict for v in known) * 2 >= len(known):
        return None
    return slow, top - others, "work"


def failed_first(rows: list[RankEvidence]) -> list[RankEvidence]:
    """The ranks that failed, the first to end first: the others often fail because it did (a
    collective whose peer is gone raises on every rank)."""
    failed = [r for r in rows if r.exception or r.exit_code not in (0, None)]
    return sorted(failed, key=lambda r: r.ended_at if r.ended_at is not None else float("inf"))


def _work(r: RankEvidence) -> str:
    if r.communication_share is not None:
        hidden = (f" ({pct(r.communication_overlap)} of it under compute)"
                  if r.communication_overlap is not None else "")
        return f"communication {pct(r.communication_share)}{hidden}"
    return f"input wait {pct(r.input_share or 0.0)}, computing {pct(r.busy_share or 0.0)}"


def shown_index(rows: list[RankEvidence], verdicts: list[RankVerdict]) -> int:
    """Which rank's evidence speaks for the job: the first that failed (its OOM, its exception),
    else the pace-setter, else the lowest rank that took steps (rows in the job's order)."""
    failed = failed_first(rows)
    if failed:
        return rows.index(failed[0])
    found = pace_setter(rows, verdicts)
    if found is not None:
        return rows.index(found[0])
    stepping = [i for i, r in enumerate(rows) if r.steps]
    return stepping[0] if stepping else 0


def rank_straggler(ev: Evidence, verdicts: list[RankVerdict] | None = None) -> list[Finding]:
    """The ranks' pace-setter, in the same evidence terms as a single process (a job's ranks with
    their own verdicts, or a folder of ranks' traces by their step times)."""
    found = pace_setter(ev.ranks, verdicts)
    if found is None:
        return []
    slow, lost, how = found
    others = [r for r in ev.ranks if r is not slow and r.mean_step_s]
    own = _verdict(verdicts or [], slow)
    why = own.why if own is not None else None
    facts: list[Fact] = []
    if why:
        facts.append(Fact(f"{slow.name}: {why}"))
    if how == "step":
        med = statistics.median(r.mean_step_s or 0.0 for r in others)
        ratio = (slow.mean_step_s or 0.0) / med if med > 0 else 1.0
        facts.append(Fact(f"{slow.name} takes {ms(slow.mean_step_s or 0.0)} a step, {ratio:.2f}x the "
                          f"median of the other ranks ({ms(med)})", "straggler_lost", round(lost, 4)))
    else:
        facts.append(Fact(
            f"of each step, {slow.name} spends {_work(slow)}; "
            + "; ".join(f"{r.name} {_work(r)}" for r in others[:3])
            + ": the other ranks wait for it at the collectives the rest of their step",
            "straggler_lost", round(lost, 4)))
    if slow.workers:
        starved = (f", waiting for a core {pct(slow.worker_run_queue)} of the time"
                   if slow.worker_run_queue is not None else "")
        facts.append(Fact(f"its {slow.workers} DataLoader worker(s) use "
                          f"{cores(slow.workers_cores or 0.0)} cores{starved}"))
    fix = Fix(text=f"make {slow.name} faster first: the findings and fixes here are its own. If the "
                   "other ranks run the same code and settings, look at what differs: its share "
                   "of the data (uneven shards, larger samples), its machine (other load, fewer "
                   f"cores) or work only it does (`if rank == {slow.rank}:` logging, evaluation)")
    why = f": {why}" if why else ""
    return [Finding(v.STRAGGLER, "warning", round(lost, 4),
                    f"{slow.name} sets the pace of the {len(ev.ranks)} ranks, the others wait for "
                    f"it {pct(lost)} of each step{why}", facts, [fix])]
