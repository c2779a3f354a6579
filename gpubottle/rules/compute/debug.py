"""debug-mode: a debugging switch left on while the steps ran. Autograd's anomaly detection keeps
every operation's Python traceback and checks every gradient for NaN (1.6x slower steps measured on
a small MLP here, more where a model has many small operations); CUDA_LAUNCH_BLOCKING=1 makes every
kernel launch wait for the GPU, so the host can never run ahead. How much each costs a given model
is not measured here: the fix is a try, without a number."""

from __future__ import annotations

from gpubottle import vocabulary as v
from gpubottle.evidence import DebugSetting, Evidence
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.units import pct

_WHAT = {
    v.DEBUG_ANOMALY: ("every operation keeps its Python traceback and every backward checks each "
                      "gradient for NaN"),
    v.DEBUG_LAUNCH_BLOCKING: "every kernel launch waits for the GPU to finish it: the host never runs ahead",
}
_OFF = {
    v.DEBUG_ANOMALY: ("turn it off outside debugging: remove torch.autograd.set_detect_anomaly(True) "
                      "(or the detect_anomaly() block), or set it from a --debug option"),
    v.DEBUG_LAUNCH_BLOCKING: ("unset CUDA_LAUNCH_BLOCKING outside debugging (it is for locating a "
                              "failing kernel)"),
}


def _uses_cuda(ev: Evidence) -> bool:
    return ev.cuda_memory is not None or ev.gpu is not None or bool(ev.nvml)


def _where(d: DebugSetting) -> str | None:
    """The user's line that turned it on (none to point at for an environment variable)."""
    return d.site if d.site and d.site != "the environment" else None


def _finding(d: DebugSetting) -> Finding:
    where = f" ({d.site})" if d.site else ""
    return Finding(
        v.DEBUG_MODE, "warning", None,
        f"{d.name} is on{where} for {pct(d.on_share)} of the measured steps: {_WHAT[d.name]}, "
        "which slows every step",
        [Fact(f"{d.name} turned on at {d.site or 'an unknown line'}; on for {pct(d.on_share)} of the "
              "measured steps", "debug_on_share", d.on_share)],
        [Fix(text=f"{_OFF[d.name]}; try it and time it", where=_where(d))])


def _on(ev: Evidence) -> list[DebugSetting]:
    return [d for d in ev.debug if d.name in _WHAT and d.on_share >= th.DEBUG_ON_SHARE
            and (d.name != v.DEBUG_LAUNCH_BLOCKING or _uses_cuda(ev))]


def debug_mode(ev: Evidence) -> list[Finding]:
    return [_finding(d) for d in _on(ev)]


def debug_first(ev: Evidence) -> list[Fix]:
    """For compute-bound's fixes: before faster math, the switch that slows the math (debug-mode)."""
    return [Fix(text=f"first turn off {d.name}: it slows every step (debug-mode, below)", where=_where(d))
            for d in _on(ev)]
