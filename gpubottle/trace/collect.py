"""What the trace analyses keep from each event: compact per-role ranges and a few counters.

Recognises both trace generations (2021: Operator/Runtime/Kernel/Memcpy/Memset and `[memory]` instant
events; 2022+: cpu_op/cuda_runtime/kernel/gpu_memcpy/gpu_memset/cuda_sync and cpu_instant_event),
ROCm's hip* runtime names, float timestamps, and CPU-only traces.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import msgspec

# memcpy: copies across PCIe (HtoD, DtoH); memcpy_device: copies that stay on the GPUs (DtoD, PtoP),
# which pinned memory or fewer host transfers cannot make cheaper.
ROLES = ("kernel", "memcpy", "memcpy_device", "memset", "communication", "runtime", "dataloader",
         "cpu_op")
SYNC_CALLS = (
    "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
    "cudaMemcpy2D", "cudaMemcpyFromSymbol", "hipStreamSynchronize", "hipDeviceSynchronize",
    "hipEventSynchronize", "hipMemcpy", "cuStreamSynchronize", "cuCtxSynchronize",
)
_COMM_OPS = ("nccl:", "gloo:", "c10d::", "ProcessGroupNCCL", "ProcessGroupGloo")
_HOST_CATS = ("operator", "cpu_op", "python_function", "user_annotation")
# Host ops whose names give them another role than "cpu_op".
_SPECIAL_OPS = ("ProfilerStep#", "enumerate(DataLoader)#", *_COMM_OPS)
_SYNC_SET = frozenset(SYNC_CALLS)


def _on_device(name: str) -> bool:
    """'Memcpy DtoD (Device -> Device)', 'Memcpy PtoP (Device -> Device)': no PCIe crossing."""
    parts = name.split()
    return len(parts) > 1 and parts[1] in ("DtoD", "PtoP")


class Spans:
    """(start, end) pairs in two float arrays: ~16 bytes a range instead of a tuple's ~70."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts = array("d")
        self.ends = array("d")

    def add(self, s: float, e: float) -> None:
        self.starts.append(s)
        self.ends.append(e)

    def pairs(self) -> list[tuple[float, float]]:
        return sorted(zip(self.starts, self.ends))


@dataclass
class CopyStat:
    count: int = 0
    seconds: float = 0.0
    bytes: int = 0


@dataclass
class TraceData:
    roles: dict[str, Spans] = field(default_factory=lambda: {r: Spans() for r in ROLES})
    steps: list[tuple[float, float, str]] = field(default_factory=list)
    # Correlation of each runtime call with the device work it launched.
    rt_corr: array = field(default_factory=lambda: array("q"))  # type: ignore[type-arg]
    rt_start: array = field(default_factory=lambda: array("d"))  # type: ignore[type-arg]
    rt_end: array = field(default_factory=lambda: array("d"))  # type: ignore[type-arg]
    dev_corr: array = field(default_factory=lambda: array("q"))  # type: ignore[type-arg]
    dev_start: array = field(default_factory=lambda: array("d"))  # type: ignore[type-arg]
    dev_end: array = field(default_factory=lambda: array("d"))  # type: ignore[type-arg]
    copies: dict[str, CopyStat] = field(default_factory=dict)  # "HtoD pageable" -> totals
    device_copies: dict[str, CopyStat] = field(default_factory=dict)  # "DtoD" / "PtoP" -> totals
    syncs: dict[str, CopyStat] = field(default_factory=dict)  # call name -> count, seconds
    sync_spans: Spans = field(default_factory=Spans)
    loader_kinds: dict[str, int] = field(default_factory=dict)  # iterator class -> calls
    peak_allocated: dict[int, float] = field(default_factory=dict)  # device -> bytes
    peak_reserved: dict[int, float] = field(default_factory=dict)
    # 2021 traces give only each allocation's size: a running sum from the trace's start.
    running_allocated: dict[int, float] = field(default_factory=dict)
    allocated_relative: bool = False
    host_min: float = float("inf")
    host_max: float = float("-inf")
    kernels: int = 0
    kernel_us: dict[str, float] = field(default_factory=dict)  # kernel name -> total duration
    runtime_names: dict[str, int] = field(default_factory=dict)
    malformed: int = 0  # events skipped because a field had the wrong type
    opt_steps: list[tuple[float, float]] = field(default_factory=list)  # Optimizer.step# spans

    def on_event(self, ev: dict[str, Any]) -> None:
        """One event as the json module decodes it (the reader's slow path)."""
        ph = ev.get("ph")
        try:
            if ph == "X":
                args = ev.get("args")
                self._span(float(ev["ts"]), float(ev.get("dur") or 0.0), str(ev.get("cat", "")),
                           str(ev.get("name", "")), _int(args.get("correlation")) if args else None,
                           (args.get("bytes") or args.get("Bytes")) if args else None)
            elif (ph == "i" or ph == "I") and ev.get("name") == "[memory]":
                args = ev.get("args") or {}
                self._memory(args.get("Device Type"), args.get("Device Id", 0), args.get("Total Allocated"),
                             args.get("Bytes", 0), args.get("Total Reserved"))
        except (AttributeError, TypeError, ValueError, KeyError, OverflowError):
            # A malformed event (args that are not an object, a name that is a number...) is
            # skipped and counted, never the end of the report.
            self.malformed += 1

    def on_batch(self, events: list[Event]) -> None:
        """Events decoded by msgspec into typed structs (the reader's fast path): the same analysis,
        read from attributes. The two commonest kinds (host ops, runtime calls: over half of a real
        trace's events) are handled inline; the rest go through `_span`."""
        span, memory = self._span, self._memory
        cpu, rt = self.roles["cpu_op"], self.roles["runtime"]
        cpu_starts, cpu_ends = cpu.starts, cpu.ends
        cpu_s, cpu_e, rt_s, rt_e = cpu_starts.append, cpu_ends.append, rt.starts.append, rt.ends.append
        # Host ops nest (an op inside its caller, on the same thread): one that starts inside the
        # last range kept only extends it, so a trace's ops take a fraction of the memory. The
        # union, all the analyses read, is the same.
        last_s, last_e = (cpu_starts[-1], cpu_ends[-1]) if cpu_starts else (0.0, -1.0)
        corr_c, corr_s, corr_e = self.rt_corr.append, self.rt_start.append, self.rt_end.append
        names = self.runtime_names
        lo, hi = self.host_min, self.host_max
        try:
            for ev in events:
                ph, a = ev.ph, ev.args
                if ph == "X":
                    ts, cat, name = ev.ts, ev.cat, ev.name
                    if ts is None:
                        self.malformed += 1
                    elif cat == "cpu_op" and not name.startswith(_SPECIAL_OPS):
                        end = ts + ev.dur
                        if last_s <= ts <= last_e:
                            if end > last_e:
                                cpu_ends[-1] = last_e = end
                        else:
                            cpu_s(ts)
                            cpu_e(end)
                            last_s, last_e = ts, end
                        if ts < lo:
                            lo = ts
                        if end > hi:
                            hi = end
                    elif (cat == "cuda_runtime" and name not in _SYNC_SET
                          and not name.startswith("ProfilerStep#")):
                        end = ts + ev.dur
                        rt_s(ts)
                        rt_e(end)
                        if a is not None and a.correlation is not None:
                            corr_c(a.correlation)
                            corr_s(ts)
                            corr_e(end)
                        names[name] = names.get(name, 0) + 1
                    else:
                        self.host_min, self.host_max = lo, hi
                        try:
                            if a is None:
                                span(ts, ev.dur, cat, name, None, None)
                            else:
                                span(ts, ev.dur, cat, name, a.correlation, a.nbytes or a.nbytes_2021)
                        except (TypeError, ValueError, OverflowError):
                            self.malformed += 1
                        lo, hi = self.host_min, self.host_max
                        if cpu_starts:  # _span may have appended a host op
                            last_s, last_e = cpu_starts[-1], cpu_ends[-1]
                elif (ph == "i" or ph == "I") and ev.name == "[memory]" and a is not None:
                    try:
                        memory(a.device_type, a.device_id or 0, a.total_allocated, a.nbytes_2021 or 0,
                               a.total_reserved)
                    except (TypeError, ValueError, OverflowError):
                        self.malformed += 1
        finally:
            self.host_min, self.host_max = lo, hi

    def extend(self, later: TraceData) -> None:
        """Take in what another reader kept of the events that follow ours in the file (a part read
        by another process): ranges and counts add up, peaks are the larger, and a 2021 trace's
        running allocation sums continue from ours."""
        for role, spans in later.roles.items():
            self.roles[role].starts.extend(spans.starts)
            self.roles[role].ends.extend(spans.ends)
        self.sync_spans.starts.extend(later.sync_spans.starts)
        self.sync_spans.ends.extend(later.sync_spans.ends)
        self.steps.extend(later.steps)
        for mine, theirs in ((self.rt_corr, later.rt_corr), (self.rt_start, later.rt_start),
                             (self.rt_end, later.rt_end), (self.dev_corr, later.dev_corr),
                             (self.dev_start, later.dev_start), (self.dev_end, later.dev_end)):
            mine.extend(theirs)
        for stats, more in ((self.copies, later.copies), (self.device_copies, later.device_copies),
                            (self.syncs, later.syncs)):
            for key, st in more.items():
                cur = stats.setdefault(key, CopyStat())
                cur.count += st.count
                cur.seconds += st.seconds
                cur.bytes += st.bytes
        for counts, more_counts in ((self.loader_kinds, later.loader_kinds),
                                    (self.runtime_names, later.runtime_names)):
            for key, n in more_counts.items():
                counts[key] = counts.get(key, 0) + n
        for key, us in later.kernel_us.items():
            self.kernel_us[key] = self.kernel_us.get(key, 0.0) + us
        for dev, peak in later.peak_allocated.items():
            # The later part's 2021 sums started from zero: they go on from where ours ended.
            base = self.running_allocated.get(dev, 0.0) if later.allocated_relative else 0.0
            self.peak_allocated[dev] = max(self.peak_allocated.get(dev, -1.0), base + peak)
        for dev, run in later.running_allocated.items():
            self.running_allocated[dev] = self.running_allocated.get(dev, 0.0) + run
        for dev, peak in later.peak_reserved.items():
            self.peak_reserved[dev] = max(self.peak_reserved.get(dev, -1.0), peak)
        self.allocated_relative = self.allocated_relative or later.allocated_relative
        self.host_min = min(self.host_min, later.host_min)
        self.host_max = max(self.host_max, later.host_max)
        self.kernels += later.kernels
        self.malformed += later.malformed

    @property
    def usable(self) -> bool:
        """Anything the analyses can use: steps, host or device ranges, memory events."""
        return bool(self.steps or self.host_min < self.host_max or self.peak_allocated
                    or any(len(r.starts) for r in self.roles.values()))

    def _span(self, ts: float, dur: float, cat: str, name: str, corr: int | None, nbytes: Any) -> None:
        end = ts + dur
        cat = cat.lower()
        roles = self.roles
        if name.startswith("ProfilerStep#"):
            # Kineto copies each step onto the GPU timeline (gpu_user_annotation): the host's is the
            # step; the copy would count every step twice.
            if cat != "gpu_user_annotation":
                self.steps.append((ts, end, name))
                self._host(ts, end)
        elif cat == "kernel":
            self.kernels += 1
            self.kernel_us[name] = self.kernel_us.get(name, 0.0) + (end - ts)
            role = "communication" if "nccl" in name.lower() or "rccl" in name.lower() else "kernel"
            roles[role].add(ts, end)
            self._device(corr, ts, end)
        elif cat in ("memcpy", "gpu_memcpy"):
            on_device = _on_device(name)
            roles["memcpy_device" if on_device else "memcpy"].add(ts, end)
            self._device(corr, ts, end)
            if not on_device:
                self._copy(name, nbytes, end - ts)
            else:
                st = self.device_copies.setdefault(name.split()[1], CopyStat())  # "DtoD" / "PtoP"
                st.count += 1
                st.seconds += (end - ts) * 1e-6
        elif cat in ("memset", "gpu_memset"):
            roles["memset"].add(ts, end)
            self._device(corr, ts, end)
        elif cat in ("runtime", "cuda_runtime", "cuda_driver", "hip_runtime"):
            roles["runtime"].add(ts, end)
            if corr is not None:
                self.rt_corr.append(corr)
                self.rt_start.append(ts)
                self.rt_end.append(end)
            self.runtime_names[name] = self.runtime_names.get(name, 0) + 1
            if name in SYNC_CALLS:
                st = self.syncs.setdefault(name, CopyStat())
                st.count += 1
                st.seconds += (end - ts) * 1e-6
                self.sync_spans.add(ts, end)
        elif cat == "user_annotation" and name.startswith("Optimizer.step#"):
            # torch.optim's own annotation of each step(): the steps where the trace has no
            # ProfilerStep# (a profile without a schedule, prof.step() never called)
            self.opt_steps.append((ts, end))
            self._host(ts, end)
        elif cat == "user_annotation" and name.startswith(_COMM_OPS):
            roles["communication"].add(ts, end)  # collectives annotated on their own threads
        elif name.startswith("enumerate(DataLoader)#") and cat in _HOST_CATS:
            # torch >= 1.13 records the wait for a batch as a user_annotation, older ones as an op.
            if name.endswith(".__next__"):
                roles["dataloader"].add(ts, end)
                kind = name.split("#", 1)[1].split(".", 1)[0]
                self.loader_kinds[kind] = self.loader_kinds.get(kind, 0) + 1
            self._host(ts, end)
        elif cat == "cuda_sync":
            st = self.syncs.setdefault(f"{name} (cuda_sync)", CopyStat())
            st.count += 1
            st.seconds += (end - ts) * 1e-6
        elif cat in ("operator", "cpu_op", "python_function"):
            if name.startswith(_COMM_OPS):
                roles["communication"].add(ts, end)
            else:
                roles["cpu_op"].add(ts, end)
            self._host(ts, end)

    def _host(self, ts: float, end: float) -> None:
        if ts < self.host_min:
            self.host_min = ts
        if end > self.host_max:
            self.host_max = end

    def _device(self, corr: int | None, ts: float, end: float) -> None:
        if corr is not None:
            self.dev_corr.append(corr)
            self.dev_start.append(ts)
            self.dev_end.append(end)

    def _copy(self, name: str, nbytes: Any, dur_us: float) -> None:
        # "Memcpy HtoD (Pageable -> Device)"
        parts = name.split()
        direction = parts[1] if len(parts) > 1 else "?"
        low = name.lower()
        kind = "pageable" if "pageable" in low else "pinned" if "pinned" in low else "device"
        st = self.copies.setdefault(f"{direction} {kind}", CopyStat())
        st.count += 1
        st.seconds += dur_us * 1e-6
        try:
            st.bytes += int(nbytes or 0)
        except (TypeError, ValueError):
            pass

    def _memory(self, dev_type: Any, dev_id: Any, total_allocated: Any, nbytes: Any,
                total_reserved: Any) -> None:
        """A `[memory]` instant: the allocator's totals (2.x), or one allocation's size (2021)."""
        if dev_type not in (1, "1", "cuda", "CUDA"):  # 0 is the CPU
            return
        try:
            dev = int(dev_id)
            if total_allocated is not None:
                alloc = float(total_allocated)
            else:
                alloc = self.running_allocated.get(dev, 0.0) + float(nbytes or 0)
                self.running_allocated[dev] = alloc
                self.allocated_relative = True
            res = float(total_reserved) if total_reserved is not None else None
        except (TypeError, ValueError):
            return
        if alloc > self.peak_allocated.get(dev, -1):
            self.peak_allocated[dev] = alloc
        if res is not None and res > self.peak_reserved.get(dev, -1):
            self.peak_reserved[dev] = res


def _int(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class Args(msgspec.Struct, gc=False):  # gc=False: decoded ~1.7x faster; they hold no cycles
    """The few `args` the analyses read; other keys are skipped by the decoder, never built."""

    correlation: int | None = None
    nbytes: int | None = msgspec.field(default=None, name="bytes")
    nbytes_2021: int | float | None = msgspec.field(default=None, name="Bytes")
    device_type: int | str | None = msgspec.field(default=None, name="Device Type")
    device_id: int | None = msgspec.field(default=None, name="Device Id")
    total_allocated: float | None = msgspec.field(default=None, name="Total Allocated")
    total_reserved: float | None = msgspec.field(default=None, name="Total Reserved")


class Event(msgspec.Struct, gc=False):
    """A trace event with only the fields the analyses read. A field of another type fails the
    batch, which the reader then reads event by event (`on_event`), counting the malformed one."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    ts: float | None = None
    dur: float = 0.0
    args: Args | None = None


EVENTS_DECODER = msgspec.json.Decoder(list[Event])
