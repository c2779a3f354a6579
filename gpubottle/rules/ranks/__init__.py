"""The straggler finding: the rank of a job (or of a folder of ranks' traces) the others wait for."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Finding, RankVerdict
from gpubottle.rules.ranks import words
from gpubottle.rules.ranks.decide import decide_straggler


def rank_straggler(ev: Evidence, verdicts: list[RankVerdict] | None = None) -> list[Finding]:
    """The ranks' pace-setter, in the same evidence terms as a single process (a job's ranks with
    their own verdicts, or a folder of ranks' traces by their step times)."""
    d = decide_straggler(ev, verdicts)
    if d is None:
        return []
    return [Finding(v.STRAGGLER, "warning", round(d.lost, 4), words.straggler_summary(d),
                    words.straggler_facts(d), [words.straggler_fix(d)])]
