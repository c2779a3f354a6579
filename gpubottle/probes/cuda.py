"""CUDA memory and the profiler window, inside the script's process.

Memory: allocated/reserved read at optimizer-step boundaries (cheap calls into the caching
allocator), and the allocator's own peak read just before every reset_peak_memory_stats the script
makes, so the peak reported never depends on the script's resets. The CUDA devices the run holds
memory on are reported by UUID (how NVML's devices are matched to the run's). On an
OutOfMemoryError, the allocator's state at that moment. The window: after warm-up, torch.profiler
records a few steps (CPU, and CUDA when the script uses it) into the run directory, where the same
trace reader as `gpubottle report` analyses it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Iterator
from typing import Any

from gpubottle.options import ChildConfig, WindowConfig
from gpubottle.probes.hooks import CUDA_RECHECK_S, StepHooks, Wake, wake_in
from gpubottle.probes.leaks import GpuSeries, LeakProbe
from gpubottle.probes.recorder import Recorder
from gpubottle.probes.syncs import SyncSites
from gpubottle.wire import (
    CudaContents,
    CudaDevices,
    CudaEnd,
    CudaPeak,
    Oom,
    Perturbed,
    ProbeFailed,
    SnapshotSaved,
    WindowSaved,
    WindowStarted,
)
from gpubottle.wire import (
    SyncSites as SyncSitesRecord,
)


def teardown_cupti_after_window(torch: Any, environ: Any = None) -> bool:
    """Let kineto detach CUPTI when the window stops (TEARDOWN_CUPTI=1, read when the profiler
    stops): left attached, every later kernel launch pays CUPTI's callbacks for the rest of the run
    (pytorch#144455; docs/thresholds.md has what it cost). Not where the script set the variable,
    nor before CUDA 12.6, where re-attaching after a teardown could crash with CUDA graphs. True
    when it was set here."""
    env = os.environ if environ is None else environ
    if "TEARDOWN_CUPTI" in env:
        return False
    try:
        major, minor = (int(x) for x in str(torch.version.cuda).split(".")[:2])
    except (AttributeError, TypeError, ValueError):
        return False
    if (major, minor) < (12, 6):
        return False
    env["TEARDOWN_CUPTI"] = "1"
    return True


def _cuda_in_use(torch: Any) -> bool:
    # is_initialized() alone (a flag, 0.06 us): a context implies CUDA is available, while
    # is_available() asks the runtime for the device count each time (1.5 us, at every step).
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def _current_bytes(torch: Any) -> tuple[int, int]:
    """Allocated and reserved bytes on the current device from one read of the allocator's nested
    stats (no flattening), else the two public calls (a torch without it, a stand-in)."""
    try:
        nested = torch.cuda.memory_stats_as_nested_dict()
        alloc, res = nested["allocated_bytes"]["all"], nested["reserved_bytes"]["all"]
        return int(alloc["current"]), int(res["current"])
    except (AttributeError, KeyError, TypeError):
        return int(torch.cuda.memory_allocated()), int(torch.cuda.memory_reserved())


def _device_index(torch: Any, device: Any) -> int:
    if device is None:
        return int(torch.cuda.current_device())
    if isinstance(device, int):
        return device
    d = torch.device(device)
    return int(d.index) if d.index is not None else int(torch.cuda.current_device())


class CudaProbe:
    """A step probe (probes/hooks.py): CUDA memory at every step, the profiler window, the sync
    window, and at the end the allocator's peaks and an OOM's state."""

    SYNC_STEPS = 3  # steps with torch's sync debug mode on, from the second CUDA step
    # The allocator's counters come as one ~100-key dict built per read (memory_allocated() and
    # memory_reserved() each build and flatten it: 0.2 ms apiece on the H200 machine's launch loop):
    # read at most this often, not every step. The peaks stay exact: the allocator's own peak
    # counters are read before every reset and at the end.
    MEMORY_EVERY_S = 0.1
    CONTENTS_STEP = 3  # optimizer state exists after the first step; weights and grads by then too

    def __init__(self, recorder: Recorder, hooks: StepHooks, window: WindowConfig | None,
                 snapshot: str | None = None, leaks: LeakProbe | None = None) -> None:
        self.recorder = recorder
        self.hooks = hooks
        self.leaks = leaks  # tensor censuses when the supervisor asks (also when GPU memory climbs)
        self._start(window, snapshot)

    def reset(self, cfg: ChildConfig) -> None:
        """A new use of the same probes (gpubottle.profile() again): the window, the sync sites,
        the peaks and the series start over."""
        self._start(cfg.window, None)

    def _start(self, window: WindowConfig | None, snapshot: str | None) -> None:
        self.window = window
        self.snapshot = snapshot  # where to dump a CUDA memory snapshot, when asked for
        self._snapshot_on = False
        self._syncs = SyncSites(lambda: self.hooks.running)
        self._sync_from = 0
        self.steps = 0
        self._prof: Any = None
        self._prof_steps = 0
        self._done = False
        self._peak_alloc = 0
        self._peak_res = 0
        self._sync_t0 = 0.0
        self._prof_t0 = 0.0
        self._ours = False  # inside our own calls into torch.profiler
        self._memory_next = 0.0  # when the allocator's counters may be read again
        self._series: GpuSeries | None = None  # CUDA memory over time (a GpuSeries), from the first CUDA step
        self._devices_sent: list[list[Any]] | None = None
        self._folded: dict[int, tuple[int, int]] = {}  # device -> peaks read before the script's resets

    @contextlib.contextmanager
    def _own_profiler(self) -> Iterator[None]:
        self._ours = True
        try:
            yield
        finally:
            self._ours = False

    def patch_torch(self, torch: Any, status: dict[str, Any]) -> None:
        for name, patch in (("profiler-guard", self.guard_script_profilers),
                            ("peak-resets", self.watch_peak_resets)):
            try:
                patch(torch)
            except Exception as exc:
                status[name] = repr(exc)[:200]

    def guard_script_profilers(self, torch: Any) -> None:
        """The script's own torch.profiler wins: two profilers in one process cut each other's traces
        short (the second one's stop ends the first one's session), so ours steps aside for good."""
        probe = self
        for cls in (torch.profiler.profile, torch.autograd.profiler.profile):
            orig = cls.__init__

            def __init__(this: Any, *args: Any, _orig: Any = orig, **kwargs: Any) -> None:
                if not probe._ours:
                    probe.yield_to_script()
                _orig(this, *args, **kwargs)

            cls.__init__ = functools.wraps(orig)(__init__)

    def watch_peak_resets(self, torch: Any) -> None:
        """The allocator's peak counters are the script's to reset (often once per epoch): the peak is
        read just before each reset and kept, so the end's counters cannot hide an earlier peak.
        torch.cuda.reset_max_memory_allocated goes through the same function."""
        mem = torch.cuda.memory
        orig = mem.reset_peak_memory_stats
        probe = self

        @functools.wraps(orig)
        def reset_peak_memory_stats(device: Any = None) -> Any:
            probe._fold_peak(torch, device)
            return orig(device)

        mem.reset_peak_memory_stats = reset_peak_memory_stats
        if getattr(torch.cuda, "reset_peak_memory_stats", None) is orig:
            torch.cuda.reset_peak_memory_stats = reset_peak_memory_stats
        # torch >= 2.9's device-generic API resets the same counters without going through torch.cuda.
        acc = getattr(torch, "accelerator", None)
        for owner in (acc, getattr(acc, "memory", None)):
            generic = getattr(owner, "reset_peak_memory_stats", None)
            if owner is None or generic is None or getattr(generic, "_gpubottle", False):
                continue

            def reset_generic(device_index: Any = None, _orig: Any = generic) -> Any:
                probe._fold_peak(torch, device_index)
                return _orig(device_index)

            wrapped = functools.wraps(generic)(reset_generic)
            wrapped._gpubottle = True  # type: ignore[attr-defined]
            owner.reset_peak_memory_stats = wrapped

    def _fold_peak(self, torch: Any, device: Any) -> None:
        try:
            if not _cuda_in_use(torch):
                return
            idx = _device_index(torch, device)
            stats = torch.cuda.memory_stats(idx)
            alloc, res = self._folded.get(idx, (0, 0))
            self._folded[idx] = (max(alloc, int(stats.get("allocated_bytes.all.peak", 0))),
                                 max(res, int(stats.get("reserved_bytes.all.peak", 0))))
        except Exception:
            pass  # the reset itself must go ahead whatever happens here

    def _report_devices(self, torch: Any) -> None:
        """The CUDA devices the run holds memory on (and the current one), with their UUIDs."""
        try:
            cur = int(torch.cuda.current_device())
            rows: list[list[Any]] = []
            for i in range(int(torch.cuda.device_count())):
                if i != cur and not torch.cuda.memory_reserved(i):
                    continue
                props = torch.cuda.get_device_properties(i)
                uuid = getattr(props, "uuid", None)  # torch >= 2.1
                rows.append([i, str(uuid) if uuid is not None else None, getattr(props, "name", None)])
            if rows != self._devices_sent:
                self._devices_sent = rows
                self.recorder.emit(CudaDevices(rows))
        except Exception as exc:
            self._devices_sent = []
            self._failed("cuda-devices", f"which CUDA devices the run uses: {exc!r}")

    def yield_to_script(self) -> None:
        if self._done:
            return
        self._done = True
        self._abandon()
        self._failed("profiler-window", "the script runs its own torch.profiler; gpubottle's window "
                     "stayed off (explain that trace with `gpubottle report`)")

    def _failed(self, probe: str, reason: str) -> None:
        self.recorder.emit(ProbeFailed(probe, reason[:300]))

    def _perturbed(self, t0: float, what: str) -> None:
        """Steps overlapping [t0, now] ran under our own heavy probes: left out of step statistics."""
        self.recorder.emit(Perturbed(t0, time.monotonic(), what))

    def _contents(self, moment: str, scan: bool) -> None:
        """What fills the GPU's memory (weights, gradients, optimizer state, the rest)."""
        try:
            from gpubottle.probes.contents import memory_contents

            found = memory_contents(self.hooks.optimizers, "cuda", scan)
            self.recorder.emit(CudaContents(moment, self.steps, found))
        except Exception as exc:
            self._failed("gpu-memory-contents", f"reading what fills GPU memory failed: {exc!r}")

    def on_step(self, step: int) -> Wake | None:
        import torch

        if self._step(torch, step) or (self._prof is not None and not self._done):
            return None  # every step: the GPU's readings, the profiler window's steps
        if not self._done and self.window is not None:
            return (self.window.start, time.monotonic() + CUDA_RECHECK_S)
        return wake_in(CUDA_RECHECK_S)  # a CPU run so far: asked again twice a second

    def _step(self, torch: Any, step: int) -> bool:
        """The step's readings; whether the script uses CUDA."""
        self.steps = step
        if not _cuda_in_use(torch):
            self._window_step(torch)
            return False
        if self._devices_sent is None:
            self._report_devices(torch)
        self._sync_window(torch)
        if self.steps == self.CONTENTS_STEP:
            self._contents("step", scan=False)
        if self.snapshot and not self._snapshot_on:
            try:
                torch.cuda.memory._record_memory_history(max_entries=200_000)
                self._snapshot_on = True
            except Exception as exc:
                self.snapshot = None
                self._failed("memory-snapshot", repr(exc))
        now = time.monotonic()
        if now < self._memory_next:
            self._window_step(torch)
            return True
        self._memory_next = now + self.MEMORY_EVERY_S
        try:
            alloc, res = _current_bytes(torch)
            if self._series is None:
                self._series = GpuSeries(self.recorder, self.leaks)
            self._series.on_step(self.steps, alloc, res)
            if alloc > self._peak_alloc or res > self._peak_res:
                self._peak_alloc = max(self._peak_alloc, alloc)
                self._peak_res = max(self._peak_res, res)
                self.recorder.emit(CudaPeak(time.monotonic(), torch.cuda.current_device(),
                                            self._peak_alloc, self._peak_res))
        except Exception:
            pass
        self._window_step(torch)
        return True

    def _sync_window(self, torch: Any) -> None:
        """Sync debug mode for a few steps, away from the profiler window (both cost time)."""
        try:
            if self._sync_from == 0:
                self._sync_from = self.steps + 1
            elif self.steps == self._sync_from and not self._syncs.active:
                if torch.cuda.get_sync_debug_mode() != 0:
                    # The script's own setting ("error" to catch syncs, say) is left alone.
                    self._sync_from = -1
                    self._failed("sync-sites", "the script set its own sync debug mode")
                    return
                self._sync_t0 = time.monotonic()
                self._syncs.start(torch)
                torch.cuda.set_sync_debug_mode("warn")
            elif self._syncs.active and self.steps >= self._sync_from + self.SYNC_STEPS:
                torch.cuda.set_sync_debug_mode(0)
                self._syncs.stop()
                self._perturbed(self._sync_t0, "sync-debug")
                sites = [[s, n / self.SYNC_STEPS, self._syncs.calls.get(s), self._syncs.functions.get(s)]
                         for s, n in self._syncs.sites.most_common(5)]
                self.recorder.emit(SyncSitesRecord(self.SYNC_STEPS, sites))
        except Exception as exc:
            self._syncs.stop()
            self._sync_from = -1
            self._failed("sync-sites", repr(exc))

    def _window_step(self, torch: Any) -> None:
        if self._done or self.window is None:
            return
        start, count = self.window.start, self.window.steps
        if self._prof is None:
            if self.steps < start:
                return
            cuda = _cuda_in_use(torch)
            if not cuda and not self.window.force:
                self._done = True  # a CPU run: the psutil and py-spy evidence already covers it
                return
            try:
                acts = [torch.profiler.ProfilerActivity.CPU]
                cuda_act = torch.profiler.ProfilerActivity.CUDA
                # A torch built without CUPTI cannot trace kernels: ask only for what it has.
                if cuda and cuda_act in torch.profiler.supported_activities():
                    acts.append(cuda_act)
                    teardown_cupti_after_window(torch)
                if torch.autograd._profiler_enabled():
                    self.yield_to_script()  # a profiler the script started outside our hooks
                    return
                # A schedule is what makes the profiler mark ProfilerStep#N: one warm-up step, then
                # `count` recorded ones, exported as soon as they are complete.
                with self._own_profiler():
                    self._prof = torch.profiler.profile(
                        activities=acts, profile_memory=cuda,
                        schedule=torch.profiler.schedule(wait=0, warmup=1, active=count, repeat=1),
                        on_trace_ready=self._export,
                    )
                    self._prof_t0 = time.monotonic()
                    self._prof.start()
                self.recorder.emit(WindowStarted(time.monotonic(), self.steps, cuda_act in acts))
            except Exception as exc:
                self._done = True
                self._failed("profiler-window", repr(exc))
                self._abandon()
            return
        self._prof_steps += 1
        try:
            with self._own_profiler():
                self._prof.step()
                if self._prof_steps >= count + 1:
                    self._prof.stop()
            if self._prof_steps >= count + 1:
                self._done = True
                self._perturbed(self._prof_t0, "profiler")
        except Exception as exc:
            self._done = True
            self._failed("profiler-window", repr(exc))
            self._abandon()

    def _abandon(self) -> None:
        """A profiler that failed half-way must not stay on: it slows every later step."""
        prof, self._prof = self._prof, None
        if prof is not None:
            try:
                with self._own_profiler():
                    prof.stop()
            except Exception:
                pass
            self._perturbed(self._prof_t0, "profiler")

    def _export(self, prof: Any) -> None:
        try:
            path = self.window.path if self.window is not None else ""
            prof.export_chrome_trace(path)
            self.recorder.emit(WindowSaved(time.monotonic(), path, self._prof_steps))
        except Exception as exc:
            self._failed("profiler-window", f"export: {exc!r}")

    def finish(self, exc: BaseException | None) -> None:
        """At the script's end: the allocator's own peaks, and its state if it died of an OOM."""
        import sys

        torch = sys.modules.get("torch")
        if torch is None:
            return
        if self._prof is not None and not self._done:
            self._done = True
            try:  # stopped early (--steps, a crash): stopping exports the steps recorded so far
                with self._own_profiler():
                    self._prof.stop()
            except Exception:
                pass
        if self._syncs.active:
            self._syncs.stop()
            try:
                torch.cuda.set_sync_debug_mode(0)
            except Exception:
                pass
        oom = exc is not None and type(exc).__name__ == "OutOfMemoryError"
        if oom:
            self.recorder.emit(Oom(str(exc)[:1000]))
            if _cuda_in_use(torch):
                self._contents("oom", scan=True)
        if self._snapshot_on and self.snapshot:
            try:
                torch.cuda.memory._dump_snapshot(self.snapshot)
                self.recorder.emit(SnapshotSaved(self.snapshot))
            except Exception as exc2:
                self._failed("memory-snapshot", repr(exc2))
        if not _cuda_in_use(torch):
            return
        self._report_devices(torch)  # devices first used after the first step
        try:
            dev = torch.cuda.current_device()
            stats = torch.cuda.memory_stats(dev)
            folded = self._folded.get(int(dev), (0, 0))
            total = int(torch.cuda.get_device_properties(dev).total_memory)
            free = None
            try:
                free = int(torch.cuda.mem_get_info(dev)[0])
            except Exception:
                pass
            self.recorder.emit(CudaEnd(
                dev, max(folded[0], int(stats.get("allocated_bytes.all.peak", 0))),
                max(folded[1], int(stats.get("reserved_bytes.all.peak", 0))), total,
                int(stats.get("allocated_bytes.all.current", 0)),
                int(stats.get("reserved_bytes.all.current", 0)), free,
            ))
        except Exception as exc:
            self._failed("cuda-memory", f"the allocator's counters at the end: {exc!r}")
