"""GPU rules, from a profiler trace (a user's, or the window `run` profiles): transfer-bound,
compute-bound on the GPU, and the findings beside them (sync-bound, launch-bound,
communication-bound); and what NVML alone shows (throttling, busy kernels, a full device). The
rules decide (`gpu_decision`) and the words speak (`gpu_words`); this builds the findings."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.report import Finding
from gpubottle.rules import gpu_decision as gd
from gpubottle.rules import gpu_words as words
from gpubottle.rules import thresholds as th


def transfer_bound(ev: Evidence) -> list[Finding]:
    d = gd.decide_transfer(ev)
    if d is None:
        return []
    return [Finding(v.TRANSFER_BOUND, th.severity_for_share(d.share), round(d.share, 4),
                    words.transfer_summary(d), words.transfer_facts(d), words.transfer_fixes(d))]


def gpu_compute_bound(ev: Evidence) -> list[Finding]:
    cpu_trace = gd.cpu_only_trace(ev)
    if cpu_trace is not None:
        ops = gd.decide_cpu_trace_ops(cpu_trace)
        if ops is None:
            return []
        return [Finding(v.COMPUTE_BOUND, "info", round(ops, 4), words.cpu_trace_summary(ops),
                        [words.breakdown_fact(cpu_trace)], [words.cpu_trace_fix()])]
    d = gd.decide_gpu_compute(ev)
    if d is None:
        return []
    return [Finding(v.COMPUTE_BOUND, "info", round(d.kernel_share, 4), words.compute_summary(d),
                    words.compute_facts(d), words.math_fixes(d))]


def launch_bound(ev: Evidence) -> list[Finding]:
    host_idle = gd.decide_launch(ev)
    g = gd.gpu_steps(ev)
    if host_idle is None or g is None:
        return []
    return [Finding(v.LAUNCH_BOUND, "warning", round(host_idle, 4), words.launch_summary(host_idle),
                    words.launch_facts(g, host_idle), [words.launch_fix()])]


def sync_bound(ev: Evidence) -> list[Finding]:
    d = gd.decide_syncs(ev)
    if d is None:
        return []
    share = round(d.share, 4) if d.costly and d.share is not None else None
    return [Finding(v.SYNC_BOUND, "warning" if share is not None else "info", share,
                    words.sync_summary(d), words.sync_facts(d), words.sync_fixes(d))]


def communication(ev: Evidence) -> list[Finding]:
    got = gd.decide_communication(ev)
    if got is None:
        return []
    g, exposed = got
    return [Finding(v.COMMUNICATION_BOUND, "warning", round(exposed, 4),
                    words.communication_summary(exposed), words.communication_facts(g, exposed),
                    [words.communication_fix()])]


def nvml_findings(ev: Evidence) -> list[Finding]:
    """What NVML alone shows: throttling, busy kernels when no profiler window ran, a full device."""
    out: list[Finding] = []
    states = gd.decide_devices(ev)
    for s in states:
        if s.power_capped is not None:
            out.append(Finding(v.THROTTLED, "info", None, words.power_capped_summary(s),
                               [words.power_fact(s.device)]))
        if s.throttled:
            out.append(Finding(v.THROTTLED, "warning", None, words.throttled_summary(s),
                               [words.clocks_fact(s.device)], [words.throttle_fix()]))
    busy = gd.decide_busy_device(ev)
    if busy is not None:
        out.append(Finding(v.COMPUTE_BOUND, "info", round(busy.util_mean or 0.0, 4), words.busy_summary(busy),
                           [words.busy_fact(busy)], [words.busy_fix()]))
    for s in states:
        if s.memory_full is not None:
            out.append(Finding(v.OOM_RISK, "warning", None, words.memory_full_summary(s),
                               [words.memory_full_fact(s.device)], [words.memory_full_fix()]))
    return out
