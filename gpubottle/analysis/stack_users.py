"""Where the user's code spends the sampled time: the functions the loader's and the loop's
samples are in (with the kind of library work beneath them), the loop's own code outside the
model, the sampler's share of the fetches; and the process's StackEvidence built from them.
stacks.py reads the samples and tells each one's phase."""

from __future__ import annotations

import linecache
from collections import Counter
from collections.abc import Sequence

from gpubottle.analysis.attention_weights import dropped_attention_weights
from gpubottle.analysis.autograd_functions import autograd_loop
from gpubottle.analysis.element_calls import element_call_kind
from gpubottle.analysis.invariant import invariant_reads
from gpubottle.analysis.loop_source import BACKWARD, accumulates, flows_into
from gpubottle.analysis.model_loop import model_loop
from gpubottle.analysis.module_hooks import hook_work
from gpubottle.analysis.stacks import (
    LOOP_FUNC_MIN_SAMPLES,
    LOOP_FUNC_SHARE,
    PHASES,
    Frame,
    ThreadSamples,
    in_script,
    in_worker_loop,
    is_blocking,
    model_caller,
    named_in,
    phase_of,
    receives,
)
from gpubottle.analysis.tensor_loops import tensor_loop_kind, tensor_walk_kind
from gpubottle.analysis.work_kinds import (
    ELEMENT_WRITES,
    INVARIANT,
    LIST_REMOVE,
    LIST_SEARCH,
    PER_INDEX_DRAW,
    SAMPLE_INVARIANT,
    draw_kind,
    element_write_kind,
    gather_kind,
    line_kind,
    list_search_kind,
    list_tensor_kind,
    same_file_kind,
    sample_invariant_kind,
    shuffle_kind,
    work_kind,
)
from gpubottle.evidence import StackEvidence, StackFrameShare
from gpubottle.probes.sites import is_user_file, place

_NEXT_INDEX = (("dataloader.py", ("_next_index",)),)  # torch's DataLoader asking its sampler
STATEMENT_KIND_SHARE_INV = 4  # a statement is named by a kind in a quarter of its samples or more


def _sampler_user_at(stack: list[Frame]) -> int:
    """The index of the outermost user frame beneath torch's _next_index (the DataLoader asking its
    sampler for the next batch's indices, in the main process), -1 when the sample is not there."""
    for i, f in enumerate(stack):
        if named_in(f, _NEXT_INDEX):
            return next((j for j in range(i + 1, len(stack)) if is_user_file(stack[j].file)), -1)
    return -1


def sampler_share(stacks: list[list[Frame]]) -> StackFrameShare | None:
    """The user's sampler function most of the data samples' sampler time is in, with the share of
    those samples (of `stacks`) inside the user's sampler code at all."""
    counts: Counter[tuple[str, str]] = Counter()
    firsts: dict[tuple[str, str], int] = {}
    kinds: dict[tuple[str, str], Counter[str | None]] = {}
    draws: dict[tuple[str, str], Counter[int]] = {}
    for st in stacks:
        j = _sampler_user_at(st)
        if j >= 0:
            key = (st[j].name, st[j].file)
            counts[key] += 1
            firsts.setdefault(key, st[j].line)
            at = _innermost_user_at(st)  # (a weighted draw per index: its C, no frame beneath)
            inner = st[at]
            kind = draw_kind(inner.file, inner.line) or (
                list_search_kind(inner.file, inner.line) if at == len(st) - 1 else None)
            kinds.setdefault(key, Counter())[kind] += 1
            if kind is not None:
                draws.setdefault(key, Counter())[inner.line] += 1
    if not counts or not stacks:
        return None
    # (named at the draw's (or search's) line where that is its time: the fix replaces that call)
    at_line = set().union(*(_named_at_line(k, kinds, draws, firsts)
                            for k in (PER_INDEX_DRAW, LIST_SEARCH, LIST_REMOVE)))
    top = _shares(counts, firsts, len(stacks), 1, kinds=kinds, statements=at_line)[0]
    top.share = round(sum(counts.values()) / len(stacks), 4)
    return top


_COLLATE = "/torch/utils/data/_utils/collate.py"


def in_collate(stack: list[Frame]) -> bool:
    """A sample inside torch's collate (default_collate and the functions it calls per element)."""
    return any(f.file.replace("\\", "/").endswith(_COLLATE) for f in stack)


def _innermost_user_at(stack: list[Frame]) -> int:
    """The index of the innermost user frame, -1 when there is none."""
    return next((i for i in range(len(stack) - 1, -1, -1) if is_user_file(stack[i].file)), -1)


def innermost_user(stack: list[Frame]) -> Frame | None:
    i = _innermost_user_at(stack)
    return stack[i] if i >= 0 else None


# Kinds a sample's function is named at the statement of (the one its fix changes), not at its def.
_AT_LINE = (SAMPLE_INVARIANT, ELEMENT_WRITES, LIST_SEARCH, LIST_REMOVE)


def _hot(stacks: list[list[Frame]], limit: int = 5) -> list[StackFrameShare]:
    counts: Counter[tuple[str, str]] = Counter()
    firsts: dict[tuple[str, str], int] = {}
    kinds: dict[tuple[str, str], Counter[str | None]] = {}
    same_lines: dict[tuple[str, str], Counter[int]] = {}  # statements the same for every sample
    for st in stacks:
        i = _innermost_user_at(st)  # (the frames beneath it say what kind of work it is)
        f = st[i] if i >= 0 else None
        # A loop line pulling the next batch is the loader's machinery at work, not the user's code.
        if f is not None and not linecache.getline(f.file, f.line).lstrip().startswith("for "):
            counts[(f.name, f.file)] += 1
            firsts.setdefault((f.name, f.file), f.line)
            # (the same file opened for each sample: before the library's kind, whose remedy
            # for np.load or torch.load is about a file per sample)
            # (then a statement whose value is the same for every sample: its library's own kind,
            # numpy's reductions have none, is not what removes it)
            kind = (same_file_kind(f.file, f.line) or sample_invariant_kind(f.file, f.line)
                    or element_call_kind(st, i) or work_kind(st[i + 1:]))
            # (the user's line itself, its work in C; a comprehension's samples are its own Python)
            if kind is None and i == len(st) - 1 and not _comprehension(f.name):
                kind = list_tensor_kind(f.file, f.line) or element_write_kind(f.file, f.line)
            if kind is None and i == len(st) - 1:  # (a comprehension's search is C, not its Python)
                kind = list_search_kind(f.file, f.line)
            kinds.setdefault((f.name, f.file), Counter())[kind] += 1
            if kind in _AT_LINE:
                same_lines.setdefault((f.name, f.file), Counter())[f.line] += 1
    # Such a function is named at that statement, which the fix moves to __init__ (or writes whole
    # rows at), not at its def.
    at_line = set().union(*(_named_at_line(k, kinds, same_lines, firsts) for k in _AT_LINE))
    return _shares(counts, firsts, len(stacks), limit, kinds=kinds, statements=at_line)


def _named_at_line(kind: str, kinds: dict[tuple[str, str], Counter[str | None]],
                   lines: dict[tuple[str, str], Counter[int]], firsts: dict[tuple[str, str], int]
                   ) -> set[tuple[str, str]]:
    """The functions whose samples are mostly `kind`, each then named (in `firsts`) at its most
    sampled line of that kind, the statement the fix changes, not at its def."""
    at = {k for k in lines if _kind(kinds.get(k)) == kind}
    for k in at:
        firsts[k] = lines[k].most_common(1)[0][0]
    return at


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
            losses: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
            summed: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset()
            ) -> list[StackFrameShare]:
    """The most sampled functions, each named by its `def` line, as shares of `total` samples (and
    the line that called it most often, where `callers` says; the kind of work beneath it; whether
    its result feeds the model, for those in `feeding`)."""
    return [StackFrameShare(function=name,
                            location=place(file, firsts[(name, file)] if (name, file) in statements
                                           else def_line(file, firsts[(name, file)], name)),
                            share=round(n / total, 4),
                            called_at=(callers[(name, file)].most_common(1)[0][0]
                                       if callers and callers.get((name, file)) else None),
                            kind=_kind((kinds or {}).get((name, file))),
                            feeds_model=(name, file) in feeding,
                            loss=(name, file) in losses, accumulates=(name, file) in summed)
            for (name, file), n in counts.most_common(limit)]


def def_line(path: str, line: int, name: str | None = None) -> int:
    """The `def` line of the function `name` (py-spy's, "Net.forward") containing `line` (py-spy
    gives the current line); a comprehension or lambda inside a function is that function's
    ("Net.forward.<locals>.<listcomp>"). Module-level code and its comprehensions (`<module>`,
    `<genexpr>`) are named by the line itself: the nearest `def` above them is another function's
    (a script's loop once read as its model's forward). A def named otherwise on the way up is a
    function nested above the line, skipped; where none has the name, the nearest."""
    short = None
    if name:
        named = [c for c in name.split(".") if not c.startswith("<")]
        if not named:
            return line
        short = named[-1]
    nearest = None
    for n in range(line, max(0, line - 400), -1):
        text = linecache.getline(path, n).lstrip()
        if text.startswith(("def ", "async def ")):
            if short is None or text.split("def ", 1)[1].split("(", 1)[0].strip() == short:
                return n
            nearest = nearest or n
        if not text and n == line:
            break
    return nearest or line


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
    kind = element_call_kind(st, i) or work_kind(st[i + 1:])
    if kind is None:  # (the walk over the modules a loop's header makes its lists with)
        kind = tensor_walk_kind(st[i].file, st[i].line)
    if kind is None:  # (a sort or shuffle to pick a few, whatever frames numpy's wrappers leave)
        inner = _innermost_user_at(st)
        kind = shuffle_kind(st[inner].file, st[inner].line) if inner >= 0 else None
    if kind is None and is_user_file(st[-1].file):
        kind = tensor_loop_kind(st[-1].file, st[-1].line) or list_search_kind(st[-1].file, st[-1].line) or (
            None if _comprehension(st[-1].name) else list_tensor_kind(st[-1].file, st[-1].line)
            or element_write_kind(st[-1].file, st[-1].line))
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
    # (where none does in that share, those that led there at least half as often as the one that
    # led there most: the script's top level under a loop of a generator's batches is in the
    # model's phases in few of its samples, and still the loop's own; a helper one torn sample put
    # there is not: a top level at 22% once made per_sample_metrics "the loop", and its list
    # comprehension was named instead). There, each from LOOP_FUNC_MIN_SAMPLES such samples: the
    # top level's 2 of 40 beside the helper's one torn sample (its frames over the optimizer step
    # it had followed) made the helper the loop; with none left, _loop_callers tells the loop.
    ratios = {k: n / seen[k] for k, n in into.items()}
    loop = {k for k, r in ratios.items() if r >= LOOP_FUNC_SHARE}
    if loop or not ratios:
        return loop
    most = max(ratios.values())
    return {k for k, r in ratios.items() if r * 2 >= most and into[k] >= LOOP_FUNC_MIN_SAMPLES}


def _comprehension(name: str) -> bool:
    """py-spy names a comprehension's frame `function.<locals>.<listcomp>` (at top level, `<listcomp>`)."""
    return name.rsplit(".", 1)[-1] in ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>")


# Another statement of the same kind is said with the first where it has this share of the first's
# samples or more (torch.tensor(list) on five lines of a replay buffer: 18% each).
ALIKE_MIN_SHARE = 0.25
# A statement of the loop's own code with no known kind is named with this share of the main
# thread's samples, or more.
UNKNOWN_LINE_SHARE = 0.15


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
    in_torch: Counter[tuple[str, int, str]] = Counter()  # ... of them in torch's functions beneath
    for st in picked:
        for i, f in enumerate(st):
            if is_user_file(f.file) and (f.name, f.file) not in loop_funcs and f.name != "<module>":
                counts[(f.name, f.file)] += 1
                firsts.setdefault((f.name, f.file), f.line)
                kind = gather_kind(f.file, f.line) if _comprehension(f.name) else None
                kinds.setdefault((f.name, f.file), Counter())[kind or _sample_kind(st, i)] += 1
                caller = next((c for c in reversed(st[:i]) if is_user_file(c.file)), None)
                if caller is not None:
                    callers.setdefault((f.name, f.file), Counter())[place(caller.file, caller.line)] += 1
                    call_lines.setdefault((f.name, f.file), Counter())[(caller.file, caller.line)] += 1
                break
        else:
            i = _innermost_user_at(st)
            if i >= 0:
                text = linecache.getline(st[i].file, st[i].line).strip()
                kind = (line_kind(text) or list_tensor_kind(st[i].file, st[i].line)
                        or element_write_kind(st[i].file, st[i].line)
                        or list_search_kind(st[i].file, st[i].line) if i == len(st) - 1
                        else work_kind(st[i + 1:]))
                # (numpy's argsort and the like are Python wrappers over C: frames of theirs or not)
                kind = kind or shuffle_kind(st[i].file, st[i].line)
                if kind is None and invariant_reads(st[i].file, st[i].line) is not None:
                    kind = INVARIANT  # (the same value each step: read from the source, once a line)
                on_line.setdefault((st[i].file, st[i].line, text), []).append(kind)
                if kind is None and any("/torch/" in f.file.replace("\\", "/") for f in st[i + 1:]):
                    in_torch[(st[i].file, st[i].line, text)] += 1
    # Every sample on a statement that some of its samples show doing known work (the rest of a
    # print(out) is its write to stdout, in C) is that statement's.
    alike: dict[tuple[str, str], list[tuple[int, str, int]]] = {}  # (file, kind) -> its statements
    for (file, line, text), seen in on_line.items():
        named = Counter(k for k in seen if k is not None)
        # (a loop's own header, `for x, y in tqdm(loader):`, is not code it could call less often;
        # a kind in a few of a line's samples is not what the line does: `loss = -(px.log_prob(x)
        # - kl_divergence(q, p))` checked its sample once in 12, its math the rest)
        if text and named and not text.startswith(("for ", "async for ", "while ")) and (
                named.most_common(1)[0][1] * STATEMENT_KIND_SHARE_INV >= len(seen)):
            alike.setdefault((file, named.most_common(1)[0][0]), []).append((len(seen), text, line))
    for (file, kind), lines in alike.items():
        # Statements of one kind on the loop's lines are said as one, with their time together
        # (a replay buffer's batch made by torch.tensor(list) on five lines: 18% each, 40% in all).
        lines.sort(key=lambda t: (-t[0], t[2]))
        # (a line with a few of them is py-spy's torn read of the frame's line, not a statement
        # alike: print(f"{out}")'s tensor formatting seen 4 times in 58 at the model call's line)
        lines = [x for x in lines if x[0] >= ALIKE_MIN_SHARE * lines[0][0]]
        n, text, line = lines[0]
        if len(lines) > 1:  # (no ": " in it: a finding's "what" is "<function>: <kind>")
            more = ", ".join(str(x[2]) for x in sorted(lines[1:], key=lambda t: t[2]))
            text += f" (and line{'s' if len(lines) > 2 else ''} {more} like it)"
        key = (text, file)
        total = sum(x[0] for x in lines)
        counts[key] += total
        firsts.setdefault(key, line)
        kinds[key] = Counter({kind: total})
        callers.setdefault(key, Counter())[place(file, line)] += total
        statements.add(key)
    for (file, line, text), seen in on_line.items():
        # A statement of no known kind that holds a large share of the samples by itself is named
        # too: the loop's own line is where the time goes (`hard = np.argsort(scores)[-256:]` over
        # 400,000 scores: most of each step, read as "not pinned to one function" and offered
        # torch.compile). (py-spy's torn reads put a few samples on any line: not this many.) Not a
        # line whose time is in torch's own functions: `loss = F.cross_entropy(model(x), y)` is the
        # model's math, called from the loop's line.
        if (text and not any(seen) and not text.startswith(("for ", "async for ", "while "))
                and len(seen) >= UNKNOWN_LINE_SHARE * len(stacks)
                and in_torch[(file, line, text)] * 2 < len(seen)):
            key = (text, file)
            counts[key] += len(seen)
            firsts.setdefault(key, line)
            kinds[key] = Counter({None: len(seen)})
            callers.setdefault(key, Counter())[place(file, line)] += len(seen)
            statements.add(key)
    models = model_calls(loop if loop is not None else stacks)
    flows = {k: flows_into(c.most_common(1)[0][0], models, helper=k[0]) for k, c in call_lines.items()}
    # A statement named by its own line feeds the model as a helper's call would: by what it assigns
    # (`nexts = torch.tensor([b[3] for b in batch])`, a batch built in the loop, needed every step).
    flows |= {k: flows_into((k[1], firsts[k]), models) for k in statements}
    feeding = {k for k, f in flows.items() if f is not None}
    losses = {k for k, f in flows.items() if f == BACKWARD}
    summed = {k for k, c in call_lines.items() if accumulates(*c.most_common(1)[0][0])}
    return _shares(counts, firsts, len(stacks), limit, callers, kinds, feeding, statements, losses, summed)


def model_calls(stacks: list[list[Frame]]) -> set[tuple[str, int]]:
    """The user's lines that call the model (`out = model(x)`): in each forward sample, the user
    frame just outside the outermost module call."""
    return {(c.file, c.line) for st in stacks if (c := model_caller(st)) is not None}


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
        making = [st for st in data if not is_blocking(st[-1])]  # the loader's own work, not waits
        data_or_input = making + loop_input
        ev.main_outside_model = named_time(main.stacks, own_batches=loop_input)
        ev.main_sampler = sampler_share(data)
        ev.main_autograd_loop = autograd_loop(main.stacks)
        ev.main_hook = hook_work(main.stacks)
        ev.main_attention = dropped_attention_weights(main.stacks)
        ev.main_model_call, ev.main_input_grows = model_loop(main.stacks)
        ev.main_making, ev.main_collate = len(making), sum(map(in_collate, making))
        ev.main_hot = _hot(data_or_input) if data_or_input else _hot(
            [st for st in main.stacks if phase_of(st) == "other" and st and not is_blocking(st[-1])])
    wstacks = [st for pid, ts in threads.items() if pid in workers for st in ts.stacks
               if st and in_worker_loop(st)]
    if wstacks:
        busy = [st for st in wstacks if not is_blocking(st[-1])]
        ev.samples_workers = len(wstacks)
        ev.worker_idle_fraction = round(1 - len(busy) / len(wstacks), 4)
        ev.worker_hot = _hot(busy)
        ev.worker_making, ev.worker_collate = len(busy), sum(map(in_collate, busy))
    return ev
