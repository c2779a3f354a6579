"""The table of a report's ranks (a job's, or a folder of ranks' traces), for the terminal: one line
each, fits 80 columns."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from gpubottle.evidence import RankEvidence
from gpubottle.report import RankVerdict, Report
from gpubottle.units import pct_or_dash

_HEAD = (f"{'rank':>5} {'pid':<7} {'step':>7} {'wait':>4} {'busy':>4} {'main':>4} {'workers':<9} "
         f"{'memory':>7} verdict / end")


def _end(r: RankEvidence, own: RankVerdict | None) -> str:
    if r.exception or r.exit_code not in (0, None):
        return f"failed, exit {r.exit_code}" if r.exit_code is not None else "failed"
    if r.pid is not None and (r.status == "killed" or (r.status is None and r.exit_code is None)):
        return "killed?"
    return own.verdict if own is not None else "-"


def rank_line(r: RankEvidence, shown: bool, own: RankVerdict | None = None) -> str:
    step = f"{r.mean_step_s * 1e3:5.1f}ms" if r.mean_step_s else "      -"
    main = f"{r.main_cores:4.1f}" if r.main_cores is not None else "   -"
    workers = (f"{r.workers}x{(r.workers_cores or 0.0) / r.workers:4.2f}" if r.workers else "none")
    mem = f"{r.memory_bytes / (1 << 30):4.1f}GiB" if r.memory_bytes else "      -"
    rank = f"{r.rank if r.rank is not None else '?':>4}{'*' if shown else ' '}"
    wait, busy = pct_or_dash(r.input_share), pct_or_dash(r.busy_share)
    return (f"{rank} {str(r.pid or '-'):<7} {step:>7} {wait:>4} {busy:>4} "
            f"{main} {workers:<9} {mem:>7} {_end(r, own)}")


def render_ranks(con: Console, report: Report) -> None:
    ev = report.evidence
    if not ev.ranks:
        return
    nodes = sorted({r.node for r in ev.ranks if r.node})
    where = f" on {len(nodes)} nodes" if len(nodes) > 1 else ""
    con.print(f"[bold]Ranks[/bold] ({len(ev.ranks)}{where}; *: its findings are shown; wait: for "
              "input; busy: computing)")
    con.print(Text(_HEAD, style="dim"))
    node = None
    for r in ev.ranks:
        if len(nodes) > 1 and r.node != node:
            node = r.node
            con.print(Text(f"  {node}", style="dim"))
        line = rank_line(r, r.rank is not None and r.rank == ev.shown_rank, report.verdict_of(r.rank, r.node))
        con.print(Text(line[: con.width], no_wrap=True))
