from django.apps import AppConfig


class StudiesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "studies"
    verbose_name = "Studies"

    def ready(self) -> None:
        from shifts.briefing import add_start_gate

        from .participants import consent_gate

        add_start_gate(consent_gate)
