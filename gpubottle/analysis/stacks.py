"""py-spy samples attributed by process role: what the main thread does each step (waiting for data,
forward, backward, optimizer, other Python) and which user functions the loader's time goes to."""

from __future__ import annotations

import json
import linecache
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpubottle.analysis.cpu import in_spans
from gpubottle.analysis.loop_source import BACKWARD, flows_into
from gpubottle.analysis.work_kinds import line_kind, tensor_loop_kind, work_kind
from gpubottle.collect.stack_chunks import read_evented
from gpubottle.evidence import StackEvidence, StackFrameShare
from gpubottle.probes.sites import is_user_file, place
from gpubottle.wire import StackChunk, read_records

# Leaf frames where a thread waits rather than works (queues, locks, selectors, pipes).
_BLOCKING = (
    ("threading.py", ("wait",)),
    ("queue.py", ("get",)),
    ("queues.py", ("get", "_poll", "poll")),
    ("connection.py", ("poll", "_poll", "wait", "_recv", "recv", "recv_bytes", "_recv_bytes")),
    ("selectors.py", ("select",)),
)
# The frames of a receive: a queue's or a connection's getting side (a put that blocks on a full
# queue is the loop's output waiting, not its input).
_RECEIVING = (
    ("queue.py", ("get",)),
    ("queues.py", ("get", "_poll", "poll")),
    ("connection.py", ("recv", "recv_bytes", "_recv_bytes", "_recv", "poll", "_poll")),
)
PHASES = ("data", "forward", "backward", "optimizer", "other")
LOOP_FUNC_SHARE = 0.25  # of a user function's samples under the model's phases: the loop's own


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


def _named_in(frame: Frame, table: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    """The frame is one of a (file's base name, function names) table's."""
    base = os.path.basename(frame.file)
    short = frame.name.rsplit(".", 1)[-1]
    return any(base == f and short in names for f, names in table)


def is_blocking(frame: Frame) -> bool:
    return _named_in(frame, _BLOCKING)


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

    out = {}
    for pid, ts in threads.items():
        keep = [i for i, st in enumerate(ts.stacks) if not in_save(st)]
        out[pid] = ThreadSamples(pid, [ts.stacks[i] for i in keep],
                                 [ts.times[i] for i in keep] if len(ts.times) == len(ts.stacks) else [])
    return out


def receives(stack: list[Frame]) -> bool:
    """A sample inside a receive from a queue or a pipe (analysis/producers.py)."""
    return any(_named_in(f, _RECEIVING) for f in stack)


def read_chunks(stack_dir: str, pids: set[int] | None = None) -> dict[int, ThreadSamples]:
    """Main-thread stacks per process with the time of each, read off each chunk's timeline at the
    rate py-spy sampled it (so a share of samples is a share of time). With `pids`, only the
    chunks of those processes (or of one py-spy over the whole tree) are read."""
    out: dict[int, ThreadSamples] = {}
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
        # Grid times from the chunk's start (its timeline's zero).
        step = 1.0 / max(1.0, float(chunk.rate))
        times = [k * step for k in range(max(0, int((chunk.t1 - chunk.t0) / step) + 1))]
        for tl in timelines:
            if not tl.is_main or tl.pid is None:
                continue
            ts = out.setdefault(tl.pid, ThreadSamples(tl.pid))
            for t, st in zip(times, tl.at_times(times)):
                if st:
                    ts.stacks.append([frames[i] for i in st if 0 <= i < len(frames)])
                    ts.times.append(chunk.t0 + t)
    return out


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


_FORWARD = ("_call_impl", "_wrapped_call_impl")  # a module called: model(x), layer(x)


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]  # py-spy names methods by qualname: Module._call_impl


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
        name = _short(f.name)
        if (path.endswith("/torch/_tensor.py") and name == "backward") or (
                path.endswith("/torch/autograd/__init__.py") and name in ("backward", "grad")) or (
                path.endswith("/torch/autograd/graph.py") and "backward" in name):
            return "backward"
    if any(path.endswith("/torch/nn/modules/module.py") and _short(f.name) in _FORWARD
           for f, path in zip(stack, files)):
        return "forward"
    return "other"


_NEXT_INDEX = (("dataloader.py", ("_next_index",)),)  # torch's DataLoader asking its sampler


def _sampler_user_at(stack: list[Frame]) -> int:
    """The index of the outermost user frame beneath torch's _next_index (the DataLoader asking its
    sampler for the next batch's indices, in the main process), -1 when the sample is not there."""
    for i, f in enumerate(stack):
        if _named_in(f, _NEXT_INDEX):
            return next((j for j in range(i + 1, len(stack)) if is_user_file(stack[j].file)), -1)
    return -1


def sampler_share(stacks: list[list[Frame]]) -> StackFrameShare | None:
    """The user's sampler function most of the data samples' sampler time is in, with the share of
    those samples (of `stacks`) inside the user's sampler code at all."""
    counts: Counter[tuple[str, str]] = Counter()
    firsts: dict[tuple[str, str], int] = {}
    for st in stacks:
        j = _sampler_user_at(st)
        if j >= 0:
            counts[(st[j].name, st[j].file)] += 1
            firsts.setdefault((st[j].name, st[j].file), st[j].line)
    if not counts or not stacks:
        return None
    top = _shares(counts, firsts, len(stacks), 1)[0]
    top.share = round(sum(counts.values()) / len(stacks), 4)
    return top


def _innermost_user_at(stack: list[Frame]) -> int:
    """The index of the innermost user frame, -1 when there is none."""
    return next((i for i in range(len(stack) - 1, -1, -1) if is_user_file(stack[i].file)), -1)


def innermost_user(stack: list[Frame]) -> Frame | None:
    i = _innermost_user_at(stack)
    return stack[i] if i >= 0 else None


def _hot(stacks: list[list[Frame]], limit: int = 5) -> list[StackFrameShare]:
    counts: Counter[tuple[str, str]] = Counter()
    firsts: dict[tuple[str, str], int] = {}
    kinds: dict[tuple[str, str], Counter[str | None]] = {}
    for st in stacks:
        i = _innermost_user_at(st)  # (the frames beneath it say what kind of work it is)
        f = st[i] if i >= 0 else None
        # A loop line pulling the next batch is the loader's machinery at work, not the user's code.
        if f is not None and not linecache.getline(f.file, f.line).lstrip().startswith("for "):
            counts[(f.name, f.file)] += 1
            firsts.setdefault((f.name, f.file), f.line)
            kinds.setdefault((f.name, f.file), Counter())[work_kind(st[i + 1:])] += 1
    return _shares(counts, firsts, len(stacks), limit, kinds=kinds)


def _kind(kinds: Counter[str | None] | None) -> str | None:
    """The kind of library work most of a function's samples are in (work_kinds.py), if most are."""
    if not kinds:
        return None
    named = [(k, n) for k, n in kinds.most_common() if k is not None]
    return named[0][0] if named and named[0][1] * 2 >= sum(kinds.values()) else None


def _shares(counts: Counter[tuple[str, str]], firsts: dict[tuple[str, str], int], total: int,
            limit: int, callers: dict[tuple[str, str], Counter[str]] | None = None,
            kinds: dict[tuple[str, str], Counter[str | None]] | None = None,
            feeding: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
            statements: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
            losses: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset()
            ) -> list[StackFrameShare]:
    """The most sampled functions, each named by its `def` line, as shares of `total` samples (and
    the line that called it most often, where `callers` says; the kind of work beneath it; whether
    its result feeds the model, for those in `feeding`)."""
    return [StackFrameShare(function=name,
                            location=place(file, firsts[(name, file)] if (name, file) in statements
                                           else def_line(file, firsts[(name, file)])),
                            share=round(n / total, 4),
                            called_at=(callers[(name, file)].most_common(1)[0][0]
                                       if callers and callers.get((name, file)) else None),
                            kind=_kind((kinds or {}).get((name, file))),
                            feeds_model=(name, file) in feeding,
                            loss=(name, file) in losses)
            for (name, file), n in counts.most_common(limit)]


def def_line(path: str, line: int) -> int:
    """The `def` line of the function containing `line` (py-spy gives the current line)."""
    for n in range(line, max(0, line - 400), -1):
        text = linecache.getline(path, n).lstrip()
        if text.startswith(("def ", "async def ")):
            return n
        if not text and n == line:
            break
    return line


def making_batches(stacks: list[list[Frame]]) -> list[list[Frame]]:
    """Main-thread samples spent producing the next batch in a loop without a DataLoader: under a user
    frame whose current line is a `for ... in` or a `next(...)` (the loop pulling from a generator)."""
    picked = []
    for st in stacks:
        # (blocked receiving from a queue: batches made elsewhere, waited for: producers.py)
        if phase_of(st) != "other" or (is_blocking(st[-1]) and receives(st)):
            continue
        user = [i for i, f in enumerate(st) if is_user_file(f.file)]
        for i in user[:-1]:
            text = linecache.getline(st[i].file, st[i].line).strip()
            if text.startswith(("for ", "async for ")) or "next(" in text:
                picked.append(st)
                break
    return picked


def _loop_callers(stacks: list[list[Frame]]) -> set[tuple[str, str]]:
    """The user functions that call other user functions in at least half the samples: the loop's
    own (main, train) when no sample fell in the model to tell them (a step of a few ms beside a
    logging call of a hundred, sampled 40 times a second, can leave none there). Not "every
    sample": some are in the loop's own line (float(loss)), where it calls nothing of the user's."""
    counts: Counter[tuple[str, str]] = Counter()
    for st in stacks:
        # A comprehension is its function's own code, not a call: per_sample_metrics, in its
        # list comprehension in every sample, is not the loop calling something.
        user = [(f.name, f.file) for f in st if is_user_file(f.file) and not _comprehension(f.name)]
        counts.update(set(user[:-1]))
    return {k for k, n in counts.items() if n * 2 >= len(stacks)}


def _sample_kind(st: list[Frame], i: int) -> str | None:
    """The kind of work beneath the user frame st[i]: from the library frames beneath it, or, where
    the sample's innermost frame is the user's own line (its ops in C), from that line's loop."""
    kind = work_kind(st[i + 1:])
    if kind is None and is_user_file(st[-1].file):
        kind = tensor_loop_kind(st[-1].file, st[-1].line)
    return kind


def _leading_into_model(stacks: list[list[Frame]]) -> set[tuple[str, str]]:
    """The user functions that lead into the model's phases (forward, backward, the optimizer, the
    DataLoader) in LOOP_FUNC_SHARE of the samples they are in, or more: the loop's own. Not one
    that does so in a few: py-spy reads a running thread's frames without stopping it, and now and
    then one of its samples joins a helper that had just returned to the model call that followed
    (a hand-written loss whose 39 samples put 3 under Linear.forward)."""
    into: Counter[tuple[str, str]] = Counter()
    seen: Counter[tuple[str, str]] = Counter()
    for st in stacks:
        funcs = {(f.name, f.file) for f in st if is_user_file(f.file)}
        seen.update(funcs)
        if phase_of(st) in ("forward", "backward", "optimizer", "data"):
            into.update(funcs)
    # (where none does in that share, all that led there at all: the script's top level under a
    # loop of a generator's batches is in the model's phases in few of its samples, and still the
    # loop's own)
    return {k for k, n in into.items() if n >= LOOP_FUNC_SHARE * seen[k]} or set(into)


def _comprehension(name: str) -> bool:
    """py-spy names a comprehension's frame `function.<locals>.<listcomp>` (at top level, `<listcomp>`)."""
    return name.rsplit(".", 1)[-1] in ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>")


def named_time(stacks: list[list[Frame]], loop: list[list[Frame]] | None = None,
               only_other: bool = True, limit: int = 3,
               own_batches: Sequence[list[Frame]] = ()) -> list[StackFrameShare]:
    """The user functions the samples spent their time in outside forward, backward, the optimizer
    and data loading (metrics, logging, Python bookkeeping), as shares of all of them, most first:
    for each sample the outermost user function below the loop's own (what the loop called:
    log_metrics, even when the time lands in its helpers). The loop's own functions are those that
    also lead into the model (told by `loop`'s samples, default `stacks`), or, when none did, those
    that call the others in most samples; and `<module>`.
    `only_other`: False also names samples in the model's phases (a pause between steps).
    `own_batches`: samples of the loop pulling its next batch from its own generator: input (the
    no-DataLoader finding says it), not code the loop could call every 10 steps.
    A sample in no user function of its own, on the loop's own line, in work of a known kind is
    named by that statement: a C call with no Python frame beneath it (`gc.collect()`:
    work_kinds.LINE_KINDS), or library code of a known kind (`print(out)`: formatting tensors)."""
    if not stacks:
        return []
    skip = {id(st) for st in own_batches}
    loop_funcs = _leading_into_model(loop if loop is not None else stacks)
    picked = [st for st in stacks if st and not is_blocking(st[-1]) and id(st) not in skip
              and (not only_other or phase_of(st) == "other")]
    if not loop_funcs:
        loop_funcs = _loop_callers(picked)
    counts: Counter[tuple[str, str]] = Counter()
    firsts: dict[tuple[str, str], int] = {}
    # The loop's line that called it: where "call it every N steps" goes, not inside the function.
    callers: dict[tuple[str, str], Counter[str]] = {}
    call_lines: dict[tuple[str, str], Counter[tuple[str, int]]] = {}
    kinds: dict[tuple[str, str], Counter[str | None]] = {}
    statements: set[tuple[str, str]] = set()  # (statement, file): named by their own line
    on_line: dict[tuple[str, int, str], list[str | None]] = {}  # samples in no user function
    for st in picked:
        for i, f in enumerate(st):
            if is_user_file(f.file) and (f.name, f.file) not in loop_funcs and f.name != "<module>":
                counts[(f.name, f.file)] += 1
                firsts.setdefault((f.name, f.file), f.line)
                kinds.setdefault((f.name, f.file), Counter())[_sample_kind(st, i)] += 1
                caller = next((c for c in reversed(st[:i]) if is_user_file(c.file)), None)
                if caller is not None:
                    callers.setdefault((f.name, f.file), Counter())[place(caller.file, caller.line)] += 1
                    call_lines.setdefault((f.name, f.file), Counter())[(caller.file, caller.line)] += 1
                break
        else:
            i = _innermost_user_at(st)
            if i >= 0:
                text = linecache.getline(st[i].file, st[i].line).strip()
                on_line.setdefault((st[i].file, st[i].line, text), []).append(
                    line_kind(text) if i == len(st) - 1 else work_kind(st[i + 1:]))
    # Every sample on a statement that some of its samples show doing known work (the rest of a
    # print(out) is its write to stdout, in C) is that statement's.
    for (file, line, text), seen in on_line.items():
        named = Counter(k for k in seen if k is not None)
        # (a loop's own header, `for x, y in tqdm(loader):`, is not code it could call less often)
        if text and named and not text.startswith(("for ", "async for ", "while ")):
            key = (text, file)
            counts[key] += len(seen)
            firsts.setdefault(key, line)
            kinds[key] = Counter({named.most_common(1)[0][0]: len(seen)})
            callers.setdefault(key, Counter())[place(file, line)] += len(seen)
            statements.add(key)
    models = model_calls(loop if loop is not None else stacks)
    flows = {k: flows_into(c.most_common(1)[0][0], models, helper=k[0]) for k, c in call_lines.items()}
    feeding = {k for k, f in flows.items() if f is not None}
    losses = {k for k, f in flows.items() if f == BACKWARD}
    return _shares(counts, firsts, len(stacks), limit, callers, kinds, feeding, statements, losses)


def model_calls(stacks: list[list[Frame]]) -> set[tuple[str, int]]:
    """The user's lines that call the model (`out = model(x)`): in each forward sample, the user
    frame just outside the outermost module call."""
    lines = set()
    for st in stacks:
        i = next((i for i, f in enumerate(st) if f.file.replace("\\", "/").endswith(
            "/torch/nn/modules/module.py") and _short(f.name) in _FORWARD), -1)
        caller = next((c for c in reversed(st[:i]) if is_user_file(c.file)), None) if i > 0 else None
        if caller is not None:
            lines.add((caller.file, caller.line))
    return lines


def stack_evidence(
    threads: dict[int, ThreadSamples], main_pid: int, workers: set[int], speedscope: str | None
) -> StackEvidence:
    ev = StackEvidence(speedscope=speedscope)
    main = threads.get(main_pid)
    if main is not None:
        main = ThreadSamples(main.pid, [st for st in main.stacks if in_script(st)])
    if main is not None and main.stacks:
        ev.samples_main = len(main.stacks)
        phases = Counter(phase_of(st) for st in main.stacks)
        ev.main_phases = {p: round(phases.get(p, 0) / ev.samples_main, 4) for p in PHASES}
        loop_input = making_batches(main.stacks)
        ev.main_loop_input_share = round(len(loop_input) / ev.samples_main, 4)
        data = [st for st in main.stacks if phase_of(st) == "data"]
        data_or_input = [st for st in data if not is_blocking(st[-1])] + loop_input
        ev.main_outside_model = named_time(main.stacks, own_batches=loop_input)
        ev.main_sampler = sampler_share(data)
        ev.main_hot = _hot(data_or_input) if data_or_input else _hot(
            [st for st in main.stacks if phase_of(st) == "other" and st and not is_blocking(st[-1])])
    wstacks = [st for pid, ts in threads.items() if pid in workers for st in ts.stacks
               if st and in_worker_loop(st)]
    if wstacks:
        busy = [st for st in wstacks if not is_blocking(st[-1])]
        ev.samples_workers = len(wstacks)
        ev.worker_idle_fraction = round(1 - len(busy) / len(wstacks), 4)
        ev.worker_hot = _hot(busy)
    return ev


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
        json.dump(out, fh, separators=(",", ":"))
    return dest
