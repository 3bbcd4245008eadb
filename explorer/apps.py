from django.apps import AppConfig


class ExplorerConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "explorer"
    verbose_name = "StoreBench trial explorer"

    def ready(self) -> None:
        from shifts.withdrawals import add_holder

        from .importing import remove_person

        add_holder(remove_person)
