"""cpu-contention: other programs, or more threads than cores, take the CPU the run needs. The rule
decides (`contention_decision`) and the words speak (`contention_words`); this builds the finding."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Finding
from gpubottle.rules import contention_words as words
from gpubottle.rules.contention_decision import decide_contention


def cpu_contention(ev: Evidence) -> list[Finding]:
    d = decide_contention(ev)
    if d is None:
        return []
    return [Finding(v.CPU_CONTENTION, "info" if d.unattributed_only else "warning", None, words.summary(d),
                    words.facts(d), words.fixes(d))]
