"""A shift's timeline chart, drawn on the server as an SVG string.

The participant's end page (console) and the coach's view of a shift (studies) both
draw it, so it lives here, below both apps.

Two panels share the window axis: money (cash and net assets, USD) above, stock
units on hand below, so no line needs a second scale. Only numbers and fixed
labels are written into the markup; nothing from the request reaches it.
"""
from __future__ import annotations

from html import escape

WIDTH, PANEL_HEIGHT, GAP = 860, 190, 46
LEFT, RIGHT, TOP = 78, 150, 26
MONEY_LINES = (("cash_cents", "Cash", "#1f6fb2"), ("net_assets_cents", "Net assets", "#2e8b57"))
STOCK_LINE = ("stock_units", "Stock units on hand", "#b8651b")


def _nice_ticks(low: float, high: float, count: int = 4) -> list[float]:
    if high <= low:
        high = low + 1
    raw = (high - low) / count
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = (low // step) * step
    ticks = []
    value = start
    while value <= high + step * 0.999:
        ticks.append(value)
        value += step
    return ticks


def _money(cents: float) -> str:
    dollars = cents / 100
    if abs(dollars) >= 1000:
        return f"${dollars / 1000:,.0f}k" if abs(dollars) >= 10_000 else f"${dollars / 1000:,.1f}k"
    return f"${dollars:,.0f}"


def _x(i: int, n: int) -> float:
    """Where the ``i``-th of ``n`` points sits across the plot (one point: in the middle)."""
    plot_width = WIDTH - LEFT - RIGHT
    return LEFT + (plot_width * i / (n - 1) if n > 1 else plot_width / 2)


def _panel(series: list[dict], lines, top: float, title: str, fmt) -> list[str]:
    values = [p[key] for key, _, _ in lines for p in series]
    ticks = _nice_ticks(min(values), max(values))
    low, high = ticks[0], ticks[-1]
    n = len(series)

    def x(i: int) -> float:
        return _x(i, n)

    def y(v: float) -> float:
        return top + PANEL_HEIGHT - (v - low) / (high - low) * PANEL_HEIGHT

    out = [f'<text x="{LEFT}" y="{top - 8:.1f}" class="panel-title">{escape(title)}</text>']
    for tick in ticks:
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" class="grid"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(tick) + 4:.1f}" class="tick" text-anchor="end">{escape(fmt(tick))}</text>')
    for index, (key, label, colour) in enumerate(lines):
        points = " ".join(f"{x(i):.1f},{y(p[key]):.1f}" for i, p in enumerate(series))
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2.2" '
                   f'data-series="{key}"/>')
        for i, p in enumerate(series):
            out.append(f'<circle cx="{x(i):.1f}" cy="{y(p[key]):.1f}" r="2.6" fill="{colour}">'
                       f'<title>{escape(p["label"])}: {escape(label)} {escape(fmt(p[key]))}</title></circle>')
        legend_y = top + 14 + index * 20
        out.append(f'<line x1="{WIDTH - RIGHT + 14}" x2="{WIDTH - RIGHT + 34}" y1="{legend_y - 4}" '
                   f'y2="{legend_y - 4}" stroke="{colour}" stroke-width="3"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 40}" y="{legend_y}" class="legend">{escape(label)}</text>')
    return out


def _summary(series: list[dict]) -> str:
    """The chart in one sentence, for a screen reader: each line's first and last point."""
    first, last = series[0], series[-1]

    def dollars(cents: float) -> str:
        return f"${cents / 100:,.2f}"

    return (f"From {first['label']} to {last['label']}: cash {dollars(first['cash_cents'])} to "
            f"{dollars(last['cash_cents'])}, net assets {dollars(first['net_assets_cents'])} to "
            f"{dollars(last['net_assets_cents'])}, stock {first['stock_units']:,} to {last['stock_units']:,} units.")


def timeline_svg(series: list[dict]) -> str:
    """The chart for a shift's timeline (see :func:`shifts.timeline.series_of`)."""
    if not series:
        return ""
    height = TOP + 2 * PANEL_HEIGHT + GAP + 40
    n = len(series)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" class="timeline-chart" '
             f'role="img" aria-label="Cash, net assets and stock units on hand by window">',
             f"<desc>{escape(_summary(series))}</desc>",
             "<style>.grid{stroke:#e4e7eb;stroke-width:1}.tick,.legend,.xlabel{font:11px system-ui,sans-serif;"
             "fill:#4a5561}.panel-title{font:600 12px system-ui,sans-serif;fill:#1d2a3a}</style>"]
    parts += _panel(series, MONEY_LINES, TOP, "Money (USD)", _money)
    stock_top = TOP + PANEL_HEIGHT + GAP
    parts += _panel(series, (STOCK_LINE,), stock_top, "Stock on hand (units)", lambda v: f"{v:,.0f}")
    every = max(1, (n + 13) // 14)
    for i, point in enumerate(series):
        if i % every and i != n - 1:
            continue
        parts.append(f'<text x="{_x(i, n):.1f}" y="{stock_top + PANEL_HEIGHT + 18}" class="xlabel" '
                     f'text-anchor="middle">{escape(point["label"])}</text>')
    parts.append("</svg>")
    return "".join(parts)
