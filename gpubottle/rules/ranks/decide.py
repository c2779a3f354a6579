"""Which rank of a job sets the pace, and why: pure functions over the ranks' rows (a job's ranks, or
a folder of ranks' traces) and, for a job, each rank's own verdict.

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
from dataclasses import dataclass, field

from gpubottle.evidence import Evidence, RankEvidence
from gpubottle.report import RankVerdict
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import Repeated, main_loader, repeated
from gpubottle.vocabulary import INCONCLUSIVE


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
    # collective instead.
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


def _no_verdict(verdicts: list[RankVerdict], r: RankEvidence) -> bool:
    v = _verdict(verdicts, r)
    return v is not None and v.verdict == INCONCLUSIVE


def shown_index(rows: list[RankEvidence], verdicts: list[RankVerdict]) -> int:
    """Which rank's evidence speaks for the job: the first that failed (its OOM, its exception),
    else the pace-setter, else the lowest rank that took steps (rows in the job's order). A failed
    rank with no verdict of its own (it raised before its steps said anything, or it spent them
    waiting for the others) gives way to a rank that has one: the failure stays in the notes."""
    failed = failed_first(rows)
    if failed and not _no_verdict(verdicts, failed[0]):
        return rows.index(failed[0])
    found = pace_setter(rows, verdicts)
    if found is not None:
        return rows.index(found[0])
    stepping = [i for i, r in enumerate(rows) if r.steps]
    if failed:
        told = [i for i in stepping if not _no_verdict(verdicts, rows[i])]
        return told[0] if told else rows.index(failed[0])
    return stepping[0] if stepping else 0


@dataclass
class Straggler:
    """The rank the others wait for, what it costs them, and how it was told."""

    slow: RankEvidence
    lost: float  # the share of the others' step they lose to it
    how: str  # "step": its step is longer; "work": ranks in step, its own work is larger
    others: list[RankEvidence]  # the other ranks that took steps
    ranks: int  # ranks in the job
    why: str | None  # its own verdict's reason, for a job's rank
    # A job over several nodes whose pace-setter's node is slow as a whole: every rank on it does
    # more of its own work than every rank elsewhere (its node's other ranks, here), and that
    # node's machine had other programs' load the others did not (cores, None when not).
    node_ranks: list[RankEvidence] = field(default_factory=list)
    node_outside: float | None = None

    @property
    def median_other_step_s(self) -> float:
        return statistics.median(r.mean_step_s or 0.0 for r in self.others) if self.others else 0.0


def decide_straggler(ev: Evidence, verdicts: list[RankVerdict] | None = None) -> Straggler | None:
    found = pace_setter(ev.ranks, verdicts)
    if found is None:
        return None
    slow, lost, how = found
    own = _verdict(verdicts or [], slow)
    d = Straggler(slow, lost, how, [r for r in ev.ranks if r is not slow and r.mean_step_s],
                  len(ev.ranks), own.why if own is not None else None)
    d.node_ranks, d.node_outside = _slow_node(ev.ranks, slow)
    return d


def _slow_node(ranks: list[RankEvidence], slow: RankEvidence) -> tuple[list[RankEvidence], float | None]:
    """The pace-setter's node, when the job spans nodes and that node is slow as a whole: its other
    ranks (every one doing more of its own work than every rank elsewhere), and the other programs'
    load on it when that is where it differs from the other nodes."""
    nodes = {r.node for r in ranks if r.node}
    if len(nodes) < 2 or slow.node is None:
        return [], None
    mine = [r for r in ranks if r.node == slow.node and r is not slow]
    rest = [r for r in ranks if r.node != slow.node]
    # Each rank's own work where every rank's is known (ranks in step), else its step time.
    shares = {id(r): own_share(r) for r in ranks}
    by_share = all(v is not None for v in shares.values())

    def work(r: RankEvidence) -> float:
        return (shares[id(r)] or 0.0) if by_share else (r.mean_step_s or 0.0)

    if not mine or not rest or min(work(r) for r in [slow, *mine]) <= max(work(r) for r in rest):
        return [], None
    here = max((r.outside_cores or 0.0) for r in [slow, *mine])
    there = max((r.outside_cores or 0.0) for r in rest)
    loaded = here >= th.OUTSIDE_CORES_WARNING and here >= 2 * there
    return mine, here if loaded else None


class Unsharded(Repeated):
    """A job whose ranks each iterate the whole dataset."""

    @property
    def world(self) -> int:
        return self.copies


def job_world(ev: Evidence) -> int | None:
    """How many ranks the job has, from what this evidence knows."""
    if ev.run.job is not None:
        return ev.run.job.world_size
    worlds = [r.world_size for r in ev.ranks if r.world_size]
    if worlds:
        return max(worlds)
    return len(ev.ranks) if len(ev.ranks) > 1 else None


def decide_unsharded(ev: Evidence) -> Unsharded | None:
    """A training DataLoader whose sampler does not split the dataset by rank, in a job of two or
    more ranks (its own torch.distributed world, or the job's)."""
    lo = main_loader(ev)
    if lo is None or lo.rank_split is not False:
        return None
    world = lo.world or job_world(ev)
    if world is None or world < 2:
        return None
    return repeated(ev, lo, world, Unsharded)


@dataclass
class Uneven:
    """Ranks of one job that took different numbers of steps."""

    fewest: RankEvidence
    most: RankEvidence


def decide_uneven(ev: Evidence) -> Uneven | None:
    """Ranks that ended on their own (not stopped by --steps, not failed) with step counts apart by
    more than one: the ones with fewer finish first and wait (or the others hang at a collective)."""
    done = [r for r in ev.ranks if r.status in ("completed", None) and r.steps]
    if len(done) < 2:
        return None
    fewest, most = min(done, key=lambda r: r.steps), max(done, key=lambda r: r.steps)
    return Uneven(fewest, most) if most.steps - fewest.steps > 1 else None
