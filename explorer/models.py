"""Imported trials, stored so that a trial page is a few indexed reads.

A trial folder (see ``environment/artifacts.py``) is read once, at import: its
score, the cell's calibration constants and anchors as they stood then, the
failure-mode report, one row per window and one row per tool call.  Nothing on a
page is recomputed from the folder.  ``content_hash`` (over the folder's files)
makes importing the same folder twice a no-op.

Money is integer cents (window balances) or Decimal dollars (score figures, as
the release writes them); rates and scores are Decimal.  Window ``n`` holds the
balances at the end of window ``n`` (window 0 is the opening), the dense reward
earned during it and the orders that moved during it.
"""
from __future__ import annotations

from django.db import models


class Trial(models.Model):
    class PlayerKind(models.TextChoices):
        ANCHOR = "anchor", "Anchor policy"
        MODEL = "model", "Model"
        HUMAN = "human", "Human expert"
        RECORDED = "recorded", "Recorded actions"

    class Integrity(models.TextChoices):
        VERIFIED = "verified", "Files match the manifest's checksums"
        UNCHECKED = "unchecked", "Manifest predates per-file checksums"

    class Termination(models.TextChoices):
        HORIZON = "horizon", "Played to the horizon"
        STOPPED = "stopped", "Stopped before the horizon"
        SUSPENDED = "suspended", "Suspended (cash below zero)"

    content_hash = models.CharField(max_length=80, unique=True)
    source_path = models.CharField(max_length=500)
    imported_at = models.DateTimeField(auto_now_add=True)
    integrity = models.CharField(max_length=16, choices=Integrity.choices)

    task_id = models.CharField(max_length=64)
    seed = models.IntegerField()
    player_kind = models.CharField(max_length=16, choices=PlayerKind.choices)
    player = models.CharField(max_length=200)  # the policy, model or participant as summary.json names it
    study = models.CharField(max_length=120, blank=True)  # a human trial's study, as summary.json names it
    termination = models.CharField(max_length=16, choices=Termination.choices)
    end_reason = models.CharField(max_length=200, blank=True)
    windows_played = models.PositiveIntegerField()
    windows_total = models.PositiveIntegerField()
    turns = models.PositiveIntegerField()
    operations_spent = models.PositiveIntegerField()
    wall_seconds = models.DecimalField(max_digits=12, decimal_places=3, null=True, blank=True)

    reward_composite = models.DecimalField(max_digits=9, decimal_places=6)
    business = models.DecimalField(max_digits=9, decimal_places=6)
    reliability = models.DecimalField(max_digits=9, decimal_places=6)
    continuity = models.DecimalField(max_digits=9, decimal_places=6)
    on_time_rate = models.DecimalField(max_digits=9, decimal_places=6, null=True, blank=True)
    return_handled_rate = models.DecimalField(max_digits=9, decimal_places=6, null=True, blank=True)
    business_raw = models.DecimalField(max_digits=14, decimal_places=2)
    net_assets = models.DecimalField(max_digits=14, decimal_places=2)
    bankrupt = models.BooleanField(default=False)
    score = models.JSONField()  # score.json as written (numbers as strings), for the download

    threshold = models.DecimalField(max_digits=9, decimal_places=6, null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    calibration_label = models.CharField(max_length=200, blank=True)  # where the cell's constants came from
    cell = models.JSONField(default=dict, blank=True)  # the calibration cell (anchors, zero, scale, oracle)

    world_hash = models.CharField(max_length=80)
    task_file_hash = models.CharField(max_length=80)
    calibration_hash = models.CharField(max_length=80, blank=True)
    source_version = models.CharField(max_length=40, blank=True)

    failure_modes = models.JSONField(null=True, blank=True)
    failure_modes_note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["task_id", "seed", "-reward_composite", "id"]
        indexes = [models.Index(fields=["task_id", "seed"]),
                   models.Index(fields=["study", "player"], name="explorer_trial_person")]

    def __str__(self) -> str:
        return f"{self.task_id} seed {self.seed}: {self.player} ({self.reward_composite})"

    @property
    def cell_label(self) -> str:
        return f"{self.task_id} seed {self.seed}"


class TrialWindow(models.Model):
    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="windows")
    window = models.PositiveIntegerField()
    at = models.CharField(max_length=24)  # simulated time at the end of the window, ISO
    cash_cents = models.BigIntegerField()
    receivable_cents = models.BigIntegerField()
    in_transit_cents = models.BigIntegerField()
    net_assets_cents = models.BigIntegerField()
    inventory_units = models.IntegerField()
    inventory_cost_cents = models.BigIntegerField()
    dense_value_cents = models.BigIntegerField()
    dense_reward_cents = models.BigIntegerField(null=True)
    rating = models.DecimalField(max_digits=6, decimal_places=4)
    # Order counters; null in folders written before the engine logged them.
    orders_placed = models.IntegerField(null=True)
    shipped_on_time = models.IntegerField(null=True)
    shipped_late = models.IntegerField(null=True)
    auto_shipped = models.IntegerField(null=True)
    orders_cancelled = models.IntegerField(null=True)

    class Meta:
        ordering = ["trial", "window"]
        constraints = [models.UniqueConstraint(fields=["trial", "window"], name="explorer_one_row_per_window")]


class ToolFamily(models.TextChoices):
    """The tool families of the spec; a test checks they are the registry's."""

    STATUS = "status and time", "Status and time"
    CATALOG = "catalog and listings", "Catalog and listings"
    INVENTORY = "inventory", "Inventory"
    ORDERS = "orders", "Orders"
    RETURNS = "returns", "Returns"
    SOURCING = "sourcing", "Sourcing"
    FINANCE = "finance and market", "Finance and market"
    UNKNOWN = "unknown", "Not a tool"


class TrialCall(models.Model):
    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="calls")
    seq = models.PositiveIntegerField()
    window = models.PositiveIntegerField()
    tool = models.CharField(max_length=64)
    family = models.CharField(max_length=24, choices=ToolFamily.choices)
    spent_operation = models.BooleanField()
    ok = models.BooleanField()
    error_code = models.CharField(max_length=64, blank=True)
    arguments = models.JSONField(default=dict)
    result = models.TextField(blank=True)  # the tool result as returned; blank without an observation stream

    # Not columns: the trial page's action log annotates its page of calls with a cut of the
    # result (preview, result_length) and sets these from it for display (explorer.services).
    arguments_text: str
    preview_header: str
    preview_body: str
    truncated: bool

    class Meta:
        ordering = ["trial", "seq"]
        constraints = [models.UniqueConstraint(fields=["trial", "seq"], name="explorer_one_row_per_call")]
        indexes = [models.Index(fields=["trial", "family", "seq"])]


class TrialEvent(models.Model):
    class Channel(models.TextChoices):
        ANNOUNCED = "announced", "Announced"
        RUMOURED = "rumoured", "Rumoured"
        SILENT = "silent", "Silent"

    trial = models.ForeignKey(Trial, on_delete=models.CASCADE, related_name="events")
    index = models.PositiveIntegerField()  # position in the task file's [[events]]
    kind = models.CharField(max_length=40)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    at = models.CharField(max_length=24)
    window = models.PositiveIntegerField()  # the window it fired at the start of
    detail = models.TextField(blank=True)  # the alert or rumour text, from the task file when it still matches

    tag: str  # not a column: E1, E2, ... in firing order, set by explorer.services for display

    class Meta:
        ordering = ["trial", "window", "index"]
