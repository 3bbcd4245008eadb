"""Who takes no scored attempt for what they have seen (a team role now or before, staff powers),
and what "Assign next by policy" says when it finds nobody (``assignment.why_nothing_assigned``)."""
import re

import pytest
from test_studies_support import admin, make_user, other_study, ready_person, study  # noqa: F401

from studies import assignment, attempts, bots, participants
from studies.design import add_consent_version, add_member, remove_member, set_quota
from studies.errors import StudyError
from studies.models import AuditAction, FormerTeamRole, Role


@pytest.fixture
def former_reviewer(study, other_study, admin):
    """A ready participant of Study A who was a reviewer of Study B until their role was removed."""
    person = ready_person(admin, study, "Rita")
    add_member(admin, other_study, person.user, Role.REVIEWER)
    remove_member(admin, other_study, person.user, Role.REVIEWER)
    return person


def test_a_removed_team_role_still_bars_scored_attempts(study, admin, former_reviewer):
    cell = study.cells.get(task_id="steady", seed=7)
    when = FormerTeamRole.objects.get(user=former_reviewer.user).removed_at
    expected = (f"participant Rita's account held the role reviewer in another study until {when:%Y-%m-%d}, which "
                "showed them pass thresholds and the anchors' play: it takes no scored attempt (a practice one is "
                "allowed)")
    with pytest.raises(StudyError, match=f"^{re.escape(expected)}$"):
        assignment.assign(admin, former_reviewer, cell)
    assert assignment.assign(admin, former_reviewer, cell, practice=True).is_practice


def test_the_policy_passes_over_a_former_or_current_team_member_instead_of_failing(study, other_study, admin,
                                                                                 former_reviewer):
    current = ready_person(admin, study, "Cora")
    add_member(admin, other_study, current.user, Role.RESEARCHER)
    assert assignment.assign_next(admin, study) is None
    ready = ready_person(admin, study, "Pia")
    assert assignment.assign_next(admin, study).participant == ready


def test_a_former_team_member_is_no_reassignment_target(study, admin, former_reviewer):
    bot = bots.add_bot(admin, study, "bot-1")
    attempt = assignment.assign(admin, bot, study.cells.get(task_id="steady", seed=7))
    assert former_reviewer not in attempts.reassignment_candidates(study)
    assert attempts.reassign_refusal(attempt, former_reviewer).startswith(
        "Rita's account held the role reviewer in another study until ")


def test_removals_logged_before_the_record_existed_are_carried_over(study, other_study, admin, former_reviewer):
    from importlib import import_module

    from django.apps import apps

    FormerTeamRole.objects.all().delete()  # as before migration 0012: only the audit event
    assert other_study.events.filter(action=AuditAction.MEMBER_REMOVED).count() == 1
    import_module("studies.migrations.0012_former_team_role").from_the_audit_log(apps, None)
    carried = FormerTeamRole.objects.get()
    assert (carried.user, carried.study, carried.role) == (former_reviewer.user, other_study, Role.REVIEWER)


def test_nothing_to_assign_says_why_each_person_is_out(study, admin, other_study):
    add_consent_version(admin, study, "v1 text")
    participants.add_participant(admin, study, "NoAccount")
    participants.add_participant(admin, study, "NoConsent", user=make_user("nc"))
    unready = ready_person(admin, study, "Unready", briefed=False)
    participants.give_consent(unready.user, unready, 1)
    bots.add_bot(admin, study, "bot-1")
    assert assignment.assign_next(admin, study) is None
    assert assignment.why_nothing_assigned(study) == (
        "Nothing to assign. Of 4 participants, 1 is a rehearsal bot (a rehearsal assigns it), 1 has no account yet "
        "(invitation not accepted), 1 has not accepted the current consent text, 1 has not read the briefing or "
        "finished the practice shift; nobody is left who can take a scored cell now.")


def test_nothing_to_assign_says_every_cell_is_full(study, admin):
    for label in ("A", "B", "C", "D"):
        bots.add_bot(admin, study, f"bot-{label}")
    while assignment.assign_next(admin, study, include_bots=True) is not None:
        pass
    ready_person(admin, study, "Late")
    assert assignment.assign_next(admin, study) is None
    assert assignment.why_nothing_assigned(study) == (
        "Nothing to assign. Of 5 participants, 4 are rehearsal bots (a rehearsal assigns them); 1 other participant "
        "could take one, but every cell is full: raise a quota on the study page.")


def test_nothing_to_assign_says_the_ready_have_had_every_cell_with_room(study, admin):
    for cell in study.cells.all():
        set_quota(admin, study, cell, 2)
    person = ready_person(admin, study, "Solo")
    made = []
    while (attempt := assignment.assign_next(admin, study)) is not None:
        attempt.shift.started_at = attempt.shift.created_at
        attempt.shift.save(update_fields=["started_at"])
        attempts.force_end(admin, attempt, "played")
        made.append(attempt)
    assert len(made) == 4 and {a.participant for a in made} == {person}
    assert assignment.why_nothing_assigned(study) == (
        "Nothing to assign: 1 participant has already had a scored attempt on every cell with room left (4 cells), "
        "and a policy gives nobody a cell twice: assign one by hand, grant a coached retry, or add participants.")


def test_the_study_page_says_why_nothing_was_assigned(client, study, admin):
    participants.add_participant(admin, study, "NoAccount")
    client.force_login(admin)
    html = client.post(f"/studies/{study.pk}/assign-next/", {"policy": ""}, follow=True).content.decode()
    assert ("Nothing to assign. Of 1 participant, 1 has no account yet (invitation not accepted); nobody is left "
            "who can take a scored cell now.") in html


def test_nothing_to_assign_says_cells_on_hold(study, admin):
    for cell in study.cells.all():
        set_quota(admin, study, cell, 0)
    ready_person(admin, study, "Ready")
    assert assignment.assign_next(admin, study) is None
    assert assignment.why_nothing_assigned(study) == (
        "Nothing to assign: 1 participant could take one, but every cell is full or on hold (quota 0: 4 cells): "
        "raise a quota on the study page.")


def test_a_team_role_is_named_with_its_study_only_in_that_study(study, other_study, admin):
    """Another study's name is its own team's to know: this study's coordinator is told the role
    is held in another study; a role in this study names it."""
    elsewhere, here = ready_person(admin, study, "Eli"), ready_person(admin, study, "Hana")
    add_member(admin, other_study, elsewhere.user, Role.RESEARCHER)
    add_member(admin, study, here.user, Role.REVIEWER)
    assert participants.scored_bar(elsewhere).startswith("holds the role researcher in another study, which shows")
    assert participants.scored_bar(here).startswith("holds the role reviewer in this study ('Study A'), which shows")
    assert "Study B" not in participants.scored_bar(elsewhere)


def test_a_role_held_here_and_in_another_study_is_named_as_held_here(study, other_study, admin):
    """Study A was made first; someone in Study B's pool holding roles in both is told by B's
    role, not as 'another study' (A's, found first by number)."""
    person = ready_person(admin, other_study, "Bo")
    add_member(admin, study, person.user, Role.REVIEWER)
    add_member(admin, other_study, person.user, Role.RESEARCHER)
    assert participants.scored_bar(person).startswith("holds the role researcher in this study ('Study B')")
