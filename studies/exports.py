"""Exports: row generators, the codebook, and writing a job's files with a manifest.

Five tables, each written as CSV and JSON (a JSON file is a list of row objects):

* ``attempts``: one row per attempt (long format) with every score component, time on
  task (start, wall, active and paused seconds) and the build it ran on;
* ``participants``: one row per participant (qualifications, consent, recruitment ids,
  briefing and practice times); withdrawn participants are left out of it and of
  every other table;
* ``events``: one row per audit event, but none about a withdrawn person (the audit
  log keeps them), nor, unless the filters ask for them, about a bot or a practice attempt;
* ``aggregates``: the reference figures with their intervals;
* ``wide``: one row per participant, one column group per cell (convenience only).

Attempt counts: the participants and wide tables count a person's attempts in the export,
of any status (the export's filters applied), so both say the same number for one person.
Practice attempts are never counted there, even when ``include_practice`` lists them in
the attempts table: practice takes no quota, cannot be selected and is not paid, and the
wide table's best composite leaves it out too.

A de-identified export (``Filters.deidentified``), made to be shared, leaves out every
column that names a person (:data:`IDENTIFYING`: the coordinator's labels and the
recruitment platform's participant and session ids) and writes, in the events table, a
participant's code wherever their label or username would stand; the codebook lists only
the columns written and says what was left out, and the manifest records the choice.

Every table is produced by a generator of dicts whose keys are the codebook's
columns, in order.  ``codebook.json`` names every column with its type and meaning,
and ``manifest.json`` holds each file's row count and sha256. CSV text cells that a
spreadsheet would run as a formula are neutralised (:mod:`environment.csvcells`; the
codebook says how).  A job writes into a
temporary directory and renames it into place, so a rerun replaces a half-written
export rather than adding to it (the task is idempotent).
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count
from django.utils.crypto import salted_hmac

from environment.csvcells import CODEBOOK_NOTE, safe_cell
from shifts.briefing import BRIEFING_VERSION, ON_PRACTICE_TASK
from shifts.models import BriefingAcknowledgement, Shift

from . import reference
from .figures import Filters, attempts, reference_rows
from .models import SCORE_FIELDS, AttemptKind, AuditEvent, ExportJob, Study

TABLES = ("attempts", "participants", "events", "aggregates", "wide")
FORMATS = ("csv", "json")

# (column, type, meaning)
ATTEMPT_COLUMNS = (
    ("attempt_id", "integer", "database id of the attempt"),
    ("cell", "string", "task/seed"),
    ("task", "string", "task id (evaluation lens)"),
    ("seed", "integer", "task seed"),
    ("participant_code", "string", "the participant's unguessable code (pseudonym)"),
    ("participant_label", "string", "the coordinator's label for the participant"),
    ("attempt_number", "integer", "attempt number within the cell, counting every participant's attempts on it "
                                "(1 = the cell's first; the pages' #)"),
    ("kind", "string", "first, coached_retry or reassignment"),
    ("replaces_attempt_id", "integer", "the attempt this one replaces (empty for a first attempt)"),
    ("release", "string", "environment release the shift ran on"),
    ("calibration_hash", "string", "hash of the calibration file the shift was graded with"),
    ("selected", "boolean", "true for the cell's selected (retained) attempt"),
    ("selection_rule", "string", "rule that selected it: manual, latest or earliest"),
    ("status", "string", "assigned, active, paused, submitted, timed_out, abandoned or invalid"),
    ("end_reason", "string", "why the shift ended"),
    ("coached", "boolean", "a coached retry"),
    ("coach", "string", "username of the coach (coached retries)"),
    ("reassigned", "boolean", "a reassignment after a platform fault"),
    ("platform_fault", "boolean", "this attempt was spoiled by the platform, not the person"),
    ("practice", "boolean", "a practice attempt"),
    ("bot", "boolean", "played by a scripted bot"),
    ("assigned_at", "datetime", "when the attempt was assigned (ISO 8601, UTC)"),
    ("completed_at", "datetime", "when the shift ended (ISO 8601, UTC)"),
    ("threshold", "decimal", "the cell's pass threshold"),
    ("composite", "decimal", "composite score (0.7 business + 0.2 reliability + 0.1 continuity)"),
    ("passed", "boolean", "composite >= threshold"),
    ("business", "decimal", "normalised business score"),
    ("reliability", "decimal", "mean of on-time and returns-handled rates"),
    ("on_time_rate", "decimal", "share of orders due shipped on time by the merchant"),
    ("return_handled_rate", "decimal", "credit for returns handled, share of returns due"),
    ("continuity", "decimal", "share of the task's windows attended"),
    ("started_at", "datetime", "when the participant started the shift (ISO 8601, UTC)"),
    ("wall_seconds", "integer", "time on task: wall-clock seconds from start to end (breaks included)"),
    ("active_seconds", "integer", "time on task: seconds not paused"),
    ("paused_seconds", "integer", "time on task: seconds paused"),
    ("build_id", "string", "source commit + hash of the dependency files the attempt was created on"),
)
PARTICIPANT_COLUMNS = (
    ("participant_code", "string", "the participant's unguessable code (pseudonym)"),
    ("participant_label", "string", "the coordinator's label for the participant"),
    ("bot", "boolean", "a scripted bot"),
    ("entered_via_link", "boolean", "came through the study-level entry link (else a personal invitation)"),
    ("years_ecommerce", "integer", "self-reported years of e-commerce experience (not verified)"),
    ("role", "string", "self-reported role (not verified)"),
    ("platforms", "string", "self-reported platforms (not verified)"),
    ("prolific_pid", "string", "PROLIFIC_PID recorded at entry"),
    ("prolific_study_id", "string", "STUDY_ID recorded at entry"),
    ("prolific_session_id", "string", "SESSION_ID recorded at entry"),
    ("consent_version", "integer", "the consent version accepted (empty for a bot: a script gives no consent)"),
    ("consented_at", "datetime", "when consent was given (ISO 8601, UTC)"),
    ("briefing_acknowledged_at", "datetime", "when the current briefing was acknowledged"),
    ("practice_ended_at", "datetime", "when the first practice shift on the practice task ended"),
    ("returned_at", "datetime", "when the participant left through the return path"),
    ("attempts", "integer", "attempts in this export, of any status (the export's filters applied; practice attempts are "
                            "not counted, even when the export includes them): the wide table's attempts"),
    ("attempts_in_study", "integer", "every attempt of this participant in the study, practice and invalidated "
                                     "ones included, whatever the export's filters: the study page's count"),
)
EVENT_COLUMNS = (
    ("event_id", "integer", "database id of the event"),
    ("at", "datetime", "when it happened (ISO 8601, UTC)"),
    ("action", "string", "what happened (assigned, retry, reassigned, selected, deadline_changed, ...)"),
    ("actor", "string", "username of who did it (empty for the system; (withdrawn) for a withdrawn participant)"),
    ("attempt_id", "integer", "the attempt concerned"),
    ("cell", "string", "the cell concerned (task/seed)"),
    ("participant_code", "string", "the participant concerned (events about bots and practice attempts follow "
                                   "the export's filters, as in attempts)"),
    ("reason", "string", "the reason given"),
    ("detail", "json", "further detail as a JSON object (a withdrawn participant's label reads (withdrawn))"),
)
AGGREGATE_COLUMNS = (
    ("figure", "string", "equal_cell_mean, equal_person_mean, earliest_attempt_mean, pass_rate, "
                         "task_mean, component_mean or anchor_mean (anchors over the cells of "
                         "equal_cell_mean, i.e. with a selected attempt; over every cell of the study "
                         "while no cell has one)"),
    ("group", "string", "task id, component name (business, reliability, on_time_rate, "
                        "return_handled_rate or continuity, as the attempts table names them) or anchor "
                        "name (empty for study-level figures)"),
    ("value", "decimal", "point estimate"),
    ("ci_low", "decimal", "95% percentile bootstrap interval over cells, lower end"),
    ("ci_high", "decimal", "95% percentile bootstrap interval over cells, upper end"),
    ("n_cells", "integer", "cells contributing to the point estimate (for equal_person_mean, the selected "
                           "cells of the people it averages: the bootstrap resamples cells, not people)"),
    ("resamples", "integer", "bootstrap resamples"),
    ("seed", "integer", "bootstrap seed"),
)
WIDE_CELL_FIELDS = (
    ("attempts", "integer", "attempts by this participant on the cell in this export, of any status (practice attempts "
                            "not counted)"),
    ("selected_composite", "decimal", "composite of this participant's selected attempt on the cell"),
    ("best_composite", "decimal", "best composite of this participant's completed attempts on the cell "
                                  "(practice attempts left out)"),
)
WIDE_COLUMNS_FIXED = (
    ("participant_code", "string", "the participant's code"),
    ("participant_label", "string", "the participant's label"),
    ("bot", "boolean", "a scripted bot"),
    ("attempts", "integer", "attempts in this export, of any status (the export's filters applied; practice attempts are "
                            "not counted, even when the export includes them): the participants table's attempts"),
    ("selected_cells", "integer", "cells where this participant holds the selected attempt"),
    ("mean_selected_composite", "decimal", "mean composite over those cells"),
)


# The columns that name a person, left out of a de-identified export.
IDENTIFYING = {
    "attempts": ("participant_label",),
    "participants": ("participant_label", "prolific_pid", "prolific_session_id"),
    "wide": ("participant_label",),
}
DEIDENTIFIED_NOTE = ("a de-identified export: the columns that name a person (participant_label; prolific_pid and "
                     "prolific_session_id in participants) are left out; where a participant's label or username "
                     "stood (an event's actor, a reassignment's from_participant, a bonus file's without_pid) their "
                     "code stands, and where a team member's username stood (an event's actor, a member event's user, "
                     "an attempt's coach) a pseudonym team-xxxxxxxx, the same in every export of the study while "
                     "the site keeps its secret key; free text typed by the study team (reasons, coaching notes) is "
                     "kept as typed, so read it before sharing the files")
# What a de-identified export writes in the columns that otherwise hold usernames.
DEIDENTIFIED_MEANINGS = {
    ("attempts", "coach"): "the coach's pseudonym, team-xxxxxxxx (coached retries; the same in every export of the "
                           "study)",
    ("events", "actor"): "who did it: a participant's code, or a team member's pseudonym team-xxxxxxxx (the same in "
                         "every export of the study); empty for the system, (withdrawn) for a withdrawn participant",
}


def _s(value) -> str | None:
    return None if value is None else str(value)


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def attempt_rows(study: Study, filters: Filters) -> Iterator[dict]:
    names = Pseudonyms(study) if filters.deidentified else None
    for a in attempts(study, filters):
        yield {
            "attempt_id": a.pk, "cell": a.cell.key, "task": a.cell.task_id, "seed": a.cell.seed,
            "participant_code": a.participant.code, "participant_label": a.participant.label,
            "attempt_number": a.number, "kind": a.kind, "replaces_attempt_id": a.replaces_id,
            "release": a.release, "calibration_hash": a.calibration_hash, "selected": a.is_selected,
            "selection_rule": a.selection_rule, "status": a.status, "end_reason": a.end_reason,
            "coached": a.kind == AttemptKind.COACHED_RETRY,
            "coach": (names.of_user(a.coach_id) if names else a.coach.get_username()) if a.coach else "",
            "reassigned": a.kind == AttemptKind.REASSIGNMENT, "platform_fault": a.platform_fault,
            "practice": a.is_practice, "bot": a.is_bot, "assigned_at": _iso(a.assigned_at),
            "completed_at": _iso(a.completed_at), "threshold": _s(a.cell.threshold),
            "composite": _s(a.composite), "passed": a.passed, "business": _s(a.business),
            "reliability": _s(a.reliability), "on_time_rate": _s(a.on_time_rate),
            "return_handled_rate": _s(a.return_handled_rate), "continuity": _s(a.continuity),
            "started_at": _iso(a.shift.started_at), "wall_seconds": a.shift.wall_seconds,
            "active_seconds": a.shift.active_seconds, "paused_seconds": a.shift.paused_seconds,
            "build_id": a.build_id,
        }


def participant_rows(study: Study, filters: Filters) -> Iterator[dict]:
    counted = Counter(a.participant_id for a in attempts(study, filters) if not a.is_practice)
    people = (study.participants.filter(withdrawn_at__isnull=True).select_related("consent_version")
              .annotate(attempts_in_study=Count("attempts")))
    if not filters.include_bots:
        people = people.filter(is_bot=False)
    users = [p.user_id for p in people if p.user_id]
    acks = dict(BriefingAcknowledgement.objects.filter(user_id__in=users, version=BRIEFING_VERSION)
                .values_list("user_id", "acknowledged_at"))
    practice: dict = {}
    for user_id, ended in (Shift.objects.filter(ON_PRACTICE_TASK, participant_id__in=users,
                                                status=Shift.Status.ENDED)
                           .order_by("ended_at").values_list("participant_id", "ended_at")):
        practice.setdefault(user_id, ended)
    for p in people.order_by("label"):
        q, ids = p.qualifications, p.external_ids
        yield {
            "participant_code": p.code, "participant_label": p.label, "bot": p.is_bot,
            "entered_via_link": p.entered_via_link, "years_ecommerce": q.get("years_ecommerce"),
            "role": q.get("role"), "platforms": q.get("platforms"), "prolific_pid": ids.get("PROLIFIC_PID"),
            "prolific_study_id": ids.get("STUDY_ID"), "prolific_session_id": ids.get("SESSION_ID"),
            "consent_version": p.consent_version.version if p.consent_version else None,
            "consented_at": _iso(p.consented_at), "briefing_acknowledged_at": _iso(acks.get(p.user_id) if p.user_id is not None else None),
            "practice_ended_at": _iso(practice.get(p.user_id)), "returned_at": _iso(p.returned_at),
            "attempts": counted[p.pk], "attempts_in_study": p.attempts_in_study,
        }


WITHDRAWN = "(withdrawn)"


def _unnamed(value, labels: set[str]):
    """``value`` (an event's detail) with each of ``labels`` read as ``(withdrawn)``, in lists and mappings too."""
    if isinstance(value, str):
        return WITHDRAWN if value in labels else value
    if isinstance(value, list):
        return [_unnamed(v, labels) for v in value]
    if isinstance(value, dict):
        return {k: _unnamed(v, labels) for k, v in value.items()}
    return value


# The keys of an event's detail that hold participant labels, and those that hold usernames.
LABEL_KEYS = ("from_participant", "without_pid")
USERNAME_KEYS = ("user",)


class Pseudonyms:
    """How a de-identified export names people: a participant by their code; anyone else (the
    study team, staff) as ``team-`` and eight hex digits, the same in every export of the study
    while the site keeps its secret key, and not to be worked back without it (an HMAC of the
    study and the account)."""

    def __init__(self, study: Study) -> None:
        self.study = study
        rows = study.participants.values_list("label", "user_id", "code")
        self.code_of_label = {label: code for label, _user, code in rows}
        self.code_of_user = {user: code for _label, user, code in rows if user is not None}
        self._usernames: dict[str, str] = {}

    def of_user(self, user_id: int | None) -> str:
        if user_id is None:
            return ""
        if user_id in self.code_of_user:
            return self.code_of_user[user_id]
        digest = salted_hmac("storebench.exports.team", f"{self.study.pk}:{user_id}").hexdigest()
        return f"team-{digest[:8]}"

    def of_username(self, username: str) -> str:
        if username not in self._usernames:
            user_id = get_user_model().objects.filter(username=username).values_list("pk", flat=True).first()
            self._usernames[username] = self.of_user(user_id) if user_id is not None else "(unknown account)"
        return self._usernames[username]

    def detail(self, detail):
        """An event's detail with the labels and usernames its known keys hold written as above."""
        if not isinstance(detail, dict):
            return detail
        out = dict(detail)
        for key in LABEL_KEYS:
            if key in out:
                out[key] = self._each(out[key], lambda label: self.code_of_label.get(label, label))
        for key in USERNAME_KEYS:
            if key in out:
                out[key] = self._each(out[key], self.of_username)
        return out

    @staticmethod
    def _each(value, name):
        if isinstance(value, str):
            return name(value)
        if isinstance(value, list):
            return [name(v) if isinstance(v, str) else v for v in value]
        return value


def event_rows(study: Study, filters: Filters | None = None) -> Iterator[dict]:
    """The study's audit events, but none about a withdrawn person (theirs, or their
    attempts'); where another event names one (as its actor, or by label in its detail,
    as a reassignment from them or a bonus file that left them out does), the name reads
    ``(withdrawn)``.  As the attempts table, without ``filters`` asking for them, no event
    about a bot (theirs, or their attempts') or about a practice attempt.  The audit log
    itself keeps everything."""
    filters = filters or Filters()
    withdrawn = study.participants.filter(withdrawn_at__isnull=False)
    users = set(withdrawn.exclude(user=None).values_list("user_id", flat=True))
    labels = set(withdrawn.values_list("label", flat=True))
    names = Pseudonyms(study) if filters.deidentified else None
    events = (AuditEvent.objects.filter(study=study).exclude(participant__in=withdrawn)
              .exclude(attempt__participant__in=withdrawn).select_related("actor", "participant", "cell"))
    if not filters.include_bots:
        events = events.exclude(participant__is_bot=True).exclude(attempt__is_bot=True)
    if not filters.include_practice:
        events = events.exclude(attempt__is_practice=True)
    for e in events:
        detail = _unnamed(e.detail, labels) if labels else e.detail
        if names is not None:
            detail = names.detail(detail)
        if e.actor_id in users:
            actor = WITHDRAWN
        elif names is not None:
            actor = names.of_user(e.actor_id)
        else:
            actor = e.actor.get_username() if e.actor else ""
        yield {
            "event_id": e.pk, "at": _iso(e.created_at), "action": e.action, "actor": actor,
            "attempt_id": e.attempt_id,
            "cell": e.cell.key if e.cell else "", "participant_code": e.participant.code if e.participant else "",
            "reason": e.reason, "detail": detail,
        }


def _aggregate(figure: str, group: str, est: reference.Estimate, resamples: int, seed: int) -> dict:
    return {"figure": figure, "group": group, "value": _s(est.value), "ci_low": _s(est.low),
            "ci_high": _s(est.high), "n_cells": est.n, "resamples": resamples, "seed": seed}


def aggregate_rows(study: Study, filters: Filters, seed: int = reference.DEFAULT_SEED,
                   resamples: int = reference.RESAMPLES) -> Iterator[dict]:
    rows = reference_rows(study, filters)
    f = reference.compute(rows, components=SCORE_FIELDS, seed=seed, resamples=resamples)
    yield _aggregate("equal_cell_mean", "", f.equal_cell, resamples, seed)
    yield _aggregate("equal_person_mean", "", f.equal_person, resamples, seed)
    yield _aggregate("earliest_attempt_mean", "", f.earliest, resamples, seed)
    yield _aggregate("pass_rate", "", f.pass_rate, resamples, seed)
    for task, est in f.per_task.items():
        yield _aggregate("task_mean", task, est, resamples, seed)
    for name, est in f.components.items():
        yield _aggregate("component_mean", name, est, resamples, seed)
    cells = list(study.cells.all())
    covered = reference.anchor_cells(rows, (c.key for c in cells))  # as on the leaderboard
    anchors = reference.anchor_figures({c.key: {k: Decimal(v) for k, v in c.anchors.items()}
                                        for c in cells if c.key in covered},
                                       {c.key: c.task_id for c in cells}, seed=seed, resamples=resamples)
    for name, est in anchors.items():
        yield _aggregate("anchor_mean", name, est, resamples, seed)


def wide_columns(study: Study) -> list[tuple[str, str, str]]:
    columns = list(WIDE_COLUMNS_FIXED)
    for cell in study.cells.all():
        prefix = f"{cell.task_id}_{cell.seed}"
        columns += [(f"{prefix}__{name}", kind, f"{meaning} ({cell.key})") for name, kind, meaning in WIDE_CELL_FIELDS]
    return columns


def wide_rows(study: Study, filters: Filters) -> Iterator[dict]:
    cells = list(study.cells.all())
    per: dict[str, dict] = {}
    for row in attempt_rows(study, filters):
        code = row["participant_code"]
        entry = per.setdefault(code, {"row": row, "attempts": []})
        entry["attempts"].append(row)
    def order(item) -> str:  # by label, as the pages list people; by code where labels are left out
        return item[0] if filters.deidentified else item[1]["row"]["participant_label"]

    for code, entry in sorted(per.items(), key=order):
        rows = [r for r in entry["attempts"] if not r["practice"]]  # practice left out, as participant_rows counts
        selected = [Decimal(r["composite"]) for r in rows if r["selected"] and r["composite"]]
        out = {"participant_code": code, "participant_label": entry["row"]["participant_label"],
               "bot": entry["row"]["bot"], "attempts": len(rows), "selected_cells": len(selected),
               "mean_selected_composite": _s(reference.q6(sum(selected, Decimal(0)) / len(selected)) if selected else None)}
        for cell in cells:
            prefix = f"{cell.task_id}_{cell.seed}"
            mine = [r for r in rows if r["cell"] == cell.key]
            done = [Decimal(r["composite"]) for r in mine if r["composite"] is not None
                    and r["status"] in ("submitted", "timed_out")]
            chosen = [r["composite"] for r in mine if r["selected"]]
            out[f"{prefix}__attempts"] = len(mine)
            out[f"{prefix}__selected_composite"] = chosen[0] if chosen else None
            out[f"{prefix}__best_composite"] = _s(max(done)) if done else None
        yield out


DECIMAL_NOTE = ("a column of type decimal is written in the JSON files as a string of its digits (\"0.711665\"), as "
                "in the CSV files, so that no digit is changed by a binary floating-point number; read it as a decimal "
                "(or a float, if a rounded value will do); an empty value is null")


def codebook(study: Study, deidentified: bool = False) -> list[dict]:
    """Every column an export writes, with its type and meaning (a de-identified export's
    leaves out :data:`IDENTIFYING` and says so)."""
    tables = {"attempts": ATTEMPT_COLUMNS, "participants": PARTICIPANT_COLUMNS, "events": EVENT_COLUMNS,
              "aggregates": AGGREGATE_COLUMNS,
              "wide": wide_columns(study)}
    notes = [{"table": "(every CSV file)", "column": "(text cells)", "type": "note", "meaning": CODEBOOK_NOTE},
             {"table": "(every JSON file)", "column": "(decimal columns)", "type": "note", "meaning": DECIMAL_NOTE}]
    if deidentified:
        notes.append({"table": "(every file)", "column": "(de-identified)", "type": "note", "meaning": DEIDENTIFIED_NOTE})
    return [{"table": table, "column": name, "type": kind,
             "meaning": DEIDENTIFIED_MEANINGS.get((table, name), meaning) if deidentified else meaning}
            for table, columns in tables.items() for name, kind, meaning in columns
            if not (deidentified and name in IDENTIFYING.get(table, ()))] + notes


def columns_of(study: Study, table: str, deidentified: bool = False) -> list[str]:
    return [row["column"] for row in codebook(study, deidentified) if row["table"] == table]


# --- writing ---------------------------------------------------------------------------


def export_root() -> Path:
    """Where export jobs write: settings.STOREBENCH_EXPORT_ROOT, else $STOREBENCH_EXPORT_ROOT, else var/exports."""
    configured = getattr(settings, "STOREBENCH_EXPORT_ROOT", None) or os.environ.get("STOREBENCH_EXPORT_ROOT")
    return Path(configured) if configured else settings.BASE_DIR / "var" / "exports"


def job_dir(job_id: int) -> Path:
    return export_root() / f"job-{job_id}"


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return safe_cell(json.dumps(value, sort_keys=True))
    return safe_cell(str(value))


def write_table(directory: Path, table: str, columns: list[str], rows: Iterable[dict]) -> dict[str, int]:
    """Write ``<table>.csv`` and ``<table>.json`` from one pass over the rows; returns rows per file."""
    count = 0
    with (directory / f"{table}.csv").open("w", newline="", encoding="utf-8") as csv_file, \
            (directory / f"{table}.json").open("w", encoding="utf-8") as json_file:
        writer = csv.writer(csv_file)
        writer.writerow([safe_cell(c) for c in columns])
        json_file.write("[")
        for row in rows:
            writer.writerow([_csv_value(row.get(c)) for c in columns])
            json_file.write(("," if count else "") + "\n" + json.dumps({c: row.get(c) for c in columns}))
            count += 1
        json_file.write("\n]\n")
    return {f"{table}.csv": count, f"{table}.json": count}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_export(study: Study, filters: Filters, directory: Path, progress=lambda pct: None,
                 place=lambda: True) -> dict | None:
    """Write every table, the codebook and the manifest into ``directory`` (replaced whole);
    the manifest, or None when ``place()``, asked once all is written, says the files must
    not be put in place (the caller's job was finished or superseded meanwhile).

    Each call writes in a working folder of its own (``<directory>.tmp-<random>``, removed
    if the call fails), so two deliveries of one export job at once no longer remove each
    other's files; the last to finish puts its (identical) folder in place."""
    tmp = directory.with_name(f"{directory.name}.tmp-{uuid.uuid4().hex[:12]}")
    directory.parent.mkdir(parents=True, exist_ok=True)
    # Only the site's own account (and its group) may enter: the files hold labels and recruitment ids.
    tmp.mkdir(mode=0o750)
    try:
        manifest = _write_into(study, filters, tmp, progress)
        if not place():
            return None
        _replace(directory, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already once renamed
    return manifest


def withdrawal_supersedes(study: Study, who: str, when) -> list[int]:
    """A withdrawal takes the person's data out of every export made before it: the
    study's finished or running export jobs are marked failed saying why and what to do,
    and their files are removed once the withdrawal commits.  The ids of those jobs."""
    superseded = list(study.exports.filter(status__in=(ExportJob.Status.DONE, ExportJob.Status.RUNNING))
                      .values_list("pk", flat=True))
    ExportJob.objects.filter(pk__in=superseded).update(
        status=ExportJob.Status.FAILED, error=superseded_by(who, when))

    def remove() -> None:
        for pk in superseded:
            shutil.rmtree(job_dir(pk), ignore_errors=True)

    transaction.on_commit(remove)
    return superseded


def superseded_by(who: str, when) -> str:
    return (f"made before participant {who} withdrew ({when:%Y-%m-%d %H:%M}): a withdrawn person's data leaves "
            "every export, so its files were removed; request the export again")


def _replace(directory: Path, tmp: Path) -> None:
    """Put ``tmp`` where ``directory`` is: the old folder is renamed aside first and removed
    after, so a download finds one or the other (it found none while the old one was
    being deleted).  Another delivery renaming its own folder there between the two
    renames makes the second fail, and it is tried again."""
    for _ in range(5):
        aside = directory.with_name(f"{directory.name}.old-{uuid.uuid4().hex[:12]}")
        try:
            directory.rename(aside)
            moved = True
        except FileNotFoundError:
            moved = False
        try:
            tmp.rename(directory)
            return
        except OSError:
            if not directory.exists():
                raise
        finally:
            if moved:
                shutil.rmtree(aside, ignore_errors=True)
    tmp.rename(directory)


def _write_into(study: Study, filters: Filters, tmp: Path, progress) -> dict:
    counts: dict[str, int] = {}
    producers = {
        "attempts": lambda: attempt_rows(study, filters),
        "participants": lambda: participant_rows(study, filters),
        "events": lambda: event_rows(study, filters),
        "aggregates": lambda: aggregate_rows(study, filters),
        "wide": lambda: wide_rows(study, filters),
    }
    for i, table in enumerate(TABLES):
        counts.update(write_table(tmp, table, columns_of(study, table, filters.deidentified), producers[table]()))
        progress(int(90 * (i + 1) / len(TABLES)))
    book = codebook(study, filters.deidentified)
    (tmp / "codebook.json").write_text(json.dumps(book, indent=1) + "\n", encoding="utf-8")
    counts["codebook.json"] = len(book)
    files = {name: {"rows": rows, "sha256": sha256_of(tmp / name)} for name, rows in sorted(counts.items())}
    manifest = {"study": study.name, "calibration_hash": study.calibration_hash, "filters": filters.as_dict(),
                "files": files}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def zip_bytes(directory: Path) -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.iterdir()):
            archive.write(path, arcname=path.name)
    return buffer.getvalue()
