"""Study models: who takes part, in which cells, with which attempts, and who decided what.

Design:

* A :class:`Study` is pinned to one calibration file by its hash; every
  :class:`Cell` (task x seed) copies its threshold and anchor composites from that
  file when it is created, so figures never re-read a file that may have moved on.
* Roles are per study (:class:`StudyMembership`); the permission table lives in
  :mod:`studies.permissions` and is enforced by every service function.
* An :class:`Attempt` wraps exactly one ``console.Shift``; the console owns the
  shift's play and grading, the attempt mirrors its outcome (status, scores,
  release, calibration hash) when it is synchronised (:mod:`studies.attempts`).
* Two database constraints guard the study's shape: one open attempt per person
  and cell, and at most one selected attempt per cell.
* :class:`AuditEvent` is append-only: saving an existing row, deleting a row and
  bulk ``update``/``delete`` are refused by the ORM, and database triggers refuse
  UPDATE and DELETE as well (:mod:`studies.audit_triggers`).
* Scores are ``Decimal`` (``DecimalField``), never floats.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

import environment
from shifts.briefing import PRACTICE_CELL
from shifts.ending import DEADLINE_REASON
from shifts.models import Shift

SCORE: dict[str, Any] = {"max_digits": 12, "decimal_places": 6, "null": True, "blank": True}


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    COORDINATOR = "coordinator", "Coordinator"
    REVIEWER = "reviewer", "Reviewer"
    RESEARCHER = "researcher", "Researcher"
    PARTICIPANT = "participant", "Participant"


class AssignmentPolicy(models.TextChoices):
    BALANCED = "balanced", "Balanced (fewest attempts first)"
    RANDOM = "random", "Random (seeded)"
    ADAPTIVE = "adaptive", "Adaptive (favour strong performers)"


class Study(models.Model):
    name = models.CharField(max_length=120, unique=True)
    description = models.TextField(blank=True)
    calibration_path = models.CharField(max_length=300)
    calibration_hash = models.CharField(max_length=80)
    default_quota = models.PositiveIntegerField(default=1)
    policy = models.CharField(max_length=16, choices=AssignmentPolicy.choices,
                              default=AssignmentPolicy.BALANCED)
    random_seed = models.IntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                   related_name="+", null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The study-level entry link (a recruiting platform's study URL): open or closed,
    # named by an unguessable slug; the codes the platform checks at the end.
    entry_slug = models.CharField(max_length=40, unique=True, null=True, blank=True)
    entry_open = models.BooleanField(default=False)
    completion_url = models.URLField(max_length=300, default="https://app.prolific.com/submissions/complete")
    completion_code = models.CharField(max_length=40, blank=True)
    return_code = models.CharField(max_length=40, blank=True)
    # Pay rule, in integer cents (pence on Prolific): base per scored attempt, bonus by score
    # band ([[min composite as string, cents], ...], highest band that the composite reaches),
    # compensation for an attempt lost to a platform fault.
    base_pay_cents = models.PositiveIntegerField(default=0)
    bonus_bands = models.JSONField(default=list, blank=True)
    fault_compensation_cents = models.PositiveIntegerField(default=0)
    # Whether a participant's end page shows the cell's pass threshold next to their score
    # (off by default: the figure tells a participant where the scripted stores landed).
    show_threshold_to_participants = models.BooleanField(default=False)
    # A closed study admits nobody new and creates no attempt; what it holds stays readable and
    # its open shifts may be finished (:func:`studies.design.close_study`, :func:`~studies.design.refuse_closed`).
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+",
                                  null=True, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name


class StudyMembership(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="study_memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "user", "role"],
                                               name="membership_unique_role")]

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.study}"


class FormerTeamRole(models.Model):
    """A team role taken away (:func:`studies.design.remove_member`).  Whoever held one has seen
    pass thresholds and the anchors' play, so their account takes no scored attempt afterwards
    either: the membership row goes, this record of it stays."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="former_roles")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="former_team_roles")
    role = models.CharField(max_length=16, choices=Role.choices)
    removed_at = models.DateTimeField()

    class Meta:
        ordering = ["removed_at", "id"]

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.study} until {self.removed_at:%Y-%m-%d}"


class ConsentVersion(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="consent_versions")
    version = models.PositiveIntegerField()
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "-version"]
        constraints = [models.UniqueConstraint(fields=["study", "version"], name="consent_unique_version")]

    def __str__(self) -> str:
        return f"{self.study} consent v{self.version}"


class Participant(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                             related_name="study_participations", null=True, blank=True)
    code = models.CharField(max_length=40, unique=True)  # secrets.token_urlsafe, unguessable
    label = models.CharField(max_length=80)
    qualifications = models.JSONField(default=dict, blank=True)  # self-reported, not verified
    external_ids = models.JSONField(default=dict, blank=True)  # e.g. PROLIFIC_PID, STUDY_ID, SESSION_ID
    consent_version = models.ForeignKey(ConsentVersion, on_delete=models.PROTECT, null=True, blank=True,
                                        related_name="+")
    consented_at = models.DateTimeField(null=True, blank=True)
    is_bot = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    email = models.EmailField(blank=True)  # for notices; else the account's address
    entered_via_link = models.BooleanField(default=False)  # came through the study-level entry link
    returned_at = models.DateTimeField(null=True, blank=True)  # left through the return path
    withdrawn_at = models.DateTimeField(null=True, blank=True)  # data excluded from figures and exports
    withdrawal_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["study", "label"]
        constraints = [
            models.UniqueConstraint(fields=["study", "label"], name="participant_unique_label"),
            models.UniqueConstraint(fields=["study", "user"], name="participant_unique_user"),
        ]

    def __str__(self) -> str:
        return self.label


class Invitation(models.Model):
    """A signed, expiring, revocable link for one participant (the token is signed, not stored)."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="invitations")
    nonce = models.CharField(max_length=40, unique=True)
    max_age_seconds = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    accepted_at = models.DateTimeField(null=True, blank=True)
    # Sessions signed in through this link (ended when it is revoked).
    session_keys = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    @property
    def expires_at(self) -> datetime:
        """When the link stops working (it was signed when the invitation was issued)."""
        return self.created_at + timedelta(seconds=self.max_age_seconds)

    @property
    def valid_days(self) -> str:
        """How long the link is valid, in days as the invite form asks for them (e.g. ``"7"``, ``"0.04"``)."""
        days = self.max_age_seconds / 86400
        return f"{days:g}" if days == int(days) else f"{days:.2f}"


class Cell(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="cells")
    task_id = models.CharField(max_length=64)
    seed = models.IntegerField()
    quota = models.PositiveIntegerField(default=1)
    threshold = models.DecimalField(max_digits=12, decimal_places=6)
    anchors = models.JSONField(default=dict, blank=True)  # anchor name -> composite (Decimal as string)

    class Meta:
        ordering = ["study", "task_id", "seed"]
        constraints = [
            models.UniqueConstraint(fields=["study", "task_id", "seed"], name="cell_unique_task_seed"),
            # The console's practice task is never a study cell (studies.design refuses it in words).
            models.CheckConstraint(condition=~Q(task_id=PRACTICE_CELL[0]), name="cell_not_practice_task"),
        ]

    @property
    def key(self) -> str:
        return f"{self.task_id}/{self.seed}"

    def __str__(self) -> str:
        return self.key


class AttemptStatus(models.TextChoices):
    ASSIGNED = "assigned", "Assigned"
    ACTIVE = "active", "Active"
    PAUSED = "paused", "Paused"
    SUBMITTED = "submitted", "Submitted"
    TIMED_OUT = "timed_out", "Timed out"
    ABANDONED = "abandoned", "Abandoned"
    INVALID = "invalid", "Invalid"


OPEN_STATUSES = (AttemptStatus.ASSIGNED, AttemptStatus.ACTIVE, AttemptStatus.PAUSED)
COMPLETED_STATUSES = (AttemptStatus.SUBMITTED, AttemptStatus.TIMED_OUT)


class AttemptKind(models.TextChoices):
    FIRST = "first", "First attempt"
    COACHED_RETRY = "coached_retry", "Coached retry"
    REASSIGNMENT = "reassignment", "Reassignment after a platform fault"


class SelectionRule(models.TextChoices):
    MANUAL = "manual", "Chosen by hand"
    LATEST = "latest", "Latest completed attempt (replacements win)"
    EARLIEST = "earliest", "Earliest completed attempt"


class Attempt(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="attempts")
    cell = models.ForeignKey(Cell, on_delete=models.PROTECT, related_name="attempts")
    participant = models.ForeignKey(Participant, on_delete=models.PROTECT, related_name="attempts")
    shift = models.OneToOneField("shifts.Shift", on_delete=models.PROTECT, related_name="study_attempt")
    number = models.PositiveIntegerField()  # 1, 2, ... within the cell
    kind = models.CharField(max_length=16, choices=AttemptKind.choices, default=AttemptKind.FIRST)
    replaces = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True,
                                 related_name="replaced_by")
    status = models.CharField(max_length=16, choices=AttemptStatus.choices, default=AttemptStatus.ASSIGNED)
    end_reason = models.CharField(max_length=300, blank=True)
    release = models.CharField(max_length=40, blank=True)
    calibration_hash = models.CharField(max_length=80, blank=True)
    coach = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                              related_name="+")
    coach_note = models.TextField(blank=True)
    platform_fault = models.BooleanField(default=False)  # infrastructure, not the person
    is_practice = models.BooleanField(default=False)
    is_bot = models.BooleanField(default=False)
    completion_code = models.CharField(max_length=40)  # shown only once the shift is committed
    assigned_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True,
                                    blank=True, related_name="+")
    assigned_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    composite = models.DecimalField(**SCORE)
    business = models.DecimalField(**SCORE)
    reliability = models.DecimalField(**SCORE)
    on_time_rate = models.DecimalField(**SCORE)
    return_handled_rate = models.DecimalField(**SCORE)
    continuity = models.DecimalField(**SCORE)
    passed = models.BooleanField(null=True, blank=True)
    is_selected = models.BooleanField(default=False)
    selection_rule = models.CharField(max_length=16, choices=SelectionRule.choices, blank=True)
    selected_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True,
                                    blank=True, related_name="+")
    selected_at = models.DateTimeField(null=True, blank=True)
    # The build the shift ran on: source commit and a hash of the lock file / pyproject
    # (see :mod:`studies.build`), recorded when the attempt is created.
    build_id = models.CharField(max_length=120, blank=True)
    # Which rehearsal delivery is playing this bot attempt now, and until when its claim
    # holds unless renewed (both empty when nobody is); see :func:`studies.bots.claim`.
    claim_token = models.CharField(max_length=32, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cell", "number"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "cell"], condition=Q(status__in=OPEN_STATUSES),
                                    name="attempt_one_open_per_person_cell"),
            models.UniqueConstraint(fields=["cell"], condition=Q(is_selected=True),
                                    name="attempt_one_selected_per_cell"),
            models.UniqueConstraint(fields=["cell", "number"], name="attempt_unique_number"),
        ]

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def is_completed(self) -> bool:
        return self.status in COMPLETED_STATUSES

    @cached_property
    def outcome(self) -> Outcome:
        """The attempt's outcome read through its shift now (nothing is written)."""
        return outcome_of(self)

    def __str__(self) -> str:
        return f"{self.cell} #{self.number} ({self.participant})"


# How an invalidation's reason begins, on the attempt and on a shift the invalidation ended.
INVALIDATED = "invalidated: "

SCORE_FIELDS = ("business", "reliability", "on_time_rate", "return_handled_rate", "continuity")


def _dec(value) -> Decimal | None:
    return None if value in (None, "") else Decimal(str(value))


@dataclass(frozen=True)
class Outcome:
    """An attempt's status and scores as its shift has them: the shift owns play and
    grading, the attempt owns the coordinator's decisions (invalid, abandoned)."""

    status: str  # an AttemptStatus value
    end_reason: str
    completed_at: datetime | None
    release: str
    calibration_hash: str
    composite: Decimal | None
    passed: bool | None
    components: dict  # SCORE_FIELDS -> Decimal | None

    @property
    def status_label(self) -> str:
        return AttemptStatus(self.status).label

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def is_completed(self) -> bool:
        return self.status in COMPLETED_STATUSES


def _stored(attempt: Attempt) -> Outcome:
    return Outcome(status=attempt.status, end_reason=attempt.end_reason, completed_at=attempt.completed_at,
                   release=attempt.release, calibration_hash=attempt.calibration_hash,
                   composite=attempt.composite, passed=attempt.passed,
                   components={name: getattr(attempt, name) for name in SCORE_FIELDS})


def outcome_of(attempt: Attempt) -> Outcome:
    """What ``attempt``'s status and scores are, read through its shift.

    A decision already recorded on the attempt (completed, invalid, abandoned) stands;
    otherwise the shift decides: a graded shift is submitted (timed out when the deadline
    ended it), or invalid when graded with a calibration other than the study's; a
    running shift is active or paused.
    """
    if attempt.status not in OPEN_STATUSES:
        return _stored(attempt)
    shift = attempt.shift
    release = shift.release or environment.__version__
    if shift.status == Shift.Status.ENDED and shift.score_composite is not None:
        components = shift.score_components or {}
        threshold = _dec(components.get("threshold"))
        composite = shift.score_composite
        status, reason = (AttemptStatus.TIMED_OUT if shift.end_reason == DEADLINE_REASON
                          else AttemptStatus.SUBMITTED), shift.end_reason
        if shift.calibration_hash != attempt.study.calibration_hash:
            status = AttemptStatus.INVALID
            reason = (f"graded with calibration {shift.calibration_hash or '(none)'}, "
                      f"not the study's {attempt.study.calibration_hash}")
        return Outcome(status=status, end_reason=reason, completed_at=shift.ended_at, release=release,
                       calibration_hash=shift.calibration_hash, composite=composite,
                       passed=shift.passed if threshold is None else composite >= threshold,
                       components={name: _dec(components.get(name)) for name in SCORE_FIELDS})
    running: dict[str, str] = {Shift.Status.ACTIVE: AttemptStatus.ACTIVE, Shift.Status.PAUSED: AttemptStatus.PAUSED}
    if shift.status in running:
        return Outcome(status=running[shift.status], end_reason="", completed_at=None, release=release,
                       calibration_hash="", composite=None, passed=None,
                       components=dict.fromkeys(SCORE_FIELDS))
    return _stored(attempt)


class AuditAction(models.TextChoices):
    STUDY_CREATED = "study_created", "Study created"
    MEMBER_ADDED = "member_added", "Member added"
    MEMBER_REMOVED = "member_removed", "Member removed"
    PARTICIPANT_ADDED = "participant_added", "Participant added"
    INVITED = "invited", "Invitation issued"
    INVITATION_REVOKED = "invitation_revoked", "Invitation revoked"
    INVITATION_ACCEPTED = "invitation_accepted", "Invitation accepted"
    CONSENTED = "consented", "Consent given"
    ASSIGNED = "assigned", "Cell assigned"
    RETRY = "retry", "Coached retry granted"
    REASSIGNED = "reassigned", "Reassigned after a platform fault"
    SELECTED = "selected", "Attempt selected"
    DEADLINE_CHANGED = "deadline_changed", "Deadline changed"
    FORCE_ENDED = "force_ended", "Shift force-ended"
    INVALIDATED = "invalidated", "Attempt invalidated"
    CALIBRATION_MISMATCH = "calibration_mismatch", "Graded with another calibration"
    EXPORTED = "exported", "Export requested"
    QUOTA_CHANGED = "quota_changed", "Cell quota changed"
    CONSENT_PUBLISHED = "consent_published", "Consent version published"
    ENTERED = "entered", "Entered through the study link"
    RETURNED = "returned", "Left the study (returned)"
    ENTRY_CHANGED = "entry_changed", "Entry link or pay rule changed"
    PAY_APPROVED = "pay_approved", "Pay approved"
    BONUS_FILE = "bonus_file", "Bonus file downloaded"
    IMPORTED = "imported", "Participants imported"
    WITHDRAWN = "withdrawn", "Participant withdrawn"
    REHEARSED = "rehearsed", "Rehearsal finished"
    REHEARSAL_FAILED = "rehearsal_failed", "Rehearsal failed"
    STUDY_CLOSED = "study_closed", "Study closed"
    STUDY_REOPENED = "study_reopened", "Study reopened"


class AppendOnlyError(Exception):
    """An audit event was to be changed or deleted."""


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError("the audit log is append-only: events cannot be updated")

    def delete(self):
        raise AppendOnlyError("the audit log is append-only: events cannot be deleted")


class AuditEvent(models.Model):
    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                              related_name="+")
    action = models.CharField(max_length=24, choices=AuditAction.choices)
    attempt = models.ForeignKey(Attempt, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    participant = models.ForeignKey(Participant, on_delete=models.PROTECT, null=True, blank=True,
                                    related_name="+")
    cell = models.ForeignKey(Cell, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    reason = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError("the audit log is append-only: events cannot be updated")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("the audit log is append-only: events cannot be deleted")

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.action}"


class PayStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    APPROVED = "approved", "Approved"


class PayRecord(models.Model):
    """What one attempt earns: its times read from the shift, base pay, bonus by the study's
    rule and compensation for a platform fault (integer cents).  Proposed by the rule,
    approved by a coordinator with a reason (audited); an approved record is not changed."""

    attempt = models.OneToOneField(Attempt, on_delete=models.PROTECT, related_name="pay")
    wall_seconds = models.PositiveIntegerField(default=0)
    active_seconds = models.PositiveIntegerField(default=0)
    paused_seconds = models.PositiveIntegerField(default=0)
    base_cents = models.PositiveIntegerField(default=0)
    bonus_cents = models.PositiveIntegerField(default=0)
    compensation_cents = models.PositiveIntegerField(default=0)
    rule = models.JSONField(default=dict, blank=True)  # the rule the amounts came from
    status = models.CharField(max_length=16, choices=PayStatus.choices, default=PayStatus.PROPOSED)
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                                    related_name="+")
    approved_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["attempt__cell", "attempt__number"]

    @property
    def total_cents(self) -> int:
        return self.base_cents + self.bonus_cents + self.compensation_cents


class NoticeKind(models.TextChoices):
    ASSIGNED = "assigned", "Cell assigned"
    REASSIGNED = "reassigned", "Shift reassigned"
    DEADLINE = "deadline", "Deadline in two hours"
    CODE_READY = "code_ready", "Completion code ready"


class Notice(models.Model):
    """An e-mail notice sent about an attempt (one per attempt and kind: sends are idempotent)."""

    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="notices")
    kind = models.CharField(max_length=16, choices=NoticeKind.choices)
    address = models.EmailField()
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sent_at", "id"]
        constraints = [models.UniqueConstraint(fields=["attempt", "kind"], name="notice_once_per_attempt_kind")]


QUEUED_LONG = timedelta(minutes=2)  # an export queued longer has likely no worker to run it


class ExportJob(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="exports")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    filters = models.JSONField(default=dict, blank=True)
    progress = models.PositiveIntegerField(default=0)  # percent
    row_counts = models.JSONField(default=dict, blank=True)  # file name -> rows
    checksums = models.JSONField(default=dict, blank=True)  # file name -> sha256
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"export {self.pk} ({self.status})"

    @property
    def filters_text(self) -> str:
        """What the job was asked for, in the exports page's words ("bots, practice, coached
        retries, de-identified"); its filters as stored, so a job made before a filter existed
        reads as made without it."""
        f = self.filters or {}
        said = [words for key, words in (("include_bots", "bots"), ("include_practice", "practice"),
                                         ("include_coached", "coached retries"), ("include_invalid", "invalid"))
                if f.get(key, key == "include_coached")]
        text = "with " + ", ".join(said) if said else "no bots, practice, coached retries or invalid"
        return text + ("; de-identified" if f.get("deidentified") else "")

    @property
    def waiting_note(self) -> str:
        """What a job queued for over :data:`QUEUED_LONG` says: no worker has taken it ("" otherwise)."""
        if self.status != self.Status.QUEUED:
            return ""
        waited = timezone.now() - self.created_at
        if waited < QUEUED_LONG:
            return ""
        minutes = int(waited.total_seconds() // 60)
        return (f"queued for {minutes} minutes: no worker has taken it. An export takes seconds once a worker runs; "
                "ask the site's operator to check that one does (`celery -A config inspect ping`)")

    @property
    def matched_nothing(self) -> bool:
        """Done, with no attempt row: the page says which filters leave attempts out."""
        return self.status == self.Status.DONE and self.row_counts.get("attempts.csv") == 0
