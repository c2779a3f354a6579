"""py-spy's output in the run directory: each chunk converted from chrometrace to speedscope's
evented format as soon as it completes, and read back as each thread's stacks over time.

py-spy's sampled formats (speedscope, flamegraph, raw) say how often a stack was seen, not when; at
low priority py-spy also misses samples while every core is busy and catches up when they free (at
exit, say), so spacing the samples evenly put seconds of exit and start-up inside the measured
steps. Its chrometrace records when each stack began and ended; converted to speedscope's evented
format (frames listed once, open/close events with times) it stays small, opens in speedscope, and
gives the analysis each stack at a known time.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from gpubottle import jsonio

# py-spy --threads: the root frame names the thread, "thread (<native id>): <name>". Before it can
# tell the native id (attached while the interpreter still starts) py-spy writes the Python thread
# id in hex instead, and the name only when it knows it: "thread (0x7F12AB): MainThread".
_THREAD = re.compile(r"thread \((\d+|0x[0-9A-Fa-f]+)\)(?:: (.*))?$")


def _load(path: str) -> Any:
    with open(path, "rb") as fh:
        return jsonio.loads(fh.read())


def chrometrace_to_evented(raw: str, dest: str, pid: int) -> bool:
    """Convert py-spy's chrometrace at `raw` (times in microseconds from the recording's start) into
    a speedscope evented file at `dest` (seconds from the same start); False when nothing usable."""
    try:
        events = _load(raw)
    except (OSError, ValueError):
        return False
    if not isinstance(events, list):
        return False
    frames: list[dict[str, Any]] = []
    index: dict[tuple[str, str, int], int] = {}
    threads: dict[Any, dict[str, Any]] = {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") not in ("B", "E"):
            continue
        name = str(ev.get("name", "?"))
        tid = ev.get("tid")
        at = float(ev.get("ts") or 0) / 1e6
        m = _THREAD.match(name)
        if m:  # the thread's root: names the profile, is not a frame of it
            native = m.group(1).isdigit()
            prof = threads.setdefault(tid, {"os_tid": int(m.group(1)) if native else None,
                                            "thread": m.group(2) or "?", "events": [], "end": 0.0})
            prof["end"] = max(prof["end"], at)
            continue
        args = ev.get("args") or {}
        key = (name, str(args.get("filename") or ""), int(args.get("line") or 0))
        fid = index.get(key)
        if fid is None:
            fid = index[key] = len(frames)
            frames.append({"name": key[0], "file": key[1], "line": key[2]})
        prof = threads.setdefault(tid, {"os_tid": None, "thread": "?", "events": [], "end": 0.0})
        prof["events"].append({"type": "O" if ev["ph"] == "B" else "C", "frame": fid, "at": at})
        prof["end"] = max(prof["end"], at)
    profiles = [{
        "type": "evented",
        "name": f"Process {pid} Thread {p['os_tid']} \"{p['thread']}\"",
        "unit": "seconds", "startValue": 0.0, "endValue": p["end"], "events": p["events"],
    } for p in threads.values() if p["events"]]
    if not profiles:
        return False
    out = {"$schema": "https://www.speedscope.app/file-format-schema.json",
           "shared": {"frames": frames}, "profiles": profiles,
           "exporter": "gpubottle (py-spy chrometrace)", "name": f"pid {pid}"}
    tmp = dest + ".tmp"
    with open(tmp, "w") as fh:
        jsonio.write(fh, out)
    os.replace(tmp, dest)
    return True


@dataclass
class Timeline:
    """One thread's stacks over time: stack i (frame indices, outermost first) from starts[i] to
    starts[i + 1] (the last until `end`), times in seconds from the chunk's start."""

    pid: int | None
    os_tid: int | None
    thread: str
    starts: list[float] = field(default_factory=list)
    stacks: list[tuple[int, ...]] = field(default_factory=list)
    end: float = 0.0

    @property
    def is_main(self) -> bool:
        """The process's main thread: its native id is the pid, or (not known) its name says so."""
        if self.os_tid is None:
            return self.thread == "MainThread"
        return self.os_tid == self.pid

    def samples(self, step: float) -> list[tuple[float, tuple[int, ...]]]:
        """(time, stack) of each sample py-spy took at one every `step` seconds: a stack is
        written when a sample first sees it, and holds, sampled every `step`, until the next
        change. (A grid laid from the chunk's start instead held each stack up to a whole interval
        past the sample that saw it: at 5 a second an evaluation's last frames landed in the
        training after it, 4-40 ms past its end, and were charged to the training's input.)"""
        out: list[tuple[float, tuple[int, ...]]] = []
        for i, (start, stack) in enumerate(zip(self.starts, self.stacks)):
            stop = self.starts[i + 1] if i + 1 < len(self.starts) else self.end
            if not stack:
                continue
            out.append((start, stack))  # the sample that saw it
            t = start + step
            while t < stop - 1e-6:
                out.append((t, stack))
                t += step
        return out


_PROFILE_NAME = re.compile(r"Process (\d+) Thread (\d+|None) \"(.*)\"")


def read_evented(path: str) -> tuple[list[dict[str, Any]], list[Timeline]]:
    """Frames and per-thread timelines of one converted chunk."""
    data = _load(path)
    frames = list((data.get("shared") or {}).get("frames") or [])
    out: list[Timeline] = []
    for prof in data.get("profiles") or []:
        m = _PROFILE_NAME.match(str(prof.get("name", "")))
        pid = int(m.group(1)) if m else None
        tid = int(m.group(2)) if m and m.group(2).isdigit() else None
        tl = Timeline(pid, tid, m.group(3) if m else "?", end=float(prof.get("endValue") or 0.0))
        stack: list[int] = []
        for ev in prof.get("events") or []:
            fid, at = int(ev["frame"]), float(ev["at"])
            if ev["type"] == "O":
                stack.append(fid)
            elif stack:
                # Close the innermost open frame with this id (py-spy closes in order).
                for k in range(len(stack) - 1, -1, -1):
                    if stack[k] == fid:
                        del stack[k:]
                        break
            if tl.starts and tl.starts[-1] == at:
                tl.stacks[-1] = tuple(stack)  # several events at one sample: the last state counts
            else:
                tl.starts.append(at)
                tl.stacks.append(tuple(stack))
        out.append(tl)
    return frames, out
