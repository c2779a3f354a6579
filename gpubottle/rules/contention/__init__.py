"""cpu-contention: other programs, or more threads than cores, take the CPU the run needs."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Finding
from gpubottle.rules.contention import words
from gpubottle.rules.contention.decide import decide_contention


def cpu_contention(ev: Evidence) -> list[Finding]:
    d = decide_contention(ev)
    if d is None:
        return []
    return [Finding(v.CPU_CONTENTION, "info" if d.unattributed_only else "warning", None, words.summary(d),
                    words.facts(d), words.fixes(d))]
