"""The loop's own time outside the model, by the user's function or statement it is in: metrics,
logging, Python bookkeeping, batches made in the loop (named_time), each with the kind of work
beneath it and whether its result feeds the model."""

from __future__ import annotations

import linecache
from collections import Counter
from collections.abc import Sequence

from gpubottle.analysis.element_calls import element_call_kind
from gpubottle.analysis.invariant import invariant_conversion, invariant_reads
from gpubottle.analysis.loop_source import (
    BACKWARD,
    accumulates,
    flows_into,
    reads_model_output,
    trains_beside,
)
from gpubottle.analysis.param_reads import reads_parameters
from gpubottle.analysis.row_loops import inner_row_loop
from gpubottle.analysis.source_kinds import (
    db_query_kind,
    deque_kind,
    element_write_kind,
    front_kind,
    gather_kind,
    list_search_kind,
    list_tensor_kind,
    shuffle_kind,
)
from gpubottle.analysis.stack_shares import innermost_user_at, is_comprehension, shares
from gpubottle.analysis.stacks import (
    LOOP_FUNC_MIN_SAMPLES,
    LOOP_FUNC_SHARE,
    Frame,
    frame_path,
    is_blocking,
    model_caller,
    phase_of,
)
from gpubottle.analysis.tensor_loops import (
    GRADS_LOOP,
    TENSOR_LOOP,
    loop_header,
    tensor_loop_kind,
    tensor_walk_kind,
)
from gpubottle.analysis.work_kinds import INVARIANT, INVARIANT_CONVERSION, line_kind, refined, work_kind
from gpubottle.evidence import StackFrameShare
from gpubottle.probes.sites import is_user_file, place

STATEMENT_KIND_SHARE_INV = 4  # a statement is named by a kind in a quarter of its samples or more


# Another statement of the same kind is said with the first where it has this share of the first's
# samples or more (torch.tensor(list) on five lines of a replay buffer: 18% each).
ALIKE_MIN_SHARE = 0.25


# A statement of the loop's own code with no known kind is named with this share of the main
# thread's samples, or more.
UNKNOWN_LINE_SHARE = 0.15


def _loop_callers(stacks: list[list[Frame]]) -> set[tuple[str, str]]:
    """The user functions that call other user functions in at least half the samples: the loop's
    own (main, train) when no sample fell in the model to tell them (a step of a few ms beside a
    logging call of a hundred, sampled 40 times a second, can leave none there). Not "every
    sample": some are in the loop's own line (float(loss)), where it calls nothing of the user's."""
    counts: Counter[tuple[str, str]] = Counter()
    for st in stacks:
        # A comprehension is its function's own code, not a call: per_sample_metrics, in its
        # list comprehension in every sample, is not the loop calling something.
        user = [(f.name, f.file) for f in st if is_user_file(f.file) and not is_comprehension(f.name)]
        counts.update(set(user[:-1]))
    return {k for k, n in counts.items() if n * 2 >= len(stacks)}


def _training_functions(stacks: list[list[Frame]]) -> set[tuple[str, str]]:
    """The user functions in `stacks` whose own code calls `.backward(` (loop_source.trains_beside)."""
    seen: dict[tuple[str, str], bool] = {}
    for st in stacks:
        for f in st:
            key = (f.name, f.file)
            if key not in seen and is_user_file(f.file) and f.name != "<module>" \
                    and not is_comprehension(f.name):
                seen[key] = trains_beside(f.file, f.line)
    return {k for k, trains in seen.items() if trains}


def _sample_kind(st: list[Frame], i: int) -> str | None:
    """The kind of work beneath the user frame st[i]: from the library frames beneath it, or, where
    the sample's innermost frame is the user's own line (its ops in C), from that line's loop."""
    kind = element_call_kind(st, i) or deque_kind(st[i].file, st[i].line) or work_kind(st[i + 1:])
    if kind is None:  # (the walk over the modules a loop's header makes its lists with)
        kind = tensor_walk_kind(st[i].file, st[i].line)
    if kind is None:  # (a sort or shuffle to pick a few, whatever frames numpy's wrappers leave)
        inner = innermost_user_at(st)
        kind = shuffle_kind(st[inner].file, st[inner].line) if inner >= 0 else None
    if kind is None and is_user_file(st[-1].file):
        kind = tensor_loop_kind(st[-1].file, st[-1].line) or list_search_kind(st[-1].file, st[-1].line) or (
            None if is_comprehension(st[-1].name) else list_tensor_kind(st[-1].file, st[-1].line)
            or element_write_kind(st[-1].file, st[-1].line) or db_query_kind(st[-1].file, st[-1].line))
    elif kind is None:  # (torch's Python beneath the user's line: `norm = p.grad.norm()` in the loop)
        inner = innermost_user_at(st)
        kind = tensor_loop_kind(st[inner].file, st[inner].line) if inner >= 0 else None
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


def _own_statement(file: str, line: int, text: str) -> bool:
    """A statement of the loop's own that a finding may name: not its header (`for x, y in
    tqdm(loader):` is no code it could call less often), nor the model written as tensors (a line
    computing with its parameters is its forward: analysis/param_reads.py)."""
    return bool(text) and not text.startswith(("for ", "async for ", "while ")) and (
        not reads_parameters(file, line))


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
    # A function whose own code calls backward() holds the training loop (`def train(): for step in
    # ...: ... loss.backward()`): its lines are the loop's own statements, as the script's top level
    # would be, however few samples it leads into the model (np.random.choice in it: 98% of each
    # step, once named as "train, which the loop calls", to be called every 10 steps at main's call).
    loop_funcs = loop_funcs | _training_functions(picked)
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
                kind = gather_kind(f.file, f.line) if is_comprehension(f.name) else None
                kinds.setdefault((f.name, f.file), Counter())[kind or _sample_kind(st, i)] += 1
                caller = next((c for c in reversed(st[:i]) if is_user_file(c.file)), None)
                if caller is not None:
                    callers.setdefault((f.name, f.file), Counter())[place(caller.file, caller.line)] += 1
                    call_lines.setdefault((f.name, f.file), Counter())[(caller.file, caller.line)] += 1
                break
        else:
            i = innermost_user_at(st)
            if i >= 0:
                text = linecache.getline(st[i].file, st[i].line).strip()
                kind = (line_kind(text) or list_tensor_kind(st[i].file, st[i].line)
                        or element_write_kind(st[i].file, st[i].line)
                        or list_search_kind(st[i].file, st[i].line)
                        or front_kind(st[i].file, st[i].line) or db_query_kind(st[i].file, st[i].line)
                        if i == len(st) - 1
                        else work_kind(st[i + 1:]))
                # (a loop over the model's tensors written in the loop's own body, its ops in C or
                # in torch's Python: an EMA or a clip by hand at the script's top level; a draw from
                # a deque, random.py's Python beneath)
                kind = (kind or deque_kind(st[i].file, st[i].line) or tensor_loop_kind(st[i].file, st[i].line)
                        or tensor_walk_kind(st[i].file, st[i].line))
                # (numpy's argsort and the like are Python wrappers over C: frames of theirs or not)
                kind = kind or shuffle_kind(st[i].file, st[i].line)
                if kind is None and invariant_reads(st[i].file, st[i].line) is not None:
                    kind = INVARIANT  # (the same value each step: read from the source, once a line)
                if kind is None and invariant_conversion(st[i].file, st[i].line) is not None:
                    kind = INVARIANT_CONVERSION  # (the same conversion each step, then indexed)
                on_line.setdefault((st[i].file, st[i].line, text), []).append(kind)
                if kind is None and any("/torch/" in frame_path(f) for f in st[i + 1:]):
                    in_torch[(st[i].file, st[i].line, text)] += 1
    # Every sample on a statement that some of its samples show doing known work (the rest of a
    # print(out) is its write to stdout, in C) is that statement's.
    alike: dict[tuple[str, str], list[tuple[int, str, int]]] = {}  # (file, kind) -> its statements
    for (file, line, text), seen in on_line.items():
        named = refined(Counter(k for k in seen if k is not None))
        # (a kind in a few of a line's samples is not what the line does: `loss = -(px.log_prob(x)
        # - kl_divergence(q, p))` checked its sample once in 12, its math the rest)
        if named and _own_statement(file, line, text) and (
                named.most_common(1)[0][1] * STATEMENT_KIND_SHARE_INV >= len(seen)):
            alike.setdefault((file, named.most_common(1)[0][0]), []).append((len(seen), text, line))
    said: list[tuple[str, str, int, int, str | None]] = []  # (text, file, line, samples, kind)
    for (file, kind), lines in alike.items():
        # Statements of one kind on the loop's lines are said as one, with their time together
        # (a replay buffer's batch made by torch.tensor(list) on five lines: 18% each, 40% in all).
        lines.sort(key=lambda t: (-t[0], t[2]))
        # (a line with a few of them is py-spy's torn read of the frame's line, not a statement
        # alike: print(f"{out}")'s tensor formatting seen 4 times in 58 at the model call's line)
        lines = [x for x in lines if x[0] >= ALIKE_MIN_SHARE * lines[0][0]]
        n, text, line = lines[0]
        head = loop_header(file, line) if kind in (TENSOR_LOOP, GRADS_LOOP) else None
        if head is not None:
            # A loop over the model's tensors is named by its header (`for p in model.parameters():`
            # at its line), whose lines together hold its time: `if norm > 1.0:` alone is no cause.
            mine = [x for x in lines if loop_header(file, x[2]) == head]
            said.append((linecache.getline(file, head).strip(), file, head, sum(x[0] for x in mine), kind))
            lines = [x for x in lines if x not in mine]
            if not lines:
                continue
            n, text, line = lines[0]
        if len(lines) > 1:  # (no ": " in it: a finding's "what" is "<function>: <kind>")
            more = ", ".join(str(x[2]) for x in sorted(lines[1:], key=lambda t: t[2]))
            text += f" (and line{'s' if len(lines) > 2 else ''} {more} like it)"
        said.append((text, file, line, sum(x[0] for x in lines), kind))
    for (file, line, text), seen in on_line.items():
        # A statement of no known kind that holds a large share of the samples by itself is named
        # too: the loop's own line is where the time goes (`hard = np.argsort(scores)[-256:]` over
        # 400,000 scores: most of each step, read as "not pinned to one function" and offered
        # torch.compile). (py-spy's torn reads put a few samples on any line: not this many.) Not a
        # line whose time is in torch's own functions: `loss = F.cross_entropy(model(x), y)` is the
        # model's math, called from the loop's line; unless the line is in a loop of its own over
        # rows or columns inside the step (a loss summed a class at a time: small ops, many).
        if (not any(seen) and _own_statement(file, line, text)
                and len(seen) >= UNKNOWN_LINE_SHARE * len(stacks)
                and (in_torch[(file, line, text)] * 2 < len(seen) or inner_row_loop(file, line))):
            said.append((text, file, line, len(seen), None))
    for text, file, line, n, kind in said:
        key = (text, file)
        counts[key] += n
        firsts.setdefault(key, line)
        kinds[key] = Counter({kind: n})
        callers.setdefault(key, Counter())[place(file, line)] += n
        statements.add(key)
    # A model written as tensors (analysis/param_reads.py): a function computing with the script's
    # parameters is the model's forward (no module call holds it), not the loop's own code.
    for k in [k for k in counts if k not in statements and reads_parameters(k[1], firsts[k], True)]:
        del counts[k]
    models = model_calls(loop if loop is not None else stacks)
    flows = {k: flows_into(c.most_common(1)[0][0], models, helper=k[0]) for k, c in call_lines.items()}
    # A statement named by its own line feeds the model as a helper's call would: by what it assigns
    # (`nexts = torch.tensor([b[3] for b in batch])`, a batch built in the loop, needed every step).
    flows |= {k: flows_into((k[1], firsts[k]), models) for k in statements}
    feeding = {k for k, f in flows.items() if f is not None}
    losses = {k for k, f in flows.items() if f == BACKWARD}
    summed = {k for k, c in call_lines.items() if accumulates(*c.most_common(1)[0][0])}
    # (what reads the model's own output feeds its next call from the step's result: an agent's
    # action, a generated token; no loader could make it ahead)
    after = {k for k in feeding if reads_model_output(
        call_lines[k].most_common(1)[0][0] if k in call_lines else (k[1], firsts[k]), models)}
    return shares(counts, firsts, len(stacks), limit, callers, kinds, feeding, statements, losses, summed,
                  after)


def model_calls(stacks: list[list[Frame]]) -> set[tuple[str, int]]:
    """The user's lines that call the model (`out = model(x)`): in each forward sample, the user
    frame just outside the outermost module call."""
    return {(c.file, c.line) for st in stacks if (c := model_caller(st)) is not None}
