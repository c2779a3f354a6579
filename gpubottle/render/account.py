"""The run's account in words: one line per phase, its seconds, its share of the run, and what it
was (the terminal's few lines; the HTML's bar and table); and what a finding costs, in the run's
terms or the step's."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from gpubottle.evidence import AccountEntry
from gpubottle.evidence.account import INFERENCE
from gpubottle.report import Finding
from gpubottle.units import gib, seconds
from gpubottle.vocabulary import PHASE_LABELS


def _parts(e: AccountEntry, limit: int = 3) -> str:
    # gpubottle's own parts are small by design: shown however small, in milliseconds.
    floor = 0.0 if e.phase == "gpubottle" else max(0.005, 0.01 * e.seconds)
    top = sorted(((k, s) for k, s in e.parts.items() if s >= floor), key=lambda kv: -kv[1])[:limit]
    named = []
    for k, s in top:
        site = e.part_sites.get(k)
        amount = f"{s * 1e3:.0f} ms" if e.phase == "gpubottle" and s < 1 else seconds(s)
        named.append(f"{k} {amount}" + (f" ({site})" if site and site not in k else ""))
    return ", ".join(named)


def phase_label(e: AccountEntry) -> str:
    """The phase's name; an inference loop's steps are not called training."""
    return "inference" if e.phase == "train" and e.what == INFERENCE else PHASE_LABELS.get(e.phase, e.phase)


def detail(e: AccountEntry) -> str:
    """What a phase's time was, in a phrase."""
    every = f", every {e.every_steps:g} steps" if e.every_steps else ""
    if e.phase == "train":
        parts = _parts(e)  # empty where every part is under the floor (a run of 20 tiny steps)
        return f"{e.count or 0} steps: {parts}" if parts else f"{e.count or 0} steps"
    if e.phase == "eval":
        parts = _parts(e, 2)
        passes = f"{e.count} pass{'es' if e.count != 1 else ''}"
        if e.function is not None:  # no DataLoader: the function that ran it, called by the loop
            return f"{passes} of {e.what}{every}" + (f", called at {e.where}" if e.where else "")
        return f"{passes} of the {e.what or 'DataLoader'}{every}" + (f": {parts}" if parts else "")
    if e.phase == "checkpoint":
        size = f" of {gib(e.bytes)}" if e.bytes else ""
        return f"{e.count} save{'s' if e.count != 1 else ''}{size} ({e.what}) at {e.where}{every}"
    if e.phase == "between-steps":
        what = (f": {e.what} ({e.where})" if e.where else f": {e.what}") if e.what else ""
        return f"{e.count} long gap{'s' if e.count != 1 else ''} in the loop{what}"
    return _parts(e)


def render_account(con: Console, entries: list[AccountEntry]) -> None:
    if not entries:
        return
    total = sum(e.seconds for e in entries)
    con.print(f"[bold]Where the run's {seconds(total)} went[/bold]")
    for e in entries:
        if e.seconds < 0.0005 and e.phase not in ("startup", "train"):
            continue
        head = f"  {phase_label(e):<14}{seconds(e.seconds):>8} {e.share:>4.0%}  "
        body = Text(detail(e))
        width = max(20, con.width - len(head))
        for n, line in enumerate(body.wrap(con, width)):
            line.rstrip()
            con.print(Text(head if n == 0 else " " * len(head)) + line)


def cost(f: Finding, short: bool = False) -> str:
    """What a finding costs, in its own terms: a share of the run (a phase outside the training
    step) or of the step."""
    if f.phase != "train" and f.run_share is not None:
        return f", {f.run_share:.0%} of the run"
    if f.share is None:
        return ""
    return f", {f.share:.0%}" if short else f", {f.share:.0%} of step time"
