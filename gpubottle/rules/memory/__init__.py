"""oom-risk on host memory: near the limit, growing toward it, or already killed by it."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Finding
from gpubottle.rules.memory import words
from gpubottle.rules.memory.decide import decide_host_memory


def host_memory(ev: Evidence) -> list[Finding]:
    d = decide_host_memory(ev)
    if d is None:
        return []
    eta = d.exhaustion_s
    return [Finding(v.OOM_RISK, d.severity, None, words.summary(d), words.facts(d), words.fixes(d),
                    open_question=words.unexplained(ev) if d.unexplained else None,
                    exhaustion_s=round(eta, 1) if eta is not None else None)]
