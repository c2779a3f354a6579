"""Inline SVG charts for the HTML report: no script, no external file, legible in print.

Colours are the Okabe-Ito palette (distinct for the common colour-blindnesses), and each series also
has its own dash pattern, so lines stay apart in greyscale. Every label passes through `esc`.
"""

from __future__ import annotations

import math
from html import escape

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000")
DASHES = ("", "6 3", "2 2", "8 3 2 3", "4 4", "1 3", "10 4")
W, H = 720, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 12, 40


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def _nice(top: float) -> float:
    """A round axis maximum at or above `top`."""
    if top <= 0:
        return 1.0
    mag = 10.0 ** math.floor(math.log10(top))
    for step in (1, 2, 2.5, 5, 10):
        if step * mag >= top:
            return step * mag
    return 10 * mag


def line_chart(title: str, series: dict[str, list[tuple[float, float]]], y_label: str,
               fmt: str = "{:.2f}", y_max: float | None = None, limit: float | None = None,
               limit_label: str = "", marks: list[tuple[float, str]] | None = None,
               x_label: str = "seconds since the script started",
               x_range: tuple[float, float] | None = None, note: str = "") -> str:
    """One SVG with a line per series; `limit` draws a dashed horizontal line (cores available);
    charts of one run share `x_range`, so their moments line up down the page."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        return ""
    x0, x1 = x_range or (min(p[0] for p in pts), max(p[0] for p in pts))
    x1 = x1 if x1 > x0 else x0 + 1.0
    top = _nice(y_max if y_max is not None else max(max(p[1] for p in pts), limit or 0.0) * 1.05)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return TOP + ph - min(y, top) / top * ph

    caption = esc(title) + (f' <span class="dim">{esc(note)}</span>' if note else "")
    out = [f'<figure><figcaption>{caption}</figcaption>',
           f'<svg role="img" aria-label="{esc(title)}" viewBox="0 0 {W} {H}" width="{W}" '
           f'height="{H}" font-size="11">',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for i in range(5):
        y = top * i / 4
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" '
                   f'stroke="#ddd"/><text x="{LEFT - 4}" y="{sy(y) + 4:.1f}" text-anchor="end">'
                   f'{esc(fmt.format(y))}</text>')
    step = _nice((x1 - x0) / 5)
    x = math.ceil(x0 / step) * step
    while x <= x1 + 1e-9:
        out.append(f'<text x="{sx(x):.1f}" y="{TOP + ph + 14}" text-anchor="middle">'
                   f'{x:g}</text>')
        x = round(x + step, 9)
    out.append(f'<text x="{LEFT + pw / 2}" y="{H - 4}" text-anchor="middle">{esc(x_label)}</text>')
    out.append(f'<text x="12" y="{TOP + ph / 2}" transform="rotate(-90 12 {TOP + ph / 2})" '
               f'text-anchor="middle">{esc(y_label)}</text>')
    for t, label in marks or []:
        if x0 <= t <= x1:
            out.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{TOP}" y2="{TOP + ph}" '
                       f'stroke="#555" stroke-dasharray="2 3"><title>{esc(label)}</title></line>')
    if limit is not None:
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{sy(limit):.1f}" y2="{sy(limit):.1f}" '
                   f'stroke="#D55E00" stroke-dasharray="8 4"/><text x="{LEFT + pw - 4}" '
                   f'y="{sy(limit) - 4:.1f}" text-anchor="end">{esc(limit_label)}</text>')
    for i, (name, s) in enumerate(series.items()):
        if not s:
            continue
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)
        dash = f' stroke-dasharray="{DASHES[i % len(DASHES)]}"' if DASHES[i % len(DASHES)] else ""
        out.append(f'<polyline fill="none" stroke="{PALETTE[i % len(PALETTE)]}" stroke-width="1.6"'
                   f'{dash} points="{path}"><title>{esc(name)}</title></polyline>')
    out.append("</svg>")
    out.append('<ul class="legend">' + "".join(
        f'<li><svg width="28" height="8" aria-hidden="true"><line x1="0" x2="28" y1="4" y2="4" '
        f'stroke="{PALETTE[i % len(PALETTE)]}" stroke-width="2" stroke-dasharray='
        f'"{DASHES[i % len(DASHES)]}"/></svg> {esc(name)}</li>'
        for i, name in enumerate(series)) + "</ul></figure>")
    return "\n".join(out)


def bar(title: str, parts: dict[str, float]) -> str:
    """One horizontal stacked bar of shares (the step breakdown), labelled in a legend with %."""
    total = sum(v for v in parts.values() if v > 0)
    if total <= 0:
        return ""
    out = [f'<figure><figcaption>{esc(title)}</figcaption>',
           f'<svg role="img" aria-label="{esc(title)}" viewBox="0 0 {W} 36" width="{W}" height="36" '
           'aria-hidden="false">']
    x = 0.0
    for i, (name, v) in enumerate(parts.items()):
        if v <= 0:
            continue
        w = v / total * W
        out.append(f'<rect x="{x:.1f}" y="4" width="{w:.1f}" height="28" '
                   f'fill="{PALETTE[i % len(PALETTE)]}" stroke="#fff"><title>{esc(name)} '
                   f'{v:.0%}</title></rect>')
        x += w
    out.append("</svg>")
    out.append('<ul class="legend">' + "".join(
        f'<li><span class="swatch" style="background:{PALETTE[i % len(PALETTE)]}"></span> '
        f'{esc(name)} {v:.0%}</li>' for i, (name, v) in enumerate(parts.items()) if v > 0)
        + "</ul></figure>")
    return "\n".join(out)


Points = list[tuple[float, float]]
MAX_POINTS = 400


def downsample(points: Points, limit: int = MAX_POINTS) -> Points:
    """Bucket means (x and y), keeping the first and last points: a line that keeps its shape."""
    if len(points) <= limit:
        return list(points)
    size = len(points) / limit
    out = []
    for b in range(limit):
        chunk = points[int(b * size):max(int(b * size) + 1, int((b + 1) * size))]
        out.append((sum(p[0] for p in chunk) / len(chunk), sum(p[1] for p in chunk) / len(chunk)))
    out[0], out[-1] = points[0], points[-1]
    return out
