"""Shifts: one participant operating one task-seed cell through the console.

A shift's calls are the source of truth: the live episode is a process-local cache
rebuilt from them by deterministic replay (see :mod:`console.services`).
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models

SHIFT_LENGTH = timedelta(hours=12)


class Shift(models.Model):
    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        ACTIVE = "active", "Active"
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

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Shift {self.pk} ({self.status})"


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
    header = models.CharField(max_length=300, blank=True)  # the store header after the call
    window = models.PositiveIntegerField(null=True, blank=True)  # window the call was made in
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["shift", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["shift", "seq"], name="shiftcall_unique_seq"),
            models.UniqueConstraint(fields=["shift", "call_id"], name="shiftcall_unique_call_id"),
        ]

    def __str__(self) -> str:
        return f"{self.shift_id}#{self.seq} {self.tool}"

    @property
    def spent_operation(self) -> bool:
        from environment.tools import REGISTRY

        spec = REGISTRY.get(self.tool)
        return self.reached_core and spec is not None and not spec.free
