from django.contrib import admin

from .models import Job, JobItem


class JobItemInline(admin.TabularInline):
    model = JobItem
    extra = 0
    fields = ("index", "key", "status", "attempts", "lease_owner", "lease_until", "finished_at", "error")
    readonly_fields = fields


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "done", "total", "created_at", "finished_at")
    list_filter = ("kind", "status")
    readonly_fields = ("result_path", "result_hash", "summary", "error")
    inlines = [JobItemInline]
