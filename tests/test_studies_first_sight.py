"""A scored first attempt, and a reassignment, is the person's first sight of the cell:
whoever has played it (a practice attempt on it, or any attempt whose shift started) is
refused it, by hand, by a policy and as a reassignment target; a coached retry is the
way to play a cell again."""
import pytest
from django.utils import timezone
from test_studies_support import admin, bot, bot2, cell, study  # noqa: F401

from shifts.models import Shift
from studies import assignment, attempts, bots
from studies.errors import StudyError
from studies.models import Attempt, AttemptKind, AttemptStatus


def played(attempt: Attempt, status: str = AttemptStatus.SUBMITTED) -> Attempt:
    """The attempt as if its shift had been played to an end (the grade is not read here)."""
    Shift.objects.filter(pk=attempt.shift_id).update(status=Shift.Status.ENDED, started_at=timezone.now(),
                                                     ended_at=timezone.now())
    Attempt.objects.filter(pk=attempt.pk).update(status=status)
    attempt.refresh_from_db()
    return attempt


def test_a_practice_attempt_played_on_the_cell_refuses_a_scored_one(admin, bot, cell):
    played(assignment.assign(admin, bot, cell, practice=True))
    with pytest.raises(StudyError) as refused:
        assignment.assign(admin, bot, cell)
    assert str(refused.value) == (
        "participant bot-1 has already seen cell steady/7 (attempt #1, a practice attempt); a scored first attempt "
        "or a reassignment must be their first sight of it: choose another cell or person, or grant a coached retry")


def test_a_played_attempt_refuses_a_second_first_attempt_but_not_a_coached_retry(admin, bot, cell):
    cell.quota = 3
    cell.save()
    first = played(assignment.assign(admin, bot, cell))
    with pytest.raises(StudyError, match=r"participant bot-1 has already seen cell steady/7 \(attempt #1\);"):
        assignment.assign(admin, bot, cell)
    retry = attempts.grant_coached_retry(admin, first, "slow on refunds")
    assert (retry.kind, retry.number, retry.is_practice) == (AttemptKind.COACHED_RETRY, 2, False)


def test_a_practice_attempt_closed_unplayed_leaves_the_cell_unseen(admin, bot, cell):
    practice = assignment.assign(admin, bot, cell, practice=True)
    assignment.abandon_unstarted(practice, "assigned by mistake")
    scored = assignment.assign(admin, bot, cell)
    assert (scored.number, scored.is_practice) == (2, False)


def test_a_policy_passes_over_a_cell_the_person_practised(admin, study, bot):
    keys = ["steady/11", "steady/7", "trade-war/11"]  # balanced would take steady/11 first
    for practised in study.cells.all():
        if practised.key in keys:
            played(assignment.assign(admin, bot, practised, practice=True))
    chosen = assignment.assign_next(admin, study, policy="balanced", include_bots=True)
    assert (chosen.participant, chosen.cell.key, chosen.is_practice) == (bot, "trade-war/7", False)


def test_a_reassignment_never_goes_to_someone_who_practised_the_cell(admin, study, bot, bot2, cell):
    faulted = assignment.assign(admin, bot, cell)
    played(assignment.assign(admin, bot2, cell, practice=True))
    fresh = bots.add_bot(admin, study, "bot-3")
    assert attempts.reassignment_targets(study, faulted) == [fresh]
    with pytest.raises(StudyError, match=r"participant bot-2 has already seen cell steady/7 \(attempt #2, a practice "):
        attempts.reassign(admin, faulted, bot2, "server lost the shift")
    faulted.refresh_from_db()
    assert not faulted.platform_fault and faulted.status == AttemptStatus.ASSIGNED
    assert attempts.reassign(admin, faulted, fresh, "server lost the shift").participant == fresh


def test_a_reassignment_is_not_offered_to_someone_holding_the_cell_open(admin, study, bot, bot2, cell):
    cell.quota = 2
    cell.save()
    faulted = assignment.assign(admin, bot, cell)
    assignment.assign(admin, bot2, cell)
    assert attempts.reassignment_targets(study, faulted) == []
    with pytest.raises(StudyError, match=r"^participant bot-2 already has an open attempt on cell steady/7 "
                                         r"\(attempt #2, assigned\)$"):
        attempts.reassign(admin, faulted, bot2, "server lost the shift")


def test_a_coached_retrys_note_is_on_the_participants_shift_page_until_it_ends(client, admin, bot, cell):
    cell.quota = 3
    cell.save()
    first = played(assignment.assign(admin, bot, cell))
    retry = attempts.grant_coached_retry(admin, first, "Ship the oldest orders first.\nThen refund.")
    client.force_login(bot.user)
    page = client.get(f"/shifts/{retry.shift_id}/").content.decode()
    assert ("<h2>Your coordinator's note for this shift</h2>\n      <p>Ship the oldest orders first.<br>Then "
            "refund.</p>") in page
    assert 'id="coach-note"' not in client.get(f"/shifts/{first.shift_id}/").content.decode()
    played(retry)
    assert 'id="coach-note"' not in client.get(f"/shifts/{retry.shift_id}/").content.decode()
