"""Where the user's code spends the sampled time: the functions the loader's samples are in (with
the kind of library work beneath them), the sampler's share of the fetches, batches the loop makes
itself; and the process's StackEvidence built from them, with the loop's own code outside the
model (loop_time.py). stacks.py reads the samples and tells each one's phase."""

from __future__ import annotations

import linecache
from collections import Counter

from gpubottle.analysis.attention_weights import dropped_attention_weights
from gpubottle.analysis.autograd_functions import autograd_loop
from gpubottle.analysis.element_calls import element_call_kind
from gpubottle.analysis.forward_rows import forward_row_loop
from gpubottle.analysis.hand_attention import hand_attention
from gpubottle.analysis.loop_time import named_time
from gpubottle.analysis.memory_format import conv2d_share
from gpubottle.analysis.model_loop import model_loop, model_row_loop
from gpubottle.analysis.module_hooks import hook_work
from gpubottle.analysis.onehot_lookup import onehot_lookup
from gpubottle.analysis.row_loops import loop_span, row_loop_named
from gpubottle.analysis.same_file import reads_own_part
from gpubottle.analysis.source_kinds import (
    class_scan_kind,
    db_query_kind,
    draw_kind,
    element_write_kind,
    list_search_kind,
    list_tensor_kind,
    same_file_kind,
    sample_invariant_kind,
    unpickling_kind,
    window_loop_kind,
)
from gpubottle.analysis.stack_shares import (
    innermost_user_at,
    is_comprehension,
    is_statement,
    library_call,
    named_at_line,
    shares,
)
from gpubottle.analysis.stacks import (
    PHASES,
    Frame,
    ThreadSamples,
    in_script,
    in_worker_loop,
    is_blocking,
    named_in,
    phase_of,
    receives,
)
from gpubottle.analysis.work_kinds import (
    DEQUE_INDEX,
    ELEMENT_ADDS,
    ELEMENT_WRITES,
    LIST_REMOVE,
    LIST_SEARCH,
    PER_INDEX_DRAW,
    SAMPLE_INVARIANT,
    model_in_loader_kind,
    work_kind,
)
from gpubottle.evidence import StackEvidence, StackFrameShare
from gpubottle.probes.sites import is_user_file, place

_NEXT_INDEX = (("dataloader.py", ("_next_index",)),)  # torch's DataLoader asking its sampler


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
            at = innermost_user_at(st)  # (a weighted draw per index: its C, no frame beneath)
            inner = st[at]
            kind = draw_kind(inner.file, inner.line) or (
                list_search_kind(inner.file, inner.line) if at == len(st) - 1 else None)
            kinds.setdefault(key, Counter())[kind] += 1
            if kind is not None:
                draws.setdefault(key, Counter())[inner.line] += 1
    if not counts or not stacks:
        return None
    # (named at the draw's (or search's) line where that is its time: the fix replaces that call)
    at_line = set().union(*(named_at_line(k, kinds, draws, firsts)
                            for k in (PER_INDEX_DRAW, LIST_SEARCH, LIST_REMOVE, DEQUE_INDEX)))
    top = shares(counts, firsts, len(stacks), 1, kinds=kinds, statements=at_line)[0]
    top.share = round(sum(counts.values()) / len(stacks), 4)
    return top


_COLLATE = "/torch/utils/data/_utils/collate.py"


def in_collate(stack: list[Frame]) -> bool:
    """A sample inside torch's collate (default_collate and the functions it calls per element)."""
    return any(f.file.replace("\\", "/").endswith(_COLLATE) for f in stack)


# Kinds a sample's function is named at the statement of (the one its fix changes), not at its def.
_AT_LINE = (SAMPLE_INVARIANT, ELEMENT_WRITES, ELEMENT_ADDS, LIST_SEARCH, LIST_REMOVE, DEQUE_INDEX)


def _hot(stacks: list[list[Frame]], limit: int = 5) -> list[StackFrameShare]:
    counts: Counter[tuple[str, str]] = Counter()
    firsts: dict[tuple[str, str], int] = {}
    kinds: dict[tuple[str, str], Counter[str | None]] = {}
    same_lines: dict[tuple[str, str], Counter[int]] = {}  # statements the same for every sample
    beneath: dict[tuple[str, str], Counter[str]] = {}  # library functions under samples of no kind
    for st in stacks:
        i = innermost_user_at(st)  # (the frames beneath it say what kind of work it is)
        f = st[i] if i >= 0 else None
        # A loop line pulling the next batch is the loader's machinery at work, not the user's code;
        # one with nothing beneath iterates in C, its own work (`for j, line in enumerate(f)` in a
        # __getitem__ reading a file to its line: 74% of one such dataset's time).
        if f is not None and (i == len(st) - 1
                              or not linecache.getline(f.file, f.line).lstrip().startswith("for ")):
            counts[(f.name, f.file)] += 1
            firsts.setdefault((f.name, f.file), f.line)
            # (the same file opened for each sample: before the library's kind, whose remedy
            # for np.load or torch.load is about a file per sample)
            # (then a statement whose value is the same for every sample: its library's own kind,
            # numpy's reductions have none, is not what removes it)
            # (but where the `with` body reads the sample's own part, its parsing beneath is that)
            kind = same_file_kind(f.file, f.line)
            if kind is not None and reads_own_part(f.file, f.line):
                kind = work_kind(st[i + 1:]) or kind
            kind = (kind or sample_invariant_kind(f.file, f.line) or class_scan_kind(f.file, f.line)
                    or element_call_kind(st, i) or work_kind(st[i + 1:]) or model_in_loader_kind(st[i + 1:])
                    or window_loop_kind(f.file, f.line))
            # (the user's line itself, its work in C; a comprehension's samples are its own Python)
            if kind is None and i == len(st) - 1 and not is_comprehension(f.name):
                kind = (list_tensor_kind(f.file, f.line) or element_write_kind(f.file, f.line)
                        or db_query_kind(f.file, f.line) or unpickling_kind(f.file, f.line))
            if kind is None and i == len(st) - 1:  # (a comprehension's search is C, not its Python)
                kind = list_search_kind(f.file, f.line)
            kinds.setdefault((f.name, f.file), Counter())[kind] += 1
            if kind is None and i < len(st) - 1:
                beneath.setdefault((f.name, f.file), Counter())[library_call(f, st[i + 1])] += 1
            if kind in _AT_LINE:
                same_lines.setdefault((f.name, f.file), Counter())[f.line] += 1
    # Such a function is named at that statement, which the fix moves to __init__ (or writes whole
    # rows at), not at its def.
    at_line = set().union(*(named_at_line(k, kinds, same_lines, firsts) for k in _AT_LINE))
    return shares(counts, firsts, len(stacks), limit, kinds=kinds, statements=at_line, beneath=beneath)


def _fold_loop(stacks: list[list[Frame]], loop: StackFrameShare,
               rest: list[StackFrameShare]) -> list[StackFrameShare]:
    """`rest` less the other statements of `loop`'s row loop, their share added to its: the loop's
    time is all of its body's (a pair loop's `if rel[i] == rel[j]: continue` beside its loss line
    took 15% of the step, said apart as "also outside the model" where the loop was named at 42%)."""
    kept = []
    for o in rest:
        if o.kind is None and is_statement(o.function):
            same = row_loop_named(stacks, o.function, o.location)
            if same is not None and same.site == loop.row_loop:
                loop.share = round(loop.share + o.share, 4)
                continue
        kept.append(o)
    return kept


def _model_inside(stacks: list[list[Frame]], loop_site: str) -> bool:
    """Samples in the model's forward under a line of the loop at `loop_site` (file:line, as
    place() says it): a model called once per sample in it, whose time the model's calls tell."""
    line = int(loop_site.rpartition(":")[2]) if loop_site.rpartition(":")[2].isdigit() else 0
    for st in stacks:
        if phase_of(st) != "forward":
            continue
        for f in st:
            if is_user_file(f.file) and line < f.line and place(f.file, line) == loop_site:
                span = loop_span(f.file, line)
                if span is not None and f.line <= span[1]:
                    return True
    return False


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
        for share in ev.main_outside_model[:1]:  # (the one a finding names; its work of no kind)
            loop = row_loop_named(main.stacks, share.function, share.location) if share.kind is None else None
            if loop is not None:
                share.row_loop, share.row_loop_text = loop.site, loop.text
                share.row_loop_columns = loop.columns
                if not _model_inside(main.stacks, loop.site):
                    rest = _fold_loop(main.stacks, share, ev.main_outside_model[1:])
                    ev.main_outside_model = [share, *rest]
        ev.main_sampler = sampler_share(data)
        ev.main_autograd_loop = autograd_loop(main.stacks)
        ev.main_forward_loop = forward_row_loop(main.stacks)
        ev.main_hook = hook_work(main.stacks)
        ev.main_attention = dropped_attention_weights(main.stacks)
        ev.main_hand_attention = hand_attention(main.stacks)
        ev.main_onehot = onehot_lookup(main.stacks)
        ev.main_conv2d_share = conv2d_share(main.stacks)
        ev.main_model_call, ev.main_input_grows = model_loop(main.stacks)
        rows = model_row_loop(main.stacks) if ev.main_model_call else None
        ev.main_model_row_loop, ev.main_model_row_loop_text = rows if rows else (None, None)
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
