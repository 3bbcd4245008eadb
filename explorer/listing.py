"""The trial list: one page of the imported trials, grouped by cell, with each cell's count.

A batch writes one trial per episode, so the explorer may hold thousands.  The list
shows :data:`LIST_SIZE` at a time, in ladder order (cell, then best composite first),
reading only the columns it shows (not the score, calibration cell or failure-mode
JSON).  A cell's heading counts its trials over the whole list, not only this page's,
and says when the cell began on an earlier page.  ``cell`` and ``kind`` narrow the list;
a page out of range shows the nearest page and says so, as the action log does.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import Count, QuerySet

from .models import Trial

LIST_SIZE = 100
SHOWN = ("id", "task_id", "seed", "player", "player_kind", "reward_composite", "threshold", "passed",
         "windows_played", "windows_total", "turns", "integrity")


def cell_key(task_id: str, seed: int) -> str:
    """A cell as the list's ``cell`` parameter names it: ``steady-7``."""
    return f"{task_id}-{seed}"


@dataclass(frozen=True)
class CellGroup:
    label: str  # "steady seed 7"
    total: int  # the cell's trials in the whole (filtered) list
    trials: list[Trial]  # those on this page
    continued: bool  # the cell's first trials are on an earlier page
    goes_on: bool  # and its last on a later one


@dataclass(frozen=True)
class TrialList:
    groups: list[CellGroup]
    page: Page
    note: str  # why the page shown is not the one asked for, or ""
    cells: list[tuple[str, str, int]]  # every cell with a trial: (key, label, trials), for the filter
    cell: str  # the filter's cell key, or ""
    kind: str  # the filter's player kind, or ""
    total: int  # trials in the store, before filtering

    @property
    def query(self) -> str:
        """The filters as a query string's start (``cell=...&kind=...&``), for the pager's links."""
        given = {name: value for name, value in (("cell", self.cell), ("kind", self.kind)) if value}
        return urlencode(given) + "&" if given else ""

    @property
    def kinds(self) -> list[tuple[str, str]]:
        return list(Trial.PlayerKind.choices)


def page_note(asked: int, page: Page, what: str, within: str = "") -> str:
    """Why ``page`` is not the page asked for ("" when it is): ``what`` names the paged list
    ("the action log"), ``within`` what narrows it (" in this family")."""
    if asked == page.number:
        return ""
    if asked < 1:
        return f"There is no page {asked} of {what}; it starts at page 1, shown here."
    last = page.paginator.num_pages
    return (f"{what[0].upper()}{what[1:]} has {last} page{'s' if last != 1 else ''}{within}; page {asked} is past "
            "the end, so the last page is shown.")


def trial_list(seen: QuerySet[Trial], *, cell: str = "", kind: str = "", page: int = 1) -> TrialList:
    """The trials of ``seen`` (those the viewer may see); ``cell`` is a :func:`cell_key` (one no
    trial has lists nothing); ``kind`` a player kind."""
    counts = list(seen.values("task_id", "seed").annotate(n=Count("id")).order_by("task_id", "seed"))
    cells = [(cell_key(c["task_id"], c["seed"]), f"{c['task_id']} seed {c['seed']}", c["n"]) for c in counts]
    trials = seen.only(*SHOWN).order_by("task_id", "seed", "-reward_composite", "id")
    if cell:
        task_id, _, seed = cell.rpartition("-")
        trials = trials.filter(task_id=task_id, seed=int(seed))
    if kind:
        trials = trials.filter(player_kind=kind)
    current = Paginator(trials, LIST_SIZE).get_page(max(page, 1))
    rows = list(current.object_list)
    totals = {(c["task_id"], c["seed"]): c["n"] for c in
              trials.values("task_id", "seed").annotate(n=Count("id")).order_by()
              .filter(task_id__in={t.task_id for t in rows})}
    # The trials either side of the page, to say whether its first and last cells run on past it.
    before = trials[current.start_index() - 2] if rows and current.has_previous() else None
    after = trials[current.end_index()] if rows and current.has_next() else None
    runs = [(cell, list(group)) for cell, group in groupby(rows, key=lambda t: ((t.task_id, t.seed), t.cell_label))]
    groups = []
    for i, ((key, label), group) in enumerate(runs):
        continued = i == 0 and before is not None and (before.task_id, before.seed) == key
        goes_on = i == len(runs) - 1 and after is not None and (after.task_id, after.seed) == key
        groups.append(CellGroup(label, totals.get(key, 0), group, continued, goes_on))
    note = page_note(page, current, "the trial list") if rows else ""  # an empty list says why itself
    return TrialList(groups, current, note, cells, cell, kind, sum(c[2] for c in cells))

