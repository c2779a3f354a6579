"""Sampling of the script's whole process tree, from the supervisor.

CPU and run-queue time per process every tick (5 Hz for the first 10 s by default, then 2 Hz, and
1 Hz after 15 s), the tree's membership once a second, memory twice a second (at most once a
tick), processes outside the run every two seconds. Everything it reads is
one small /proc file about one of the run's own processes (collect/procfs.py); what costs more is
done rarely:

- memory is RSS at each sample, corrected to PSS/USS (pages that forked DataLoader workers share
  counted once) from smaps_rollup every PSS_EVERY_S per process, since that read walks every
  mapping (10 ms of CPU for a torch process, under a lock its allocations also take); a process
  alone in its tree shares only its libraries, a correction that barely moves: it is re-read every
  PSS_LONE_EVERY_S, and every PSS_EVERY_S again once its tree has other processes;
- CPU used outside the run is the machine's busy time minus the run's and gpubottle's own; the names
  of the competing processes are looked up (a scan of the whole system) only when that is large.

Records go to samples.jsonl as they are taken, so a crash of anything loses at most a second.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from gpubottle.collect import procfs
from gpubottle.collect.children import ChildrenCache
from gpubottle.collect.system import cgroup_memory_current, cgroup_memory_limit
from gpubottle.wakeups import next_on_grid
from gpubottle.wire import CpuSample, MemSample, OutsideSample, OwnSample, ProcSeen, ThreadsCpu, encode

PSS_EVERY_S = 5.0
# ...and never more than this share of a core for one process's reads: the read's cost grows with the
# process's memory (measured 17 ms of CPU at 2.3 GB resident, about 7 ms a GB), and it holds the lock
# the process's own page faults take, so a process of many GBs is read every read_cost / PSS_COST_SHARE.
PSS_COST_SHARE = 0.002
# PSS reads are the sampler's dearest, and dearer to the process than their CPU says: its brk and
# page faults wait on the walk (a busy loop's main thread blocked ~200 times a read, 42 times a second
# at one read in 5 s, none without the reads). A lone process's correction barely moves: rarer.
PSS_LONE_EVERY_S = 30.0
# The first seconds are sampled at the requested rate (a short run needs the samples); then at most
# STEADY_HZ: every wakeup of the sampler displaces a training thread, which costs the run more than
# the sampler's own CPU. Means over a long run need no more.
FAST_FOR_S = 10.0
STEADY_HZ = 2.0
# The script's process's threads' CPU: a directory listing and a stat per thread (measured 0.76 ms
# of CPU for 43 threads), every 2 s, or less often where a read costs more than this share of a
# core over the time to the next (a process of hundreds of threads).
THREADS_EVERY_S = 2.0
THREADS_COST_SHARE = 0.0005
# From the collectors' late budget on (collect/budget.py: 0.3% of the run's cores after its first
# 15 s), SLOW_HZ: a run's means need no more, and each tick wakes the supervisor on the
# training's cores (its CPU was 0.28% of a core at 2 a second on the steady loop, 0.20-0.44%
# over the first 15 s at 5 and 2).
SLOW_AFTER_S = 15.0
SLOW_HZ = 1.0


def tree_schedule(hz: float) -> str:
    """The sampling schedule in words, for --help and the README."""
    return (f"{hz:g} a second for the first {FAST_FOR_S:.0f} s, then at most {STEADY_HZ:g}, "
            f"{SLOW_HZ:g} after {SLOW_AFTER_S:.0f} s")


OUTSIDE_SCAN_MIN_CORES = 0.25  # outside load worth naming its processes
OUTSIDE_SCAN_EVERY_S = 10.0


# The collectors' niceness: a slice when every core is busy, rarely preempting a training thread.
LOW_PRIORITY = 10  # nice 19 does no better (docs/thresholds.md)


def yield_cpu(pid: int = 0) -> bool:
    """Lower the calling thread (or `pid`) to nice 10: a waking sampler then rarely preempts the
    training, yet still gets a slice when every core is busy. Not SCHED_IDLE: an idle-policy
    sampler runs only when a core is free, so on a CPU-saturated run (the preprocessing-bound case)
    it took 4 samples in 3 s and the verdict turned on noise."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid or threading.get_native_id(), LOW_PRIORITY)
        return True
    except (AttributeError, OSError):
        return False


def _descendants(root: int, children: Callable[[int], set[int] | None] = procfs.children) -> set[int]:
    """root and every process below it (`children`: a ChildrenCache's `of`, read again only where a
    process was made since)."""
    found = {root}
    todo = [root]
    while todo:
        kids = children(todo.pop())
        if kids is None:
            return _descendants_psutil(root)
        todo.extend(k for k in kids if k not in found)
        found |= kids
    return found


def _descendants_psutil(root: int) -> set[int]:
    try:
        import psutil

        return {root} | {c.pid for c in psutil.Process(root).children(recursive=True)}
    except Exception:
        return {root}


class _Rate:
    """Cores used between two readings of a cumulative CPU-seconds counter."""

    def __init__(self) -> None:
        self.last: dict[int, tuple[float, float]] = {}

    def update(self, key: int, now: float, value: float | None) -> float | None:
        if value is None:
            self.last.pop(key, None)
            return None
        prev = self.last.get(key)
        self.last[key] = (now, value)
        if prev is None or now <= prev[0]:
            return None
        return max(0.0, (value - prev[1]) / (now - prev[0]))


class TreeSampler:
    def __init__(self, root_pid: int, out: IO[str], interval: float = 0.1, low_priority: bool = True,
                 fast_for_s: float = FAST_FOR_S, slow_after_s: float = SLOW_AFTER_S,
                 now: Callable[[], float] = time.monotonic) -> None:
        self._now = now  # tests drive the schedule with a fake clock
        self.root_pid = root_pid
        self.interval = interval
        self.steady_interval = max(interval, 1.0 / STEADY_HZ)
        self.slow_interval = max(interval, 1.0 / SLOW_HZ)
        self.fast_for_s = fast_for_s
        self.slow_after_s = slow_after_s
        self.low_priority = low_priority
        self._due: dict[str, float] = {}
        self._out = out
        self._self_pid = os.getpid()
        self._tree: set[int] = set()
        self._children = ChildrenCache(now=now)
        self._parent: dict[int, int] = {}
        # CPU of the whole tree, ended children included: per process, its own and its reaped
        # children's seconds when last read. A worker that ends moves its seconds into its parent's
        # children count, which must not count them twice; one that lived between two samples is
        # seen only there, and must not be taken for another program's.
        self._totals: dict[int, float] = {}
        self._tree_seconds = 0.0
        self._tree_last: tuple[float, float] | None = None
        self._helpers: set[int] = set()  # gpubottle's own children (py-spy), not the script's
        self._cpu = _Rate()
        self._main_thread = _Rate()
        self._waits = _Rate()
        self._own = _Rate()
        self._own_slow = _Rate()  # over the 1 s between OwnSamples: /proc counts in 10 ms ticks
        self._helper_rate = _Rate()
        self._machine_last: tuple[float, float, float, float] | None = None  # t, busy, iowait, total
        self._outside_acc = [0.0, 0.0, 0.0]  # cores x seconds outside the run, of helpers; seconds
        self._last_scan = -1e9
        self._top: list[list[Any]] = []
        self._scan_base: tuple[float, dict[int, float]] | None = None
        # pid -> (rss - pss, anon - own, when read, what the read cost in CPU seconds)
        self._shared: dict[int, tuple[int, int, float, float]] = {}
        self._root_busy = 0.0  # the script's main thread's share running or queued, last tick
        self._stalled_s = 0.0  # ... and the time it was held blocked by the PSS reads (OwnSample)
        self._thread_cpu: dict[int, float] = {}  # the script's threads' CPU seconds, last read
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpubottle-sampler", daemon=True)
        self._lines: list[str] = []
        self.errors: list[str] = []
        self.ticks = 0
        self.latest: dict[str, Any] = {}  # last values, for the live status line and the leak watch
        # Called in this thread after each tick with the time: the supervisor's own periodic work
        # (the leak watch, the budget), which then needs no wakeup of its own.
        self.on_tick: Callable[[float], None] | None = None
        self._mem_limit = cgroup_memory_limit()

    def start(self) -> None:
        if procfs.cpu_seconds(self.root_pid) is None:
            self.errors.append(f"cannot read /proc/{self.root_pid}: no CPU or memory samples")
        self._tree = {self.root_pid}
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._flush()

    def _emit(self, record: Any) -> None:
        self._lines.append(encode(record))

    def _flush(self) -> None:
        if not self._lines:
            return
        lines, self._lines = self._lines, []
        try:
            self._out.write("\n".join(lines) + "\n")
            self._out.flush()
        except (OSError, ValueError):
            pass

    def _loop(self) -> None:
        if self.low_priority:
            yield_cpu()
        started = self._now()
        while not self._stop.is_set():
            try:
                self._tick()
            except Exception as exc:  # fail open: note it and keep sampling
                if len(self.errors) < 20:
                    self.errors.append(repr(exc))
            self.ticks += 1
            if self.on_tick is not None:
                try:
                    self.on_tick(self._now())
                except Exception as exc:
                    if len(self.errors) < 20:
                        self.errors.append(f"after a tick: {exc!r}")
            # On the shared grid (gpubottle/wakeups.py); one that fell behind (a loaded machine)
            # skips ticks rather than bursting.
            now = self._now()
            self._stop.wait(max(0.0, next_on_grid(now, self.interval_at(now - started)) - now))

    def interval_at(self, age: float) -> float:
        """Seconds to the next tick, `age` seconds into the run: the requested rate first, fewer later."""
        return (self.interval if age < self.fast_for_s else
                self.steady_interval if age < self.slow_after_s else self.slow_interval)

    def _every(self, seconds: float, now: float, job: str) -> bool:
        """Whether `job` is due (every `seconds`, on the clock, whatever the tick rate)."""
        if now < self._due.get(job, 0.0):
            return False
        self._due[job] = now + seconds - 0.5 * self.interval  # ticks land a little early or late
        return True

    def _refresh_tree(self, now: float) -> None:
        of = self._children.of
        tree = _descendants(self.root_pid, of) if procfs.cpu_seconds(self.root_pid) is not None else set()
        if self._self_pid in tree:  # watching the process that started us (gpubottle.profile): we
            tree -= _descendants(self._self_pid, of)  # and our py-spy are gpubottle's, not the run's
        for pid in tree - self._tree:
            if pid == self.root_pid:
                continue
            parent = procfs.ppid(pid) or -1
            self._parent[pid] = parent
            self._emit(ProcSeen(pid, parent, procfs.comm(pid) or "?",
                                (procfs.cmdline(pid) or "")[:300], now))
        self._tree = tree or {self.root_pid}
        mine = of(self._self_pid) or set()
        self._helpers = {p for p in mine if p != self.root_pid}

    def _tick(self) -> None:
        now = self._now()
        if self._every(1.0, now, "tree"):
            self._refresh_tree(now)
        cpu: dict[str, float] = {}
        waits: dict[str, float] = {}
        threads: dict[str, float] = {}
        for pid in list(self._tree):
            both = procfs.cpu_and_children_seconds(pid)
            self._account(pid, both)
            cores = self._cpu.update(pid, now, both[0] if both else None)
            # The main thread on its own: running, waiting for a core (run queue), or neither
            # (blocked: I/O, a lock, sleep). What the loader or the loop itself does, whatever
            # the other threads (the math library's pool) and other programs do.
            ran = self._main_thread.update(pid, now, procfs.thread_cpu_seconds(pid, pid))
            wait = self._waits.update(pid, now, procfs.run_queue_seconds(pid))
            if cores is not None:
                cpu[str(pid)] = round(cores, 4)
            if ran is not None:
                threads[str(pid)] = round(ran, 4)
            if wait is not None:
                waits[str(pid)] = round(wait, 4)
            if pid == self.root_pid and ran is not None and wait is not None:
                self._root_busy = min(1.0, ran + wait)
        own = self._own.update(0, now, procfs.cpu_seconds(self._self_pid))
        helpers = sum(self._helper_rate.update(p, now, procfs.cpu_seconds(p)) or 0.0
                      for p in self._helpers)
        busy, iowait = self._machine(now, self._tree_rate(now) + (own or 0.0), helpers)
        if cpu or busy is not None:
            self._emit(CpuSample(round(now, 4), cpu, busy, iowait, waits, threads))
        self.latest["cpu"] = cpu
        if self._every(0.5, now, "memory"):
            self._memory(now)
        if self._every(1.0, now, "own"):
            own_1s = self._own_slow.update(0, now, procfs.cpu_seconds(self._self_pid))
            if own_1s is not None:
                self._emit(OwnSample(round(now, 4), round(own_1s, 4), round(self._stalled_s, 5)))
            self._flush()
        if self._every(2.0, now, "outside"):
            self._outside(now)
        if self._every(THREADS_EVERY_S, now, "threads"):
            self._threads(now)

    def _threads(self, now: float) -> None:
        """The script's process's threads' CPU, those that ran since the last reading."""
        began = time.thread_time()
        got = procfs.threads_cpu_seconds(self.root_pid)
        if not got:
            return
        cost = time.thread_time() - began
        self._due["threads"] = max(self._due.get("threads", 0.0), now + cost / THREADS_COST_SHARE)
        ran = {str(tid): round(cpu, 2) for tid, cpu in got.items() if self._thread_cpu.get(tid) != cpu}
        self._thread_cpu = got
        if ran:
            self._emit(ThreadsCpu(round(now, 4), self.root_pid, ran))

    def _account(self, pid: int, both: tuple[float, float] | None) -> None:
        if both is None:  # ended: its seconds will show in its parent's children count
            last = self._totals.pop(pid, None)
            parent = self._parent.pop(pid, None)
            if last is not None and parent in self._totals:
                self._totals[parent] += last  # so the parent's jump is not counted again
            return
        total = both[0] + both[1]
        self._tree_seconds += total - self._totals.get(pid, 0.0)
        self._totals[pid] = total

    def _tree_rate(self, now: float) -> float:
        last, self._tree_last = self._tree_last, (now, self._tree_seconds)
        if last is None or now <= last[0]:
            return 0.0
        return max(0.0, (self._tree_seconds - last[1]) / (now - last[0]))

    def _machine(self, now: float, ours: float, helpers: float) -> tuple[float | None, float | None]:
        """Busy and iowait cores machine-wide since the last tick; what is neither the run nor
        gpubottle accumulates as outside load."""
        m = procfs.machine_cpu()
        if m is None:
            return None, None
        last, self._machine_last = self._machine_last, (now, *m)
        if last is None or now <= last[0]:
            return None, None
        dt = now - last[0]
        busy = max(0.0, (m[0] - last[1]) / dt)
        iowait = max(0.0, (m[1] - last[2]) / dt)
        acc = self._outside_acc
        acc[0] += max(0.0, busy - ours - helpers) * dt
        acc[1] += helpers * dt
        acc[2] += dt
        return round(busy, 4), round(iowait, 4)

    def _memory(self, now: float) -> None:
        mem: dict[str, list[int]] = {}
        lone = len(self._tree) == 1
        every = PSS_LONE_EVERY_S if lone else PSS_EVERY_S
        for pid in list(self._tree):
            got = procfs.rss_anon_bytes(pid)
            if got is None:
                continue
            rss, anon = got
            shared = self._shared.get(pid)
            if shared is None or now - shared[2] >= max(every, shared[3] / PSS_COST_SHARE):
                began = time.thread_time()
                exact = self._pss_read(pid)
                cost = time.thread_time() - began
                shared = (rss - exact[0], anon - exact[1], now, cost) if exact else (0, 0, now, cost)
                self._shared[pid] = shared
            # Between exact reads: PSS moves with RSS, a process's own pages with its anonymous ones
            # (a file it maps and reads adds resident pages that are nobody's copy).
            mem[str(pid)] = [max(0, rss - shared[0]), max(0, anon - shared[1])]
        info = procfs.meminfo() or {}
        swap = info.get("SwapTotal", 0) - info.get("SwapFree", 0)
        cg_cur = cgroup_memory_current() if self._mem_limit else None
        rec = MemSample(round(now, 4), mem, int(info.get("MemAvailable", 0)), int(info.get("MemTotal", 0)),
                        int(swap), cg_cur, self._mem_limit, procfs.loadavg())
        self._emit(rec)
        self.latest["mem"] = rec

    def _pss_read(self, pid: int) -> tuple[int, int] | None:
        """procfs.pss_uss_bytes, and for the script's main process the time its main thread was
        blocked meanwhile, as far as it was busy before (a thread that waits on the GPU or a queue
        blocks for its own reasons): a busy loop sharing the reader's core lost 0.4-3 ms to a
        4.5-ms read of smaps_rollup (its brk waits on the walk)."""
        if pid != self.root_pid or self._root_busy <= 0:
            return procfs.pss_uss_bytes(pid)
        before, began = procfs.schedstat(pid), time.perf_counter()
        exact = procfs.pss_uss_bytes(pid)
        wall, after = time.perf_counter() - began, procfs.schedstat(pid)
        if before is not None and after is not None:
            blocked = wall - (after[0] - before[0]) - (after[1] - before[1])
            self._stalled_s += max(0.0, blocked) * self._root_busy
        return exact

    def _outside(self, now: float) -> None:
        acc = self._outside_acc
        if acc[2] <= 0:
            return
        outside, helpers = acc[0] / acc[2], acc[1] / acc[2]
        self._outside_acc = [0.0, 0.0, 0.0]
        if outside < OUTSIDE_SCAN_MIN_CORES:
            self._top, self._scan_base = [], None
        elif self._scan_base is not None:  # a baseline from the last interval: name who used the CPU
            self._top = self._top_outside(now, *self._scan_base)
            self._scan_base, self._last_scan = None, now
        elif now - self._last_scan >= OUTSIDE_SCAN_EVERY_S:
            self._scan_base = (now, self._outside_cpu())
        self._emit(OutsideSample(round(now, 4), round(outside, 4), self._top, round(helpers, 4)))

    def _outside_cpu(self) -> dict[int, float]:
        """CPU seconds of every process outside the run (a scan of the whole system: done rarely)."""
        mine = self._tree | self._helpers | {self._self_pid}
        try:
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            return {}
        return {p: c for p in pids if p not in mine and (c := procfs.cpu_seconds(p)) is not None}

    def _top_outside(self, now: float, t0: float, before: dict[int, float]) -> list[list[Any]]:
        if now <= t0:
            return []
        after = self._outside_cpu()
        usage = sorted(((p, (c - before[p]) / (now - t0)) for p, c in after.items() if p in before),
                       key=lambda x: -x[1])
        return [[p, procfs.comm(p) or "?", round(u, 3)] for p, u in usage[:3] if u > 0.05]
