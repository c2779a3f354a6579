"""py-spy samples read and attributed by process role: each main-thread sample's phase (waiting for
data, forward, backward, optimizer, other Python), which samples wait rather than work, and which
are the script's or a worker's. The user functions they spend their time in: stack_users.py,
loop_time.py."""

from __future__ import annotations

import bisect
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gpubottle import jsonio
from gpubottle.analysis.cpu import in_spans
from gpubottle.collect.stack_chunks import Timeline, read_evented
from gpubottle.probes.sites import is_user_file
from gpubottle.wire import StackChunk, read_records

# Leaf frames where a thread waits rather than works (queues, locks, selectors, pipes).
_BLOCKING = (
    ("threading.py", ("wait",)),
    ("queue.py", ("get",)),
    ("queues.py", ("get", "_poll", "poll")),
    ("connection.py", ("poll", "_poll", "wait", "_recv", "recv", "recv_bytes", "_recv_bytes")),
    ("selectors.py", ("select",)),
    ("thread.py", ("_worker",)),  # a concurrent.futures pool's idle thread, in its queue's C get
    ("synchronize.py", ("__enter__", "acquire")),  # a multiprocessing lock (a pool worker's queue)
)
# The frames of a receive: a queue's or a connection's getting side (a put that blocks on a full
# queue is the loop's output waiting, not its input).
_RECEIVING = (
    ("queue.py", ("get",)),
    # concurrent.futures: a pool's results waited for (Executor.map's iterator, Future.result)
    ("_base.py", ("result", "_result_or_cancel", "result_iterator", "as_completed")),
    # multiprocessing.Pool: map's and apply's results, imap's iterator
    ("pool.py", ("get", "wait", "next", "__next__")),
    ("queues.py", ("get", "_poll", "poll")),
    ("connection.py", ("recv", "recv_bytes", "_recv_bytes", "_recv", "poll", "_poll")),
)
PHASES = ("data", "forward", "backward", "optimizer", "other")
LOOP_FUNC_SHARE = 0.25  # of a user function's samples under the model's phases: the loop's own
# Below that share, a function is the loop's own only from this many samples under the model's
# phases: one or two can be torn reads (py-spy joins a helper that had just returned to the
# optimizer step before it), and at a 20-Hz rate a loop can have no more than that.
LOOP_FUNC_MIN_SAMPLES = 3


@dataclass
class Frame:
    name: str
    file: str
    line: int


@dataclass
class ThreadSamples:
    pid: int
    stacks: list[list[Frame]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # when each was taken, on the run's clock


def without_held(threads: dict[int, ThreadSamples],
                 spans: list[tuple[float, float]]) -> dict[int, ThreadSamples]:
    """Each process's samples less those after each span (a pause) that repeat the span's last
    stack, up to the first other stack: py-spy writes a stack when it changes, and at low
    priority on busy cores its next sample may come late, the last stack it saw held until then
    (a 0.4-s sort's frames read as 25-31% of the 1.3-ms steps after it, in 2 runs of 4 under
    the suite). A new stack after the span is a sample of the steps, kept."""
    if not spans:
        return threads
    out = {}
    for pid, ts in threads.items():
        drop: set[int] = set()
        for _, end in spans:
            i = bisect.bisect_right(ts.times, end)
            if i == 0:
                continue
            last = ts.stacks[i - 1]
            while i < len(ts.times) and ts.stacks[i] == last:
                drop.add(i)
                i += 1
        out[pid] = ThreadSamples(pid, [st for i, st in enumerate(ts.stacks) if i not in drop],
                                 [t for i, t in enumerate(ts.times) if i not in drop]) if drop else ts
    return out


def within(threads: dict[int, ThreadSamples], spans: list[tuple[float, float]] | None,
           fallback: bool = False) -> dict[int, ThreadSamples]:
    """Only the samples taken inside `spans` (merged and sorted; None: all of them). `fallback`: a
    run too short for any sample inside keeps them all rather than none."""
    if spans is None:
        return threads
    out = {}
    for pid, ts in threads.items():
        keep = [i for i, t in enumerate(ts.times) if in_spans(t, spans)]
        out[pid] = ThreadSamples(pid, [ts.stacks[i] for i in keep], [ts.times[i] for i in keep])
    if fallback and not any(ts.stacks for ts in out.values()):
        return threads
    return out


def _without(threads: dict[int, ThreadSamples],
             drop: Callable[[list[Frame]], bool]) -> dict[int, ThreadSamples]:
    """The samples whose stacks `drop` says are not the training's left out, with their times."""
    out = {}
    for pid, ts in threads.items():
        keep = [i for i, st in enumerate(ts.stacks) if not drop(st)]
        out[pid] = ThreadSamples(pid, [ts.stacks[i] for i in keep],
                                 [ts.times[i] for i in keep] if len(ts.times) == len(ts.stacks) else [])
    return out


def _at(frame: Frame, site: str) -> bool:
    """The frame is at `site` ("file:line", the file relative to the run's directory or absolute)."""
    file, _, line = site.rpartition(":")
    rel = file[2:] if file.startswith("./") else file
    return (line.isdigit() and frame.line == int(line)
            and (frame.file == file or frame.file.replace("\\", "/").endswith("/" + rel)))


def without_evaluations(threads: dict[int, ThreadSamples], eval_sites: set[str],
                        train_sites: set[str]) -> dict[int, ThreadSamples]:
    """The samples of an evaluation left out of the training's, by what their stacks are in, not
    only by their times: py-spy writes a sample's time when its own main thread takes it in, which
    on a busy machine (py-spy runs at nice 10) came 30-100 ms after the sample, so an evaluation's
    last frames, and its next iter() starting workers, landed in the training around it (20 of 65
    training samples there, read as the training's input). A sample is the evaluation's when its
    stack passes through an evaluation loop's line (`for x, y in val_loader`: its iterator's work)
    or through the function that loop is in, where that function does not also run the training."""
    if not eval_sites:
        return threads
    def funcs(sites: set[str]) -> set[tuple[str, str]]:
        return {(f.file, f.name) for ts in threads.values() for st in ts.stacks for f in st
                if any(_at(f, s) for s in sites)}
    own = funcs(eval_sites) - funcs(train_sites)

    def evaluating(st: list[Frame]) -> bool:
        return any((f.file, f.name) in own or any(_at(f, s) for s in eval_sites) for f in st)

    return _without(threads, evaluating)


def named_in(frame: Frame, table: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    """The frame is one of a (file's base name, function names) table's."""
    base = os.path.basename(frame.file)
    short = frame.name.rsplit(".", 1)[-1]
    return any(base == f and short in names for f, names in table)


def is_blocking(frame: Frame) -> bool:
    return named_in(frame, _BLOCKING)


# The checkpoint saves the probes time (probes/saves.py): torch.save and the libraries' own.
_SAVES = (("torch/serialization.py", ("save", "_save")),
          ("safetensors/torch.py", ("save_file", "save_model")),
          ("torch/distributed/checkpoint/", None))


def without_saves(threads: dict[int, ThreadSamples]) -> dict[int, ThreadSamples]:
    """The samples inside a checkpoint save left out: the probes timed the saves, which are carved
    out of the steps, and a sample in one is the checkpoint's wherever its time falls (beside busy
    programs py-spy's timeline drifted and 30% of a loop's step samples fell in torch.save, named
    as the loop's own code beside the checkpoint finding)."""
    def in_save(st: list[Frame]) -> bool:
        for f in st:
            path = f.file.replace("\\", "/")
            for suffix, names in _SAVES:
                if (path.endswith(suffix) or (suffix.endswith("/") and suffix in path)) and (
                        names is None or f.name.rsplit(".", 1)[-1] in names):
                    return True
        return False

    return _without(threads, in_save)


def receives(stack: list[Frame]) -> bool:
    """A sample inside a receive from a queue or a pipe (analysis/producers.py)."""
    return any(named_in(f, _RECEIVING) for f in stack)


def read_chunks(stack_dir: str, pids: set[int] | None = None,
                others: bool = False) -> dict[int, ThreadSamples]:
    """Main-thread stacks per process with the time of each, read off each chunk's timeline at the
    rate py-spy sampled it (so a share of samples is a share of time). With `pids`, only the
    chunks of those processes (or of one py-spy over the whole tree) are read. `others`: instead
    each process's other threads together (a thread pool's), gpubottle's own left out."""
    out: dict[int, ThreadSamples] = {}
    for tl, samples in thread_timelines(stack_dir, pids):
        if tl.pid is None or tl.is_main != (not others):
            continue
        ts = out.setdefault(tl.pid, ThreadSamples(tl.pid))
        for t, st in samples:
            ts.stacks.append(st)
            ts.times.append(t)
    return out


def thread_timelines(stack_dir: str, pids: set[int] | None = None
                     ) -> Iterator[tuple[Timeline, Iterator[tuple[float, list[Frame]]]]]:
    """Each chunk's threads (of `pids`' chunks; gpubottle's own left out) with their samples as
    (time on the run's clock, stack), read at the rate py-spy sampled them: lazily, to be taken
    before the next thread (a caller that skips a thread pays nothing for its frames)."""
    records, _bad = read_records(os.path.join(stack_dir, "chunks.jsonl"))
    chunks = [c for c in records if isinstance(c, StackChunk)
              and (pids is None or c.pid is None or int(c.pid) in pids)]
    for chunk in chunks:
        try:
            raw_frames, timelines = read_evented(os.path.join(stack_dir, chunk.name))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        frames = [Frame(str(f.get("name", "?")), str(f.get("file") or ""), int(f.get("line") or 0))
                  for f in raw_frames]
        step = 1.0 / max(1.0, float(chunk.rate))
        for tl in timelines:
            if not tl.thread.startswith("gpubottle"):
                yield tl, ((chunk.t0 + t, [frames[i] for i in st if 0 <= i < len(frames)])
                           for t, st in tl.samples(step))


def unsampled_steps(stack_dir: str, pid: int, window: tuple[float, float], started: float) -> str | None:
    """Why py-spy, which ran, left no sample of the main thread in the measured steps (`window`,
    monotonic; `started`: the run's start), or None where the steps are too short to expect one.
    Seen: a compiled model's 18-s run whose last chunk py-spy never wrote (its samples ended at
    15.2 s, the steps ran from 13.6 s to the end): the findings that name functions had nothing."""
    records, _bad = read_records(os.path.join(stack_dir, "chunks.jsonl"))
    chunks = [c for c in records if isinstance(c, StackChunk) and (c.pid is None or int(c.pid) == pid)]
    a, b = window
    rate = min((float(c.rate) for c in chunks if float(c.t1) > a), default=None)
    if b - a < 2.0 / max(rate or 1.0, 1.0):
        return None  # (a second or two of steps at 2 samples a second: none is no news)
    until = max((float(c.t1) for c in chunks), default=None)
    span = f"{a - started:.1f}-{b - started:.1f} s into the run"
    if until is None or until < b - 1.0:
        end = (f"its samples end at {until - started:.1f} s: a chunk of them was not written"
               if until is not None else "none of its chunks was written")
        return f"py-spy: no stack sample of the measured steps ({span}; {end}): the findings that " \
               "name the step's functions and lines have nothing to go on"
    return None


def in_script(stack: list[Frame]) -> bool:
    """A main-thread sample taken while the script itself runs: under runpy's _run_code (how the
    child runs the script or module) or, in an mp.spawn rank, under the function gpubottle calls
    for it (launch/spawn.py: spawned_rank); not importing. The measured window already leaves out
    start-up and exit by time; this also leaves out what the window cannot see (an import inside
    the loop, a stack read while the interpreter was between frames)."""
    inside = False
    for f in stack:
        if f.file.startswith("<frozen importlib"):
            return False
        runpy = f.name == "_run_code" and (f.file == "<frozen runpy>" or f.file.endswith("runpy.py"))
        rank = f.name == "spawned_rank" and f.file.replace("\\", "/").endswith("launch/spawn.py")
        if runpy or rank:
            inside = True
    return inside


def in_worker_loop(stack: list[Frame]) -> bool:
    """A DataLoader worker's sample while it makes batches: under torch's _worker_loop. Not its
    start-up (a spawned worker imports the script and torch first: seconds of `<module>` that
    belong to the workers' start, not to the dataset) nor its exit."""
    return any(f.name == "_worker_loop" and f.file.replace("\\", "/").endswith(
        "torch/utils/data/_utils/worker.py") for f in stack)


FORWARD_CALLS = ("_call_impl", "_wrapped_call_impl")  # a module called: model(x), layer(x)


def frame_path(f: Frame) -> str:
    """A frame's file with forward slashes (py-spy on Windows gives backslashes)."""
    return f.file.replace("\\", "/")


def short_name(name: str) -> str:
    return name.rsplit(".", 1)[-1]  # py-spy names methods by qualname: Module._call_impl


def model_caller(stack: list[Frame]) -> Frame | None:
    """The user's frame just outside the sample's outermost module call (`out = model(x)`); None
    where the sample is in no module call, or no user frame made it."""
    i = next((i for i, f in enumerate(stack) if f.file.replace("\\", "/").endswith(
        "/torch/nn/modules/module.py") and short_name(f.name) in FORWARD_CALLS), -1)
    return next((c for c in reversed(stack[:i]) if is_user_file(c.file)), None) if i > 0 else None


def phase_of(stack: list[Frame]) -> str:
    """The training step's part a sample is in. Forward and backward are the module call and the
    autograd entry points, not any function of their files: a loop's logging that calls
    `model.named_parameters()` or iterates a tensor (Module/Tensor methods in the same files) is
    the loop's own code, not the model's."""
    files = [f.file.replace("\\", "/") for f in stack]
    if any("/torch/utils/data/" in f for f in files):
        return "data"
    if any("/torch/optim/" in f for f in files):
        return "optimizer"
    for f, path in zip(stack, files):
        name = short_name(f.name)
        if (path.endswith("/torch/_tensor.py") and name == "backward") or (
                path.endswith("/torch/autograd/__init__.py") and name in ("backward", "grad")) or (
                path.endswith("/torch/autograd/graph.py") and "backward" in name):
            return "backward"
    if any(path.endswith("/torch/nn/modules/module.py") and short_name(f.name) in FORWARD_CALLS
           for f, path in zip(stack, files)):
        return "forward"
    return "other"


def fetching_sample(stack: list[Frame]) -> bool:
    """A sample inside a DataLoader iterator's __next__ (a batch being fetched, or the last one's
    StopIteration stopping the workers)."""
    return any(short_name(f.name) == "__next__" and "/torch/utils/data/" in f.file.replace("\\", "/")
               for f in stack)


def merge_speedscope(stack_dir: str, dest: str) -> str | None:
    """One speedscope file from all chunks: each thread's timeline joined across chunks, in seconds
    from the first chunk's start, for viewers."""
    records, _bad = read_records(os.path.join(stack_dir, "chunks.jsonl"))
    chunks = sorted((c for c in records if isinstance(c, StackChunk)), key=lambda c: c.t0)
    if not chunks:
        return None
    origin = chunks[0].t0
    frames: list[dict[str, Any]] = []
    index: dict[tuple[Any, ...], int] = {}
    profiles: dict[str, dict[str, Any]] = {}
    for chunk in chunks:
        try:
            with open(os.path.join(stack_dir, chunk.name)) as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        remap = []
        for f in data.get("shared", {}).get("frames", []):
            key = (f.get("name"), f.get("file"), f.get("line"))
            if key not in index:
                index[key] = len(frames)
                frames.append(f)
            remap.append(index[key])
        shift = chunk.t0 - origin
        for prof in data.get("profiles", []):
            name = str(prof.get("name", "?"))
            tgt = profiles.setdefault(name, {"type": "evented", "name": name, "unit": "seconds",
                                             "startValue": shift, "endValue": shift, "events": []})
            tgt["events"].extend({"type": e["type"], "frame": remap[e["frame"]], "at": e["at"] + shift}
                                 for e in prof.get("events", []) if 0 <= e["frame"] < len(remap))
            tgt["endValue"] = max(tgt["endValue"], float(prof.get("endValue") or 0.0) + shift)
    if not profiles:
        return None
    out = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "profiles": list(profiles.values()),
        "shared": {"frames": frames},
        "activeProfileIndex": 0,
        "exporter": "gpubottle (py-spy, chrometrace converted)",
        "name": "gpubottle stacks",
    }
    with open(dest, "w") as fh:
        jsonio.write(fh, out)
    return dest
