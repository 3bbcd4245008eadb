from django.apps import AppConfig


class StudiesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "studies"
    verbose_name = "Studies"

    def ready(self) -> None:
        from shifts.affiliation import add_lookup
        from shifts.briefing import add_start_gate

        from .participants import affiliation, consent_gate

        add_start_gate(consent_gate)
        add_lookup(affiliation)
