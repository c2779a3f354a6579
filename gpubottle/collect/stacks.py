"""py-spy stack sampling of the script and its DataLoader workers, from outside the process.

py-spy writes its file only when a recording ends, so we record in chunks (15 s by default): each
chunk lands in the run directory as it completes, and a crash loses at most one chunk. Sampling is
non-blocking (the script is never paused) and includes idle threads, so the main thread's time spent
waiting for a batch is seen too. Where py-spy cannot attach (ptrace denied, not installed) the run goes
on and the reason is kept for the report.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from gpubottle.collect import procfs
from gpubottle.collect.budget import CpuBudget
from gpubottle.collect.children import ChildrenCache
from gpubottle.collect.stack_chunks import chrometrace_to_evented
from gpubottle.wakeups import next_on_grid
from gpubottle.wire import StackChunk, encode

HOW_TO_ENABLE = (
    "allow ptrace: run as root, add --cap-add SYS_PTRACE to docker run, or set "
    "kernel.yama.ptrace_scope=0 (sysctl)"
)


# py-spy's niceness where the user may raise a process's priority (root, CAP_SYS_NICE); elsewhere
# it keeps the training's own (0). Not lowered: a sampler that waits for a free core samples the
# moments the target leaves one, blocked (docs/thresholds.md).
SPY_NICE = -10


def _sampling_priority(pid: int) -> None:
    """py-spy samples when its timer says, not when a core comes free. At nice 10 on a run that
    kept both cores busy, a loop spending 22% of each step in os.fsync (timed in the script) read
    54-97% fsync in py-spy's samples (4 runs of ~100): the sampler got a core when the loop blocked.
    At nice 0 38-53%, at nice -10 19-27%. Its CPU is the same either way (the same samples); the
    budget keeps it. (Set after the start, as preexec_fn is unsafe in a process with threads.)"""
    nice = next((n for n in (SPY_NICE, 0) if _set_nice(pid, n)), None)
    if nice is None:
        return
    # (a thread py-spy started before this kept the niceness it was born with; those it starts
    # after inherit its main thread's)
    for tid in procfs.thread_ids(pid) or []:
        if tid != pid:
            _set_nice(tid, nice)


def _set_nice(tid: int, nice: int) -> bool:
    try:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
        return True
    except (OSError, AttributeError):
        return False


# py-spy's CPU a sample from which its later rate is halved (chunk_rate's `dear`): measured at 10 a
# second over 10 s (2026-12-02), 0.2 ms a sample on the steady and the memory-growing loops, 1.0 ms
# on 17 Python threads (benchmarks/many_threads.py), where 2 a second after 15 s was 0.25% of a
# core, charged 4x where the run's cores are busy (collect/budget.py's DISPLACED_LATE): past the
# whole late budget.
DEAR_SAMPLE_S = 0.5e-3
DEAR_MIN_SAMPLES = 20  # a chunk's samples before its CPU a sample says anything (its start is ~15 ms)


def chunk_rate(rate: int, chunk: int, dear: bool = False) -> int:
    """The first chunk (15 s) at the full rate: a short run needs the samples. Then a fifth (2 a
    second by default): py-spy's cost to a CPU-saturated run grows with its rate (each sample wakes
    it, preempting a training thread for longer than the sample's own CPU: measured at 20 a second,
    2.4% of the training's time displaced, for 1.1% of a core of py-spy's CPU; on the steady loop,
    in ON/OFF windows inside one run, 5 a second displaced 0.34-0.43%, 2 a second 0.08-0.11%), and
    a run past its first 15 s has its samples from them already, then hundreds more. `dear`: the
    process's samples cost DEAR_SAMPLE_S or more of py-spy's CPU each (many threads to walk): half
    that later rate (1 a second by default)."""
    if chunk == 0:
        return rate
    return max(1, rate // 5 // (2 if dear else 1))


def stack_schedule(rate: int) -> str:
    """The sampling schedule in words, for --help and the README."""
    late, dear = chunk_rate(rate, 1), chunk_rate(rate, 1, dear=True)
    return (f"{rate} a second for the first {CHUNK_S:.0f} s, then {late}"
            + (f" ({dear} where samples are dear: many threads)" if dear < late else ""))


# The first chunk's length: two seconds short of the budget's early 15 s (collect/budget.py), so
# the switch to the later rate (py-spy's start, the first chunk's write and its conversion) is paid
# from the early budget: on a CPU-saturated run the two seconds after a switch at 15 s cost the run
# 1.25% and 1.85% against ~0.5% later (benchmarks/many_threads.py, 16 rounds paired with plain
# python, 2026-12-03), ~0.07 of the points the late 30 s of a 45-s run may take.
CHUNK_S = 13.0
# A running chunk's CPU is held against the budget once a second (StackSampler._watch), from 3 s
# in: py-spy's first read of a process (10-70 ms here) over a second would read as a budget passed.
LIVE_MIN_S = 3.0
# The rest of a chunk the live look ended is ended again only past this many times the budget
# (_ProcessStacks.rest): a py-spy start alone reads as ~2% of a core at a chunk's first look.
REST_MARGIN = 3.0
RECENT_S = 2.0  # ...and the chunk's last this many seconds against the budget itself (/proc's 10-ms ticks)
LOOK_FROM_S = 1.0  # read from this far in (py-spy's start in its first second), so judged from 3 s
STEADY_CHUNK_FACTOR = 4  # the chunks after it last 4x longer (60 s by default)


def chunk_seconds(chunk_s: float, chunk: int) -> float:
    """The first chunk of chunk_s (13 s, at the full rate); then four times longer. py-spy writes
    what it has whenever a chunk ends (the script's end or crash, --steps, Ctrl-C, stop()), so a
    shorter chunk keeps no more stacks, and every py-spy start costs CPU: 12 ms (a 1 s record took
    14 ms, an 11 s one at 5 Hz 35 ms) plus our conversion of its file, and on a CPU-saturated run
    the seconds around a start cost the run 2-4% (benchmarks/many_threads.py): with 15-s chunks to
    a minute, 0.12 of the steady loop's 1.1 points after its first 15 s (busy_loop.py, 8 rounds;
    0.07 with one start fewer)."""
    return chunk_s if chunk == 0 else chunk_s * STEADY_CHUNK_FACTOR


def forked_cap(cores: float) -> int:
    """How many forked DataLoader workers of one process py-spy samples at a time: they run the
    same code on other indices, and each costs its own py-spy (16 workers on 2 cores: py-spy took
    0.17 of a core for 15 s, 8.5% of the run's cores against a 2% budget, before the budget
    read a running chunk). Half the cores, at least 2."""
    return max(2, int(cores // 2))


def find_py_spy() -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("py-spy")


def ptrace_denied(pid: int) -> bool:
    """Opening /proc/PID/mem needs the same permission as ptrace: a direct test of why py-spy failed
    (with --subprocesses it says only that it found no Python process)."""
    try:
        os.close(os.open(f"/proc/{pid}/mem", os.O_RDONLY))
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def explain_failure(stderr: str, pid: int | None = None) -> str:
    low = stderr.lower()
    denied = "permission" in low or "ptrace" in low or "operation not permitted" in low
    if denied or (pid is not None and ptrace_denied(pid)):
        return f"py-spy was not allowed to read the process ({HOW_TO_ENABLE})"
    errors = [ln for ln in stderr.splitlines() if ln.startswith("Error")]
    return f"py-spy failed: {errors[0][:200] if errors else 'no output'}"


def is_loader_worker(cmdline: str, main_pid: int, ppid: int, main_cmdline: str | None = None) -> bool:
    """A DataLoader worker: a child of the script's process that multiprocessing spawned, or a forked
    copy of it (a fork keeps the main process's command line: the bootstrap's under `run`, the
    kernel's under gpubottle.profile). Below a launcher, its ranks match too (mp.spawn's are
    spawned, torchrun's run the bootstrap): their stacks are sampled alike."""
    if ppid != main_pid:
        return False
    spawned = "multiprocessing" in cmdline and ("spawn_main" in cmdline or "forkserver" in cmdline)
    return spawned or "gpubottle.launch.bootstrap" in cmdline or (bool(cmdline) and cmdline == main_cmdline)


class _ProcessStacks:
    """py-spy on one process, in chunks, until the process ends or we stop."""

    def __init__(self, owner: StackSampler, pid: int, rate: int, attach_after_s: float) -> None:
        self.owner = owner
        self.pid = pid
        self.rate = rate
        self.dear = False  # its samples cost DEAR_SAMPLE_S of CPU or more each (chunk_rate)
        self.attach_after_s = attach_after_s
        self.chunks = 0
        self.proc: subprocess.Popen[bytes] | None = None
        # The running chunk's start and planned end (None between chunks), and whether the budget
        # ended it early (check_budget)
        self.chunk_t0: float | None = None
        self.chunk_end = 0.0
        self.cut = False
        # The live look's last readings of the running chunk (when, py-spy's CPU then), and the span
        # whose share ended it early (None: the whole chunk's)
        self.looked: list[tuple[float, float]] = []
        self.cut_span: tuple[float, float, float] | None = None
        # The running chunk is the rest of one the budget ended: ended again only past REST_MARGIN
        # times the budget. Its rate is the budget's answer to the ended one, and ending it again
        # costs another py-spy start (15-70 ms of CPU, alone ~2% of a core over the 3 s before a
        # chunk's first look): on 17 threads the first 15 s restarted every ~4 s, the rate lowered
        # a step each time (10, 7, 5, 4), each start's half second costing the run ~4%
        # (benchmarks/many_threads.py, 2026-12-01). A rate a little high is lowered at the next
        # chunk by its `spent`; one far past (samples that got much dearer) still ends it.
        self.rest = False
        # The running chunk's rate: at 1 a second the live look ends it only where its rest would come
        # after a stretch unsampled (budget.GAP_CUT), not at 1 again after another py-spy start (3
        # restarts in a 45-s run's late 30 s, seen 2026-12-01).
        self.chunk_rate = 0
        self.thread = threading.Thread(target=self._loop, name=f"gpubottle-stacks-{pid}", daemon=True)

    def _alive(self) -> bool:
        """Running: an ended process not yet reaped (a zombie) still takes kill(pid, 0)."""
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True  # no /proc here: kill's answer
        return state not in (b"Z", b"X")

    def _loop(self) -> None:
        own = self.owner
        # Let the interpreter start before attaching: py-spy cannot read a process still loading.
        if own._stop.wait(self.attach_after_s):
            return
        retries = 3
        # The schedule's chunk (chunk_rate, chunk_seconds), and what is left of it where the budget
        # ended one early: the rest comes at the lower rate, the schedule's times kept.
        phase, left = 0, None
        while not own._stop.is_set() and self._alive():
            name = f"chunk-{self.pid}-{self.chunks:04d}.speedscope.json"
            path = os.path.join(own.out_dir, name)
            raw = path + ".chrometrace"
            # One process per py-spy: --subprocesses makes py-spy rescan the process table
            # continuously, which cost more CPU than the sampling itself.
            planned = chunk_rate(self.rate, phase, self.dear)
            seconds = left if left is not None else chunk_seconds(own.chunk_s, phase)
            rate = own.budget.rate(planned) if own.budget is not None else planned
            # Under one sample a second, a stretch unsampled first (never before the first chunk):
            # the budget's next look counts it with the chunk after it.
            gap = own.budget.gap_s(planned, seconds) if own.budget is not None and self.chunks else 0.0
            gap_from = time.monotonic() if gap > 0 else None
            if gap_from is not None and own.budget is not None:
                stopped = own._stop.wait(gap)
                own.budget.unsampled_for(time.monotonic() - gap_from)
                if stopped or not self._alive():
                    return
            # chrometrace: when each stack began and ended (the sampled formats say only how often).
            cmd = [
                str(own.binary), "record", "--pid", str(self.pid), "--idle", "--nonblocking",
                "--threads", "--full-filenames", "--rate", str(rate), "--duration",
                str(max(1, round(seconds))), "--format", "chrometrace", "--output", raw,
            ]
            t0 = time.monotonic()
            self.rest, self.chunk_rate = left is not None, rate  # (before chunk_t0: the live look reads them)
            self.chunk_t0, self.chunk_end, self.cut = t0, t0 + seconds, False
            self.looked, self.cut_span = [], None
            try:
                err, cpu, rc = self._record(cmd)
            except OSError as exc:
                own.failed(self, f"py-spy could not start: {exc.strerror}")
                return
            finally:
                self.chunk_t0 = None
            t1 = time.monotonic()
            if own.budget is not None and cpu is not None:
                if not self._alive() or own._stop.is_set():
                    # The process's last chunk, cut short by its end: no rate comes after it, and
                    # py-spy's start (~15 ms) over a chunk of a second would read as a budget passed
                    # (the report saying the rates came down at the run's last second).
                    if self.pid != own._pid:
                        own.budget.ended(t1, cpu)  # a worker gone within the chunk: mostly started
                else:
                    # The mean rate over the gap and the chunk, against the next chunk's plan; a
                    # chunk the live look ended since its last look, over that span
                    mean = rate * (t1 - t0) / max(1e-9, t1 - (gap_from or t0))
                    samples = rate * (t1 - t0)
                    if samples >= DEAR_MIN_SAMPLES:
                        self.dear = cpu / samples >= DEAR_SAMPLE_S
                    nxt = chunk_rate(self.rate, phase if self.cut else phase + 1, self.dear)
                    a, b, c = self.cut_span or (gap_from or t0, t1, cpu)
                    own.budget.spent(f"py-spy {self.pid}", a, b, c, rate if self.cut_span else mean, nxt)
            converted = False
            if os.path.exists(raw) and os.path.getsize(raw) > 0:
                converted = chrometrace_to_evented(raw, path, self.pid)
            if os.path.exists(raw):
                os.remove(raw)
            if converted:
                own.chunk_done(StackChunk(name, t0, t1, rate, self.pid))
                self.chunks += 1
                left = self.chunk_end - t1 if self.cut and self.chunk_end - t1 >= 1.0 else None
                phase += left is None
                continue
            if not self._alive() or own._stop.is_set():
                return
            retries -= 1
            text = err.decode("utf-8", "replace")
            if (rc != 0 and retries <= 0) or "permission" in text.lower() or ptrace_denied(self.pid):
                own.failed(self, explain_failure(text, self.pid))
                return
            own._stop.wait(0.5)

    def _record(self, cmd: list[str]) -> tuple[bytes, float | None, int | None]:
        """Run one py-spy chunk: its stderr, the CPU it used (its own rusage, reaped with wait4:
        what the budget is kept with; None where the platform cannot say) and its exit status."""
        with tempfile.TemporaryFile() as errors:
            proc = self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=errors)
            _sampling_priority(proc.pid)
            cpu = None
            try:
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                cpu = usage.ru_utime + usage.ru_stime
            except (ChildProcessError, AttributeError):
                # stop() polled it first (and reaped it), or no wait4 here: no CPU to count.
                proc.wait()
            errors.seek(0)
            return errors.read(), cpu, proc.returncode

    def check_budget(self, now: float) -> None:
        """The running chunk's CPU so far (py-spy's own, from /proc) against the budget: past it,
        the chunk ends now (py-spy writes what it has) and the rest of it comes at the rate the
        budget pays for (under 1 a second: at 1 after a stretch unsampled, gap_s), instead of after
        up to 15 s (a later chunk: 60) at a rate it cannot."""
        budget, proc, t0 = self.owner.budget, self.proc, self.chunk_t0
        if (budget is None or proc is None or t0 is None or self.cut
                or now - t0 < LOOK_FROM_S or self.chunk_end - now < LIVE_MIN_S):
            return
        # To the nanosecond where schedstat says (py-spy starts no process and keeps its threads):
        # in /proc's 10-ms ticks, a 2-s look at a py-spy sampling 0.4 ms a second read 0 or 0.5% of
        # a core, past the late budget by itself. Else the ticks, its reaped children's too, as
        # wait4's rusage counts them (not poll(): that would reap it before _record's wait4).
        precise = procfs.threads_cpu_precise(proc.pid)
        both = (precise, 0.0) if precise is not None else procfs.cpu_and_children_seconds(proc.pid)
        if both is None or self.chunk_t0 != t0:
            return
        who, cpu = f"py-spy {self.pid}", sum(both)
        self.looked = [*self.looked[-2:], (now, cpu)]
        # Over the last RECENT_S too: the whole chunk's share hides a sample that got dearer (a first
        # chunk's import-time samples were cheap; the script's 16 threads then made each 4x dearer,
        # and the chunk ran at 10 a second to 4.3 s, its rest at the whole span's answer, 5 a second,
        # twice the budget's), and the rest's own py-spy start, which REST_MARGIN allows for.
        back = [x for x in self.looked if now - x[0] >= RECENT_S - 0.1]
        recent = (back[-1][0], now, cpu - back[-1][1]) if back else None
        rate = self.chunk_rate
        if recent is not None and budget.over(who, *recent, rate=rate):
            self.cut_span = recent  # the rest's rate from the recent samples' cost
        elif not (now - t0 >= LIVE_MIN_S and budget.over(who, t0, now, cpu, REST_MARGIN if self.rest else 1.0,
                                                         rate)):
            return
        self.cut = True
        self.interrupt()

    def interrupt(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGINT)  # py-spy writes what it has on Ctrl-C
            except OSError:
                pass


class StackSampler:
    """py-spy on the script's process, and on each DataLoader worker as it appears (found by a watcher
    that reads the script's children four times a second; once a second after 15 s where none came)."""

    WATCH_S = 0.25
    DEEP_S = 1.0  # below the sampled processes other than the script's, and the budget: once a second
    # A script that has started no worker in its first 15 s is looked at once a second from then on
    # (the first worker found puts it back to WATCH_S): each wake-up displaces the training on its
    # core, and four a second were half the supervisor's late CPU on benchmarks/busy_loop.py (2 of
    # 4 ticks in 30 s) for workers that never came. A late-built loader's workers are found within
    # a second, their first batches sampled a little less.
    QUIET_AFTER_S = 15.0
    QUIET_WATCH_S = 1.0

    def __init__(self, out_dir: str, rate: int = 10, chunk_s: float = CHUNK_S, binary: str | None = None,
                 budget: CpuBudget | None = None):
        self.out_dir = out_dir
        self.rate = rate
        self.budget = budget  # the collectors' CPU budget: the rates come down when it is spent
        self.chunk_s = chunk_s
        self.binary = binary if binary is not None else find_py_spy()
        self.ok: bool | None = None  # None until the first chunk says
        self.reason: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._samplers: dict[int, _ProcessStacks] = {}
        self._unsampled: set[int] = set()  # workers left without py-spy: the budget was spent starting it
        # Forked workers sampled, by their parent, and those left out past forked_cap (the same code)
        self._forked: dict[int, int] = {}
        self._capped: set[int] = set()
        self.cap = forked_cap(budget.cores) if budget is not None else None
        self._watcher: threading.Thread | None = None
        self._pid = 0
        self.chunks = 0

    def start(self, pid: int) -> None:
        if self.binary is None:
            self.ok, self.reason = False, "py-spy is not installed (pip install py-spy)"
            return
        os.makedirs(self.out_dir, exist_ok=True)
        self._pid = pid
        self._add(pid, 0.5)
        self._watcher = threading.Thread(target=self._watch, name="gpubottle-stacks-watch", daemon=True)
        self._watcher.start()

    def _add(self, pid: int, attach_after_s: float) -> None:
        with self._lock:
            if pid in self._samplers or self._stop.is_set():
                return
            sampler = _ProcessStacks(self, pid, self.rate, attach_after_s)
            self._samplers[pid] = sampler
            # Started under the lock: stop() joins every sampler it finds, and one the watcher had
            # registered but not yet started raised "cannot join thread before it is started".
            sampler.thread.start()

    def _watch(self) -> None:
        """New DataLoader workers (a new epoch starts new ones unless persistent_workers), of the
        script's process four times a second and, once a second, of every process sampled below it
        (the ranks of a job, whose own workers are one level further down). Reading a process's
        children costs 40 us: a run with 16 workers would pay 2.7 ms a second to look below every
        worker at the script's pace, for workers that have no children. Left at the training's
        priority: the threads it starts, and the workers' py-spy they start, inherit its niceness,
        which only a privileged process may lower again (_sampling_priority)."""
        children = ChildrenCache()  # (this thread's own: a file per thread of each parent, read anew
        # only where a process was made since)
        began = time.monotonic()
        deep_t = began + self.DEEP_S
        while not self._stop.wait(self._to_next(began)):
            main = self._samplers.get(self._pid)
            if main is None or not main.thread.is_alive():
                return  # py-spy cannot read the script: it cannot read its workers either
            parents = [self._pid]
            now = time.monotonic()
            if now >= deep_t - 0.01:  # (a wake a little early is the same second's)
                deep_t = max(deep_t + self.DEEP_S, now)
                with self._lock:
                    parents += [pid for pid, s in self._samplers.items()
                                if pid != self._pid and s.thread.is_alive()]
                    running = list(self._samplers.values())
                for sampler in running:
                    sampler.check_budget(now)
            for parent in parents:
                kids = [k for k in children.of(parent) or ()
                        if k not in self._samplers and k not in self._unsampled and k not in self._capped]
                own = procfs.cmdline(parent) if kids else None
                for kid in kids:
                    cmd = procfs.cmdline(kid) or ""
                    if not is_loader_worker(cmd, parent, procfs.ppid(kid) or -1, own):
                        continue
                    if self.budget is not None and not self.budget.may_attach(time.monotonic()):
                        self._unsampled.add(kid)
                        continue
                    forked = bool(own) and cmd == own  # (a forked copy: spawned ones may be ranks)
                    if forked and self._full(parent):
                        self._capped.add(kid)
                        continue
                    if forked:
                        self._forked[kid] = parent
                    self._add(kid, 0.1)  # a worker is already a running interpreter

    def _to_next(self, began: float) -> float:
        """Seconds to the watcher's next look, on the shared grid (gpubottle/wakeups.py)."""
        now = time.monotonic()
        return max(0.0, next_on_grid(now, self.watch_interval(now - began)) - now)

    def watch_interval(self, age: float) -> float:
        """Seconds to the watcher's next look, `age` seconds after it started."""
        if age < self.QUIET_AFTER_S:
            return self.WATCH_S
        with self._lock:
            seen = len(self._samplers) > 1 or bool(self._unsampled or self._capped)
        return self.WATCH_S if seen else self.QUIET_WATCH_S

    def _full(self, parent: int) -> bool:
        """Whether `parent` has `cap` forked workers under py-spy still running."""
        if self.cap is None:
            return False
        with self._lock:
            live = sum(1 for kid, p in self._forked.items()
                       if p == parent and (s := self._samplers.get(kid)) is not None and s.thread.is_alive())
        return live >= self.cap

    def chunk_done(self, chunk: StackChunk) -> None:
        with self._lock:
            self.ok = True
            self.chunks += 1
            with open(os.path.join(self.out_dir, "chunks.jsonl"), "a") as fh:
                fh.write(encode(chunk) + "\n")

    def failed(self, sampler: _ProcessStacks, reason: str) -> None:
        if sampler.pid == self._pid:  # a worker that ends as py-spy attaches is no failure
            with self._lock:
                self.ok = bool(self.chunks)
                self.reason = reason

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            samplers = list(self._samplers.values())
        for sampler in samplers:
            sampler.interrupt()
        deadline = time.monotonic() + 15
        for sampler in samplers:
            sampler.thread.join(timeout=max(0.1, deadline - time.monotonic()))
        if self.ok is None and self.reason is None:
            self.ok = False
            self.reason = "the script ended before py-spy could attach"

    def status(self) -> dict[str, object]:
        return {"ok": bool(self.ok), "reason": self.reason,
                "budget": self.budget.said(len(self._unsampled), len(self._capped), self.cap)
                if self.budget is not None else None}
