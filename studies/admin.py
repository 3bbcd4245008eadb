"""Django admin: for looking only.

Studies are managed through the study pages, where every change needs the right
study role and writes an audit event. The admin therefore changes nothing here:
scores, statuses, selections, thresholds, memberships and audit events are
read-only, and an audit event cannot be added by hand (it would be attributed to
whoever the form named). The one thing the admin may do is publish a new consent
text, which becomes the next version through the same service as the study pages
(audited); an existing version's text never changes, since people consented to it.
"""
from django.contrib import admin

from . import design
from .models import Attempt, AuditEvent, Cell, ConsentVersion, ExportJob, Participant, Study, StudyMembership


class ReadOnlyAdmin(admin.ModelAdmin):
    """List and view; no add, change or delete."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Study)
class StudyAdmin(ReadOnlyAdmin):
    list_display = ("name", "calibration_hash", "policy", "default_quota", "created_at", "closed_at")


@admin.register(StudyMembership)
class MembershipAdmin(ReadOnlyAdmin):
    list_display = ("study", "user", "role")
    list_filter = ("study", "role")


@admin.register(Cell)
class CellAdmin(ReadOnlyAdmin):
    list_display = ("study", "task_id", "seed", "quota", "threshold")
    list_filter = ("study",)


@admin.register(Participant)
class ParticipantAdmin(ReadOnlyAdmin):
    list_display = ("study", "label", "is_bot", "consent_version", "created_at")
    list_filter = ("study", "is_bot")


@admin.register(ConsentVersion)
class ConsentAdmin(admin.ModelAdmin):
    """New text = a new version (numbered and audited by the study service); no edits."""

    list_display = ("study", "version", "created_at")
    fields = ("study", "text")

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        created = design.add_consent_version(request.user, obj.study, obj.text)
        obj.pk, obj.version, obj.created_at = created.pk, created.version, created.created_at
        obj._state.adding = False


@admin.register(Attempt)
class AttemptAdmin(ReadOnlyAdmin):
    list_display = ("study", "cell", "number", "participant", "kind", "status", "composite", "is_selected")
    list_filter = ("study", "status", "kind", "is_selected", "is_bot")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "study", "actor", "action", "reason")
    list_filter = ("study", "action")


@admin.register(ExportJob)
class ExportJobAdmin(ReadOnlyAdmin):
    list_display = ("study", "status", "progress", "requested_by", "created_at")
