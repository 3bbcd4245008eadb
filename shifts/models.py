"""Shifts: one participant operating one task-seed cell.

A shift's calls are the source of truth: the live episode is a process-local cache
rebuilt from them by deterministic replay (see :mod:`shifts.cache`).

The tables keep the names they had when these models lived in ``console`` (moved with
``SeparateDatabaseAndState``: no table was renamed or copied).

Wall-clock time: a shift's 12-hour ``deadline`` is absolute (breaks included, as in
the paper's study); a pause only splits the wall time into active and paused time
and refuses tool calls while it lasts. The simulated clock never moves with wall
time. ``wall_seconds``, ``active_seconds`` and ``paused_seconds`` are brought up to
date at every pause, resume and at the end (see :mod:`shifts.lifecycle`).

Before any shift starts, the participant acknowledges the current briefing
(:class:`BriefingAcknowledgement`), and a scored shift also needs an ended practice
shift.
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from environment.tools import REGISTRY
from environment.tools.format import StoreHeader

SHIFT_LENGTH = timedelta(hours=12)


class Shift(models.Model):
    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        ENDED = "ended", "Ended"

    participant = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="shifts"
    )
    task_id = models.CharField(max_length=64)
    seed = models.IntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ASSIGNED)
    is_practice = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=200, blank=True)
    release = models.CharField(max_length=40, blank=True)
    # Grading (set when the shift ends). Decimal, never float.
    score_composite = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    score_components = models.JSONField(default=dict, blank=True)  # Decimals as strings
    calibration_source = models.CharField(max_length=80, blank=True)
    calibration_hash = models.CharField(max_length=80, blank=True)
    # Wall-clock accounting, in whole seconds (active = wall - paused).
    wall_seconds = models.PositiveIntegerField(default=0)
    active_seconds = models.PositiveIntegerField(default=0)
    paused_seconds = models.PositiveIntegerField(default=0)
    # Per window boundary: {"window", "at", "cash_cents", "net_assets_cents", "stock_units"}
    # (integer cents), computed by replay when the shift ends.
    timeline = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "console_shift"
        ordering = ["-created_at", "-id"]

    @property
    def is_open(self) -> bool:
        """Started and not ended (active or paused): the deadline is running."""
        return self.status in (self.Status.ACTIVE, self.Status.PAUSED)

    def past_deadline(self, now=None) -> bool:
        return self.deadline is not None and (now or timezone.now()) >= self.deadline

    @property
    def takes_calls(self) -> bool:
        """Active and not past its deadline: what a page offers tools and row actions for (a shift
        past its deadline is still active until something ends it, but takes no call)."""
        return self.status == self.Status.ACTIVE and not self.past_deadline()

    def __str__(self) -> str:
        return f"Shift {self.pk} ({self.status})"


# Started and not ended: the shift's deadline runs.
RUNNING = (Shift.Status.ACTIVE, Shift.Status.PAUSED)


class ShiftCall(models.Model):
    """One acknowledged tool call, exactly as sent to and answered by the MCP server."""

    shift = models.ForeignKey(Shift, on_delete=models.CASCADE, related_name="calls")
    seq = models.PositiveIntegerField()
    call_id = models.CharField(max_length=64)
    tool = models.CharField(max_length=64)
    arguments = models.JSONField(default=dict, blank=True)
    result_text = models.TextField()
    is_error = models.BooleanField(default=False)
    # False when the MCP layer refused the arguments before the core saw them: no
    # operation was spent and the call is not replayed.
    reached_core = models.BooleanField(default=True)
    header = models.CharField(max_length=300, blank=True)  # the store header line after the call
    # The same header, typed (StoreHeader.as_dict()), taken from the episode, never from the
    # result text; None when the call did not reach the core.
    store_header = models.JSONField(null=True, blank=True)
    window = models.PositiveIntegerField(null=True, blank=True)  # window the call was made in
    created_at = models.DateTimeField(auto_now_add=True)

    # Not stored: set on the instance a call returns when it was just made (the shift's latest
    # call at its commit), so a reply need not look for later calls (shifts.calls.make_call).
    is_latest: bool = False

    class Meta:
        db_table = "console_shiftcall"
        ordering = ["shift", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["shift", "seq"], name="shiftcall_unique_seq"),
            models.UniqueConstraint(fields=["shift", "call_id"], name="shiftcall_unique_call_id"),
        ]

    def __str__(self) -> str:
        return f"{self.shift_id}#{self.seq} {self.tool}"

    @property
    def typed_header(self) -> StoreHeader | None:
        return StoreHeader.from_dict(self.store_header) if self.store_header else None

    @property
    def spent_operation(self) -> bool:
        spec = REGISTRY.get(self.tool)
        return self.reached_core and spec is not None and not spec.free


class ShiftPause(models.Model):
    """One break in a shift: tool calls are refused from ``started_at`` to ``ended_at``."""

    shift = models.ForeignKey(Shift, on_delete=models.CASCADE, related_name="pauses")
    reason = models.CharField(max_length=200)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)  # None while the pause lasts

    class Meta:
        db_table = "console_shiftpause"
        ordering = ["shift", "started_at", "id"]

    def __str__(self) -> str:
        return f"pause of shift {self.shift_id} at {self.started_at:%Y-%m-%d %H:%M}"


class BriefingAcknowledgement(models.Model):
    """A participant has read one version of the briefing (see :mod:`shifts.briefing`)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="briefing_acknowledgements")
    version = models.CharField(max_length=40)
    acknowledged_at = models.DateTimeField()

    class Meta:
        db_table = "console_briefingacknowledgement"
        constraints = [
            models.UniqueConstraint(fields=["user", "version"], name="briefing_ack_unique_version"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} read briefing {self.version}"
