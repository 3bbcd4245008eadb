"""The demo study `make run` shows to the coordinator: a few cells, the coordinator's
role, a consent text and the demo participant enrolled (consented).  Their console
practice shift stays the console's: it plays the practice task, which is never a study
cell, so it is linked to the study only if a cell plays the same task and seed.

It adds no users and no shifts (the console's demo data stays exactly as the console
made it), and it is idempotent: an existing demo study is left as it is.
"""
from __future__ import annotations

from shifts.models import Shift

from .assignment import adopt_practice_shift
from .design import add_consent_version, add_member, create_study
from .models import Role, Study
from .participants import add_participant, give_consent

DEMO_STUDY = "Demo study"
DEMO_TASKS = ["counter-punch", "steady", "trade-war"]
DEMO_SEEDS = [7, 11]
CONSENT = ("You will operate a simulated online store for one shift. Your tool calls and scores are "
           "recorded for research and published without your name. You may stop at any time.")


def ensure_demo_study(admin, coordinator, participant_user) -> tuple[Study, bool]:
    existing = Study.objects.filter(name=DEMO_STUDY).first()
    if existing is not None:
        return existing, False
    study = create_study(admin, DEMO_STUDY, DEMO_TASKS, DEMO_SEEDS, description="Created by manage.py load_demo.")
    add_member(admin, study, coordinator, Role.COORDINATOR)
    add_consent_version(admin, study, CONSENT)
    person = add_participant(admin, study, "demo participant", {"years_ecommerce": 4, "role": "store manager"},
                             user=participant_user)
    give_consent(participant_user, person, 1)
    practice = Shift.objects.filter(participant=participant_user, is_practice=True).order_by("pk").first()
    if practice is not None:
        cell = study.cells.filter(task_id=practice.task_id, seed=practice.seed).first()
        if cell is not None:
            adopt_practice_shift(admin, person, cell, practice, reason="demo: the console's practice shift")
    return study, True
