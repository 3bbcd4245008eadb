"""What each explorer page and download shows, read from the stored trials.

Views validate their input and call one function here.  Nothing is recomputed
from trial folders: a trial page is the trial row, its windows (one query), its
events and one page of its action log, with result previews cut in the database.
Every page is a researcher's (:mod:`explorer.access`), so the task's events (with their
timing and channel) are always shown; which trials a researcher may see is the caller's
``seen``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.db.models.functions import Length, Substr
from django.shortcuts import get_object_or_404

from environment import report
from environment.calibration import CalibrationError, load_calibration
from environment.engine import settlement

from . import calibrations
from .charts import SLOT_COLOURS, Marker, Note, Series, format_value, window_chart
from .listing import page_note
from .measures import (
    BY_SLUG,
    MEASURES,
    SERIES_COLOURS,
    WINDOW_COLUMNS,
    Measure,
    opening_offset,
    played,
    points,
    recorded,
    running_total,
)
from .models import ToolFamily, Trial, TrialCall, TrialEvent, TrialWindow
from .tables import Table

PAGE_SIZE = 50
PREVIEW = 400
# The composite's weights are the engine's (environment.engine.settlement), never copied here.
WEIGHTS = tuple(zip(("business", "reliability", "continuity"),
                    ("Business (normalised)", "Reliability", "Continuity"), settlement.WEIGHTS, strict=True))
ANCHOR_ORDER = ("do-nothing", "absentee", "blast-list", "rule-based", "smart-triage", "exploiter")
SLOTS = "ABC"


class CompareRefused(Exception):
    """The trials asked for cannot be compared; the message says why."""


@dataclass
class Chart:
    measure: Measure
    svg: str
    recorded: bool


@dataclass
class FailureMode:
    label: str
    value: str
    flagged: bool
    examples: list[str]


@dataclass
class TrialPage:
    trial: Trial
    components: list[dict]
    anchors: list[dict]
    ladder_svg: str
    charts: list[Chart]
    events: list[TrialEvent]
    failure_modes: list[FailureMode]
    calls: Page
    family: str
    page_note: str  # why the page shown is not the one asked for, or ""
    business_zero: Decimal | None
    business_scale: Decimal | None
    families: list[tuple[str, str]] = field(default_factory=lambda: list(ToolFamily.choices))


@dataclass
class ComparePage:
    trials: list[Trial]
    slots: list[tuple[str, str, Trial]]  # (letter, colour, trial)
    table: Table
    display: list[tuple[str, str, list[str]]]
    charts: list[Chart]
    events: list[TrialEvent]


@dataclass
class LadderRow:
    task: str
    seed: int
    threshold: Decimal | None
    oracle: str
    anchors: list[tuple[str, Decimal | None]]
    results: list[Trial]


@dataclass
class LadderPage:
    source: str
    rows: list[LadderRow]
    svg: str
    problem: str = ""
    off_ladder: list[Trial] = field(default_factory=list)  # human and model trials on cells the file lacks


# -- trials ---------------------------------------------------------------------------------


def _d(value) -> Decimal | None:
    return None if value in (None, "") else Decimal(str(value))


def _components(trial: Trial) -> list[dict]:
    rows = []
    for key, label, weight in WEIGHTS:
        value = getattr(trial, key)
        rows.append({"key": key, "label": label, "value": value, "weight": weight, "contribution": value * weight})
        if key == "reliability":
            rows.append({"key": "on_time_rate", "label": "Orders shipped on time", "value": trial.on_time_rate,
                         "weight": None, "contribution": None, "sub": True})
            rows.append({"key": "return_handled_rate", "label": "Returns handled", "value": trial.return_handled_rate,
                         "weight": None, "contribution": None, "sub": True})
    return rows


def _anchors(trial: Trial) -> list[dict]:
    """The cell's anchors and this trial, best first, with the threshold between them."""
    anchors = trial.cell.get("anchors", {})
    rows = [{"name": name, "composite": _d(a["reward_composite"]), "business": _d(a.get("business_normalized")),
             "reliability": _d(a.get("reliability")), "continuity": _d(a.get("continuity")),
             "business_raw": _d(a.get("business_raw")), "is_trial": False}
            for name, a in anchors.items()]
    rows.append({"name": f"this trial ({trial.player})", "composite": trial.reward_composite,
                 "business": trial.business, "reliability": trial.reliability, "continuity": trial.continuity,
                 "business_raw": trial.business_raw, "is_trial": True})
    rows.sort(key=lambda r: (r["composite"], r["is_trial"]), reverse=True)
    if trial.threshold is not None:
        at = next((i for i, r in enumerate(rows) if r["composite"] < trial.threshold), len(rows))
        rows.insert(at, {"name": "threshold", "composite": trial.threshold, "is_threshold": True})
    return rows


def _drawable(cell: dict) -> dict:
    return {"threshold": float(cell["threshold"]),
            "anchors": {name: {"reward_composite": float(a["reward_composite"])} for name, a in cell["anchors"].items()}}


def _ladder_strip(trial: Trial) -> str:
    if not trial.cell.get("anchors"):
        return ""
    doc = {"tasks": {trial.task_id: {str(trial.seed): _drawable(trial.cell)}}}
    return report.svg(doc, [{"task": trial.task_id, "seed": trial.seed, "value": trial.reward_composite,
                             "kind": "this trial", "label": trial.player}])


def _task_events(trials: list[Trial]) -> list[TrialEvent]:
    # The same task fires the same events; a trial that stopped early saw fewer of them.
    by_index: dict[int, TrialEvent] = {}
    for event in TrialEvent.objects.filter(trial__in=trials).order_by("window", "index", "trial_id"):
        by_index.setdefault(event.index, event)
    events = sorted(by_index.values(), key=lambda e: (e.window, e.index))
    for number, event in enumerate(events, start=1):
        event.tag = f"E{number}"
    return events


def _markers(events: list[TrialEvent]) -> list[Marker]:
    return [Marker(e.window, e.tag, e.channel, f"{e.tag} {e.channel}: {e.kind.replace('_', ' ')} at {e.at} "
                   f"(start of window {e.window}). {e.detail}".strip()) for e in events]


def _windows(trial: Trial) -> list[dict]:
    return list(TrialWindow.objects.filter(trial=trial).order_by("window").values(*WINDOW_COLUMNS))


OPENING_TITLE = ("The dense reward starts from the opening capital, so window 1's reward also counts the store's "
                 "opening value above it ({}: stock at the salvage rate, receivables); the rewards add up to "
                 "business raw.")


def _opening_notes(rows: list[dict], measure: Measure, *, cumulative: bool) -> list[Note]:
    """What the first window carries besides its own change, said where it is drawn."""
    offset = opening_offset(rows, measure)
    if offset is None:
        return []
    shown = format_value(offset / 100, measure.unit)
    if cumulative:
        return [Note(0, f"opening value {shown}", OPENING_TITLE.format(shown) + " The curve starts there.")]
    return [Note(0.5, f"incl. {shown} opening value above starting capital", OPENING_TITLE.format(shown))]


# A flow of a trial stopped before its first window ended (do-nothing): nothing happened during a
# window, and its whole reward, settlement included, is in its score.
NO_WINDOW_PLAYED = "no window was played"


def _trial_chart(trial: Trial, rows: list[dict], measure: Measure, markers: list[Marker]) -> Chart:
    series = [Series(label, SERIES_COLOURS[i], points(rows, measure, key))
              for i, (key, label) in enumerate(measure.fields)]
    svg = window_chart(title=measure.title, unit=measure.unit, series=series, x_max=trial.windows_total,
                       markers=markers, bars=measure.bars, from_zero=measure.flow,
                       chart_id=f"t{trial.pk}-{measure.slug}", notes=_opening_notes(rows, measure, cumulative=False),
                       empty=NO_WINDOW_PLAYED if not played(rows) else "not recorded in this trial")
    return Chart(measure, svg, recorded(rows, measure))


# Labels for the report's keys where the key, read as words, says something else: ``never_restocked``
# is true when no purchase order went through, which beside "lines that ran out and were never
# restocked: 94" read as a contradiction.  Other keys are shown as their words.
FAILURE_MODE_LABELS = {"never_restocked": "Placed no purchase order"}


def _failure_modes(trial: Trial) -> list[FailureMode]:
    report_ = trial.failure_modes or {}
    out = []
    for key, value in report_.items():
        if key in ("task", "seed", "calls", "windows_played", "windows_total"):
            continue
        label = FAILURE_MODE_LABELS.get(key) or key.replace("_", " ").capitalize()
        if isinstance(value, dict):
            examples = [", ".join(f"{k.replace('_', ' ')} {v}" for k, v in ex.items()) if isinstance(ex, dict)
                        else str(ex) for ex in value.get("examples", [])]
            out.append(FailureMode(label, str(value.get("count", 0)), bool(value.get("count")), examples))
        elif isinstance(value, bool):
            out.append(FailureMode(label, "yes" if value else "no", value, []))
        else:
            out.append(FailureMode(label, str(value), False, []))
    return out


def _calls(trial: Trial, family: str, page: int) -> Page:
    calls = TrialCall.objects.filter(trial=trial)
    if family:
        calls = calls.filter(family=family)
    previews = (calls.order_by("seq").defer("result")
                .annotate(preview=Substr("result", 1, PREVIEW), result_length=Length("result")))
    current = Paginator(previews, PAGE_SIZE).get_page(page)
    # django-stubs types the page's items as the annotated model, yet finds no annotated
    # attribute on them once they come through a Paginator (direct iteration works).
    for call in current.object_list:
        call.arguments_text = json.dumps(call.arguments, separators=(", ", ": "), ensure_ascii=False)
        header, _, body = call.preview.partition("\n")  # type: ignore[attr-defined]
        call.preview_header, call.preview_body = header, body
        call.truncated = call.result_length > PREVIEW  # type: ignore[attr-defined]
    return current


def trial_page(trial_id: int, *, seen: QuerySet[Trial], family: str = "", page: int = 1) -> TrialPage:
    """``page`` may be any whole number: one out of range shows the nearest page and says so."""
    trial = get_object_or_404(seen, pk=trial_id)
    calls = _calls(trial, family, max(page, 1))
    rows = _windows(trial)
    events = _task_events([trial])
    markers = _markers(events)
    return TrialPage(
        trial=trial, components=_components(trial), anchors=_anchors(trial), ladder_svg=_ladder_strip(trial),
        charts=[_trial_chart(trial, rows, m, markers) for m in MEASURES], events=events,
        failure_modes=_failure_modes(trial), calls=calls, family=family, page_note=page_note(page, calls, "the action log", " in this family" if family else ""),
        business_zero=_d(trial.score.get("business_zero_raw")), business_scale=_d(trial.score.get("business_scale")),
    )


def trial_chart(trial_id: int, slug: str, *, seen: QuerySet[Trial]) -> str:
    trial = get_object_or_404(seen, pk=trial_id)
    return _trial_chart(trial, _windows(trial), BY_SLUG[slug], _markers(_task_events([trial]))).svg


def components_table(trial_id: int, *, seen: QuerySet[Trial]) -> Table:
    trial = get_object_or_404(seen, pk=trial_id)
    rows: list[tuple] = [("reward_composite", trial.reward_composite, None, None)]
    rows += [(r["key"], r["value"], r["weight"], r["contribution"]) for r in _components(trial)]
    rows += [("business_raw_usd", trial.business_raw, None, None), ("net_assets_usd", trial.net_assets, None, None),
             ("threshold", trial.threshold, None, None),
             ("passed", trial.passed, None, None)]
    rows += [(f"anchor {name}", _d(a["reward_composite"]), None, None)
             for name, a in trial.cell.get("anchors", {}).items()]
    return Table(f"trial-{trial.pk}-components", ("component", "value", "weight", "contribution"), rows)


def windows_table(trial_id: int, *, seen: QuerySet[Trial]) -> Table:
    trial = get_object_or_404(seen, pk=trial_id)
    return Table(f"trial-{trial.pk}-windows", WINDOW_COLUMNS,
                 [tuple(row[c] for c in WINDOW_COLUMNS) for row in _windows(trial)])


def actions_table(trial_id: int, family: str = "", *, seen: QuerySet[Trial]) -> Table:
    trial = get_object_or_404(seen, pk=trial_id)
    calls = TrialCall.objects.filter(trial=trial).order_by("seq")
    if family:
        calls = calls.filter(family=family)
    columns = ("seq", "window", "tool", "family", "spent_operation", "ok", "error_code", "arguments", "result")
    return Table(f"trial-{trial.pk}-actions" + (f"-{family.replace(' ', '-')}" if family else ""), columns,
                 list(calls.values_list(*columns)))


def events_table(trial_id: int, *, seen: QuerySet[Trial]) -> Table:
    """The task's events as they fired in this trial; for researchers only (the view checks)."""
    trial = get_object_or_404(seen, pk=trial_id)
    events = _task_events([trial])
    return Table(f"trial-{trial.pk}-events", ("tag", "window", "at", "channel", "kind", "detail"),
                 [(e.tag, e.window, e.at, e.channel, e.kind, e.detail) for e in events])


def call_detail(trial_id: int, seq: int, *, seen: QuerySet[Trial]) -> dict:
    call = get_object_or_404(TrialCall, trial__in=seen.filter(pk=trial_id), seq=seq)
    return {"trial": trial_id, "seq": call.seq, "window": call.window, "tool": call.tool, "family": call.family,
            "spent_operation": call.spent_operation, "ok": call.ok, "error_code": call.error_code,
            "arguments": call.arguments, "result": call.result}


# -- comparison ---------------------------------------------------------------------------------


MAX_ID = 2 ** 63 - 1  # a larger number names no row (and would overflow the database's integers)


def _compared(ids: list[int], seen: QuerySet[Trial]) -> list[Trial]:
    found = seen.in_bulk([i for i in ids if 0 < i <= MAX_ID])
    missing = [str(i) for i in ids if i not in found]
    if missing:
        raise CompareRefused(f"There is no trial {', '.join(missing)}.")
    trials = [found[i] for i in ids]
    if len({(t.task_id, t.seed) for t in trials}) > 1:
        raise CompareRefused("Only trials of the same cell can be compared: "
                             + "; ".join(f"trial {t.pk} is {t.cell_label}" for t in trials) + ".")
    return trials


def _compare_chart(trials: list[Trial], rows: list[list[dict]], measure: Measure, markers: list[Marker]) -> Chart:
    key = measure.fields[0][0]
    series_of = running_total if measure.cumulative_in_compare else points
    series = [Series(f"{SLOTS[i]} · {t.player}", SLOT_COLOURS[i], series_of(rows[i], measure, key))
              for i, t in enumerate(trials)]
    # One cell: every trial opens the same store, so the first trial's opening value is theirs too.
    notes = _opening_notes(rows[0], measure, cumulative=True) if measure.cumulative_in_compare else []
    svg = window_chart(title=measure.compare_title(), unit=measure.unit, series=series,
                       x_max=max(t.windows_total for t in trials), markers=markers, from_zero=measure.flow,
                       chart_id="cmp-" + measure.slug, notes=notes,
                       empty=NO_WINDOW_PLAYED if not any(map(played, rows)) else "not recorded in these trials")
    return Chart(measure, svg, any(recorded(r, measure) for r in rows))


COMPARED = (("reward_composite", "composite", "score"), ("threshold", "threshold", "score"),
            ("passed", "passed", "pass"), ("business", "business", "score"), ("reliability", "reliability", "score"),
            ("on_time_rate", "on-time rate", "score"), ("return_handled_rate", "returns handled", "score"),
            ("continuity", "continuity", "score"), ("business_raw", "business raw (USD)", "usd"),
            ("net_assets", "net assets (USD)", "usd"), ("windows_played", "windows completed", "int"),
            ("termination", "termination", "text"), ("turns", "calls", "int"),
            ("operations_spent", "operations spent", "int"))


def _compare_table(trials: list[Trial]) -> Table:
    columns = ("component", *(f"{SLOTS[i]}: trial {t.pk} ({t.player})" for i, t in enumerate(trials)))
    rows = [(label, *(getattr(t, attr) for t in trials)) for attr, label, _ in COMPARED]
    return Table("compare-" + "-".join(str(t.pk) for t in trials), columns, rows)


def _shown(value, style: str) -> str:
    if value is None:
        return "n/a"
    if style == "score":
        return f"{value:.3f}"
    if style == "usd":
        return f"${value:,.2f}"
    if style == "pass":
        return "pass" if value else "below"
    return str(value)


def _compare_display(trials: list[Trial]) -> list[tuple[str, str, list[str]]]:
    """(label, style, shown values) per compared figure, for the page; the download keeps exact values."""
    return [(label, style, [_shown(getattr(t, attr), style) for t in trials]) for attr, label, style in COMPARED]


def compare_page(ids: list[int], *, seen: QuerySet[Trial]) -> ComparePage:
    trials = _compared(ids, seen)
    rows = [_windows(t) for t in trials]
    events = _task_events(trials)
    markers = _markers(events)
    return ComparePage(
        trials=trials, slots=[(SLOTS[i], SLOT_COLOURS[i], t) for i, t in enumerate(trials)],
        table=_compare_table(trials), display=_compare_display(trials), charts=[_compare_chart(trials, rows, m, markers) for m in MEASURES],
        events=events,
    )


def compare_chart(ids: list[int], slug: str, *, seen: QuerySet[Trial]) -> str:
    trials = _compared(ids, seen)
    markers = _markers(_task_events(trials))
    return _compare_chart(trials, [_windows(t) for t in trials], BY_SLUG[slug], markers).svg


def compare_table(ids: list[int], *, seen: QuerySet[Trial]) -> Table:
    return _compare_table(_compared(ids, seen))


# -- the calibration ladder ------------------------------------------------------------------------

LADDER_KINDS = (Trial.PlayerKind.HUMAN, Trial.PlayerKind.MODEL)


def ladder_page(*, seen: QuerySet[Trial]) -> LadderPage:
    path = calibrations.ladder_file()
    try:
        doc, _digest = load_calibration(path)
    except CalibrationError as exc:  # its advice is for the command line; this is what to do here
        name = calibrations.display_name(path)
        return LadderPage(name, [], "", problem=f"{exc.problem}. Restore {name}, or write it again with "
                                                f"`storebench calibrate --out {name}`, then reload this page.")
    results: dict[tuple[str, int], list[Trial]] = {}
    for trial in seen.filter(player_kind__in=LADDER_KINDS).order_by("-reward_composite", "id"):
        results.setdefault((trial.task_id, trial.seed), []).append(trial)
    rows = []
    for task, seeds in doc["tasks"].items():
        for seed_text, cell in sorted(seeds.items(), key=lambda kv: int(kv[0])):
            seed = int(seed_text)
            rows.append(LadderRow(task, seed, _d(cell["threshold"]), cell.get("oracle", ""),
                                  [(a, _d(cell["anchors"][a]["reward_composite"])) for a in ANCHOR_ORDER
                                   if a in cell.get("anchors", {})],
                                  results.get((task, seed), [])))
    marks = [{"task": r.task, "seed": r.seed, "value": t.reward_composite, "kind": t.player_kind,
              "label": f"{t.player} (trial {t.pk})"} for r in rows for t in r.results]
    on_ladder = {(r.task, r.seed) for r in rows}
    off_ladder = sorted((t for cell, trials in results.items() if cell not in on_ladder for t in trials),
                        key=lambda t: (t.task_id, t.seed, -t.reward_composite, t.pk))
    return LadderPage(calibrations.display_name(path), rows, report.svg(doc, marks), off_ladder=off_ladder)


def ladder_table(page: LadderPage) -> Table:
    rows: list[tuple] = []
    for r in page.rows:
        rows.append((r.task, r.seed, "threshold", "threshold", r.threshold, None, None))
        rows += [(r.task, r.seed, "anchor", name, value, None, None) for name, value in r.anchors]
        rows += [(r.task, r.seed, t.player_kind, t.player, t.reward_composite, t.passed, t.pk) for t in r.results]
    # Listed under the page's table too: a cell the file lacks has no threshold or anchor rows.
    rows += [(t.task_id, t.seed, t.player_kind, t.player, t.reward_composite, t.passed, t.pk) for t in page.off_ladder]
    return Table("ladder", ("task", "seed", "kind", "name", "composite", "passed", "trial"), rows)
