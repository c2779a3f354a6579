"""Debugging switches left on in a training script, recorded where the script sets them: autograd's
anomaly detection (torch.autograd.set_detect_anomaly(True), or `with detect_anomaly():`: every
operation keeps its Python traceback and every backward checks each gradient for NaN; measured here
1.6x slower on a small MLP) and CUDA_LAUNCH_BLOCKING=1 (every kernel launch waits for the GPU).

Both anomaly APIs go through torch.set_anomaly_enabled, wrapped here once: its calls are rare (a
switch, not a step), so the user's line is read each time."""

from __future__ import annotations

import functools
import os
import time
from typing import Any

from gpubottle.probes.recorder import Recorder
from gpubottle.probes.sites import caller_site
from gpubottle.vocabulary import DEBUG_ANOMALY as ANOMALY
from gpubottle.vocabulary import DEBUG_LAUNCH_BLOCKING as LAUNCH_BLOCKING
from gpubottle.wire import DebugSwitch


def install_debug_switches(recorder: Recorder, torch: Any, status: dict[str, Any]) -> None:
    if os.environ.get("CUDA_LAUNCH_BLOCKING", "").strip() not in ("", "0"):
        recorder.emit(DebugSwitch(LAUNCH_BLOCKING, True, time.monotonic(), "the environment"))
    orig = getattr(torch, "set_anomaly_enabled", None)
    if orig is None:
        status["debug-switches"] = "torch.set_anomaly_enabled not found"
        return

    @functools.wraps(orig)
    def set_anomaly_enabled(enabled: Any, *args: Any, **kwargs: Any) -> Any:
        result = orig(enabled, *args, **kwargs)
        try:
            if recorder.active:
                recorder.emit(DebugSwitch(ANOMALY, bool(enabled), time.monotonic(), caller_site()))
        except Exception:
            pass
        return result

    torch.set_anomaly_enabled = set_anomaly_enabled
    status["debug-switches"] = None
