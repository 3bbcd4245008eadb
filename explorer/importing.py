"""Importing trial folders: the service behind ``manage.py import_trials`` and the tests.

One folder becomes one :class:`~explorer.models.Trial` with its windows, calls and
events, in one transaction, or nothing at all.  A folder already imported (same
content hash) is reported as a duplicate and left alone.  The failure-mode report
is computed here, once, by replaying the action log in the engine
(:func:`environment.analyze.analyze`); it is skipped, with the reason, when the
trial ran on a world or task file other than this engine's, because a replay would
then describe a different store.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.db import DataError, IntegrityError, transaction
from django.db.models import TextChoices

from environment import simtime
from environment.analyze import analyze
from environment.anchors import ANCHORS
from environment.engine.episode import ORDER_FLOW
from environment.engine.settlement import business_normalized
from environment.errors import StoreBenchError
from environment.grading import TOLERANCE
from environment.replay import played_elsewhere
from environment.tasks import get_task
from environment.tools import REGISTRY
from shifts import withdrawals

from .calibrations import CellChoice, choose_cell
from .folders import FolderRefused, Passed, TrialFolder, read_folder, trial_folders
from .models import ToolFamily, Trial, TrialCall, TrialEvent, TrialWindow

BATCH = 1000


class ImportStatus(TextChoices):
    IMPORTED = "imported", "Imported"
    DUPLICATE = "duplicate", "Already imported"
    REFUSED = "refused", "Refused"
    SKIPPED = "skipped", "Skipped"


@dataclass
class ImportOutcome:
    path: str
    status: ImportStatus
    trial: Trial | None = None
    reason: str = ""

    def line(self) -> str:
        if self.status in (ImportStatus.REFUSED, ImportStatus.SKIPPED):
            return f"{self.status.value:<10} {self.path}: {self.reason}"
        t = self.trial
        assert t is not None, "only a refused folder has no trial"
        return (f"{self.status.value:<10} {self.path} -> trial {t.pk} ({t.task_id} seed {t.seed}, {t.player}, "
                f"composite {t.reward_composite:.6f})")


def _study(summary: dict) -> str:
    """The study a human trial's summary.json names ("" for other trials and none named)."""
    study = summary.get("study") if summary.get("participant") else None
    return str(study)[:120] if study else ""


def _withdrawal(summary: dict, *, lock: bool = False) -> str:
    """Why a human trial's folder may not be imported, its participant having withdrawn ("" if not)."""
    kind, player = _player(summary)
    study = _study(summary)
    if kind == Trial.PlayerKind.HUMAN and study and withdrawals.is_withdrawn(study, player, lock=lock):
        return f"participant {player} has withdrawn from study {study}: their data may not be imported"
    return ""


def _refuse_withdrawn(summary: dict, *, lock: bool = False) -> None:
    why = _withdrawal(summary, lock=lock)
    if why:
        raise FolderRefused(why)


def remove_person(study: str, label: str) -> int:
    """The shift domain's withdrawal holder (added in ``ExplorerConfig.ready``): delete the
    human trials of the participant ``label`` of ``study``; how many there were."""
    _, removed = Trial.objects.filter(player_kind=Trial.PlayerKind.HUMAN, study=study, player=label).delete()
    return removed.get(Trial._meta.label, 0)  # its windows, calls and events go with it


def _player(summary: dict) -> tuple[str, str]:
    if summary.get("participant"):
        return Trial.PlayerKind.HUMAN, str(summary["participant"])
    if summary.get("model"):
        return Trial.PlayerKind.MODEL, str(summary["model"])
    policy = str(summary.get("policy") or "recorded actions")
    return (Trial.PlayerKind.ANCHOR if policy in ANCHORS else Trial.PlayerKind.RECORDED), policy


def _dec(value) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _exact(value):
    """A calibration cell as stored: every float as its shortest decimal text."""
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    return str(value) if isinstance(value, float) else value


def _task_matches(manifest: dict):
    """The local task when the trial ran on this engine's world and task file, else None and why."""
    try:
        elsewhere = played_elsewhere(manifest)
        return (None, elsewhere) if elsewhere else (get_task(manifest["task"]), "")
    except StoreBenchError as exc:
        return None, str(exc)


def _window_rows(trial: Trial, rows: list[dict]) -> list[TrialWindow]:
    """Row n of windows.jsonl holds the balances at the start of window n+1 (the end of window n),
    its dense reward is window n+1's, and its order counters are window n's."""
    out = []
    for n, row in enumerate(rows):
        counters = {key: (0 if n == 0 else row.get(key)) for key in ORDER_FLOW} if ORDER_FLOW[0] in row else {}
        out.append(TrialWindow(
            trial=trial, window=n, at=row["at"], cash_cents=row["cash_cents"],
            receivable_cents=row["receivable_cents"], in_transit_cents=row["in_transit_cents"],
            net_assets_cents=row["net_assets_cents"], inventory_units=row["inventory_units"],
            inventory_cost_cents=row["inventory_cost_cents"], dense_value_cents=row["dense_value_cents"],
            dense_reward_cents=rows[n - 1].get("dense_reward_cents") if n else None,
            rating=Decimal(row["rating"]), **counters,
        ))
    return out


def _call_rows(trial: Trial, actions: list[dict], observations: list[str] | None) -> Iterable[TrialCall]:
    for i, entry in enumerate(actions):
        spec = REGISTRY.get(entry["tool"])
        yield TrialCall(
            trial=trial, seq=i + 1, window=entry.get("window", 0), tool=entry["tool"][:64],
            family=ToolFamily(spec.family.value) if spec else ToolFamily.UNKNOWN,
            spent_operation=bool(entry.get("op", False)), ok=bool(entry.get("ok", True)),
            error_code=str(entry.get("error", ""))[:64], arguments=entry.get("arguments") or {},  # null: none, as the engine reads it
            result=observations[i] if observations is not None and i < len(observations) else "",
        )


def _event_detail(event) -> str:
    if event.message or event.rumor:
        return event.message or event.rumor
    params = {"factor": event.factor, "season": event.season_tag, "category": event.category,
              "country": event.country, "vendor": event.vendor, "until day": event.until_days}
    shown = ", ".join(f"{k} {v}" for k, v in params.items() if v not in (None, 1.0))
    return f"{event.kind.value.replace('_', ' ')} ({shown}); no notice to the operator"


def _event_rows(trial: Trial, folder: TrialFolder, task) -> list[TrialEvent]:
    windows = folder.windows
    start = simtime.parse(windows[0]["at"]) if windows else 0
    if task is not None:
        length = task.window_hours * simtime.HOUR
    elif len(windows) > 1:
        length = simtime.parse(windows[1]["at"]) - start
    else:
        length = 12 * simtime.HOUR
    out = []
    for row in folder.events:
        index = int(row.get("index", 0))
        defined = task.events[index] if task is not None and index < len(task.events) else None
        out.append(TrialEvent(
            trial=trial, index=index, kind=str(row["kind"]), channel=TrialEvent.Channel(row["channel"]),
            at=row["at"], window=math.ceil((simtime.parse(row["at"]) - start) / length) + 1,
            detail=_event_detail(defined) if defined is not None else "",
        ))
    return out


def _check_business(score: dict, choice: CellChoice) -> None:
    """Business is what business_raw gives with the zero and scale of the calibration the
    trial was graded with (the composite is checked against its components when the folder
    is read; this checks the one component a calibration decides)."""
    assert choice.cell is not None
    expected = business_normalized(Decimal(score["business_raw"]), Decimal(str(choice.cell["business_zero_raw"])),
                                   Decimal(str(choice.cell["business_scale"])))
    if abs(Decimal(score["business"]) - expected) > TOLERANCE:
        raise FolderRefused(f"score.json: business {score['business']} is not what business_raw "
                            f"{score['business_raw']} gives with the zero and scale of {choice.label} ({expected}); "
                            "the score was edited, so the trial is not imported")


def _refresh_cell(trial: Trial, folder: TrialFolder) -> None:
    """A trial imported when no calibration file gave its cell (none had it, or one could not
    be read) takes the cell a file gives now: importing its folder again is how it changes."""
    manifest = folder.manifest
    choice = choose_cell(manifest["task"], int(manifest["seed"]), manifest.get("calibration_hash"))
    if choice.cell is None:
        return
    trial.threshold = _dec(choice.cell["threshold"])
    trial.passed = trial.reward_composite >= trial.threshold if trial.threshold is not None else None
    trial.calibration_label, trial.cell = choice.label[:200], _exact(choice.cell)
    trial.save(update_fields=["threshold", "passed", "calibration_label", "cell"])


def _name_study(trial: Trial, folder: TrialFolder) -> None:
    """A human trial imported before trials kept their study takes it from its folder, so a
    withdrawal can find it; one whose participant has withdrawn is deleted and refused."""
    with transaction.atomic():
        why = _withdrawal(folder.summary, lock=True)
        if why:
            trial.delete()
        else:
            trial.study = _study(folder.summary)
            trial.save(update_fields=["study"])
    if why:
        raise FolderRefused(why)


def _trial(folder: TrialFolder) -> Trial:
    manifest, summary, score = folder.manifest, folder.summary, folder.score
    kind, player = _player(summary)
    _refuse_withdrawn(summary)
    choice = choose_cell(manifest["task"], int(manifest["seed"]), manifest.get("calibration_hash"))
    if choice.exact and choice.cell is not None:
        _check_business(score, choice)
    composite = Decimal(score["reward_composite"])
    threshold = _dec(choice.cell["threshold"]) if choice.cell else None
    return Trial(
        content_hash=folder.content_hash, source_path=str(folder.path.resolve())[:500],
        integrity=Trial.Integrity.VERIFIED if folder.checksums_verified else Trial.Integrity.UNCHECKED,
        task_id=manifest["task"], seed=int(manifest["seed"]), player_kind=kind, player=player[:200],
        study=_study(summary),
        termination=Trial.Termination(summary["termination"]), end_reason=str(summary.get("end_reason", ""))[:200],
        windows_played=summary["windows_played"], windows_total=summary["windows_total"],
        turns=summary.get("turns", len(folder.actions)), operations_spent=summary.get("operations_spent", 0),
        wall_seconds=_dec(summary.get("wall_seconds")),
        reward_composite=composite, business=Decimal(score["business"]), reliability=Decimal(score["reliability"]),
        continuity=Decimal(score["continuity"]), on_time_rate=_dec(score.get("on_time_rate")),
        return_handled_rate=_dec(score.get("return_handled_rate")),
        business_raw=Decimal(score["business_raw"]), net_assets=Decimal(score["net_assets"]),
        bankrupt=bool(score.get("bankrupt", False)),
        score={k: (str(v) if isinstance(v, Decimal) else v) for k, v in score.items()},
        threshold=threshold, passed=None if threshold is None else composite >= threshold,
        calibration_label=choice.label[:200], cell=_exact(choice.cell or {}),
        world_hash=str(manifest.get("world_hash", ""))[:80], task_file_hash=str(manifest.get("task_file_hash", ""))[:80],
        calibration_hash=str(manifest.get("calibration_hash") or "")[:80],
        source_version=str(manifest.get("source_version", ""))[:40],
    )


def import_trial(path: str | Path) -> ImportOutcome:
    """Import one trial folder; refused folders leave no trace."""
    try:
        folder = read_folder(path)
    except FolderRefused as exc:
        return ImportOutcome(str(path), ImportStatus.REFUSED, reason=exc.reason)
    existing = Trial.objects.filter(content_hash=folder.content_hash).first()
    if existing is not None:
        if existing.threshold is None:
            _refresh_cell(existing, folder)
        if not existing.study and _study(folder.summary):
            try:
                _name_study(existing, folder)
            except FolderRefused as exc:
                return ImportOutcome(str(path), ImportStatus.REFUSED, reason=exc.reason + " (the copy imported "
                                     "before was deleted)")
        return ImportOutcome(str(path), ImportStatus.DUPLICATE, existing)
    task, why_not = _task_matches(folder.manifest)
    try:
        trial = _trial(folder)
    except FolderRefused as exc:
        return ImportOutcome(str(path), ImportStatus.REFUSED, reason=exc.reason)
    trial.failure_modes = analyze(folder.path) if task is not None else None
    trial.failure_modes_note = "" if task is not None else f"not analysed: {why_not}"[:300]
    try:
        with transaction.atomic():
            _refuse_withdrawn(folder.summary, lock=True)  # again: a withdrawal may have come during the analysis
            trial.save()
            TrialWindow.objects.bulk_create(_window_rows(trial, folder.windows), batch_size=BATCH)
            TrialCall.objects.bulk_create(_call_rows(trial, folder.actions, folder.observations), batch_size=BATCH)
            TrialEvent.objects.bulk_create(_event_rows(trial, folder, task), batch_size=BATCH)
    except FolderRefused as exc:
        return ImportOutcome(str(path), ImportStatus.REFUSED, reason=exc.reason)
    except (IntegrityError, DataError) as exc:  # a lost connection or a bug is raised, not called a refusal
        existing = Trial.objects.filter(content_hash=folder.content_hash).first()
        if isinstance(exc, IntegrityError) and existing is not None:  # another import of it committed first
            return ImportOutcome(str(path), ImportStatus.DUPLICATE, existing)
        # A figure the shape checks let through but a column cannot hold (a score of 1000 or more,
        # a rating of 100): refused like any other malformed folder, and the run goes on.
        return ImportOutcome(str(path), ImportStatus.REFUSED, reason=f"the database cannot store a figure of this "
                             f"folder ({str(exc).splitlines()[0][:200]}); check its score.json, summary.json and "
                             "windows.jsonl")
    return ImportOutcome(str(path), ImportStatus.IMPORTED, trial)


def import_trials(paths: list[str | Path], progress: Callable[[int, int, ImportOutcome], None] | None = None
                  ) -> list[ImportOutcome]:
    """Import every trial folder named (a folder of trial folders names all those under it); the
    subfolders passed over are reported as skipped, with why, and release-layout trials as refused."""
    folders = trial_folders(paths)
    outcomes = []
    for i, folder in enumerate(folders, start=1):
        if isinstance(folder, Passed):
            status = ImportStatus.REFUSED if folder.refused else ImportStatus.SKIPPED
            outcome = ImportOutcome(str(folder.path), status, reason=folder.reason)
        else:
            outcome = import_trial(folder)
        outcomes.append(outcome)
        if progress is not None:
            progress(i, len(folders), outcome)
    return outcomes
