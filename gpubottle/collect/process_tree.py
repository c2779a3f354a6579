"""psutil sampling of the script's whole process tree, from the supervisor.

CPU per process every tick (10 Hz by default: /proc/PID/stat reads are cheap); the tree's membership,
memory (PSS, so pages that forked DataLoader workers share are counted once), swap and the machine's
free memory twice a second; processes outside the tree that compete for the cores every two seconds.
Records go to samples.jsonl as they are taken, so a crash of anything loses at most a second.
"""

from __future__ import annotations

import threading
import time
from typing import IO, Any

import psutil

from gpubottle.collect.system import cgroup_memory_current, cgroup_memory_limit
from gpubottle.wire import CpuSample, MemSample, OutsideSample, OwnSample, ProcSeen, encode


def _cpu_seconds(times: Any) -> float:
    return float(times.user + times.system)


def run_queue_seconds(pid: int) -> float | None:
    """Seconds the process's main thread spent runnable but waiting for a CPU (Linux schedstat):
    what tells a loader starved of CPU from one waiting on I/O, which CPU time alone cannot."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class TreeSampler:
    def __init__(self, root_pid: int, out: IO[str], interval: float = 0.1) -> None:
        self.root_pid = root_pid
        self.interval = interval
        self._out = out
        self._procs: dict[int, psutil.Process] = {}
        self._last_cpu: dict[int, tuple[float, float]] = {}
        self._last_wait: dict[int, float] = {}
        self._outside_last: dict[int, float] = {}
        self._outside_t: float | None = None
        self._sys_last: Any = None
        self._sys_t = 0.0
        self._self = psutil.Process()
        self._self_last: tuple[float, float] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpubottle-sampler", daemon=True)
        self._lines: list[str] = []
        self.errors: list[str] = []
        self.ticks = 0
        self.latest: dict[str, Any] = {}  # last values, for the live status line
        self._mem_limit = cgroup_memory_limit()

    def start(self) -> None:
        try:
            self._procs[self.root_pid] = psutil.Process(self.root_pid)
        except psutil.Error as exc:
            self.errors.append(f"cannot watch pid {self.root_pid}: {exc}")
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
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                self._tick()
            except Exception as exc:  # fail open: note it and keep sampling
                if len(self.errors) < 20:
                    self.errors.append(repr(exc))
            self.ticks += 1
            next_t += self.interval
            delay = next_t - time.monotonic()
            if delay < 0:  # fell behind (a loaded machine): skip ticks rather than burst
                next_t = time.monotonic()
                delay = 0.0
            self._stop.wait(delay)

    def _refresh_tree(self, now: float) -> None:
        root = self._procs.get(self.root_pid)
        if root is None:
            return
        try:
            kids = root.children(recursive=True)
        except psutil.Error:
            return
        alive = {self.root_pid}
        for kid in kids:
            alive.add(kid.pid)
            if kid.pid not in self._procs:
                self._procs[kid.pid] = kid
                try:
                    cmd = " ".join(kid.cmdline())[:300]
                    self._emit(ProcSeen(kid.pid, kid.ppid(), kid.name(), cmd, now))
                except psutil.Error:
                    pass
        for pid in list(self._procs):
            if pid not in alive:
                self._procs.pop(pid, None)

    def _tick(self) -> None:
        now = time.monotonic()
        slow = self.ticks % max(1, round(1.0 / self.interval)) == 0
        if slow:
            self._refresh_tree(now)
        cpu: dict[str, float] = {}
        waits: dict[str, float] = {}
        for pid, proc in list(self._procs.items()):
            try:
                secs = _cpu_seconds(proc.cpu_times())
            except psutil.Error:
                self._procs.pop(pid, None)
                continue
            wait = run_queue_seconds(pid)
            last = self._last_cpu.get(pid)
            last_wait = self._last_wait.get(pid)
            self._last_cpu[pid] = (now, secs)
            if wait is not None:
                self._last_wait[pid] = wait
            if last and now > last[0]:
                cpu[str(pid)] = round((secs - last[1]) / (now - last[0]), 4)
                if wait is not None and last_wait is not None:
                    waits[str(pid)] = round((wait - last_wait) / (now - last[0]), 4)
        busy = iowait = None
        st = psutil.cpu_times()
        if self._sys_last is not None and now > self._sys_t:
            dt = now - self._sys_t
            idle = (st.idle - self._sys_last.idle)
            io = getattr(st, "iowait", 0.0) - getattr(self._sys_last, "iowait", 0.0)
            total = sum(st) - sum(self._sys_last)
            busy = round((total - idle - io) / dt, 4)
            iowait = round(io / dt, 4)
        self._sys_last, self._sys_t = st, now
        if cpu or busy is not None:
            self._emit(CpuSample(round(now, 4), cpu, busy, iowait, waits))
        self.latest["cpu"] = cpu
        if self.ticks % max(1, round(0.5 / self.interval)) == 0:
            self._memory(now)
        if slow:
            self._self_cpu(now)
            self._flush()
        if self.ticks % max(1, round(2.0 / self.interval)) == 0:
            self._outside(now)

    def _memory(self, now: float) -> None:
        mem: dict[str, list[int]] = {}
        for pid, proc in list(self._procs.items()):
            try:
                info = proc.memory_full_info()
                mem[str(pid)] = [int(getattr(info, "pss", info.rss)), int(getattr(info, "uss", info.rss))]
            except psutil.AccessDenied:
                try:
                    mem[str(pid)] = [int(proc.memory_info().rss), int(proc.memory_info().rss)]
                except psutil.Error:
                    pass
            except psutil.Error:
                pass
        vm = psutil.virtual_memory()
        swap = psutil.swap_memory()
        try:
            load1 = psutil.getloadavg()[0]
        except (OSError, AttributeError):
            load1 = None
        cg_cur = cgroup_memory_current() if self._mem_limit else None
        rec = MemSample(round(now, 4), mem, int(vm.available), int(vm.total), int(swap.used),
                        cg_cur, self._mem_limit, load1)
        self._emit(rec)
        self.latest["mem"] = rec

    def _self_cpu(self, now: float) -> None:
        try:
            secs = _cpu_seconds(self._self.cpu_times())
        except psutil.Error:
            return
        last = self._self_last
        if last and now > last[0]:
            self._emit(OwnSample(round(now, 4), round((secs - last[1]) / (now - last[0]), 4)))
        self._self_last = (now, secs)

    def _outside(self, now: float) -> None:
        # Our own helpers (py-spy) are gpubottle's cost, not competition from outside.
        try:
            helpers = {p.pid for p in self._self.children(recursive=True)}
        except psutil.Error:
            helpers = set()
        mine = set(self._procs) | {self._self.pid}
        current: dict[int, float] = {}
        names: dict[int, str] = {}
        for proc in psutil.process_iter(["name", "cpu_times"]):
            try:
                if proc.pid in mine:
                    continue
                times = proc.info.get("cpu_times")
                if times is None:
                    continue
                current[proc.pid] = _cpu_seconds(times)
                names[proc.pid] = proc.info.get("name") or "?"
            except psutil.Error:
                continue
        if self._outside_t is not None and now > self._outside_t:
            dt = now - self._outside_t
            usage = [
                (pid, (secs - self._outside_last[pid]) / dt)
                for pid, secs in current.items()
                if pid in self._outside_last
            ]
            own = sum(max(0.0, u) for pid, u in usage if pid in helpers)
            usage = [(pid, u) for pid, u in usage if pid not in helpers]
            usage.sort(key=lambda x: -x[1])
            total = sum(max(0.0, u) for _, u in usage)
            top = [[pid, names.get(pid, "?"), round(u, 3)] for pid, u in usage[:3] if u > 0.05]
            self._emit(OutsideSample(round(now, 4), round(total, 4), top, round(own, 4)))
        self._outside_last, self._outside_t = current, now
