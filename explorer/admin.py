"""Imported trials in the admin, read-only: a trial changes only by importing its folder again."""
from django.contrib import admin

from .models import Trial


@admin.register(Trial)
class TrialAdmin(admin.ModelAdmin):
    list_display = ("pk", "task_id", "seed", "player_kind", "player", "reward_composite", "threshold", "passed",
                    "integrity", "imported_at")
    list_filter = ("player_kind", "integrity", "task_id")
    search_fields = ("player", "task_id", "content_hash")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
