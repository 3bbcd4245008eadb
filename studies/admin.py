"""Django admin: studies are managed through the study pages; the admin is for looking."""
from django.contrib import admin

from .models import Attempt, AuditEvent, Cell, ConsentVersion, ExportJob, Participant, Study, StudyMembership


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("name", "calibration_hash", "policy", "default_quota", "created_at")


@admin.register(StudyMembership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("study", "user", "role")
    list_filter = ("study", "role")


@admin.register(Cell)
class CellAdmin(admin.ModelAdmin):
    list_display = ("study", "task_id", "seed", "quota", "threshold")
    list_filter = ("study",)


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ("study", "label", "is_bot", "consent_version", "created_at")
    list_filter = ("study", "is_bot")


@admin.register(ConsentVersion)
class ConsentAdmin(admin.ModelAdmin):
    list_display = ("study", "version", "created_at")


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ("study", "cell", "number", "participant", "kind", "status", "composite", "is_selected")
    list_filter = ("study", "status", "kind", "is_selected", "is_bot")


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "study", "actor", "action", "reason")
    list_filter = ("study", "action")

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ("study", "status", "progress", "requested_by", "created_at")
