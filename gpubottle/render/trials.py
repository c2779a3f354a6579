"""The `--try-fixes` table: each setting timed, its mean step (the pace), interval and speed-up."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from gpubottle.evidence.trials import Trial, TrialsEvidence, setting_label


def _label(t: Trial) -> str:
    return setting_label(t.change).replace("torch.set_num_threads", "threads")  # the column's width


def _row(t: Trial) -> str:
    name = _label(t)[:26]
    if t.failed or t.mean_s is None:
        return f"  {name:26s} {'failed':>8s}"
    lo, hi = t.mean_interval_s or [t.mean_s, t.mean_s]
    line = f"  {name:26s} {t.mean_s * 1e3:8.1f} {lo * 1e3:7.1f}..{hi * 1e3:<7.1f}"
    if t.speedup is not None:
        line += f" {t.speedup:5.2f}x"
        if t.held is not None:
            line += f"  {t.predicted_speedup:.1f}x {'held' if t.held else 'missed'}"
    return line


def render_trials(con: Console, trials: TrialsEvidence) -> None:
    rows = trials.trials + ([trials.upper_bound] if trials.upper_bound else [])
    rounds = max((t.rounds for t in rows), default=0)
    runs = f"{rounds} run" + ("s" if rounds != 1 else "")
    con.print(Text(f"Measured fixes ({runs} of each, steps after warm-up):", style="bold"))
    con.print(Text(f"  {'setting':26s} {'mean':>8s} {'95% interval':>16s} {'speed':>6s}  predicted",
                   style="dim"))
    con.print(Text(f"  {'':26s} {'ms':>8s} {'ms':>16s}", style="dim"))
    for t in rows:
        con.print(Text(_row(t), style="bold" if trials.best and t.change == trials.best else ""))
