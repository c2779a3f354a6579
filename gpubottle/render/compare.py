"""Two runs compared, for a person: a terminal screen of 80 columns, and an HTML page whose phase
bars share one time scale, so a shorter bar is a shorter phase."""

from __future__ import annotations

from typing import IO, Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from gpubottle.compare.advice import APPLIED, NOT_APPLIED, PARTLY, UNKNOWN, FixResult
from gpubottle.compare.model import Comparison, Speed
from gpubottle.render.svg import PALETTE, esc
from gpubottle.render.terminal import item
from gpubottle.units import ms, seconds
from gpubottle.vocabulary import PHASE_LABELS


def _value(v: Any) -> str:
    return "(unset)" if v is None else str(v)


def speed_words(s: Speed, fmt: Any = seconds) -> str:
    if s.before_s is None or s.after_s is None:
        return "not measured on both sides"
    head = f"{fmt(s.before_s)} -> {fmt(s.after_s)}"
    if s.speedup is None:
        return head
    if abs(s.speedup - 1) < 0.005:
        return f"{head}: the same" + (f" ({s.why})" if s.why and s.interval is None else "")
    way = "faster" if s.speedup >= 1 else "slower"
    factor = s.speedup if s.speedup >= 1 else 1 / s.speedup
    if s.interval is None:
        return f"{head}: {factor:.2f}x {way} ({s.why})"
    lo, hi = s.interval
    noise = ": within the noise" if lo <= 1.0 <= hi else ""
    return f"{head}: {factor:.2f}x {way} (speed-up {lo:.2f}x-{hi:.2f}x{noise})"


def held_words(r: FixResult) -> str:
    if r.applied in (NOT_APPLIED, UNKNOWN):
        return ""
    if r.predicted_run_s is not None and r.measured_run_s is not None:
        said = f"predicted run {seconds(r.predicted_run_s)}, measured {seconds(r.measured_run_s)}"
    elif r.predicted_step_s is not None and r.measured_step_s is not None:
        said = f"predicted step {ms(r.predicted_step_s)}, measured {ms(r.measured_step_s)}"
    else:
        return "no gain was predicted for it"
    if r.held is None:
        return said
    if r.held < 0:
        return f"{said}: the run got slower, not faster"
    return f"{said}: {r.held:.0%} of the promised gain"


def _fix(con: Console, i: int, r: FixResult) -> None:
    body = Text(r.text)
    changed = ", ".join(
        (f"whole batches indexed (sampler {_value(r.values[k])})" if k in r.values else f"{k} unchanged")
        if k == "batch_index" else
        f"{k} {_value(v[0])} -> {_value(r.values[k]) if k in r.values else 'unchanged'}"
        f"{'' if k not in r.values or r.values[k] == v[-1] else f' (advised {v[-1]})'}"
        for k, v in r.change.items())
    if r.applied in (APPLIED, PARTLY):
        body.append(f"\n{r.applied}: ", style="bold")
        body.append(changed + (f" at {r.where}" if r.where else ""))
        body.append("\n" + held_words(r))
        if r.together:
            body.append(f"\n(with {r.together} other fix{'es' if r.together > 1 else ''} applied: "
                        "the gain measured is theirs together)", style="dim")
    elif r.where:
        body.append(f"\nat {r.where}", style="dim")
    item(con, f"{i}. ", body)


def render_compare(c: Comparison, stream: IO[str], width: int | None = 80) -> None:
    con = Console(file=stream, width=width, highlight=False, force_jupyter=False)
    con.print(Text("gpubottle compare", style="bold"))
    for word, side in (("before", c.before), ("after", c.after)):
        script = f" ({side.script})" if side.script else ""
        item(con, f"{word + ':':8s}", Text(f"{side.dir or '-'}{script}"))
    for note in c.notes:
        item(con, "! ", Text(note, style="yellow"))
    con.print()
    item(con, f"{'Run':8s}", Text(speed_words(c.run)))
    item(con, f"{'Step':8s}", Text("mean " + speed_words(c.step, ms)))
    item(con, f"{'Verdict':8s}", Text(f"{c.before.primary} -> {c.after.primary}"))
    if (c.before.lead, c.after.lead) != (c.before.primary, c.after.primary):
        item(con, f"{'Lead':8s}", Text(f"{c.before.lead} -> {c.after.lead}"))
    if c.phases:
        con.print()
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for name, justify in (("phase", "left"), ("before", "right"), ("after", "right"),
                              ("change", "right")):
            table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        for p in c.phases:
            delta = (_delta(p.after_s - p.before_s) if p.before_s is not None and p.after_s is not None
                     else "-")
            table.add_row(PHASE_LABELS.get(p.phase, p.phase), _secs(p.before_s), _secs(p.after_s), delta)
        con.print(Padding(table, (0, 0, 0, 2), expand=False))
    con.print()
    con.print(Text("What changed", style="bold"))
    if not c.changes:
        item(con, "", Text("no setting gpubottle records differs between the runs"))
    for ch in c.changes:
        if ch.setting == "DataLoader":  # one run built a loader the other did not
            body = Text(f"DataLoader at {ch.where}: {'removed' if ch.after is None else 'added'}")
        else:
            body = Text(f"{ch.setting}: {_value(ch.before)} -> {_value(ch.after)}")
            if ch.where:
                body.append(f" ({ch.where})", style="dim")
        if c.fixes and ch.group != "machine":
            body.append("  advised" if ch.advised else "  not advised", style="bold" if ch.advised else "dim")
        item(con, "- ", body)
    done = [r for r in c.fixes if r.applied in (APPLIED, PARTLY)]
    left = [r for r in c.fixes if r.applied not in (APPLIED, PARTLY)]
    if c.fixes:
        con.print()
        con.print(Text("The advice held against the result", style="bold"))
    if c.fixes and not done:
        item(con, "", Text("none of the first run's fixes was applied"))
    for i, r in enumerate(done, 1):
        _fix(con, i, r)
    if left:
        con.print(Text("Advised, not applied" + (" (or not recorded: cannot tell)"
                                                 if any(r.applied == UNKNOWN for r in left) else ""),
                       style="bold"))
        for i, r in enumerate(left, len(done) + 1):
            _fix(con, i, r)


def _delta(d: float) -> str:
    return "0" if abs(d) < 0.005 else ("+" if d > 0 else "-") + seconds(abs(d))


def _secs(s: float | None) -> str:
    return seconds(s) if s is not None else "-"


def render_compare_html(c: Comparison, stream: IO[str]) -> None:
    """The two runs' phases as two bars on one time scale, then the same tables as the terminal."""
    total = max((c.before.wall_s or 0.0), (c.after.wall_s or 0.0),
                sum(p.before_s or 0.0 for p in c.phases), sum(p.after_s or 0.0 for p in c.phases))
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>gpubottle compare</title><style>body{font:14px/1.45 system-ui,sans-serif;"
             "max-width:760px;margin:24px auto;padding:0 12px;color:#111}table{border-collapse:collapse;"
             "font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}td.n{text-align:"
             "right}.dim{color:#555}.note{color:#8a5a00}</style></head><body>",
             "<h1>gpubottle compare</h1>",
             f'<p class="dim">before: {esc(c.before.dir)}<br>after: {esc(c.after.dir)}</p>']
    parts += [f'<p class="note">{esc(n)}</p>' for n in c.notes]
    parts.append(f"<p><b>Run</b> {esc(speed_words(c.run))}<br><b>Step</b> {esc(speed_words(c.step, ms))}"
                 f"<br><b>Verdict</b> {esc(c.before.primary)} &rarr; {esc(c.after.primary)}</p>")
    if total > 0 and c.phases:
        parts.append(_bars(c, total))
    rows = "".join(f"<tr><td>{esc(ch.setting)}</td><td>{esc(_value(ch.before))}</td><td>"
                   f"{esc(_value(ch.after))}</td><td>{esc(ch.where or '')}</td><td>"
                   f"{'advised' if ch.advised else ''}</td></tr>" for ch in c.changes)
    parts.append("<h2>What changed</h2>" + (
        "<table><tr><th>setting</th><th>before</th><th>after</th><th>where</th><th></th></tr>"
        + rows + "</table>" if rows else "<p>no setting gpubottle records differs</p>"))
    if c.fixes:
        items = "".join(f"<li>{esc(r.text)}<br><b>{esc(r.applied)}</b> {esc(held_words(r))}</li>"
                        for r in c.fixes)
        parts.append(f"<h2>The advice held against the result</h2><ol>{items}</ol>")
    parts.append("</body></html>")
    stream.write("\n".join(parts) + "\n")


def _bars(c: Comparison, total: float) -> str:
    """One bar per run, the same seconds-to-pixels scale for both, phases in the same colours."""
    width, label = 600, 60
    scale = width / total
    out = [f'<figure><figcaption>Where each run\'s time went (one scale: {esc(seconds(total))} '
           f'full width)</figcaption><svg role="img" aria-label="phases before and after" '
           f'viewBox="0 0 {width + label + 10} 80" width="{width + label + 10}" height="80">']
    for row, (word, attr) in enumerate((("before", "before_s"), ("after", "after_s"))):
        y, x = 6 + row * 36, float(label)
        out.append(f'<text x="0" y="{y + 18}" font-size="12">{word}</text>')
        for i, p in enumerate(c.phases):
            s = getattr(p, attr) or 0.0
            if s <= 0:
                continue
            w = s * scale
            name = PHASE_LABELS.get(p.phase, p.phase)
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="26" fill="'
                       f'{PALETTE[i % len(PALETTE)]}" stroke="#fff"><title>{esc(name)} '
                       f'{esc(seconds(s))}</title></rect>')
            x += w
    out.append("</svg>")
    out.append('<ul style="list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:14px;'
               'font-size:12px">' + "".join(
                   f'<li><span style="display:inline-block;width:12px;height:12px;background:'
                   f'{PALETTE[i % len(PALETTE)]}"></span> {esc(PHASE_LABELS.get(p.phase, p.phase))}</li>'
                   for i, p in enumerate(c.phases)) + "</ul></figure>")
    return "\n".join(out)
