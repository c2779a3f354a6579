"""Cheap reads of /proc for the supervisor's sampler: one small file per question, only for the
run's own processes.

psutil answers the same questions, but through general machinery (a Process object per call, several
files per answer, and whole-system scans to find a process's children): at 10 samples a second that
was most of gpubottle's own CPU, taken from the training it measures. Every reader returns None when
the file is not there (another OS, a process that just ended); the caller then falls back or skips.
"""

from __future__ import annotations

import os
import time

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 65536)
    except OSError:
        return None
    finally:
        os.close(fd)


def cpu_seconds(pid: int | str) -> float | None:
    """User + system CPU seconds of a process (all its threads), from /proc/PID/stat."""
    raw = _read(f"/proc/{pid}/stat")
    if raw is None:
        return None
    try:
        fields = raw[raw.rindex(b")") + 2:].split()  # after "pid (comm) ": comm may hold spaces
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (ValueError, IndexError):
        return None


def cpu_and_children_seconds(pid: int) -> tuple[float, float] | None:
    """(CPU seconds of the process, CPU seconds of its children that ended and were waited for).
    A child that lives and dies between two samples is seen only in the second number."""
    raw = _read(f"/proc/{pid}/stat")
    if raw is None:
        return None
    try:
        f = raw[raw.rindex(b")") + 2:].split()
        return (int(f[11]) + int(f[12])) / _TICK, (int(f[13]) + int(f[14])) / _TICK
    except (ValueError, IndexError):
        return None


def process_start_mono(pid: int | str = "self") -> float | None:
    """When a process started, on CLOCK_MONOTONIC (the clock the probes and the account share), to
    the kernel's tick (10 ms): its start time in /proc/PID/stat counts from boot, as
    CLOCK_BOOTTIME does, which runs ahead of the monotonic clock by the time suspended."""
    raw = _read(f"/proc/{pid}/stat")
    if raw is None or not hasattr(time, "CLOCK_BOOTTIME"):
        return None
    try:
        started = int(raw[raw.rindex(b")") + 2:].split()[19]) / _TICK
    except (ValueError, IndexError):
        return None
    return time.monotonic() - (time.clock_gettime(time.CLOCK_BOOTTIME) - started)


def thread_cpu_seconds(pid: int, tid: int) -> float | None:
    """CPU seconds of one thread (the main thread when tid == pid: the loop's, or a worker's loader)."""
    return cpu_seconds(f"{pid}/task/{tid}")


def threads_cpu_seconds(pid: int) -> dict[int, float] | None:
    """CPU seconds of each of a process's threads, by native thread id (a threading.Thread's
    native_id, which py-spy names its samples by). None where the process is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    out: dict[int, float] = {}
    for tid in tids:
        cpu = cpu_seconds(f"{pid}/task/{tid}") if tid.isdigit() else None
        if cpu is not None:
            out[int(tid)] = cpu
    return out


def threads_cpu_precise(pid: int) -> float | None:
    """CPU seconds of the process's live threads, to the nanosecond (each one's schedstat; a thread
    that ended is not counted). None where schedstat cannot be read."""
    tids = thread_ids(pid)
    if tids is None:
        return None
    total = 0.0
    for tid in tids:
        raw = _read(f"/proc/{pid}/task/{tid}/schedstat")
        if not raw:  # ended between the listing and the read
            continue
        both = _schedstat_fields(raw)
        if both is None:
            return None
        total += both[0]
    return total


def schedstat(pid: int) -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting for one) of the process's main thread, to the
    nanosecond (Linux schedstat; /proc's stat counts CPU in 10-ms ticks)."""
    raw = _read(f"/proc/{pid}/schedstat")
    return _schedstat_fields(raw) if raw else None


def _schedstat_fields(raw: bytes) -> tuple[float, float] | None:
    try:
        fields = raw.split()
        return int(fields[0]) / 1e9, int(fields[1]) / 1e9
    except (ValueError, IndexError):
        return None


def run_queue_seconds(pid: int) -> float | None:
    """Seconds the process's main thread spent runnable but waiting for a CPU (Linux schedstat):
    what tells a loader starved of CPU from one waiting on I/O, which CPU time alone cannot."""
    both = schedstat(pid)
    return both[1] if both else None


def rss_bytes(pid: int) -> int | None:
    got = rss_anon_bytes(pid)
    return got[0] if got else None


def rss_anon_bytes(pid: int) -> tuple[int, int] | None:
    """(RSS, its anonymous part) from /proc/PID/statm (resident, less the file-backed and shared
    memory pages): cheap enough for every sample."""
    raw = _read(f"/proc/{pid}/statm")
    try:
        fields = raw.split() if raw else []
        rss, shared = int(fields[1]) * _PAGE, int(fields[2]) * _PAGE
    except (ValueError, IndexError):
        return None
    return rss, max(0, rss - shared)


def pss_uss_bytes(pid: int) -> tuple[int, int] | None:
    """(PSS, its own) from /proc/PID/smaps_rollup: pages shared with forked workers counted once;
    and the pages only it has written (Private_Dirty): a worker's own copies of what it read (copy
    on read, an unpickled dataset), not the clean pages of a file it maps, which the OS shares with
    whoever maps the file next. This walks every mapping of the process (milliseconds for a torch
    process), so it is read rarely."""
    raw = _read(f"/proc/{pid}/smaps_rollup")
    if not raw:
        return None
    pss = uss = 0
    found = False
    for line in raw.splitlines():
        key, _, rest = line.partition(b":")
        if key == b"Pss":
            pss = int(rest.split()[0]) * 1024
            found = True
        elif key == b"Private_Dirty":
            uss += int(rest.split()[0]) * 1024
    return (pss, uss) if found else None


def thread_ids(pid: int) -> list[int] | None:
    """A process's threads (/proc/PID/task); None where it has gone."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        return None


def children(pid: int) -> set[int] | None:
    """Direct children of a process, from /proc/PID/task/*/children (no scan of the whole system)."""
    tids = thread_ids(pid)
    if tids is None:
        return None
    out: set[int] = set()
    for tid in tids:
        raw = _read(f"/proc/{pid}/task/{tid}/children")
        if raw is None:
            return None  # the kernel lacks CONFIG_PROC_CHILDREN: the caller scans instead
        out.update(int(x) for x in raw.split())
    return out


def machine_cpu() -> tuple[float, float, float] | None:
    """(busy, iowait, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    raw = _read("/proc/stat")
    if not raw:
        return None
    try:
        parts = [int(x) for x in raw.split(b"\n", 1)[0].split()[1:]]
    except ValueError:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: already inside user/nice]
    total = sum(parts[:8])
    idle, iowait = parts[3], parts[4] if len(parts) > 4 else 0
    return (total - idle - iowait) / _TICK, iowait / _TICK, total / _TICK


def meminfo() -> dict[str, int] | None:
    """MemTotal, MemAvailable, SwapTotal, SwapFree in bytes, from /proc/meminfo."""
    raw = _read("/proc/meminfo")
    if not raw:
        return None
    out: dict[str, int] = {}
    for line in raw.splitlines():
        key, _, rest = line.partition(b":")
        if key in (b"MemTotal", b"MemAvailable", b"SwapTotal", b"SwapFree"):
            out[key.decode()] = int(rest.split()[0]) * 1024
    return out if "MemTotal" in out and "MemAvailable" in out else None


def loadavg() -> float | None:
    raw = _read("/proc/loadavg")
    try:
        return float(raw.split()[0]) if raw else None
    except (ValueError, IndexError):
        return None


def cmdline(pid: int) -> str | None:
    raw = _read(f"/proc/{pid}/cmdline")
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip() if raw is not None else None


def comm(pid: int) -> str | None:
    raw = _read(f"/proc/{pid}/comm")
    return raw.decode("utf-8", "replace").strip() if raw is not None else None


def ppid(pid: int) -> int | None:
    raw = _read(f"/proc/{pid}/stat")
    try:
        return int(raw[raw.rindex(b")") + 2:].split()[1]) if raw else None
    except (ValueError, IndexError):
        return None


def last_pid() -> int | None:
    """The pid the kernel handed out last in this pid namespace (/proc/loadavg's fifth field): it
    moves with every process or thread made (collect/children.py). None where it says 0."""
    raw = _read("/proc/loadavg")
    try:
        pid = int(raw.split()[4]) if raw else 0
    except (ValueError, IndexError):
        return None
    return pid or None
