"""Removing a team role (``studies.design.remove_member``): a coordinator or admin takes one
role away, an admin role only an admin; a study keeps an admin and someone who can run it; the removal is
audited and takes effect on the person's next request."""
import re

import pytest
from test_studies_support import admin, coordinator, make_user, study  # noqa: F401

from studies import participants
from studies.design import add_member, remove_member
from studies.errors import StudyError, StudyPermissionDenied
from studies.models import AuditAction, AuditEvent, Role, StudyMembership
from studies.overview import study_overview

LAST = ("coord-a is the last person who can run the study's participants and attempts (an admin or a "
        "coordinator): add another coordinator first (an admin of the study adds team members), then remove this role")
LAST_ADMIN = ("study-admin is the study's last admin, and a study keeps one to add and remove its team: give another "
              "person the admin role first, then remove this one")


def without_admin(study):
    """A study whose admin role was taken away outside the app (a study made before this rule)."""
    StudyMembership.objects.filter(study=study, role=Role.ADMIN).delete()


@pytest.fixture
def second(study, admin):
    user = make_user("coord-b")
    add_member(admin, study, user, Role.COORDINATOR)
    return user


@pytest.fixture
def reviewer(study, admin):
    user = make_user("rita")
    add_member(admin, study, user, Role.REVIEWER)
    return user


def test_a_coordinator_removes_a_reviewers_role_and_it_is_audited(study, coordinator, reviewer):
    remove_member(coordinator, study, reviewer, Role.REVIEWER)
    assert not StudyMembership.objects.filter(study=study, user=reviewer).exists()
    event = AuditEvent.objects.get(action=AuditAction.MEMBER_REMOVED)
    assert (event.actor, event.detail) == (coordinator, {"user": "rita", "role": "reviewer"})


def test_the_removed_role_stops_opening_the_study_at_once(study, coordinator, reviewer):
    assert study_overview(reviewer, study).roles == {Role.REVIEWER}
    remove_member(coordinator, study, reviewer, Role.REVIEWER)
    with pytest.raises(StudyPermissionDenied, match="^rita may not view the study: they hold no role in this study$"):
        study_overview(reviewer, study)


def test_only_the_named_role_is_removed(study, admin, coordinator):
    add_member(admin, study, coordinator, Role.REVIEWER)
    remove_member(admin, study, coordinator, Role.REVIEWER)
    assert set(StudyMembership.objects.filter(study=study, user=coordinator).values_list("role", flat=True)) == {
        Role.COORDINATOR}


def test_the_last_coordinator_goes_while_the_admin_still_runs_the_study(study, admin, coordinator):
    remove_member(admin, study, coordinator, Role.COORDINATOR)
    assert not StudyMembership.objects.filter(study=study, role=Role.COORDINATOR).exists()


def test_the_last_admin_role_is_not_removed(study, admin, coordinator):
    with pytest.raises(StudyError, match=f"^{re.escape(LAST_ADMIN)}$"):
        remove_member(admin, study, admin, Role.ADMIN)
    assert StudyMembership.objects.filter(study=study, user=admin, role=Role.ADMIN).exists()
    assert not AuditEvent.objects.filter(action=AuditAction.MEMBER_REMOVED).exists()


def test_an_admin_role_goes_while_another_admin_remains(study, admin):
    other = make_user("second-admin")
    add_member(admin, study, other, Role.ADMIN)
    remove_member(other, study, admin, Role.ADMIN)
    assert list(StudyMembership.objects.filter(study=study, role=Role.ADMIN).values_list("user", flat=True)) == [
        other.pk]


def test_a_coordinator_may_not_leave_nobody_to_run_the_study(study, coordinator):
    without_admin(study)
    with pytest.raises(StudyError, match=f"^{re.escape(LAST)}$"):
        remove_member(coordinator, study, coordinator, Role.COORDINATOR)
    assert StudyMembership.objects.filter(study=study, user=coordinator, role=Role.COORDINATOR).exists()


def test_a_coordinator_removes_themselves_while_another_remains(study, coordinator, second):
    remove_member(coordinator, study, coordinator, Role.COORDINATOR)
    assert list(StudyMembership.objects.filter(study=study, role=Role.COORDINATOR).values_list("user", flat=True)) == [
        second.pk]


def test_a_coordinator_may_not_remove_an_admin_role(study, admin, coordinator):
    other_admin = make_user("ada")
    add_member(admin, study, other_admin, Role.ADMIN)
    with pytest.raises(StudyPermissionDenied, match="^coord-a may not administer study 'Study A'$"):
        remove_member(coordinator, study, other_admin, Role.ADMIN)
    assert StudyMembership.objects.filter(study=study, user=other_admin, role=Role.ADMIN).exists()


def test_a_reviewer_may_not_remove_anyone(study, coordinator, reviewer, second):
    with pytest.raises(StudyPermissionDenied, match="^rita may not manage participants and attempts in study"):
        remove_member(reviewer, study, second, Role.COORDINATOR)


def test_a_participant_role_is_not_removed_as_a_team_role(study, coordinator):
    person = make_user("pat")
    participants.add_participant(coordinator, study, "P1", user=person)
    with pytest.raises(StudyError, match=r"^pat's participant role is not a team role: a participant leaves the study "
                                         r"by withdrawal \(Withdraw in the Participants panel\)$"):
        remove_member(coordinator, study, person, Role.PARTICIPANT)


def test_a_role_not_held_is_refused(study, coordinator, reviewer):
    with pytest.raises(StudyError, match="^rita does not hold the role researcher in this study; nothing was changed$"):
        remove_member(coordinator, study, reviewer, Role.RESEARCHER)


# --- the study page ------------------------------------------------------------------------


@pytest.fixture
def coord_client(client, coordinator):
    client.force_login(coordinator)
    return client


def _remove(client, study, username, role, **extra):
    return client.post(f"/studies/{study.pk}/members/remove/", {"username": username, "role": role}, **extra)


def test_the_team_panel_offers_a_coordinator_remove_buttons_but_not_for_an_admin(coord_client, study, reviewer):
    html = coord_client.get(f"/studies/{study.pk}/").content.decode()
    team = html[html.index('<ul id="team">'):].split("</ul>")[0]
    rita = team[team.index('data-member="rita"'):].split("</li>")[0]
    assert ("onsubmit=\"return confirm('Remove the role reviewer of rita from this study? It takes effect at once: "
            "they lose what the role lets them see and do.')\"") in rita
    admin_row = team[team.index('data-member="study-admin"'):].split("</li>")[0]
    assert "Remove" not in admin_row
    assert 'id="add-member"' not in html  # adding stays the admin's


def test_a_removal_from_the_page_says_so_and_shuts_the_member_out(coord_client, client, study, reviewer):
    done = _remove(coord_client, study, "rita", "reviewer", follow=True).content.decode()
    assert "rita: role reviewer removed (any other roles they hold are kept)." in done
    client.force_login(reviewer)
    assert client.get(f"/studies/{study.pk}/").status_code == 403


def test_leaving_nobody_to_run_the_study_is_refused_on_the_page(coord_client, study):
    without_admin(study)
    html = _remove(coord_client, study, "coord-a", "coordinator", follow=True).content.decode()
    assert LAST.replace("'", "&#x27;") in html


def test_a_coordinator_who_removes_their_own_role_goes_to_the_study_list(coord_client, study, second):
    response = _remove(coord_client, study, "coord-a", "coordinator")
    assert response.status_code == 302 and response["Location"] == "/studies/"
