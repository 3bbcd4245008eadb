"""Fixtures and helpers shared by the studies tests (no tests here)."""
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from shifts.briefing import BRIEFING_VERSION, PRACTICE_CELL
from shifts.lifecycle import assign_shift
from shifts.models import BriefingAcknowledgement, Shift
from studies import bots, participants
from studies.design import add_member, create_study
from studies.models import Role

TASKS = ["steady", "trade-war"]
SEEDS = [7, 11]


def make_user(username, **extra):
    return get_user_model().objects.create_user(username, password=None, **extra)


def ready_person(actor, study, label, *, briefed=True, practised=True):
    """A human participant with an account; briefed and with an ended practice shift unless told not."""
    user = make_user(f"u-{label}")
    person = participants.add_participant(actor, study, label, user=user)
    if briefed:
        BriefingAcknowledgement.objects.create(user=user, version=BRIEFING_VERSION, acknowledged_at=timezone.now())
    if practised:
        practice = assign_shift(user, *PRACTICE_CELL, practice=True)
        Shift.objects.filter(pk=practice.pk).update(status=Shift.Status.ENDED)
    return person


@pytest.fixture
def admin(db):
    return get_user_model().objects.create_superuser("study-admin", password=None)


@pytest.fixture
def study(admin):
    return create_study(admin, "Study A", TASKS, SEEDS)


@pytest.fixture
def other_study(admin):
    return create_study(admin, "Study B", TASKS, SEEDS)


@pytest.fixture
def coordinator(study, admin):
    user = make_user("coord-a")
    add_member(admin, study, user, Role.COORDINATOR)
    return user


@pytest.fixture
def cell(study):
    return study.cells.get(task_id="steady", seed=7)


@pytest.fixture
def bot(study, admin):
    return bots.add_bot(admin, study, "bot-1")


@pytest.fixture
def bot2(study, admin):
    return bots.add_bot(admin, study, "bot-2")
