"""A run's report: its script's, or a job's, where every rank is diagnosed on its own first.

Each rank's evidence gets its own verdict; those verdicts, with the ranks' rows, say which rank
the job's report shows (rules/ranks/decide.py: the first that failed, else the pace-setter, else the
lowest), and the job is then diagnosed on that rank's evidence with every row beside it.
"""

from __future__ import annotations

from gpubottle.analysis.ranks import Part, RunParts, job_evidence
from gpubottle.evidence import RunInfo
from gpubottle.report import RankVerdict, Report
from gpubottle.rules.engine import diagnose
from gpubottle.rules.ranks.decide import shown_index


def diagnose_job(parts: list[Part], job: RunInfo | None, missing: list[int] | None = None) -> Report:
    """`missing`: ranks the job had that no run directory holds (a node that died)."""
    verdicts = []
    for evidence, row in parts:
        own = diagnose(evidence)
        verdicts.append(RankVerdict(rank=row.rank, node=row.node, verdict=own.primary,
                                    why=primary_reason(own)))
    rows = [row for _, row in parts]
    ev = job_evidence(parts, shown_index(rows, verdicts), job)
    ev.missing_ranks = list(missing or [])
    return diagnose(ev, verdicts)


def primary_reason(report: Report) -> str | None:
    """The summary of the finding that is the verdict, wherever it stands: another may lead (a
    cold start-up taking most of a short rank's run leads, its verdict still data-starved)."""
    return next((f.summary for f in report.findings if f.category == report.primary), None)


def diagnose_run(parts: RunParts) -> Report:
    if parts.ranks:
        return diagnose_job(parts.ranks, parts.own.run)
    return diagnose(parts.own)
