"""The report's notes, said: how the job's ranks stand (which rank's findings these are and why,
who failed, who was killed), why there is no verdict (no steps, too few, none applies), what the
trace said, and the evidence that is missing. The verdict and the rank decisions are made before."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.analysis.work_kinds import CHILDREN_WAIT
from gpubottle.evidence import Evidence, JobInfo
from gpubottle.evidence.account import HOOKS_PART, OWN, STARTUP
from gpubottle.probes.unhooked import SPARSE_AFTER_S, SPARSE_EVERY
from gpubottle.report import RankVerdict
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import entry, min_steps
from gpubottle.rules.memory.words import memory_notes
from gpubottle.rules.phases.decide import wall
from gpubottle.rules.ranks.decide import failed_first, pace_setter
from gpubottle.vocabulary import BREAKDOWN_LABELS


def run_notes(ev: Evidence, primary: str, verdicts: list[RankVerdict], named: bool = False) -> list[str]:
    """`named`: a finding already says where the loop's time goes (the loop's own code, saves): the
    note that it goes to something not measured would contradict it."""
    notes: list[str] = []
    if ev.ranks:
        notes.extend(ranks_notes(ev, verdicts))
    if ev.run.job is not None and not ev.ranks:
        notes.append(job_note(ev.run.job))
    st = ev.steps
    w = ev.measured()
    measured = w.n if w is not None else 0
    if st.source == "none":
        start = entry(ev, STARTUP)
        waited = start.parts.get(CHILDREN_WAIT, 0.0) if start is not None else 0.0
        at = start.part_sites.get(CHILDREN_WAIT) if start is not None else None
        notes.append(
            "no training steps were seen: no optimizer.step(), backward() or DataLoader batch in the "
            "script's main process or its ranks (processes the script starts itself, other than "
            "torchrun's workers and mp.spawn's, are not followed)" + (
                f"; its main process spent {waited:.1f} s waiting for such processes"
                f"{f' ({at})' if at else ''}: the training is likely theirs (a Hogwild-style "
                "mp.Process each), which this run does not see"
                if waited >= th.STARTUP_FLOOR_S else "")
        )
    elif measured < min_steps(ev):
        notes.append(
            f"only {measured} step(s) measured after {st.warmup} warm-up step(s); at least "
            f"{min_steps(ev)} are needed for a verdict: run longer (or raise --steps)"
        )
    elif primary == v.INCONCLUSIVE and ev.gpu is not None and ev.gpu.breakdown:
        top = max(ev.gpu.breakdown.items(), key=lambda kv: kv[1])
        notes.append(
            f"none of the five verdicts applies: the step's largest part is {BREAKDOWN_LABELS[top[0]]} "
            f"({top[1]:.0%}); see the breakdown and the other findings"
        )
    elif primary == v.INCONCLUSIVE and ev.run.job is not None:
        notes.append("this rank alone may spend its steps waiting for the others at the collectives: "
                     "the job's report says which rank sets the pace")
    elif primary == v.INCONCLUSIVE and not named:
        notes.append(
            "the loop neither waits for data nor keeps the CPU busy: its time goes to something not "
            "measured here (a GPU, I/O inside the loop, sleeping, or synchronisation)"
        )
    notes.extend(memory_notes(ev))
    if ev.run.trace is not None:
        notes.extend(ev.run.trace.notes)
    missing = [f"{k}: {v.reason}" for k, v in ev.run.collectors.items() if not v.ok and v.reason]
    notes.extend(f"missing evidence - {m}" for m in missing)
    notes.extend(str(c.note) for c in ev.run.collectors.values() if c.note)
    hooks = hooks_note(ev)
    if hooks:
        notes.append(hooks)
    return notes


def hooks_note(ev: Evidence) -> str | None:
    """Where gpubottle's hooks took a share of the run worth saying by their own clocks (steps of a
    millisecond or less), what the account cannot see: their cost to the script's code between
    them, measured only against a plain run (0.5-ms steps: the account 5.0%, a plain run beside
    it 11.8% faster). Where the run measured that cost itself (blocks of steps without hooks),
    what it found, whatever its share: the steps it left out are said, and so are those the
    hooks left out later to keep their cost down (probes/unhooked.py's sparse blocks)."""
    total, own = wall(ev), entry(ev, OWN)
    hooks = own.parts.get(HOOKS_PART, 0.0) if own is not None else 0.0
    if total is None or total <= 0:
        return None
    m, thin = ev.steps.in_place, ev.steps.thinned
    unhooked = len(ev.steps.unhooked) - thin
    since = ev.steps.thinned_from_s if ev.steps.thinned_from_s is not None else SPARSE_AFTER_S
    every = ev.steps.thinned_every or SPARSE_EVERY
    late = (f"from {since:.0f} s on they ran on one step in {every}, to keep their "
            f"cost to steps this short down: {thin} steps counted, not timed (left out of the "
            "statistics)") if thin else None
    holds = f"the account holds the hooks' own time, {hooks / total:.1%} of the run"
    if m is not None and m.resolved:  # measured in the run (probes/unhooked.py): the account holds it
        said = (f"gpubottle's hooks cost {hooks / total:.1%} of the run: {m.per_step_s * 1e6:.1f} us "
                f"a step (+-{m.spread_s * 1e6:.1f}) in place, measured against {m.blocks} blocks of "
                f"{m.block_steps} steps it ran without them (left out of the statistics)")
        return f"{said}; {late}" if late else said
    ran = (f"gpubottle ran {unhooked} steps without its hooks to measure their cost in place (left "
           "out of the statistics)")
    if m is not None:
        said = (f"{ran}: {m.per_step_s * 1e6:+.1f} us a step, +-{m.spread_s * 1e6:.1f}, not told apart "
                f"from their own clocks' {m.own_s * 1e6:.1f} (steps that vary this much: other threads "
                f"or programs on the cores, or too few blocks); {holds}")
        return f"{said}; {late}" if late else said
    if unhooked > 0:
        return f"{ran}, too few blocks of them to tell: {holds}" + (f"; {late}" if late else "")
    if late:
        return f"gpubottle's hooks: {late}; {holds}"
    if hooks < th.HOOKS_NOTE_SHARE * total:
        return None
    return (f"gpubottle's hooks timed themselves at {hooks / total:.1%} of the run: on steps this short "
            "they also slow the script's own code around them (its caches), which the account "
            "cannot see; time a plain run (without gpubottle) against this one for the whole cost")


def job_note(job: JobInfo) -> str:
    """A single rank's own report (a `gpubottle run` a cluster's launcher started as one rank)."""
    where = (f"`gpubottle report {job.folder}` merges every rank's run directory into the job's "
             "report once they have ended" if job.folder else
             "`gpubottle report DIR DIR ...` over every rank's run directory gives the job's report")
    return f"rank {job.rank} of {job.world_size} of job {job.job_id}: these findings are this rank's; {where}"


def ranks_notes(ev: Evidence, verdicts: list[RankVerdict]) -> list[str]:
    failed = failed_first(ev.ranks)
    shown = next((r for r in ev.ranks if r.rank == ev.shown_rank), None)
    if failed and failed[0].rank == ev.shown_rank:
        why = "it failed first"
    elif pace_setter(ev.ranks, verdicts) is not None:
        why = "it sets the pace: the other ranks wait for it"
        if failed:  # the failure gave way to the pace-setter: both are said
            why += f"; {failed[0].name}, which failed first, has no verdict of its own"
    elif failed:
        why = f"{failed[0].name}, which failed first, has no verdict of its own"
    else:
        why = "no rank holds the others back: they spend their steps alike"
    notes = [f"{len(ev.ranks)} ranks; the findings are {shown.name if shown else 'the first'}'s ({why})"]
    if failed and ev.run.exception:
        first, rest = failed[0], [r.name for r in failed[1:]]
        after = f"; {', '.join(rest)} failed after it" if rest else ""
        code = first.exit_code if first.exit_code is not None else "?"
        notes.append(f"{ev.run.exception} (exit status {code}){after}")
    if ev.missing_ranks:
        names = ", ".join(str(r) for r in ev.missing_ranks)
        world = max((r.world_size or 0 for r in ev.ranks), default=0)
        notes.append(f"rank{'s' if len(ev.missing_ranks) > 1 else ''} {names} of {world}: no run directory "
                     "here (a node that died, a rank still running, or its folder elsewhere); the "
                     "report is of the others")
    silent = [r.name for r in ev.ranks if r.status == "killed"]
    if silent:
        notes.append(f"{', '.join(silent)} ended without a word: killed (by the launcher after "
                     "another rank failed, or by a signal)")
    return notes
