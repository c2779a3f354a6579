"""RUN_DIR/timeline.json: one Chrome-trace file of the whole run, for Perfetto or chrome://tracing.

The profiler window's events (when there is one) with gpubottle's own on top: each step and each
DataLoader wait as a complete event, stops and probe windows as instants, and counter tracks
(`"ph": "C"`) for CPU per role, memory, GPU readings and the input wait's share of each step. Our
times are moved onto the window's clock (its first event is where the window started), so both line
up; without a window they are CLOCK_MONOTONIC microseconds.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

from gpubottle import jsonio
from gpubottle.analysis.series import RunSeries

MERGE_MAX_BYTES = 200 << 20  # a window trace bigger than this stays its own file
_TIDS = {"steps": 1, "DataLoader waits": 2, "run phases": 3, "gpubottle": 4}


def _window_events(path: str | None) -> list[dict[str, Any]]:
    if not path or not os.path.isfile(path) or os.path.getsize(path) > MERGE_MAX_BYTES:
        return []
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return []
    events = data.get("traceEvents") if isinstance(data, dict) else data
    return [e for e in events or [] if isinstance(e, dict)]


def timeline(s: RunSeries, pid: int, window_trace: str | None = None) -> dict[str, Any]:
    theirs = _window_events(window_trace)
    offset = 0.0
    starts = [float(e["ts"]) for e in theirs
              if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
    if starts and s.window is not None:
        offset = min(starts) - s.window[0] * 1e6

    def us(t: float) -> float:
        return round(t * 1e6 + offset, 1)

    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "training script (gpubottle)"}}]
    out += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
            for name, tid in _TIDS.items()]
    # Without a window, ours are the trace's only steps and DataLoader waits: named as torch.profiler
    # names them, so `gpubottle report timeline.json` (and HTA, Perfetto's queries) read them as such.
    # With one, the window's own ProfilerStep# spans stay the only ones of that name.
    as_profiler = not starts
    step_name, step_cat = ("ProfilerStep#{}", "user_annotation") if as_profiler else ("step {}",
                                                                                        "gpubottle.step")
    for i, (lo, hi) in enumerate(s.steps):
        out.append({"ph": "X", "name": step_name.format(i), "cat": step_cat, "pid": pid,
                    "tid": _TIDS["steps"], "ts": us(lo), "dur": round((hi - lo) * 1e6, 1)})
        if hi > lo and i < len(s.waits):
            out.append({"ph": "C", "name": "input wait share", "pid": pid, "ts": us(hi),
                        "args": {"share": round(s.waits[i] / (hi - lo), 4)}})
    wait_name = ("enumerate(DataLoader)#_BaseDataLoaderIter.__next__" if as_profiler
                 else "DataLoader wait")
    for lo, hi in s.batches:
        out.append({"ph": "X", "name": wait_name, "cat": step_cat, "pid": pid,
                    "tid": _TIDS["DataLoader waits"], "ts": us(lo), "dur": round((hi - lo) * 1e6, 1)})
    for lo, hi, label in s.phases:  # the run outside its training steps
        out.append({"ph": "X", "name": label, "cat": "gpubottle.phase", "pid": pid,
                    "tid": _TIDS["run phases"], "ts": us(lo), "dur": round((hi - lo) * 1e6, 1)})
    for t, label in s.marks:
        out.append({"ph": "i", "s": "p", "name": label, "pid": pid, "tid": _TIDS["gpubottle"],
                    "ts": us(t)})
    out += _counters("CPU (cores)", s.cpu, pid, us)
    out += _counters("memory (GiB)", {k: [(t, v / (1 << 30)) for t, v in p]
                                      for k, p in s.memory.items()}, pid, us)
    out += _counters("GPU (share)", s.gpu, pid, us)
    return {"traceEvents": theirs + out, "displayTimeUnit": "ms",
            "otherData": {"source": "gpubottle", "aligned_to_profiler_window": bool(starts)}}


def _counters(name: str, series: dict[str, list[tuple[float, float]]], pid: int, us: Any
              ) -> list[dict[str, Any]]:
    """One counter track per series (Perfetto draws each name as its own track)."""
    out = []
    for key, pts in series.items():
        for t, v in pts:
            out.append({"ph": "C", "name": f"{name}: {key}", "pid": pid, "ts": us(t),
                        "args": {"value": round(v, 4)}})
    return out


def write_timeline(data: dict[str, Any], stream: IO[str]) -> None:
    jsonio.write(stream, data)
