"""What only a job has: the rank the others wait for (straggler, of a job or of a folder of ranks'
traces), ranks that each iterate the whole dataset (unsharded-data), ranks that take different
numbers of steps (uneven-ranks)."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Finding, RankVerdict
from gpubottle.rules.ranks import words
from gpubottle.rules.ranks.decide import decide_straggler, decide_uneven, decide_unsharded


def rank_straggler(ev: Evidence, verdicts: list[RankVerdict] | None = None) -> list[Finding]:
    """The ranks' pace-setter, in the same evidence terms as a single process (a job's ranks with
    their own verdicts, or a folder of ranks' traces by their step times)."""
    d = decide_straggler(ev, verdicts)
    if d is None:
        return []
    return [Finding(v.STRAGGLER, "warning", round(d.lost, 4), words.straggler_summary(d),
                    words.straggler_facts(d), [words.straggler_fix(d)])]


def unsharded_data(ev: Evidence) -> list[Finding]:
    d = decide_unsharded(ev)
    if d is None:
        return []
    run_s = ev.run.duration_s
    return [Finding(v.UNSHARDED_DATA, d.severity(run_s), None, words.unsharded_summary(d),
                    words.unsharded_facts(d), [words.unsharded_fix(d, run_s)], run_share=d.run_share(run_s))]


def uneven_ranks(ev: Evidence) -> list[Finding]:
    d = decide_uneven(ev)
    if d is None:
        return []
    return [Finding(v.UNEVEN_RANKS, "warning", None, words.uneven_summary(d), [], [words.uneven_fix()])]
