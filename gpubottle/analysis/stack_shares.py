"""Shares of stack samples by the user's function or statement they are in, and how they are named:
the helpers the loader's, the sampler's and the loop's readings (stack_users.py, loop_time.py)
share."""

from __future__ import annotations

import linecache
from collections import Counter

from gpubottle.analysis.stacks import Frame
from gpubottle.analysis.work_kinds import refined
from gpubottle.evidence import StackFrameShare
from gpubottle.probes.sites import is_user_file, place


def innermost_user_at(stack: list[Frame]) -> int:
    """The index of the innermost user frame, -1 when there is none."""
    return next((i for i in range(len(stack) - 1, -1, -1) if is_user_file(stack[i].file)), -1)


def innermost_user(stack: list[Frame]) -> Frame | None:
    i = innermost_user_at(stack)
    return stack[i] if i >= 0 else None


def is_comprehension(name: str) -> bool:
    """py-spy names a comprehension's frame `function.<locals>.<listcomp>` (at top level, `<listcomp>`)."""
    return name.rsplit(".", 1)[-1] in ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>")


def is_statement(name: str) -> bool:
    """A piece of the loop's own code named by its statement's text (analysis/loop_time.py), not by
    a function's name."""
    return " " in name or "(" in name


def busiest_function(stacks: list[list[Frame]], innermost: bool = False) -> tuple[str, str, int, int] | None:
    """The function most of `stacks` are in (the innermost of the user's, a comprehension being its
    function's; with `innermost`, a stack with no user frame counts at its innermost frame), the
    line most of those are at, and how many stacks: (name, file, line, count). A producer's or a
    busy thread's work (producers.py, gil.py)."""
    counts: Counter[tuple[str, str]] = Counter()
    lines: Counter[tuple[str, str, int]] = Counter()
    for st in stacks:
        user = [f for f in st if is_user_file(f.file)]
        named = [f for f in user if not is_comprehension(f.name)]
        f = named[-1] if named else (user[-1] if user else (st[-1] if innermost and st else None))
        if f is not None:
            counts[(f.name, f.file)] += 1
            lines[(f.name, f.file, (user[-1] if user else f).line)] += 1
    if not counts:
        return None
    (name, file), n = counts.most_common(1)[0]
    line = max((k for k in lines if k[:2] == (name, file)), key=lambda k: lines[k])[2]
    return name, file, line, n


def library_call(user: Frame, f: Frame) -> str:
    """The user's statement and the library beneath it: "`rng = np.random.default_rng(1234 + i)`
    (data.py:13) and the numpy code it calls" (the statement says the cause; numpy's frame there
    was a decorator's wrapper, errstate.__call__.<locals>.inner); the standard library's modules by
    their file ("gzip")."""
    path = f.file.replace("\\", "/")
    if "-packages/" in path:
        package = path.split("-packages/", 1)[1].split("/", 1)[0]
    else:
        package = path.rsplit("/", 1)[-1].removesuffix(".py")
    text = linecache.getline(user.file, user.line).strip()
    at = place(user.file, user.line)
    return (f"`{text[:80]}` ({at}) and the {package} code it calls" if text
            else f"{package}'s code called at {at}")


def main_beneath(calls: Counter[str] | None, total: int) -> str | None:
    """The statement and library (library_call) a function's samples of no known kind are most
    under, where those are at least half of all its samples (`total`): what its time goes to."""
    if not calls or not total:
        return None
    call, n = calls.most_common(1)[0]
    return call if 2 * sum(calls.values()) >= total and 2 * n >= sum(calls.values()) else None


def main_kind(kinds: Counter[str | None] | None) -> str | None:
    """The kind of library work most of a function's samples are in (work_kinds.py), if most are."""
    found = main_kind_share(kinds)
    return found[0] if found is not None else None


def main_kind_share(kinds: Counter[str | None] | None) -> tuple[str, float] | None:
    """main_kind and its share of the function's samples (half or more)."""
    if not kinds:
        return None
    named = [(k, n) for k, n in refined(kinds).most_common() if k is not None]
    total = sum(kinds.values())
    return (named[0][0], named[0][1] / total) if named and named[0][1] * 2 >= total else None


def named_at_line(kind: str, kinds: dict[tuple[str, str], Counter[str | None]],
                   lines: dict[tuple[str, str], Counter[int]], firsts: dict[tuple[str, str], int]
                   ) -> set[tuple[str, str]]:
    """The functions whose samples are mostly `kind`, each then named (in `firsts`) at its most
    sampled line of that kind, the statement the fix changes, not at its def."""
    at = {k for k in lines if main_kind(kinds.get(k)) == kind}
    for k in at:
        firsts[k] = lines[k].most_common(1)[0][0]
    return at


def shares(counts: Counter[tuple[str, str]], firsts: dict[tuple[str, str], int], total: int,
            limit: int, callers: dict[tuple[str, str], Counter[str]] | None = None,
            kinds: dict[tuple[str, str], Counter[str | None]] | None = None,
            feeding: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
            statements: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
            losses: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
            summed: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
            after: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
            beneath: dict[tuple[str, str], Counter[str]] | None = None
            ) -> list[StackFrameShare]:
    """The most sampled functions, each named by its `def` line, as shares of `total` samples (and
    the line that called it most often, where `callers` says; the kind of work beneath it; whether
    its result feeds the model, for those in `feeding`)."""
    out = []
    for (name, file), n in counts.most_common(limit):
        key = (name, file)
        kind = main_kind_share((kinds or {}).get(key))  # (once: it refines the function's samples)
        out.append(StackFrameShare(
            function=name,
            location=place(file, firsts[key] if key in statements else def_line(file, firsts[key], name)),
            share=round(n / total, 4),
            called_at=callers[key].most_common(1)[0][0] if callers and callers.get(key) else None,
            kind=kind[0] if kind is not None else None,
            kind_share=round(kind[1], 3) if kind is not None else None,
            feeds_model=key in feeding, loss=key in losses, accumulates=key in summed,
            after_model=key in after,
            beneath=main_beneath((beneath or {}).get(key), n) if kind is None else None))
    return out


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
