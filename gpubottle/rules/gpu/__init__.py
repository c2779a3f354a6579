"""The GPU's findings. From a profiler trace (a user's, or the window `run` profiles):
transfer-bound, compute-bound on the GPU, and the findings beside them (sync-bound, launch-bound,
communication-bound); what NVML alone shows (throttling, busy kernels, a full device); and
oom-risk on the GPU: the run died of CUDA OOM, its memory came near the device's capacity, or
allocated memory climbs toward it (`memory_decide`: what filled the memory picks the fix)."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, Scripted
from gpubottle.report import Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.common import model_names, scripted
from gpubottle.rules.compute.decide import wasted_work
from gpubottle.rules.compute.wasted_words import (
    cell_loop_fix,
    per_sample_inner_fix,
    repeat_fix,
    wasted_fixes,
)
from gpubottle.rules.gpu import decide as gd
from gpubottle.rules.gpu import memory_words as mw
from gpubottle.rules.gpu import words
from gpubottle.rules.gpu.memory_decide import decide_cuda_oom, decide_gpu_growth, decide_trace_memory


def _compiling(ev: Evidence) -> tuple[list[str] | None, Scripted | None, str | None]:
    """What a torch.compile fix is said with: the script's names for its modules, a TorchScript
    model, a gradient differentiated again (compile_call)."""
    return model_names(ev), scripted(ev), ev.double_backward

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
    first = [words.float64_fix()] if ev.params_dtype == "float64" else []
    return [Finding(v.COMPUTE_BOUND, "info", round(d.kernel_share, 4), words.compute_summary(d),
                    words.compute_facts(d),
                    first + _model_fixes(ev) + words.math_fixes(d, *_compiling(ev)))]


def _model_fixes(ev: Evidence, loops_only: bool = False) -> list[Fix]:
    """The model's forward looping in Python where one call would do (a submodule once per sample,
    an RNN cell over a sequence): on a GPU each call is its own small kernels and launches, so it
    comes before faster math (launch-bound's first fix, too). Then, unless `loops_only`, kernels the
    step runs for nothing, as compute-bound says them on a CPU: gradients no optimizer uses,
    backward again through one forward, padding, a forward repeated."""
    w = wasted_work(ev)
    loops = ([per_sample_inner_fix(w.per_sample_inner)] if w.per_sample_inner is not None else []) + (
        [cell_loop_fix(w.cell_loop)] if w.cell_loop is not None else [])
    if loops_only:
        return loops
    return loops + wasted_fixes(w, None, on_gpu=True) + ([repeat_fix(w.repeat)] if w.repeat else [])


def launch_bound(ev: Evidence) -> list[Finding]:
    host_idle = gd.decide_launch(ev)
    g = gd.gpu_steps(ev)
    if host_idle is None or g is None:
        return []
    return [Finding(v.LAUNCH_BOUND, "warning", round(host_idle, 4), words.launch_summary(host_idle),
                    words.launch_facts(g, host_idle),
                    [*_model_fixes(ev, loops_only=True), words.launch_fix(*_compiling(ev))])]


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
    pace = gd.decide_device_pace(ev)
    if pace is not None:
        out.append(Finding(v.COMPUTE_BOUND, "info", round(min(1.0, pace.busy_s / pace.step_s), 4),
                           words.pace_summary(pace), [words.pace_fact(pace)],
                           [*_model_fixes(ev), words.busy_fix(*_compiling(ev))]))
    busy = gd.decide_busy_device(ev) if pace is None else None
    if busy is not None:
        out.append(Finding(v.COMPUTE_BOUND, "info", round(busy.util_mean or 0.0, 4), words.busy_summary(busy),
                           [words.busy_fact(busy)],
                           [*_model_fixes(ev), words.busy_fix(*_compiling(ev))],
                           words.BUSY_QUESTION))
    for s in states:
        if s.memory_full is not None:
            out.append(Finding(v.OOM_RISK, "warning", None, words.memory_full_summary(s),
                               [words.memory_full_fact(s.device)], [words.memory_full_fix()]))
    return out


def cuda_oom(ev: Evidence) -> list[Finding]:
    """From the allocator inside the script: an OOM, or a peak near the device's capacity."""
    d = decide_cuda_oom(ev)
    if d is None:
        return []
    return [Finding(v.OOM_RISK, d.severity, None, mw.summary(d), mw.facts(d), mw.fixes(d))]


def gpu_memory(ev: Evidence) -> list[Finding]:
    """From a profiler trace's memory events; a run's allocator readings (cuda_oom) are better."""
    d = decide_trace_memory(ev)
    if d is None:
        return []
    return [Finding(v.OOM_RISK, d.severity, None, mw.trace_summary(d), mw.trace_facts(d),
                    mw.trace_fixes(d))]


def gpu_growth(ev: Evidence) -> list[Finding]:
    """Allocated CUDA memory climbing steadily over the measured steps: the OOM is coming."""
    d = decide_gpu_growth(ev)
    if d is None:
        return []
    return [Finding(v.OOM_RISK, d.severity, None, mw.growth_summary(d), mw.growth_facts(d),
                    mw.growth_fixes(d), exhaustion_s=round(d.exhaustion_s, 1))]
