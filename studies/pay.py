"""Pay: what each attempt earns, approved by a coordinator, and the files a platform takes.

* The rule is the study's: ``base_pay_cents`` for every scored attempt whose shift
  started and ended (completed, or closed by the team or a platform fault; an attempt
  that never started earns no base pay), a bonus by score band
  (``bonus_bands``: ``[[min composite, cents], ...]``, the highest band the composite
  reaches) for a completed attempt, and ``fault_compensation_cents`` for an attempt
  lost to a platform fault.  All amounts are integer cents (pence on Prolific).
* The pay page shows each attempt's proposal computed now from the shift's times and
  the rule (a read).  Approving (a POST, with a reason) writes one :class:`PayRecord`
  per attempt with the amounts as approved and audits it; an approved record is
  never changed, and approving twice is refused.
* The bonus file is Prolific's bulk-bonus format: one line ``PROLIFIC_PID,amount``
  per participant (amount in pounds, two decimals, bonus + compensation of their
  approved records, no header).  The payments table has one row per approved record.
  Withdrawn participants are paid what was approved but their ids stay in these files
  (pay is owed); they leave the research exports, not the payments.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.utils import timezone

from environment.csvcells import safe_cell

from . import audit
from .completion import not_their_doing
from .errors import StudyError
from .models import Attempt, AuditAction, PayRecord, PayStatus, Study
from .permissions import Action, require


def parse_bands(text: str) -> list[list]:
    """``"0.6:50, 0.8:150"`` -> ``[["0.6", 50], ["0.8", 150]]`` (sorted by threshold)."""
    bands: list[list] = []
    for part in [p.strip() for p in (text or "").split(",") if p.strip()]:
        try:
            low, cents = part.split(":")
            low_d, cents_i = Decimal(low.strip()), int(cents.strip())
        except (ValueError, InvalidOperation) as exc:
            raise StudyError(f"a bonus band is 'min_score:pence' (e.g. 0.6:50), not {part!r}") from exc
        if not low_d.is_finite() or not Decimal(0) <= low_d <= Decimal(1) or cents_i < 0:
            raise StudyError(f"bonus band {part!r}: the score must be between 0 and 1 and the pence not negative")
        same = next((b for b in bands if Decimal(str(b[0])) == low_d), None)
        if same is not None:
            raise StudyError(f"bonus bands {same[0]}:{same[1]} and {part!r} start at the same score; give each "
                             "score one band")
        bands.append([str(low_d), cents_i])
    return sorted(bands, key=lambda b: Decimal(b[0]))


def bands_text(bands: list) -> str:
    return ", ".join(f"{low}:{cents}" for low, cents in bands)


def bonus_for(study: Study, composite: Decimal | None) -> int:
    if composite is None:
        return 0
    cents = 0
    for low, amount in sorted(study.bonus_bands, key=lambda b: Decimal(b[0])):
        if composite >= Decimal(low):
            cents = int(amount)
    return cents


@dataclass(frozen=True)
class Proposal:
    attempt: Attempt
    wall_seconds: int
    active_seconds: int
    paused_seconds: int
    base_cents: int
    bonus_cents: int
    compensation_cents: int
    record: PayRecord | None  # the approved record, if any

    @property
    def total_cents(self) -> int:
        return self.base_cents + self.bonus_cents + self.compensation_cents

    @property
    def payable(self) -> bool:
        return self.record is None and self.total_cents > 0


def propose(attempt: Attempt) -> Proposal:
    study, shift, outcome = attempt.study, attempt.shift, attempt.outcome
    played = shift.started_at is not None and shift.ended_at is not None
    ended = played and (outcome.is_completed or not_their_doing(attempt))
    record = PayRecord.objects.filter(attempt=attempt).first()
    return Proposal(
        attempt=attempt, wall_seconds=shift.wall_seconds, active_seconds=shift.active_seconds,
        paused_seconds=shift.paused_seconds,
        base_cents=study.base_pay_cents if ended else 0,
        bonus_cents=bonus_for(study, outcome.composite) if outcome.is_completed else 0,
        compensation_cents=study.fault_compensation_cents if attempt.platform_fault else 0,
        record=record)


def proposals(actor, study: Study) -> list[Proposal]:
    require(actor, study, Action.MANAGE)
    qs = (Attempt.objects.filter(study=study, is_practice=False, is_bot=False)
          .select_related("shift", "study", "cell", "participant").order_by("cell__task_id", "cell__seed", "number"))
    return [propose(a) for a in qs]


def approve(actor, attempt: Attempt, reason: str) -> PayRecord:
    """Approve ``attempt``'s pay as the rule proposes it now (locked, audited, once)."""
    require(actor, attempt.study, Action.MANAGE)
    reason = (reason or "").strip()
    if not reason:
        raise StudyError("a reason is required to approve pay")
    with transaction.atomic():
        attempt = Attempt.objects.select_for_update().select_related("shift", "study", "cell", "participant") \
            .get(pk=attempt.pk)
        if PayRecord.objects.filter(attempt=attempt).exists():
            raise StudyError(f"the pay of {attempt.cell.key} attempt #{attempt.number} is already approved")
        p = propose(attempt)
        if p.total_cents == 0:
            raise StudyError(f"{attempt.cell.key} attempt #{attempt.number} earns nothing yet "
                             "(not ended, or the pay rule is all zero)")
        record = PayRecord.objects.create(
            attempt=attempt, wall_seconds=p.wall_seconds, active_seconds=p.active_seconds,
            paused_seconds=p.paused_seconds, base_cents=p.base_cents, bonus_cents=p.bonus_cents,
            compensation_cents=p.compensation_cents, status=PayStatus.APPROVED, approved_by=actor,
            approved_at=timezone.now(), reason=reason,
            rule={"base_pay_cents": attempt.study.base_pay_cents, "bonus_bands": attempt.study.bonus_bands,
                  "fault_compensation_cents": attempt.study.fault_compensation_cents})
        audit.record(attempt.study, actor, AuditAction.PAY_APPROVED, reason=reason, attempt=attempt,
                     base_cents=p.base_cents, bonus_cents=p.bonus_cents, compensation_cents=p.compensation_cents)
    return record


def _pounds(cents: int) -> str:
    return f"{Decimal(cents) / 100:.2f}"


def approved(study: Study):
    return (PayRecord.objects.filter(attempt__study=study, status=PayStatus.APPROVED)
            .select_related("attempt__participant", "attempt__cell", "approved_by")
            .order_by("attempt__participant__label", "attempt__cell__task_id", "attempt__cell__seed"))


def _bonuses(study: Study) -> tuple[dict[str, int], list[str]]:
    """Approved bonus and compensation pence per PROLIFIC_PID, and the labels of the people
    owed some who have no PROLIFIC_PID (the bulk-bonus file cannot name them)."""
    totals: dict[str, int] = {}
    missing: set[str] = set()
    for record in approved(study):
        extra = record.bonus_cents + record.compensation_cents
        if extra == 0:
            continue
        pid = record.attempt.participant.external_ids.get("PROLIFIC_PID")
        if not pid:
            missing.add(record.attempt.participant.label)
            continue
        totals[pid] = totals.get(pid, 0) + extra
    return totals, sorted(missing)


def left_out_of_bonus_file(study: Study) -> list[str]:
    """Who is owed an approved bonus or compensation the bonus file leaves out (no PROLIFIC_PID)."""
    return _bonuses(study)[1]


def bonus_file(actor, study: Study) -> tuple[str, list[str]]:
    """The bulk-bonus text and the labels of paid people without a PROLIFIC_PID (audited)."""
    require(actor, study, Action.MANAGE)
    totals, missing = _bonuses(study)
    text = "".join(f"{pid},{_pounds(cents)}\n" for pid, cents in sorted(totals.items()))
    audit.record(study, actor, AuditAction.BONUS_FILE, people=len(totals), total_cents=sum(totals.values()),
                 without_pid=missing or None)
    return text, missing


PAYMENT_COLUMNS = ["participant", "prolific_pid", "cell", "attempt", "wall_seconds", "active_seconds",
                   "paused_seconds", "base", "bonus", "compensation", "total", "approved_by", "approved_at",
                   "reason"]


def payments_csv(actor, study: Study) -> str:
    require(actor, study, Action.MANAGE)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(PAYMENT_COLUMNS)
    for r in approved(study):
        a = r.attempt
        # Text cells (labels, ids, names, reasons) are written so no spreadsheet runs them as formulas.
        writer.writerow([safe_cell(a.participant.label), safe_cell(a.participant.external_ids.get("PROLIFIC_PID", "")),
                         a.cell.key, a.number, r.wall_seconds, r.active_seconds, r.paused_seconds,
                         _pounds(r.base_cents), _pounds(r.bonus_cents), _pounds(r.compensation_cents),
                         _pounds(r.total_cents), safe_cell(r.approved_by.username if r.approved_by else ""),
                         r.approved_at.isoformat(), safe_cell(r.reason)])
    return out.getvalue()
