"""Jobs and their items: the state of background work, kept in the database.

A job's progress is counted from its items (``done`` is recomputed under the job's
row lock each time an item finishes), never incremented blindly, so running an
item twice cannot count it twice.
"""
from __future__ import annotations

from django.db import models


class Job(models.Model):
    class Kind(models.TextChoices):
        CALIBRATION = "calibration", "Calibration"
        BATCH = "batch", "Trial batch"
        EXPORT = "export", "Export"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    params = models.JSONField(default=dict, blank=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    result_path = models.CharField(max_length=500, blank=True)
    result_hash = models.CharField(max_length=80, blank=True)
    summary = models.JSONField(default=dict, blank=True)  # e.g. gate failures, trials passed
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Job {self.pk} {self.kind} ({self.status} {self.done}/{self.total})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


class JobItem(models.Model):
    """One unit of a job: a calibration cell or one trial, with its result."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="items")
    index = models.PositiveIntegerField()
    key = models.CharField(max_length=200)  # e.g. "steady:7"
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # The result as exact JSON text: gathered byte for byte into the job's file.
    result_json = models.TextField(blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)  # deliveries that started the work
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The lease of a running model trial (jobs.agents): who plays it and until when, refreshed by the
    # player's heartbeat.  Empty for calibration cells and scripted trials, which may simply be replayed.
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "index"]
        constraints = [
            models.UniqueConstraint(fields=["job", "index"], name="jobitem_unique_index"),
            models.UniqueConstraint(fields=["job", "key"], name="jobitem_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id}#{self.index} {self.key} ({self.status})"
