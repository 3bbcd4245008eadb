"""Reading task files, strictly.

Every field is checked for name, type and range; the first problem found is
reported as ``<file>: <section.field>: <reason>`` so a task author can fix it
without reading this code.  Unknown sections and fields are errors, not
warnings: a misspelt ``horizon_day`` must not silently run a default horizon.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from ..errors import ErrorCode, StoreBenchError
from .model import Channel, Competitor, Event, EventKind, Task

FILES = Path(__file__).with_name("files")
# The split of the console's practice task (files/practice/): loadable by id, but no
# eval or train task, so it is never calibrated, batched, ranked or a study cell.
PRACTICE = "practice"


class TaskFileError(StoreBenchError):
    code = ErrorCode.TASK_FILE_INVALID


class _Reject(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


Check = Callable[[str, Any], Any]


def _string(field: str, v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _Reject(field, f"must be a non-empty string, got {v!r}")
    return v


def _int(low: int, high: int) -> Check:
    def check(field: str, v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _Reject(field, f"must be an integer, got {v!r}")
        if not low <= v <= high:
            raise _Reject(field, f"must be between {low} and {high}, got {v}")
        return v

    return check


def _number(low: float, high: float) -> Check:
    def check(field: str, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise _Reject(field, f"must be a number, got {v!r}")
        if not low <= v <= high:
            raise _Reject(field, f"must be between {low} and {high}, got {v}")
        return float(v)

    return check


def _money(low: float, high: float) -> Check:
    def check(field: str, v: Any) -> Decimal:
        _number(low, high)(field, v)
        return Decimal(str(v))

    return check


def _bool(field: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise _Reject(field, f"must be true or false, got {v!r}")
    return v


def _timestamp(field: str, v: Any) -> str:
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%dT%H:%M")
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v.replace("Z", "+00:00")).strftime("%Y-%m-%dT%H:%M")
        except ValueError:
            pass
    raise _Reject(field, f"must be a timestamp like 2026-08-01T00:00, got {v!r}")


def _one_of(*choices: str) -> Check:
    def check(field: str, v: Any) -> str:
        if v not in choices:
            raise _Reject(field, f"must be one of {', '.join(choices)}; got {v!r}")
        return cast(str, v)  # one of the choices

    return check


def _window_hours(field: str, v: Any) -> int:
    hours: int = _int(1, 24)(field, v)
    if 24 % hours:
        raise _Reject(field, f"must divide a day evenly (1, 2, 3, 4, 6, 8, 12 or 24), got {hours}")
    return hours


SECTIONS: dict[str, dict[str, Check]] = {
    "task": {"id": _string, "title": _string, "prompt": _string},
    "shift": {"start": _timestamp, "horizon_days": _int(1, 400), "window_hours": _window_hours,
              "ops_per_window": _int(1, 500), "listing_cap": _int(1, 1000)},
    "setup": {"trim_stock_days": _number(0.0, 365.0), "trim_stock_floor": _int(0, 10_000),
              "empty_shelf": _bool},
    "economics": {
        "starting_cash": _money(0, 10_000_000), "deposit": _money(0, 10_000_000),
        "return_escalate_days": _int(1, 60), "ignored_return_fine": _money(0, 10_000),
        "salvage_rate": _money(0, 1), "holding_cost_per_unit_day": _money(0, 10),
        "settlement_days": _int(0, 60), "commission_rate": _money(0, 0.5),
        "label_fee": _money(0, 100), "autoship_fee": _money(0, 100), "stockout_fine": _money(0, 10_000),
        "late_ship_fine": _money(0, 10_000), "unshipped_fine": _money(0, 10_000),
        "insertion_fee": _money(0, 10_000), "suspend_after_days": _int(1, 60),
        "autoship_capacity_per_day": _int(0, 100_000),
    },
    "competition": {"loyal_share": _number(0.0, 1.0)},
}
STORE_FIELDS: dict[str, Check] = {
    "id": _string, "name": _string, "archetype": _string, "entry_at_days": _number(0, 400),
    "base_pressure": _number(0, 1), "price_index": _number(0.1, 5), "overlap": _number(0, 1),
    "volatility": _number(0, 1),
}
EVENT_FIELDS: dict[str, Check] = {
    "kind": _one_of(*[k.value for k in EventKind]), "at_days": _number(0, 400), "rumor": _string,
    "announce": _bool, "factor": _number(0.0, 20.0), "season_tag": _one_of("warm", "cold", "all-season"),
    "category": _string, "country": _string, "vendor": _string, "until_days": _number(0, 400),
    "lead_time_days": _int(0, 120), "delist_share": _number(0, 1), "defect_rate": _number(0, 1),
    "announce_lead_days": _number(0, 30), "message": _string,
}
REQUIRED = {
    "task": ("id", "title", "prompt"),
    "shift": ("start", "horizon_days", "window_hours", "ops_per_window"),
}
EVENT_NEEDS = {
    EventKind.DEMAND_MULTIPLIER: ("factor",),
    EventKind.CATEGORY_BIAS: ("factor",),
    EventKind.MARKET_CRASH: ("factor",),
    EventKind.SUPPLY_SHOCK_COUNTRY: ("country",),
    EventKind.SUPPLIER_FAILURE: ("vendor",),
    EventKind.QUALITY_SHIFT: ("vendor", "defect_rate"),
    EventKind.COST_INFLATION: ("factor",),
    EventKind.CARRIER_SQUEEZE: ("factor",),
}


def _section(doc: dict[str, Any], name: str) -> dict[str, Any]:
    table = doc.get(name, {})
    if not isinstance(table, dict):
        raise _Reject(name, "must be a table")
    return table


def _checked(table: dict[str, Any], allowed: dict[str, Check], prefix: str) -> dict[str, Any]:
    out = {}
    for key, value in table.items():
        if key not in allowed:
            raise _Reject(f"{prefix}.{key}", f"unknown field (allowed: {', '.join(sorted(allowed))})")
        out[key] = allowed[key](f"{prefix}.{key}", value)
    return out


def _parse(doc: dict[str, Any], split: str) -> Task:
    for name in doc:
        if name not in (*SECTIONS, "events"):
            raise _Reject(name, f"unknown section (allowed: {', '.join([*SECTIONS, 'events'])})")
    values: dict[str, dict[str, Any]] = {}
    for name, allowed in SECTIONS.items():
        table = dict(_section(doc, name))
        if name == "competition":
            table.pop("stores", None)
        values[name] = _checked(table, allowed, name)
        for req in REQUIRED.get(name, ()):
            if req not in values[name]:
                raise _Reject(f"{name}.{req}", "is required")
    shift = values["shift"]
    if shift["horizon_days"] * 24 % shift["window_hours"]:
        raise _Reject("shift.window_hours", "the horizon must be a whole number of windows")

    stores = _section(doc, "competition").get("stores", [])
    if not isinstance(stores, list):
        raise _Reject("competition.stores", "must be an array of tables ([[competition.stores]])")
    competitors = []
    for i, store in enumerate(stores):
        prefix = f"competition.stores[{i}]"
        if not isinstance(store, dict):
            raise _Reject(prefix, "must be a table")
        s = _checked(store, STORE_FIELDS, prefix)
        missing = [k for k in STORE_FIELDS if k not in s]
        if missing:
            raise _Reject(f"{prefix}.{missing[0]}", "is required")
        competitors.append(Competitor(**s))

    events = []
    raw_events = doc.get("events", [])
    if not isinstance(raw_events, list):
        raise _Reject("events", "must be an array of tables ([[events]])")
    for i, raw in enumerate(raw_events):
        prefix = f"events[{i}]"
        if not isinstance(raw, dict):
            raise _Reject(prefix, "must be a table")
        e = _checked(raw, EVENT_FIELDS, prefix)
        for req in ("kind", "at_days"):
            if req not in e:
                raise _Reject(f"{prefix}.{req}", "is required")
        kind = EventKind(e.pop("kind"))
        for req in EVENT_NEEDS[kind]:
            if req not in e:
                raise _Reject(f"{prefix}.{req}", f"is required for a {kind.value} event")
        if kind == EventKind.CATEGORY_BIAS and not (e.get("season_tag") or e.get("category")):
            raise _Reject(f"{prefix}.season_tag", "a category_bias event needs season_tag or category")
        announce = e.pop("announce", True)
        if "rumor" in e and announce is False:
            raise _Reject(f"{prefix}.announce", "a rumoured event cannot also be silent (announce = false)")
        channel = Channel.RUMOURED if "rumor" in e else (Channel.ANNOUNCED if announce else Channel.SILENT)
        if e.get("until_days") is not None and e["until_days"] <= e["at_days"]:
            raise _Reject(f"{prefix}.until_days", "must be after at_days")
        if e["at_days"] >= shift["horizon_days"]:
            raise _Reject(f"{prefix}.at_days", f"is beyond the {shift['horizon_days']}-day horizon")
        events.append(Event(kind=kind, channel=channel, **e))
    setup = values["setup"]
    return Task(
        id=values["task"]["id"], title=values["task"]["title"], prompt=values["task"]["prompt"].strip(),
        split=split, start=shift["start"], horizon_days=shift["horizon_days"],
        window_hours=shift["window_hours"], ops_per_window=shift["ops_per_window"],
        listing_cap=shift.get("listing_cap", 120),
        trim_stock_days=setup.get("trim_stock_days"), trim_stock_floor=setup.get("trim_stock_floor", 4),
        empty_shelf=setup.get("empty_shelf", False), economics=values["economics"],
        loyal_share=values["competition"].get("loyal_share", 1.0 if not competitors else 0.5),
        competitors=tuple(competitors), events=tuple(sorted(events, key=lambda ev: ev.at_days)),
    )


def load_task_text(text: str, source: str = "<text>", split: str = "eval") -> Task:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskFileError(f"{source}: not valid TOML: {exc}", file=source, field=None,
                            reason=f"not valid TOML: {exc}") from exc
    try:
        task = _parse(doc, split)
    except _Reject as exc:
        raise TaskFileError(f"{source}: {exc.field}: {exc.reason}", file=source, field=exc.field,
                            reason=exc.reason) from exc
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return Task(**{**{f: getattr(task, f) for f in task.__dataclass_fields__ if f != "extra"},
                   "source": source, "file_hash": digest})


def load_task(path: str | Path) -> Task:
    path = Path(path)
    split = path.parent.name if path.parent.name in ("train", PRACTICE) else "eval"
    try:
        text = path.read_text()
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read the task file: {exc.strerror}", file=str(path)) from exc
    return load_task_text(text, source=str(path), split=split)


@lru_cache(maxsize=1)
def _bundled() -> dict[str, Task]:
    tasks: dict[str, Task] = {}
    for split in ("eval", "train", PRACTICE):
        for path in sorted((FILES / split).glob("*.toml")):
            task = load_task(path)
            if task.id in tasks:
                reason = f"{task.id!r} is already defined by {tasks[task.id].source}"
                raise TaskFileError(f"{path}: task.id: {reason}", file=str(path), field="task.id", reason=reason)
            if task.id != path.stem:
                reason = f"{task.id!r} must match the file name {path.stem!r}"
                raise TaskFileError(f"{path}: task.id: {reason}", file=str(path), field="task.id", reason=reason)
            tasks[task.id] = task
    return tasks


# What a run may name instead of task ids (expanded by environment.orchestration.expand_tasks):
# the group's split, None for both eval and train.
TASK_GROUPS: dict[str, str | None] = {"all": None, "eval": "eval", "train": "train"}


def all_tasks(split: str | None = None) -> list[Task]:
    """The bundled tasks of ``split``; with no split, the eval and train tasks, never the
    practice ones (those are asked for by name or by ``split="practice"``)."""
    return [t for t in _bundled().values() if t.split == split or (split is None and t.split != PRACTICE)]


def get_task(task_id: str) -> Task:
    tasks = _bundled()
    if task_id not in tasks:
        known = ", ".join(t for t, task in tasks.items() if task.split != PRACTICE)
        practice = ", ".join(t for t, task in tasks.items() if task.split == PRACTICE)
        raise TaskFileError(f"unknown task {task_id!r}; known tasks: {known}"
                            + (f" (and the console's practice task: {practice})" if practice else ""), task=task_id)
    return tasks[task_id]
