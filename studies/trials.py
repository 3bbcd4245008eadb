"""A study's human shifts written as trial folders, for the explorer and the CLI's tools.

An ended shift is replayed from its stored calls (the calls that reached the store, in
order) into a fresh recording episode, settled as the shift was, and written by the
one trial writer (:func:`environment.trial.settle`) with the study's calibration: the
folder then imports into the explorer as a human trial (its ``participant`` label),
and ``storebench regrade`` and ``replay`` check it like any other.  The composite it
records is the shift's own, recomputed: :func:`export_trials` says so, or says where they
differ and what the two gradings did not share (a calibration, an engine release).

The participant is named by their study label, or (``deidentified``, folders to share) by
their participant code; never by account or invitation.  A withdrawal removes the imported
trials named either way.
Rehearsal bots, practice shifts and invalidated attempts are left out; ``selected``
keeps only the attempts selected as the study's reference scores.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from environment.trial import play_actions, settle
from shifts.cache import replayable
from shifts.errors import TaskUnavailable
from shifts.installed import armed
from shifts.lifecycle import release
from shifts.models import Shift

from .design import check_calibration
from .errors import StudyError
from .models import COMPLETED_STATUSES, Attempt, Study

HUMAN_SHIFT = "human shift"  # the trial's policy: who played


@dataclass(frozen=True)
class Written:
    """One attempt's outcome: its folder, and whether the recomputed composite is the shift's."""

    attempt: Attempt
    folder: Path
    composite: float
    kept: bool  # the folder was there already and was left as it was
    differs: bool  # the recomputed composite is not the one the shift was graded with
    why: str = ""  # what differs between the shift's grading and this one, when it does
    skipped: str = ""  # why nothing was written (the shift's task is not installed here)

    def line(self) -> str:
        if self.skipped:
            return f"skipped    {self.folder}: {self.skipped}"
        if self.kept:
            return f"kept       {self.folder} (already written)"
        note = (f"; the shift was graded {self.attempt.shift.score_composite} when it ended ({self.why})"
                if self.differs else "")
        return f"wrote      {self.folder}: composite {self.composite:.6f}{note}"


def _short(digest: str) -> str:
    """A calibration hash as the pages show it: twelve hex digits, without its "sha256:"."""
    return digest.removeprefix("sha256:")[:12] if digest else "none (calibrated on the spot)"


def why_differs(shift: Shift, study: Study, release: str) -> str:
    """What the shift's grading and the export's do not share: the calibration (the study's
    hash against the one the shift was graded with) and the engine's release."""
    reasons = []
    if shift.calibration_hash != study.calibration_hash:
        reasons.append(f"with calibration {_short(shift.calibration_hash)}; this export uses the study's, "
                       f"{_short(study.calibration_hash)}")
    if not shift.release or not release:
        reasons.append(f"by release {shift.release or 'unknown'}; this is release {release or 'unknown'} (the "
                       "package's version cannot be read, so a change of engine cannot be ruled out)")
    elif shift.release != release:
        reasons.append(f"by release {shift.release}; this is release {release}")
    if not reasons:
        return "same calibration and release: the replay does not reproduce the shift's store"
    return "graded " + " and ".join(reasons)


def exported_attempts(study: Study, *, selected: bool = False):
    """The attempts whose shifts are written: played and completed (submitted or timed out,
    as the study's figures count them; not a no-show closed unstarted, an abandoned or an
    invalidated attempt), by a person still in the study (a withdrawn person's data leaves
    every export), not a rehearsal bot or practice."""
    attempts = (study.attempts.filter(shift__status=Shift.Status.ENDED, shift__started_at__isnull=False,
                                      status__in=COMPLETED_STATUSES, participant__withdrawn_at__isnull=True,
                                      is_bot=False, is_practice=False)
                .select_related("participant", "cell", "shift")
                .order_by("cell__task_id", "cell__seed", "participant__label", "number"))
    return attempts.filter(is_selected=True) if selected else attempts


def folder_name(attempt: Attempt) -> str:
    return f"{attempt.cell.task_id}-{attempt.cell.seed}-human-attempt{attempt.pk}"


def named(attempt: Attempt, deidentified: bool) -> str:
    """How a trial folder names the person: their study label, or for sharing their code."""
    return attempt.participant.code if deidentified else attempt.participant.label


def _kept_naming(folder: Path, attempt: Attempt, deidentified: bool) -> None:
    """Refuse to keep a folder written naming the person otherwise than asked now (a folder
    written with labels kept in a de-identified export would name them)."""
    try:
        written = json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("participant")
    except (OSError, ValueError):
        written = None
    if written != named(attempt, deidentified):
        asked = "by code (--deidentified)" if deidentified else "by study label"
        raise StudyError(f"{folder} is already there, written naming the participant otherwise than {asked} now; "
                         "write into a new --out folder (or remove that one)")


def export_trials(study: Study, out: Path, *, selected: bool = False, deidentified: bool = False) -> Iterator[Written]:
    """Write each exported attempt's trial folder under ``out`` (one at a time, as a row
    generator: a caller shows progress); a folder already there is kept as it is, if it names
    the person as asked (their label, or with ``deidentified`` their code).  The caller settles
    the study first (:func:`studies.settling.settle_study`, as the export task does), so that an
    attempt whose shift ended meanwhile is among those written."""
    calibration = check_calibration(study)
    for attempt in exported_attempts(study, selected=selected):
        folder = out / folder_name(attempt)
        shift = attempt.shift
        if folder.exists():
            _kept_naming(folder, attempt, deidentified)
            yield Written(attempt, folder, float(shift.score_composite or 0), kept=True, differs=False)
            continue
        try:
            episode = play_actions(armed(shift.task_id, shift.seed, record=True), replayable(shift), stop=False)
        except TaskUnavailable as gone:
            yield Written(attempt, folder, float(shift.score_composite or 0), kept=False, differs=False,
                          skipped=f"its task cannot be loaded on this server ({gone.reason}); install it "
                                  "again, then run this again to write it")
            continue
        data = settle(episode, folder, policy=HUMAN_SHIFT, calibration=calibration,
                      calibration_hash=study.calibration_hash,
                      labels={"participant": named(attempt, deidentified), "study": study.name})
        composite = float(data["reward_composite"])
        differs = shift.score_composite is not None and Decimal(str(composite)).quantize(
            Decimal(1).scaleb(-6)) != Decimal(shift.score_composite).quantize(Decimal(1).scaleb(-6))
        yield Written(attempt, folder, composite, kept=False, differs=differs,
                      why=why_differs(shift, study, release()) if differs else "")
