"""The study's reference figures from the database, through :mod:`studies.reference`.

:class:`Filters` decides which attempts count.  A withdrawn participant's attempts
are always left out.  By default bots and practice attempts are left out, coached retries stay in and invalid attempts stay out
(an invalid attempt has no trustworthy score); ``include_invalid`` brings back those whose
shift had ended by itself (submitted, timed out, or graded under another calibration)
before they were invalidated, with the score they had.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from . import reference
from .errors import StudyError
from .models import INVALIDATED, SCORE_FIELDS, Attempt, AttemptKind, AttemptStatus, Study
from .permissions import Action, require
from .wording import plural


@dataclass(frozen=True)
class Filters:
    include_practice: bool = False
    include_bots: bool = False
    include_coached: bool = True
    include_invalid: bool = False
    # Not a row filter: an export made for sharing leaves out what names a person (exports only).
    deidentified: bool = False

    @classmethod
    def from_mapping(cls, data, *, rows_only: bool = False) -> Filters:
        """The filters ``data`` names (text values as a query string gives them); with
        ``rows_only`` (the leaderboard), only the filters of which attempts count."""
        known = {name for name in cls.__dataclass_fields__ if not (rows_only and name == "deidentified")}
        unknown = sorted(set(data) - known)
        if unknown:
            raise StudyError(f"unknown {plural(len(unknown), 'filter')}: {', '.join(unknown)}; allowed: {', '.join(sorted(known))}")
        values = {}
        for key, value in data.items():
            if isinstance(value, bool):
                values[key] = value
            elif str(value).lower() in ("1", "true", "yes", "on"):
                values[key] = True
            elif str(value).lower() in ("0", "false", "no", "off", ""):
                values[key] = False
            else:
                raise StudyError(f"filter {key} must be true or false, not {value!r}")
        return cls(**values)

    def as_dict(self) -> dict:
        return asdict(self)


def attempts(study: Study, filters: Filters = Filters()):
    """The study's attempts that pass the filters, in a stable order."""
    qs = Attempt.objects.filter(study=study).select_related("cell", "participant", "shift", "study", "coach",
                                                            "selected_by")
    qs = qs.filter(participant__withdrawn_at__isnull=True)  # a withdrawn person's data leaves every figure
    if not filters.include_practice:
        qs = qs.filter(is_practice=False)
    if not filters.include_bots:
        qs = qs.filter(is_bot=False)
    if not filters.include_coached:
        qs = qs.exclude(kind=AttemptKind.COACHED_RETRY)
    if not filters.include_invalid:
        qs = qs.exclude(status=AttemptStatus.INVALID)
    return qs.order_by("cell__task_id", "cell__seed", "number")


def row_of(attempt: Attempt) -> reference.AttemptRow:
    """The attempt's reference row (a graded attempt), its scores read through its shift."""
    outcome = attempt.outcome
    if outcome.composite is None:
        raise StudyError(f"attempt #{attempt.number} on cell {attempt.cell.key} has no score yet")
    scores = outcome.components
    return reference.AttemptRow(
        cell=attempt.cell.key, task=attempt.cell.task_id, person=attempt.participant.code,
        composite=outcome.composite, threshold=attempt.cell.threshold, selected=attempt.is_selected,
        order=(outcome.completed_at.isoformat() if outcome.completed_at else "", attempt.number),
        components={name: scores[name] for name in SCORE_FIELDS},
    )


def counts(attempt: Attempt, filters: Filters) -> bool:
    """Whether an attempt's score is one the figures take: a completed attempt's, or, with
    ``include_invalid``, that of an attempt invalidated after its shift ended by itself (one
    the invalidation cut short was graded only because the invalidation ended it)."""
    outcome = attempt.outcome
    if outcome.composite is None:
        return False
    if outcome.is_completed:
        return True
    return (filters.include_invalid and outcome.status == AttemptStatus.INVALID
            and not attempt.shift.end_reason.startswith(INVALIDATED))


def reference_rows(study: Study, filters: Filters = Filters()) -> list[reference.AttemptRow]:
    return [row_of(a) for a in attempts(study, filters) if counts(a, filters)]


def study_figures(actor, study: Study, filters: Filters = Filters(), seed: int = reference.DEFAULT_SEED,
                  resamples: int = reference.RESAMPLES) -> reference.Figures:
    require(actor, study, Action.VIEW)
    return reference.compute(reference_rows(study, filters), components=SCORE_FIELDS, seed=seed,
                             resamples=resamples)
