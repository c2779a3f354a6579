"""What keeps growing: tensors referenced from Python, counted by shape at two moments.

The supervisor sees the run's memory climb (PSS); it asks the script's process, through a small
request file, for a census at the next step boundary, and again once memory has grown further. The
group of same-shaped tensors whose count rose between the two is the leak, and the container that
holds one of them (a module-level list, a local, an attribute) names it. Each census also reads
glibc malloc's account (malloc_stats.py: memory freed and kept, fragmentation), the bounded
buffers the script is filling (buffers.py, kept.bounded_containers) and the lengths of the script's
own lists and dicts (kept.py: what piles up that is not a tensor). Each census walks every Python
object once (a fraction of a second), and there are at most two per run.
"""

from __future__ import annotations

import gc
import sys
import time
from collections import deque
from typing import Any

from gpubottle.collect.leakwatch import MIN_GAP_S, steps_marker
from gpubottle.options import ChildConfig
from gpubottle.probes import graph_growth
from gpubottle.probes.buffers import filling
from gpubottle.probes.contents import PROXIES, heap_tensors_and_modules, shape_label, storage_of
from gpubottle.probes.hooks import NEVER, Wake
from gpubottle.probes.kept import (
    attribute_name,
    bounded_containers,
    grew_most,
    held_in,
    local_name,
    module_name,
    user_containers,
)
from gpubottle.probes.malloc_stats import heap_stats
from gpubottle.probes.recorder import Recorder
from gpubottle.probes.sites import is_user_file
from gpubottle.wire import CudaSample, LeakCensus, Perturbed, ProbeFailed

TOP_GROUPS = 12
MAX_CENSUSES = 2
GRAPH_CANDIDATES = 3  # groups of tensors with a graph tried as what keeps a leak no container holds


def _label(t: Any) -> str:
    return shape_label(t, device=True)


def _tensors(deques: list[Any] | None = None) -> list[Any]:
    import torch

    tensors, _ = heap_tensors_and_modules(deques)
    return [t for t in tensors if not isinstance(t, torch.nn.Parameter)]


def tensor_groups(tensors: list[Any]) -> dict[str, list[int]]:
    """shape, dtype and device -> [bytes, count], each storage counted once."""
    seen: set[int] = set()
    groups: dict[str, list[int]] = {}
    for t in tensors:
        s = storage_of(t)
        if s is None or s[1] == 0 or s[0] in seen:
            continue
        seen.add(s[0])
        g = groups.setdefault(_label(t), [0, 0])
        g[0] += s[1]
        g[1] += 1
    return groups


def graph_counts(tensors: list[Any]) -> dict[str, list[int]]:
    """Tensors with an autograd graph (grad_fn: a loss, a model's output) by shape, dtype and
    device -> [count, elements of one]: one kept alive keeps its whole graph, and the graph the
    step's saved activations."""
    out: dict[str, list[int]] = {}
    for t in tensors:
        try:
            if t.grad_fn is not None:
                g = out.setdefault(_label(t), [0, int(t.numel())])
                g[0] += 1
        except Exception:
            pass
    return out


def _name_in(container: Any, target: Any) -> str | None:
    """The key under which a dict, or a frame's locals, holds `target`."""
    items = container.items() if isinstance(container, dict) else ()
    for k, v in items:
        if v is target:
            return str(k)
    return None


def _is_module_dict(r: Any) -> bool:
    return isinstance(r, dict) and "__name__" in r and "__builtins__" in r


def _direct_holder(obj: Any, refs: list[Any]) -> str | None:
    kind = type(obj).__name__
    for r in refs:
        if _is_module_dict(r):
            name = _name_in(r, obj)
            if name is not None:
                return module_name(name, str(r.get("__file__") or r.get("__name__")), kind)
        code = getattr(r, "f_code", None)
        if code is not None:
            if is_user_file(code.co_filename):
                name = _name_in(r.f_locals, obj)
                if name is not None:
                    return local_name(name, code.co_name, code.co_filename, kind)
            continue
        if isinstance(r, dict):
            # An instance's __dict__ (older Pythons keep it as a separate object).
            owner = next((o for o in gc.get_referrers(r) if getattr(o, "__dict__", None) is r), None)
            name = _name_in(r, obj) if owner is not None else None
            if name is not None:
                return attribute_name(type(owner).__name__, name, kind)
        elif not isinstance(r, (list, tuple, set, deque, type)) and hasattr(r, "__dict__"):
            name = _name_in(vars(r), obj)  # 3.11+: the instance itself refers to its values
            if name is not None:
                return attribute_name(type(r).__name__, name, kind)
    return None


_MAX_BREADTH = 8  # containers per level: each look is a scan of the whole heap


def holder_of(target: Any, depth: int = 3) -> str | None:
    """Where the script keeps `target`: 'history (train.py, a module-level list)', say. Follows
    containers outward (a tuple in a list in a module) up to `depth` levels."""
    # Running frames keep their locals outside the garbage collector's view: look at the stack.
    frames = graph_growth.user_frames(sys._getframe(1))
    # Breadth first over every container that refers to it: the first referrer is not always the
    # script's (an iterator, a cache or another tuple may hold the same tensor).
    level: list[Any] = [target]
    seen = {id(target)}
    for _ in range(depth):
        nxt: list[Any] = []
        for obj in level:
            refs = gc.get_referrers(obj)
            ours = (level, nxt, refs, frames)
            refs = [r for r in refs if type(r) not in PROXIES and not any(r is o for o in ours)] + frames
            found = _direct_holder(obj, refs)
            if found is not None:
                return found
            for r in refs:
                if id(r) not in seen and (isinstance(r, (list, tuple, set, deque)) or (
                        isinstance(r, dict) and not _is_module_dict(r))):
                    seen.add(id(r))
                    nxt.append(r)
        if not nxt:
            return None
        level = nxt[:_MAX_BREADTH]
    return None


class LeakProbe:
    """At step boundaries, at most once a second: has the supervisor asked for a census?"""

    def __init__(self, recorder: Recorder, request_path: str) -> None:
        self.recorder = recorder
        self._start(request_path)

    def reset(self, cfg: ChildConfig) -> None:
        """A new use of the same probes (gpubottle.profile() again): its own request file, no
        censuses yet."""
        self._start(cfg.census_request or self.path)

    def _start(self, request_path: str) -> None:
        self.path = request_path
        self._next_check = 0.0
        self._done = 0
        self._first: dict[str, list[int]] | None = None
        self._first_graphs: dict[str, list[int]] = {}
        self._first_kept: dict[str, int] | None = None  # the script's containers' lengths
        # the first census's largest graph: its nodes, whether capped, its root's mark (_chain)
        self._first_chain: tuple[int, bool, graph_growth.Mark | None] | None = None
        self._last_t = -1e9  # when the last census ran
        self._pending = False  # a census asked for from inside the process, waiting for the gap
        self._marked = False  # the steps marker written (steps_marker)

    def _gap_ok(self, now: float) -> bool:
        """Two censuses must be MIN_GAP_S apart, whoever asks (the supervisor for host memory, the
        GPU series for CUDA memory): back to back, nothing has grown between them."""
        return now - self._last_t >= MIN_GAP_S

    def on_step(self, step: int) -> Wake:
        self._check(step)
        return NEVER if self._done >= MAX_CENSUSES else (sys.maxsize, self._next_check)

    def _check(self, step: int) -> None:
        if not self._marked:
            self._marked = True
            try:
                open(steps_marker(self.path), "w").close()
            except OSError:
                pass  # the watch then never asks: no census, as with no steps
        now = time.monotonic()
        if now < self._next_check or self._done >= MAX_CENSUSES:
            return
        self._next_check = now + 1.0
        if not self._gap_ok(now):
            return
        if self._pending:
            self._pending = False
            self._done += 1
            self._census_safely(step)
            return
        try:
            with open(self.path) as fh:
                wanted = int(fh.read().strip() or 0)
        except (OSError, ValueError):
            return
        if wanted <= self._done:
            return
        self._done = wanted
        self._census_safely(step)

    def finish(self, exc: BaseException | None) -> None:
        pass  # a census needs a step boundary: none is taken at the end

    def _census_safely(self, step: int) -> None:
        try:
            self._census(step)
        except Exception as exc:
            self.recorder.emit(ProbeFailed("leak-census", f"the tensor census failed: {exc!r}"[:300]))

    def census_now(self, step: int) -> None:
        """A census asked for from inside the process (GPU memory climbing, seen at a step); taken
        at a later step when the last one was too recent."""
        if self._done >= MAX_CENSUSES:
            return
        if not self._gap_ok(time.monotonic()):
            self._pending = True
            return
        self._done += 1
        self._census_safely(step)

    def _census(self, step: int) -> None:
        t0 = self._last_t = time.monotonic()
        heap = heap_stats()  # before the walk's own lists are allocated
        deques: list[Any] = []
        tensors = _tensors(deques)
        groups = tensor_groups(tensors)
        graphs = graph_counts(tensors)
        holder = graph = sample = None
        rooted: list[tuple[str, Any]] = []
        if self._first is not None:
            first = self._first
            grown = max(groups, key=lambda k: groups[k][0] - first.get(k, [0, 0])[0], default=None)
            if grown is not None and groups[grown][0] > first.get(grown, [0, 0])[0]:
                sample = _middle(tensors, grown)
                # Tensors no container holds (a step's saved activations) may be kept by the
                # graphs of others that one does (`losses.append(loss)`, the graph retained): the
                # groups with a graph that grew most, smallest first (a loss is a scalar; each
                # try that finds no holder costs ~0.2 s of heap walks), a tensor of each (one scan
                # of the heap's tensors a group tried).
                fg = self._first_graphs

                def grew(k: str) -> int:
                    return graphs[k][0] - fg.get(k, [0, 0])[0]

                tried = sorted((k for k in graphs if grew(k) > 0), key=lambda k: (-grew(k), graphs[k][1]))
                rooted = [(k, _middle(tensors, k, with_graph=True)) for k in tried[:GRAPH_CANDIDATES]]
        else:
            self._first, self._first_graphs = groups, graphs
        chain = self._chain(tensors)
        del tensors  # our own list must not show up as the holder
        bounds: dict[str, tuple[int, str]] = {}
        containers = user_containers(sys._getframe(1), bounds)
        if sample is not None:
            holder = held_in(sample, containers) or holder_of(sample)
            # A loss kept with its grad_fn keeps its step's graph, whose nodes and saved tensors
            # are the memory that grows (4 bytes of value each): said as a graph kept.
            if holder is not None and getattr(sample, "grad_fn", None) is not None:
                graph = grown
            del sample
        for label, t in rooted if holder is None else ():
            holder = (held_in(t, containers) or holder_of(t)) if t is not None else None
            if holder is not None:
                graph = label
                break
        del rooted
        named = {id(c): name for name, c in containers.items()}  # a deque the script holds by name
        buffers = filling(deques, lambda d: named.get(id(d)) or holder_of(d)) or None
        del deques
        kept = None
        caches = bounded_containers(self._first_kept, containers, bounds)
        buffers = (buffers or []) + caches or None
        if self._first_kept is None:
            self._first_kept = {k: len(v) for k, v in containers.items()}
        else:
            kept = grew_most(self._first_kept, containers, {holder or "", *(c[0] for c in caches)})
        del containers
        top = sorted(groups.items(), key=lambda kv: -kv[1][0])[:TOP_GROUPS]
        self.recorder.emit(LeakCensus(self._done, step, t0, round(time.monotonic() - t0, 4),
                                      [[k, v[0], v[1]] for k, v in top], holder, graph, heap, buffers,
                                      kept, chain))
        self.recorder.emit(Perturbed(t0, time.monotonic(), "leak-census"))

    def _chain(self, tensors: list[Any]) -> list[Any] | None:
        """The largest autograd graph a tensor keeps (graph_growth.py); at the second census,
        whether it holds the first one's root (one graph across the steps between), and where it
        grew, what holds that tensor and the line that adds to it."""
        first, self._first_chain = self._first_chain, None
        big = graph_growth.largest_graph(tensors, first[2] if first is not None else None)
        if big is None:
            return None
        t, row = big.tensor, [big.nodes, int(big.capped), _label(big.tensor), None, None, int(big.spans)]
        if first is None:
            self._first_chain = (big.nodes, big.capped, big.root)
        elif big.nodes - first[0] >= graph_growth.MIN_GROWN or (big.capped and first[1]):
            found = graph_growth.named(t)
            row[3:5] = found if found is not None else (holder_of(t), None)
        del big
        return row


def _middle(tensors: list[Any], label: str, with_graph: bool = False) -> Any:
    """One tensor of a group, from the middle: the newest is likely also the loop's current
    variable. `with_graph`: only those with a grad_fn."""
    matches = [t for t in tensors if _label(t) == label and (not with_graph or t.grad_fn is not None)]
    return matches[len(matches) // 2] if matches else None


class GpuSeries:
    """CUDA memory once a second at step boundaries (for a growth fit), and the same tensor census
    as the host side when it keeps climbing: a GPU leak shows here long before the OOM."""

    def __init__(self, recorder: Recorder, leaks: LeakProbe | None) -> None:
        from gpubottle.collect.leakwatch import LeakWatch

        self.recorder = recorder
        self.leaks = leaks
        self.watch = LeakWatch(time.monotonic())
        self._last = 0.0

    def on_step(self, step: int, allocated: int, reserved: int) -> None:
        now = time.monotonic()
        if now - self._last < 1.0:
            return
        self._last = now
        self.recorder.emit(CudaSample(now, step, allocated, reserved))
        if self.leaks is not None and self.watch.observe(now, allocated) is not None:
            self.leaks.census_now(step)
