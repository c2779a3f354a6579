"""oom-risk on the GPU: the run died of CUDA OOM, its memory came near the device's capacity, or
allocated memory climbs toward it. The rules decide (`gpu_memory_decision`: what filled the memory
picks the fix) and the words speak (`gpu_memory_words`); this builds the findings."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Finding
from gpubottle.rules import gpu_memory_words as words
from gpubottle.rules.gpu_memory_decision import decide_cuda_oom, decide_gpu_growth, decide_trace_memory


def cuda_oom(ev: Evidence) -> list[Finding]:
    """From the allocator inside the script: an OOM, or a peak near the device's capacity."""
    d = decide_cuda_oom(ev)
    if d is None:
        return []
    return [Finding(v.OOM_RISK, d.severity, None, words.summary(d), words.facts(d), words.fixes(d))]


def gpu_memory(ev: Evidence) -> list[Finding]:
    """From a profiler trace's memory events; a run's allocator readings (cuda_oom) are better."""
    d = decide_trace_memory(ev)
    if d is None:
        return []
    return [Finding(v.OOM_RISK, d.severity, None, words.trace_summary(d), words.trace_facts(d),
                    words.trace_fixes(d))]


def gpu_growth(ev: Evidence) -> list[Finding]:
    """Allocated CUDA memory climbing steadily over the measured steps: the OOM is coming."""
    d = decide_gpu_growth(ev)
    if d is None:
        return []
    return [Finding(v.OOM_RISK, d.severity, None, words.growth_summary(d), words.growth_facts(d),
                    words.growth_fixes(d), exhaustion_s=round(d.exhaustion_s, 1))]
