"""Server-rendered SVG charts over windows: no JavaScript, no plotting library.

:func:`window_chart` draws one measure against the window axis: lines (levels such
as cash, or several trials overlaid) or bars (flows such as the dense reward), a
zero line, nice round ticks, a legend, and optional event markers (a dashed rule
at the window boundary where the event fired, coloured by its channel, tagged
E1, E2, ... in the order the page's event table lists them), and optional notes
(text written beside the bar or the line's point at a window, e.g. what the dense
reward's first window carries besides the window's own change).  Every chart is a
standalone SVG document, so the same text is inlined in a page and served as a
download.  Coordinates are floats; the values they come from are integer cents
and counts, converted to dollars here, for drawing only.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

CHANNEL_COLOURS = {"announced": "#2563eb", "rumoured": "#b45309", "silent": "#7c3aed"}
SLOT_COLOURS = ("#0f766e", "#c2410c", "#6d28d9")
INK, MUTED, GRID = "#1f2937", "#6b7280", "#e5e7eb"
WIDTH, HEIGHT = 640, 290
LEFT, RIGHT, TOP, BOTTOM = 68, 18, 66, 40


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    points: list[tuple[float, float | None]]  # (x in windows, value in display units); None is a gap


@dataclass(frozen=True)
class Note:
    x: float  # the bar's or point's x, in windows
    text: str  # written beside it
    title: str = ""  # the tooltip: the whole explanation


@dataclass(frozen=True)
class Marker:
    window: int  # the boundary where it fired: the start of this window
    tag: str
    channel: str
    title: str


def _attr(text: str) -> str:
    return escape(str(text), {'"': "&quot;"})


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if (hi - lo) / (m * magnitude) <= count)
    first = math.floor(lo / step) * step
    n = int(round((math.ceil(hi / step) * step - first) / step))
    return [round(first + i * step, 10) for i in range(n + 1)]


def format_value(value: float, unit: str) -> str:
    sign = "-" if value < 0 else ""
    v = abs(value)
    if unit != "usd":
        return f"{sign}{v:,.0f}" if v >= 10 or v == int(v) else f"{sign}{v:.1f}"
    if v >= 1_000_000:
        return f"{sign}${v / 1_000_000:.{0 if v % 1_000_000 == 0 else 1}f}M"
    if v >= 1_000:
        return f"{sign}${v / 1_000:.{0 if v % 1_000 == 0 else 1}f}k"
    return f"{sign}${v:,.0f}"


def _value_range(values: list[float], *, from_zero: bool, bars: bool) -> tuple[float, float, float | None]:
    """(low, high, clip): flows keep zero in view; levels use their own span.  A bar chart
    with one bar far above the rest (the dense reward's first window carries the opening
    stock) is cut at a height the others can be read at, and ``clip`` says where."""
    lo, hi = min(values, default=0.0), max(values, default=1.0)
    clip = None
    if bars and len(values) > 2:
        ranked = sorted((abs(v) for v in values), reverse=True)
        if ranked[0] > 5 * ranked[1] > 0:
            clip = ranked[1] * 1.25
            lo, hi = max(lo, -clip), min(hi, clip)
    if from_zero:
        return min(lo, 0.0), max(hi, 0.0), clip
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    return lo - pad, hi + pad, clip


def window_chart(*, title: str, unit: str, series: list[Series], x_max: int, markers: Sequence[Marker] = (),
                 bars: bool = False, from_zero: bool = True, chart_id: str = "chart", notes: Sequence[Note] = (),
                 empty: str = "not recorded in this trial") -> str:
    """``empty`` is said in the plot when no series has a value (and the value axis is left unlabelled)."""
    x_max = max(x_max, 1)
    values = [v for s in series for _, v in s.points if v is not None]
    lo, hi, clip = _value_range(values, from_zero=from_zero, bars=bars)
    ticks = nice_ticks(lo, hi)
    y_lo, y_hi = ticks[0], ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(window: float) -> float:
        return LEFT + plot_w * window / x_max

    def py(value: float) -> float:
        return TOP + plot_h * (1 - (value - y_lo) / (y_hi - y_lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
           f'height="{HEIGHT}" role="img" aria-labelledby="{chart_id}-title" class="chart" '
           f'font-family="Inter, system-ui, -apple-system, Segoe UI, sans-serif" font-size="11">',
           f'<title id="{chart_id}-title">{escape(title)}</title>',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
           f'<text x="{LEFT}" y="20" font-size="13" font-weight="600" fill="{INK}">{escape(title)}</text>']
    # Legend, right-aligned on the title line.
    lx: float = WIDTH - RIGHT
    for s in reversed(series):
        label = s.label if len(s.label) <= 34 else s.label[:33] + "…"
        lx -= 14 + 6.2 * len(label)
        out.append(f'<rect x="{lx:.1f}" y="11" width="10" height="10" rx="2" fill="{s.colour}"/>'
                   f'<text x="{lx + 14:.1f}" y="20" fill="{INK}">{escape(label)}</text>')
        lx -= 12
    for t in ticks:
        y = py(t)
        # With no value the axis spans 0 to 1 only to be drawn: its labels would read $0, $0, $1...
        label = (f'<text x="{LEFT - 8}" y="{y + 3.5:.1f}" text-anchor="end" fill="{MUTED}">'
                 f'{escape(format_value(t, unit))}</text>') if values else ""
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                   f'stroke="{"#9ca3af" if t == 0 else GRID}" stroke-width="1"/>{label}')
    for t in nice_ticks(0, x_max, 8):
        if t > x_max or t != int(t):
            continue
        x = px(t)
        out.append(f'<line x1="{x:.1f}" y1="{TOP + plot_h}" x2="{x:.1f}" y2="{TOP + plot_h + 4}" stroke="{MUTED}"/>'
                   f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" fill="{MUTED}">{int(t)}</text>')
    out.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" stroke="#9ca3af"/>'
               f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle" fill="{MUTED}">window</text>')
    for m in markers:
        x = px(m.window - 1)
        colour = CHANNEL_COLOURS.get(m.channel, MUTED)
        out.append(f'<g class="event-marker" data-channel="{_attr(m.channel)}"><title>{escape(m.title)}</title>'
                   f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{TOP + plot_h}" stroke="{colour}" '
                   f'stroke-width="1.3" stroke-dasharray="4 3"/>'
                   f'<rect x="{x - 11:.1f}" y="{TOP - 22}" width="22" height="15" rx="7.5" fill="{colour}"/>'
                   f'<text x="{x:.1f}" y="{TOP - 11}" text-anchor="middle" fill="#ffffff" font-size="10" '
                   f'font-weight="600">{escape(m.tag)}</text></g>')
    if not values:
        out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
                   f'fill="{MUTED}" font-size="12">{escape(empty)}</text>')
    zero = py(max(y_lo, min(0.0, y_hi)))
    noted = {n.x: n for n in notes}
    for s in series:
        if bars:
            width = max(1.0, plot_w / x_max * 0.72)
            for window, value in s.points:
                if value is None:
                    continue
                shown = value if clip is None else max(-clip, min(clip, value))
                y = py(shown)
                note = noted.get(window)
                if shown != value or note:
                    label = (f'{"▲" if value > 0 else "▼"} ' if shown != value else "") + format_value(value, unit)
                    label += f" {note.text}" if note else ""
                    ty = y + 9 if shown != value or value < 0 else y - 4
                    out.append(f'<text x="{px(window) + width / 2 + 3:.1f}" y="{ty:.1f}" fill="{INK}" '
                               f'font-size="10" class="bar-note">{escape(label)}</text>')
                rect = (f'<rect x="{px(window) - width / 2:.1f}" y="{min(y, zero):.1f}" width="{width:.1f}" '
                        f'height="{max(abs(zero - y), 0.5):.1f}" fill="{s.colour if value >= 0 else "#dc2626"}"')
                tip = note.title if note else ""
                out.append(f"{rect}><title>{escape(tip)}</title></rect>" if tip else f"{rect}/>")
            continue
        runs: list[list[str]] = []
        run: list[str] = []
        for window, value in s.points:
            if value is None:
                if run:
                    runs.append(run)
                run = []
            else:
                run.append(f"{px(window):.1f},{py(value):.1f}")
        if run:
            runs.append(run)
        for r in runs:
            if len(r) == 1:  # a polyline of one point draws nothing: a value between two gaps is a dot
                dot_x, dot_y = r[0].split(",")
                out.append(f'<circle class="lone-point" cx="{dot_x}" cy="{dot_y}" r="2.5" fill="{s.colour}"/>')
                continue
            out.append(f'<polyline fill="none" stroke="{s.colour}" stroke-width="1.8" stroke-linejoin="round" '
                       f'points="{" ".join(r)}"/>')
    if not bars:
        for note in notes:  # beside the first series' point at the note's window
            at = next((v for s in series for w, v in s.points if w == note.x and v is not None), None)
            if at is None:
                continue
            tip = f"<title>{escape(note.title)}</title>" if note.title else ""
            out.append(f'<g class="line-note">{tip}<circle cx="{px(note.x):.1f}" cy="{py(at):.1f}" r="2.5" '
                       f'fill="{INK}"/><text x="{px(note.x) + 6:.1f}" y="{py(at) + 14:.1f}" fill="{INK}" '
                       f'font-size="10">{escape(note.text)}</text></g>')
    if markers:
        channels = sorted({m.channel for m in markers})
        cx = LEFT
        for channel in channels:
            out.append(f'<line x1="{cx}" y1="{TOP - 32}" x2="{cx + 14}" y2="{TOP - 32}" '
                       f'stroke="{CHANNEL_COLOURS.get(channel, MUTED)}" stroke-width="2" stroke-dasharray="4 3"/>'
                       f'<text x="{cx + 18}" y="{TOP - 28.5}" fill="{MUTED}" font-size="10">{escape(channel)}</text>')
            cx += 30 + 6 * len(channel)
    out.append("</svg>")
    return "\n".join(out) + "\n"
