from django.apps import AppConfig


class ExplorerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "explorer"
    verbose_name = "StoreBench trial explorer"
