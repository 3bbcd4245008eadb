"""Bulk work for a coordinator: CSV import, invitations as a CSV of links, one action on
many attempts or people with one reason, and withdrawal.

* **Import**: a CSV with a header; ``label`` is required, ``email``, ``years_ecommerce``,
  ``role``, ``platforms``, ``notes`` and ``PROLIFIC_PID``/``STUDY_ID``/``SESSION_ID``
  are optional (unknown columns are refused up front, naming them).  Each row is
  added in its own savepoint: a bad row is reported with its line number and the
  reason, and does not stop the others.  The report has one line per row.
* **Bulk invite** returns every link at once as CSV rows (label, PROLIFIC_PID, link,
  expiry), so a link cannot be lost in a flash message.
* **Bulk actions** (invalidate, select, assign) run each item through the same service
  as the single action, with the one reason given, and report per item.
* **Withdrawal** marks the participant withdrawn with a reason (audited): their
  attempts leave every figure, the leaderboard and the research exports
  (:mod:`studies.figures`), their unstarted attempts are closed, and they cannot be
  assigned again.  Audit events and approved pay stay (they are records, not data).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from environment.csvcells import safe_cell
from shifts import withdrawals
from shifts.ending import WITHDREW_REASON

from . import assignment, attempts, audit, participants
from .design import NO_NEW_ATTEMPT, NO_NEW_PARTICIPANT, refuse_closed
from .errors import StudyError
from .exports import withdrawal_supersedes
from .models import Attempt, AttemptStatus, AuditAction, Participant, Study
from .permissions import Action, require
from .wording import plural

IMPORT_COLUMNS = ("label", "email", *participants.QUALIFICATION_KEYS, *participants.EXTERNAL_ID_KEYS)
MAX_IMPORT_ROWS = 5000


@dataclass(frozen=True)
class RowReport:
    line: int  # line in the file (the header is line 1)
    label: str
    ok: bool
    message: str


def import_participants(actor, study: Study, text: str) -> list[RowReport]:
    require(actor, study, Action.MANAGE)
    refuse_closed(study, NO_NEW_PARTICIPANT)  # once, rather than on every row
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if "label" not in header:
        raise StudyError(_header_problem(header))
    unknown = [h for h in header if h not in IMPORT_COLUMNS]
    if unknown:
        raise StudyError(f"unknown {plural(len(unknown), 'column')}: {', '.join(unknown)}; columns allowed: {', '.join(IMPORT_COLUMNS)}"
                         + _case_hint(unknown))
    reports: list[RowReport] = []
    for index, raw in enumerate(reader):
        line = index + 2
        if index >= MAX_IMPORT_ROWS:
            raise StudyError(f"the CSV has more than {MAX_IMPORT_ROWS} rows; split it")
        row = {(k or "").strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        if None in raw:
            reports.append(RowReport(line, row.get("label", ""), False, "more values than columns"))
            continue
        label = row.get("label", "")
        try:
            ids = participants.external_ids_from(row)
            pid = ids.get("PROLIFIC_PID")
            holder = participants.pid_holder(study, pid) if pid else None
            if holder is not None:
                raise StudyError(f"PROLIFIC_PID {pid} already belongs to participant {holder.label!r} in this "
                                 "study (one Prolific account is one participant): correct the id or leave it out")
            with transaction.atomic():  # add_participant checks the e-mail address
                person = participants.add_participant(
                    actor, study, label, {k: row[k] for k in participants.QUALIFICATION_KEYS if row.get(k)},
                    email=row.get("email", ""))
                if ids:
                    person.external_ids = ids
                    person.save(update_fields=["external_ids"])
        except StudyError as exc:
            reports.append(RowReport(line, label, False, str(exc)))
        else:
            reports.append(RowReport(line, label, True, "added"))
    audit.record(study, actor, AuditAction.IMPORTED, rows=len(reports), added=sum(r.ok for r in reports),
                 refused=sum(not r.ok for r in reports))
    return reports


def _case_hint(names: list[str]) -> str:
    """How to respell column names that differ from allowed ones only in case."""
    by_fold = {c.casefold(): c for c in IMPORT_COLUMNS}
    fixes = [f"{n!r} should be {by_fold[n.casefold()]!r}" for n in names if n.casefold() in by_fold]
    return f" (column names are written exactly as listed: {', '.join(fixes)})" if fixes else ""


def _header_problem(header: list[str]) -> str:
    """Why a header row has no 'label' column, and what to change in the file."""
    allowed = f"columns allowed: {', '.join(IMPORT_COLUMNS)}"
    if len(header) == 1:
        for separator, name in ((";", "semicolons"), ("\t", "tabs")):
            if "label" in [h.strip().casefold() for h in header[0].split(separator)]:
                return (f"the columns are separated by {name}, not commas; save the file as CSV with commas "
                        f"(in Excel: CSV UTF-8 (Comma delimited)); {allowed}")
    return f"the CSV needs a header row with a 'label' column; {allowed}{_case_hint(header)}"


def report_csv(reports: list[RowReport]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["line", "label", "result", "message"])
    for r in reports:
        writer.writerow([r.line, safe_cell(r.label), "added" if r.ok else "refused", safe_cell(r.message)])
    return out.getvalue()


def invite_many(actor, study: Study, people: list[Participant], days: int,
                link_for) -> str:
    """Invite each person; the CSV of their links (``link_for(token)`` makes a link absolute)."""
    require(actor, study, Action.MANAGE)
    if not people:
        raise StudyError("choose at least one participant to invite")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["label", "PROLIFIC_PID", "link", "expires_at"])
    expires = (timezone.now() + timedelta(days=days)).isoformat(timespec="seconds")
    with transaction.atomic():
        for person in people:
            if person.study_id != study.pk:
                raise StudyError(f"participant {person.label} is not in study {study.name!r}")
            issued = participants.invite(actor, person, days * 24 * 3600)
            writer.writerow([safe_cell(person.label), safe_cell(person.external_ids.get("PROLIFIC_PID", "")),
                             link_for(issued.token), expires])
    return out.getvalue()


@dataclass(frozen=True)
class ItemReport:
    what: str
    ok: bool
    message: str


BULK_ATTEMPT_ACTIONS = ("invalidate", "select")


def act_on_attempts(actor, study: Study, chosen: list[Attempt], action: str, reason: str) -> list[ItemReport]:
    if action not in BULK_ATTEMPT_ACTIONS:
        raise StudyError(f"unknown bulk action {action!r}; choose {' or '.join(BULK_ATTEMPT_ACTIONS)}")
    if not (reason or "").strip():
        raise StudyError(f"a reason is required to {action} attempts")
    if not chosen:
        raise StudyError("choose at least one attempt")
    reports = []
    for attempt in chosen:
        what = f"{attempt.cell.key} #{attempt.number} ({attempt.participant.label})"
        try:
            if attempt.study_id != study.pk:
                raise StudyError(f"attempt {attempt.pk} is not in study {study.name!r}")
            if action == "invalidate":
                attempts.invalidate(actor, attempt, reason)
            else:
                attempts.select(actor, attempt, reason)
        except StudyError as exc:
            reports.append(ItemReport(what, False, str(exc)))
        else:
            reports.append(ItemReport(what, True, f"{action} done"))
    return reports


def assign_many(actor, study: Study, people: list[Participant], reason: str) -> list[ItemReport]:
    """Give each chosen person a cell by the study's policy, with one reason."""
    require(actor, study, Action.MANAGE)
    refuse_closed(study, NO_NEW_ATTEMPT)  # once, rather than for every person
    if not (reason or "").strip():
        raise StudyError("a reason is required to assign in bulk")
    if not people:
        raise StudyError("choose at least one participant")
    reports = []
    for person in people:
        try:
            attempt = assignment.assign_next(actor, study, participants=[person], reason=reason.strip())
        except StudyError as exc:
            reports.append(ItemReport(person.label, False, str(exc)))
            continue
        if attempt is None:
            reports.append(ItemReport(person.label, False, "no cell can be given now (not ready, busy or all full)"))
        else:
            reports.append(ItemReport(person.label, True, f"assigned {attempt.cell.key}"))
    return reports


def withdraw(actor, person: Participant, reason: str) -> Participant:
    study = person.study
    require(actor, study, Action.MANAGE)
    if not (reason or "").strip():
        raise StudyError("a reason is required to withdraw a participant")
    with transaction.atomic():
        locked = Participant.objects.select_for_update().get(pk=person.pk)
        if locked.withdrawn_at is not None:
            raise StudyError(f"participant {locked.label} was already withdrawn on {locked.withdrawn_at:%Y-%m-%d}")
        locked.withdrawn_at = timezone.now()
        locked.withdrawal_reason = reason.strip()
        locked.save(update_fields=["withdrawn_at", "withdrawal_reason"])
        closed = 0
        for attempt in Attempt.objects.filter(participant=locked, status=AttemptStatus.ASSIGNED).select_related("shift"):
            if attempt.shift.started_at is None:
                assignment.abandon_unstarted(attempt, WITHDREW_REASON)
                closed += 1
        superseded = withdrawal_supersedes(study, locked.label, locked.withdrawn_at)
        # the explorer's imported trials of theirs, named by label or, written de-identified, by code
        copies = withdrawals.withdrawn(study.name, locked.label) + withdrawals.withdrawn(study.name, locked.code)
        audit.record(study, actor, AuditAction.WITHDRAWN, reason=reason.strip(), participant=locked,
                     unstarted_closed=closed or None, exports_superseded=superseded or None,
                     copies_removed=copies or None)
    return locked
