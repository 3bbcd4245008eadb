from django.apps import AppConfig


class StudiesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "studies"
    verbose_name = "Studies"

    def ready(self) -> None:
        from shifts.affiliation import add_lookup, add_person_page
        from shifts.briefing import add_start_gate
        from shifts.withdrawals import add_check

        from . import checks  # noqa: F401  (registers its system checks)
        from .design import calibration_gate
        from .participants import affiliation, consent_gate, has_withdrawn, person_page

        add_start_gate(consent_gate)
        add_start_gate(calibration_gate)
        add_lookup(affiliation)
        add_person_page(person_page)
        add_check(has_withdrawn)
