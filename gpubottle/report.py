"""The report: findings chosen by the rules, in the JSON contract other parts (the gate) read."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from gpubottle.evidence import Evidence
from gpubottle.serialisable import Serialisable
from gpubottle.stats import quantile

SCHEMA = "gpubottle.report/1"


@dataclass
class Fact(Serialisable):
    """One piece of evidence behind a finding, with the number it rests on."""

    text: str
    name: str | None = None
    value: float | None = None


@dataclass
class Fix(Serialisable):
    """A concrete change: where in the user's code, and which values to set."""

    text: str
    where: str | None = None  # file:line in the user's code
    change: dict[str, list[Any]] = field(default_factory=dict)  # name -> [current, proposed]
    expected: str | None = None  # what the fix should win, computed from the measurements
    expected_step_s: float | None = None  # the mean step time predicted once the fix is applied
    expected_run_s: float | None = None  # the run's wall time predicted once it is applied
    # Where the user makes the change, when it is not the literal at `where` (rules/post/terms.py):
    # "run with --workers 13 (or -j 13)", and the source of each changed setting.
    how: str | None = None
    source: dict[str, dict[str, Any]] = field(default_factory=dict)

    def proposed(self) -> dict[str, object]:
        """The values the fix sets, without the ones it replaces."""
        return {k: c[1] if isinstance(c, (list, tuple)) and len(c) == 2 else c
                for k, c in self.change.items()}


@dataclass
class Finding(Serialisable):
    category: str
    severity: str  # info | warning | critical
    share: float | None  # fraction of step time this costs; None when unknown
    summary: str
    evidence: list[Fact] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    open_question: str | None = None  # what the evidence could not settle
    phase: str = "train"  # the part of the run it is about (the account's phases)
    run_share: float | None = None  # fraction of the run's wall time it costs; None when unknown
    exhaustion_s: float | None = None  # seconds until memory runs out, where projected (oom-risk)


@dataclass
class StepsSummary(Serialisable):
    """The contract's steps block: every number over the same measured steps (Evidence.measured)."""

    count: int
    measured: int
    warmup: int
    pauses: int
    instrumented: int  # measured-range steps left out because gpubottle's heavier probes ran in them
    source: str  # the step clock: optimizer | backward | dataloader | profiler | none
    median_s: float | None
    mean_s: float | None
    p90_s: float | None
    input_wait_share: float | None  # null when no input wait could be seen (no DataLoader)
    durations_s: list[float] = field(default_factory=list)
    unhooked: int = 0  # steps left out because gpubottle ran them without its hooks (their cost)


def summarize_steps(ev: Evidence) -> StepsSummary:
    st = ev.steps
    m = ev.measured()
    measured = m.durations_s if m is not None else []
    return StepsSummary(
        count=len(st.durations_s),
        measured=len(measured),
        warmup=st.warmup,
        pauses=len(st.outliers),
        instrumented=sum(1 for i in st.instrumented if i >= st.warmup),
        source=st.source,
        median_s=statistics.median(measured) if measured else None,
        mean_s=statistics.fmean(measured) if measured else None,
        p90_s=quantile(measured, 0.9) if measured else None,
        # Unmeasured is null, never 0: no DataLoader (and no profiler trace) means no wait was seen.
        input_wait_share=m.input_share if m is not None else None,
        # Each step less its evaluation and checkpoints (the account shows those).
        durations_s=[round(d, 6) for d in st.net_durations()],
        unhooked=len(st.unhooked),
    )


@dataclass
class RankVerdict(Serialisable):
    """One rank's own diagnosis, beside the job's (its row of numbers is evidence.ranks)."""

    rank: int | None
    node: str | None
    verdict: str
    why: str | None = None  # its leading finding's summary, when that is its verdict's


@dataclass
class Report(Serialisable):
    primary: str
    findings: list[Finding]
    evidence: Evidence
    notes: list[str] = field(default_factory=list)  # why inconclusive, what was missing
    steps: StepsSummary | None = None  # computed from the evidence when not given
    ranks: list[RankVerdict] = field(default_factory=list)  # a job: each rank's own verdict

    def __post_init__(self) -> None:
        if self.steps is None:
            self.steps = summarize_steps(self.evidence)

    @property
    def step_summary(self) -> StepsSummary:
        assert self.steps is not None  # set in __post_init__
        return self.steps

    def to_contract(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "primary": self.primary,
            # The finding that costs the run most (the terminal's verdict line): the primary's, or
            # one of another phase or kind (checkpoint-bound, loop-overhead...).
            "lead": self.lead.category if self.lead is not None else self.primary,
            "account": [a.to_json() for a in self.evidence.account],
            "findings": [f.to_json() for f in self.findings],
            "steps": self.step_summary.to_json(),
            "source": self.evidence.run.to_json(),
            "notes": list(self.notes),
            "evidence": self.evidence.to_json(),
            # Several ranks: one entry per rank, its numbers and its own verdict.
            **({"ranks": self.rank_rows()} if self.evidence.ranks else {}),
            # One rank, or all, of a job a cluster's launcher started (absent otherwise).
            **({"job": self.job()} if self.job() is not None else {}),
            # --try-fixes (absent without): the baseline first, as {"change": {}}
            **({"trials": [t.to_json() for t in self.evidence.trials.trials],
                "upper_bound": (self.evidence.trials.upper_bound.to_json()
                                if self.evidence.trials.upper_bound else None)}
               if self.evidence.trials is not None else {}),
        }

    @property
    def lead(self) -> Finding | None:
        """The finding the report leads with: the one that costs the run most (rules/engine.py puts
        it first): the primary verdict's, or a cost of the run beside it (checkpoints, evaluation,
        start-up, the loop's own code). None when nothing stands out."""
        first = self.findings[0] if self.findings else None
        if first is None or (first.category != self.primary and first.severity == "info"):
            return None
        return first

    def verdict_of(self, rank: int | None, node: str | None) -> RankVerdict | None:
        return next((v for v in self.ranks if v.rank == rank and v.node == node), None)

    def job(self) -> dict[str, Any] | None:
        """The job's id, world size, nodes and the ranks no directory held: from the ranks' rows of
        a merged job, or a single rank's own record."""
        ev = self.evidence
        ids = sorted({r.job for r in ev.ranks if r.job})
        if ids:
            worlds = [r.world_size for r in ev.ranks if r.world_size]
            return {"id": ids[0], "world_size": max(worlds) if worlds else len(ev.ranks),
                    "nodes": sorted({r.node for r in ev.ranks if r.node}),
                    "missing_ranks": list(ev.missing_ranks)}
        j = ev.run.job
        if j is None:
            return None
        return {"id": j.job_id, "world_size": j.world_size, "nodes": [j.node] if j.node else [],
                "missing_ranks": [], "rank": j.rank, "folder": j.folder}

    def rank_rows(self) -> list[dict[str, Any]]:
        rows = []
        for r in self.evidence.ranks:
            own = self.verdict_of(r.rank, r.node)
            rows.append({**r.to_json(), "verdict": own.verdict if own else None,
                         "why": own.why if own else None})
        return rows

    @classmethod
    def from_contract(cls, data: dict[str, Any]) -> Report:
        return cls(
            primary=data["primary"],
            findings=[Finding.from_json(f) for f in data.get("findings", [])],
            evidence=Evidence.from_json(data["evidence"]),
            notes=list(data.get("notes", [])),
            ranks=[RankVerdict(r.get("rank"), r.get("node"), r["verdict"], r.get("why"))
                   for r in data.get("ranks", []) if r.get("verdict")],
        )

