"""The calibration report: the anchor ladder per cell as a table and a chart.

Written beside the calibration file as ``<name>.report.md`` (a Markdown table like
the paper's Table 6) and ``<name>.ladder.svg`` (one row per task, one marker per
seed and anchor, the threshold as a tick, like its Figure 3).  Plain SVG, so the
chart needs no plotting library.  :func:`svg` also takes optional marks, the
results of other players (people, models) on the same rows; without them it
draws exactly the calibration chart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LADDER = ("blast-list", "rule-based", "smart-triage")
COLOURS = {"blast-list": "#d95f02", "rule-based": "#7570b3", "smart-triage": "#1b9e77", "exploiter": "#999999",
           "do-nothing": "#e6ab02", "absentee": "#a6761d"}
# Every anchor a calibrated cell holds, in the order the chart keys them (the two zero anchors last).
CHARTED = (*LADDER, "exploiter", "do-nothing", "absentee")
# Marks for other players' results: an outlined diamond for people, a filled triangle for
# models, an outlined square for one trial shown on its own.
MARK_KINDS = {"human": ("M0,-6 L6,0 L0,6 L-6,0 Z", "white", "#111111"), "model": ("M0,-6 L6,5 L-6,5 Z", "#e7298a", "none"),
              "this trial": ("M-5,-5 H5 V5 H-5 Z", "white", "#111111")}


def table(doc: dict[str, Any]) -> str:
    lines = ["| task | blast-list | rule-based | smart-triage | exploiter | threshold | oracle |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for tid, seeds in doc["tasks"].items():
        keys = sorted(seeds, key=int)

        def col(anchor: str, seeds: dict[str, Any] = seeds, keys: list[Any] = keys) -> str:
            return " / ".join(f"{seeds[k]['anchors'][anchor]['reward_composite']:.3f}" for k in keys)

        thr = " / ".join(f"{seeds[k]['threshold']:.3f}" for k in keys)
        oracle = " / ".join(seeds[k]["oracle"] for k in keys)
        lines.append(f"| {tid} | {col('blast-list')} | {col('rule-based')} | {col('smart-triage')} | "
                     f"{col('exploiter')} | {thr} | {oracle} |")
    seeds_line = ", ".join(sorted({k for s in doc["tasks"].values() for k in s}, key=int))
    return f"Anchor composites and thresholds per cell (seeds {seeds_line}, in that order).\n\n" + "\n".join(lines)


def _esc(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def svg(doc: dict[str, Any], marks: list[dict[str, Any]] | tuple[Any, ...] = ()) -> str:
    """The ladder chart; ``marks`` are ``{"task", "seed", "value", "kind", "label"}`` (kind: a key of
    :data:`MARK_KINDS`), drawn on their task's row and keyed at the bottom right.  Its axis is
    the composite's whole range, 0 to 1; it scales down to fit a narrower box (a viewBox), so
    a mark near 1 is never cut off."""
    tasks = list(doc["tasks"])
    row_h, left, width = 28, 130, 560
    height = row_h * len(tasks) + 88
    full = left + width + 30
    top = 38  # the rows start below the key's two lines

    def x(v: float) -> float:
        return left + v * width

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{full}" height="{height}" '
             f'viewBox="0 0 {full} {height}" style="max-width:100%;height:auto" '
             f'font-family="sans-serif" font-size="12">',
             '<rect width="100%" height="100%" fill="white"/>']
    for t in range(0, 11):
        v = t / 10
        parts.append(f'<line x1="{x(v):.1f}" y1="{top}" x2="{x(v):.1f}" y2="{height - 40}" stroke="#eee"/>')
        parts.append(f'<text x="{x(v):.1f}" y="{height - 25}" text-anchor="middle">{v:.1f}</text>')
    parts.append(f'<text x="{left + width / 2}" y="{height - 8}" text-anchor="middle">composite score</text>')
    for i, tid in enumerate(tasks):
        y = top + 15 + i * row_h
        parts.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{tid}</text>')
        for k, cell in sorted(doc["tasks"][tid].items(), key=lambda kv: int(kv[0])):
            thr = cell["threshold"]
            parts.append(f'<line x1="{x(thr):.1f}" y1="{y - 9}" x2="{x(thr):.1f}" y2="{y + 9}" stroke="black" '
                         f'stroke-width="2"><title>{tid} seed {k} threshold {thr:.3f}</title></line>')
            for anchor in (a for a in CHARTED if a in cell["anchors"]):
                v = cell["anchors"][anchor]["reward_composite"]
                parts.append(f'<circle cx="{x(v):.1f}" cy="{y}" r="4" fill="{COLOURS[anchor]}" '
                             f'fill-opacity="0.8"><title>{tid} seed {k} {anchor} {v:.3f}</title></circle>')
        for mark in (m for m in marks if m["task"] == tid):
            shape, fill, stroke = MARK_KINDS[mark["kind"]]
            parts.append(f'<path d="{shape}" transform="translate({x(float(mark["value"])):.1f},{y})" '
                         f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"><title>{tid} seed {mark["seed"]} '
                         f'{_esc(mark["label"])} {float(mark["value"]):.3f}</title></path>')
    for index, anchor in enumerate(CHARTED):  # the key: two lines of four
        lx, ly = left + 140 * (index % 4), 10 + 18 * (index // 4)
        parts.append(f'<circle cx="{lx}" cy="{ly}" r="4" fill="{COLOURS[anchor]}"/>'
                     f'<text x="{lx + 8}" y="{ly + 4}">{anchor}</text>')
    lx, ly = left + 140 * (len(CHARTED) % 4), 10 + 18 * (len(CHARTED) // 4)
    parts.append(f'<line x1="{lx}" y1="{ly - 7}" x2="{lx}" y2="{ly + 7}" stroke="black" stroke-width="2"/>'
                 f'<text x="{lx + 6}" y="{ly + 4}">threshold</text>')
    kinds = sorted({m["kind"] for m in marks})
    for i, kind in enumerate(kinds):
        mx = left + width - 85 * (len(kinds) - i)
        shape, fill, stroke = MARK_KINDS[kind]
        parts.append(f'<path d="{shape}" transform="translate({mx},{height - 12})" fill="{fill}" stroke="{stroke}" '
                     f'stroke-width="1.5"/><text x="{mx + 10}" y="{height - 8}">{kind}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def beside_paper(doc: dict[str, Any]) -> str:
    """Our ladder beside the paper's Table 6, cell by cell, with each column's mean absolute
    deviation over the evaluation cells both have."""
    from .paper import SEEDS, TABLE6, TABLE6_COLUMNS

    lines = ["| lens | " + " | ".join(f"{c} ours / paper (seeds 7, 11, 13)" for c in TABLE6_COLUMNS)
             + " | diligence |", "| --- |" + " --- |" * (len(TABLE6_COLUMNS) + 1)]
    dev: dict[str, list[float]] = {c: [] for c in TABLE6_COLUMNS}
    for tid, paper in TABLE6.items():
        seeds = doc["tasks"].get(tid)
        if not seeds or any(k not in seeds for k in SEEDS):
            continue
        row = []
        for col, theirs in zip(TABLE6_COLUMNS, paper, strict=True):
            ours = [seeds[k]["threshold"] if col == "threshold" else seeds[k]["anchors"][col]["reward_composite"]
                    for k in SEEDS]
            dev[col] += [abs(a - b) for a, b in zip(ours, theirs, strict=True)]
            row.append(" / ".join(f"{a:.2f}" for a in ours) + " vs " + " / ".join(f"{b:.2f}" for b in theirs))
        dil = " / ".join(f"{seeds[k].get('diligence_composite', float('nan')):.2f}" for k in SEEDS)
        lines.append(f"| {tid} | " + " | ".join(row) + f" | {dil} |")
    if not dev[TABLE6_COLUMNS[0]]:
        return ("Our ladder beside the paper's Table 6: no evaluation lens of Table 6 was calibrated on all of "
                "seeds 7, 11 and 13 in this file, so there is nothing to set beside it.")
    mad = ", ".join(f"{c} {_mean(v):.3f}" for c, v in dev.items())
    return ("Our ladder beside the paper's Table 6 (ours vs paper), and the diligence-only check.\n\n"
            + "\n".join(lines) + f"\n\nMean absolute deviation from Table 6: {mad}.")


def beside_release(doc: dict[str, Any]) -> str:
    """Training cells: our business zero and scale beside the release's, with the ratio,
    and the share of the better judgment anchor's gain over the zero that volume play
    (blast-list) earns, ours beside the bounds the release's composites give."""
    from .paper import RELEASE_TRAINING, SEEDS, release_volume_share, release_zero_and_scale

    lines = ["| task | seed | zero ours | zero release | ratio | scale ours | scale release | ratio "
             "| volume play's share ours | release |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for tid in RELEASE_TRAINING:
        for i, k in enumerate(SEEDS):
            cell = doc["tasks"].get(tid, {}).get(k)
            if cell is None:
                continue
            zero, scale = release_zero_and_scale(tid, i)
            low, high = release_volume_share(tid, i)
            lines.append(f"| {tid} | {k} | {cell['business_zero_raw']:,.0f} | {zero:,.0f} | "
                         f"{cell['business_zero_raw'] / zero:.2f} | {cell['business_scale']:,.0f} | {scale:,.0f} | "
                         f"{cell['business_scale'] / scale:.2f} | {volume_share(cell):.2f} | {low:.2f} to {high:.2f} |")
    if len(lines) == 2:
        names = ", ".join(RELEASE_TRAINING)
        return (f"Training cells beside the release's calibration: the release calibrated {names} on seeds "
                f"{', '.join(str(k) for k in SEEDS)}, and this file holds none of those cells, so there is nothing to "
                "set beside it.")
    return ("Training cells beside the release's calibration (dollars; ratio ours / release). Volume play's share: "
            "what blast-list (ships, answers no return) earns over the zero, as a share of what the better judgment "
            "anchor earns; the release's is bounded from its blast-list composite and the blast-list reliability "
            "the spec gives (0.39 to 0.45).\n\n" + "\n".join(lines))


def volume_share(cell: dict[str, Any]) -> float:
    """The share of the better judgment anchor's gain over the zero that blast-list earns in ``cell``."""
    anchors, zero = cell["anchors"], cell["business_zero_raw"]
    best = max(anchors["rule-based"]["business_raw"], anchors["smart-triage"]["business_raw"])
    return float((anchors["blast-list"]["business_raw"] - zero) / (best - zero))


def write_report(doc: dict[str, Any], calibration_path: str | Path) -> Path:
    path = Path(calibration_path)
    stem = path.name[:-5] if path.name.endswith(".json") else path.name
    md = path.with_name(stem + ".report.md")
    chart = path.with_name(stem + ".ladder.svg")
    chart.write_text(svg(doc))
    parts = ["# Calibration ladder", table(doc), f"Chart: {chart.name}", "## Beside the paper", beside_paper(doc),
             "## Beside the release's training calibration", beside_release(doc)]
    ablation = path.with_name("ablation.md")
    if ablation.exists():  # written by: storebench tasks ablate TASK (one section per lens)
        parts += ["## Lens ablation", ablation.read_text().strip()]
    md.write_text("\n\n".join(parts) + "\n")
    return md
