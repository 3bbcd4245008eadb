"""A forest plot of the leaderboard: one row per entry, its mean as a dot and its 95%
interval as a line, humans, anchors and models in their own colours.

The SVG is written by hand (no plotting library): the x axis spans the smallest
interval bound to the largest, padded and rounded out to a tenth, so entries whose
intervals differ are visibly apart.  Names are XML-escaped; entries without a value
are listed without a mark.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from xml.sax.saxutils import escape

from .wording import counted, score_text

COLOURS = {"human": "#1f6feb", "participants": "#1f6feb", "anchor": "#8a8a8a", "model": "#d4731f"}
ROW = 22
LABEL_WIDTH = 230  # at least; widened to the longest name
CHAR_WIDTH = 7  # a generous width of one 12px sans-serif character, to fit a name in the label column
PLOT_WIDTH = 420
TOP = 24
BOTTOM = 30


def _range(entries) -> tuple[float, float]:
    values = [float(v) for e in entries for v in (e.estimate.low, e.estimate.high, e.estimate.value)
              if v is not None]
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    low, high = math.floor(low * 10) / 10, math.ceil(high * 10) / 10
    if high - low < 0.2:
        low, high = low - 0.1, high + 0.1
    return low, high


def forest_svg(entries: Sequence) -> str:
    """The plot as an SVG document (a string)."""
    low, high = _range(entries)
    label_width = max([LABEL_WIDTH, *(16 + CHAR_WIDTH * len(e.name) for e in entries)])
    height = TOP + ROW * len(entries) + BOTTOM
    width = label_width + PLOT_WIDTH + 20

    def x(value: Decimal | float) -> float:
        return round(label_width + (float(value) - low) / (high - low) * PLOT_WIDTH, 2)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="Forest plot of the leaderboard" '
           'font-family="sans-serif" font-size="12">',
           '<title>Leaderboard: means with 95% bootstrap intervals over cells</title>']
    steps = round((high - low) * 10)
    for i in range(steps + 1):
        tick = low + i / 10
        out.append(f'<line x1="{x(tick)}" y1="{TOP - 6}" x2="{x(tick)}" y2="{height - BOTTOM}" '
                   'stroke="#e4e4e4"/>')
        out.append(f'<text x="{x(tick)}" y="{height - BOTTOM + 16}" text-anchor="middle">{tick:.1f}</text>')
    for i, entry in enumerate(entries):
        y = TOP + ROW * i + ROW / 2
        est, colour = entry.estimate, COLOURS.get(entry.kind, "#000")
        out.append(f'<text x="{label_width - 8}" y="{y + 4}" text-anchor="end" class="label">'
                   f'{escape(entry.name)}</text>')
        if est.low is not None and est.high is not None:
            out.append(f'<line class="interval kind-{entry.kind}" x1="{x(est.low)}" y1="{y}" x2="{x(est.high)}" '
                       f'y2="{y}" stroke="{colour}" stroke-width="2"/>')
        if est.value is not None:
            out.append(f'<circle class="mean kind-{entry.kind}" cx="{x(est.value)}" cy="{y}" r="4" '
                       f'fill="{colour}"><title>{escape(entry.name)}: {score_text(est.value)} '
                       f'[{score_text(est.low)}, {score_text(est.high)}], {counted(est.n, "cell")}</title></circle>')
    out.append("</svg>")
    return "\n".join(out)
