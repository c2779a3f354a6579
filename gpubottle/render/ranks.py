"""The table of a multi-process job's ranks, for the terminal: one line each, fits 80 columns."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from gpubottle.evidence import Evidence, RankEvidence

_HEAD = (f"{'rank':>5} {'pid':<7} {'step':>7} {'wait':>4} {'busy':>4} {'main':>4} {'workers':<9} "
         f"{'memory':>7} verdict / end")


def _pct(x: float | None) -> str:
    return f"{x * 100:3.0f}%" if x is not None else "   -"


def _end(r: RankEvidence) -> str:
    if r.exception or r.exit_code not in (0, None):
        return f"failed, exit {r.exit_code}" if r.exit_code is not None else "failed"
    if r.status == "killed" or (r.status is None and r.exit_code is None):
        return "killed?"
    return r.verdict or "-"


def rank_line(r: RankEvidence, pace: bool) -> str:
    step = f"{r.mean_step_s * 1e3:5.1f}ms" if r.mean_step_s else "      -"
    main = f"{r.main_cores:4.1f}" if r.main_cores is not None else "   -"
    workers = (f"{r.workers}x{(r.workers_cores or 0.0) / r.workers:4.2f}" if r.workers else "none")
    mem = f"{r.memory_bytes / (1 << 30):4.1f}GiB" if r.memory_bytes else "      -"
    rank = f"{r.rank if r.rank is not None else '?':>4}{'*' if pace else ' '}"
    return (f"{rank} {str(r.pid or '-'):<7} {step:>7} {_pct(r.input_share)} {_pct(r.busy_share)} "
            f"{main} {workers:<9} {mem:>7} {_end(r)}")


def render_ranks(con: Console, ev: Evidence) -> None:
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
        con.print(Text(rank_line(r, r.rank == ev.pace_rank)[: con.width], no_wrap=True))
