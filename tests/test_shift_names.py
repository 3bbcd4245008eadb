"""People read a shift's name, never its database id (ids stay in URLs): "Practice shift"
and "Shift 1", "Shift 2", ... in the order a participant's scored shifts were assigned,
the same on the console's pages and on the participant's study page."""
import re

import pytest
from console_helpers import briefed_user
from test_studies_support import admin, coordinator, study  # noqa: F401

from shifts import briefing, lifecycle
from shifts.models import Shift
from studies import assignment, participants

pytestmark = pytest.mark.usefixtures("fresh_console_cache")


@pytest.fixture
def newcomer(db):
    """A participant who has just read the briefing, after others' shifts took the low ids."""
    for name in ("earlier-1", "earlier-2"):
        briefing.acknowledge_briefing(briefed_user(name, password=False), briefing.BRIEFING_VERSION)
    person = briefed_user("newcomer", password=False)
    briefing.acknowledge_briefing(person, briefing.BRIEFING_VERSION)
    return person


@pytest.fixture
def scored(newcomer):
    return lifecycle.assign_shift(newcomer, "counter-punch", 7)


def test_the_home_page_names_the_practice_shift_and_numbers_scored_shifts_per_person(client, newcomer, scored):
    practice = Shift.objects.get(participant=newcomer, is_practice=True)
    assert practice.pk > 1 and scored.pk > 1
    client.force_login(newcomer)
    html = client.get("/").content.decode()
    cells = {pk: re.search(rf'<tr id="shift-row-{pk}">\s*<td>([^<]*)</td>', html).group(1)
             for pk in (practice.pk, scored.pk)}
    assert cells == {practice.pk: "Practice shift", scored.pk: "Shift 1"}


def test_the_shift_page_names_a_scored_shift_by_the_persons_own_number(client, newcomer, scored):
    client.force_login(newcomer)
    html = client.get(f"/shifts/{scored.pk}/").content.decode()
    assert "<title>Shift 1</title>" in html and "<h1>Shift 1</h1>" in html


def test_the_history_page_names_the_practice_shift(client, newcomer):
    practice = Shift.objects.get(participant=newcomer, is_practice=True)
    client.force_login(newcomer)
    html = client.get(f"/shifts/{practice.pk}/history/").content.decode()
    assert "<h1>History · Practice shift</h1>" in html and "← Back to Practice shift</a>" in html


def test_the_study_page_names_shifts_as_the_console_does(client, study, coordinator):
    person = participants.add_participant(coordinator, study, "P1")
    person = participants.accept(participants.invite(coordinator, person, 3600).token, {})
    first = assignment.assign(coordinator, person, study.cells.get(task_id="trade-war", seed=7))
    second = assignment.assign(coordinator, person, study.cells.get(task_id="steady", seed=7))
    client.force_login(person.user)
    html = client.get("/studies/me/").content.decode()
    links = dict(re.findall(r'<a href="/shifts/(\d+)/">([^<]*)</a>', html))
    assert links == {str(first.shift_id): "Shift 1", str(second.shift_id): "Shift 2"}
