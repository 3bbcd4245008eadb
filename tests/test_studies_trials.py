"""A study's human shifts written as trial folders (studies.trials, manage.py export_human_trials):
the explorer imports them as human trials and the CLI's regrade reproduces their scores."""
import json

import pytest
from django.core.management import CommandError, call_command
from test_studies_support import admin, bot, cell, study  # noqa: F401

from environment.calibration import load_calibration
from environment.grading import regrade
from explorer import importing
from explorer.importing import ImportStatus, import_trial
from explorer.models import Trial
from mcp_client.sessions import SessionError, check_labels
from shifts.models import Shift
from studies import assignment, attempts, bots, bulk
from studies.models import Attempt, AuditAction, AuditEvent


@pytest.fixture
def person(study, admin, bot, cell):
    """An ended shift played through the console, its attempt standing for a person's (the bot plays it)."""
    attempt = bots.play(assignment.assign(admin, bot, cell), "clerk")
    Attempt.objects.filter(pk=attempt.pk).update(is_bot=False)
    return Attempt.objects.get(pk=attempt.pk)


def test_an_ended_human_shift_is_written_as_a_trial_with_the_shifts_own_score(study, person, tmp_path, capsys):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    folder = tmp_path / f"steady-7-human-attempt{person.pk}"
    printed = capsys.readouterr().out.splitlines()
    shift = Shift.objects.get(pk=person.shift_id)
    assert printed[0] == f"[1/1] wrote      {folder}: composite {float(shift.score_composite):.6f}"
    assert printed[-1] == f"import them with: manage.py import_trials {tmp_path}"
    summary = json.loads((folder / "summary.json").read_text())
    assert (summary["policy"], summary["participant"], summary["study"]) == ("human shift", "bot-1", "Study A")
    calibration, digest = load_calibration(study.calibration_path)
    assert regrade(folder, calibration, digest).reproduces


def test_the_explorer_imports_it_as_a_human_trial(study, person, tmp_path):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    call_command("import_trials", str(tmp_path))
    trial = Trial.objects.get()
    assert (trial.player_kind, trial.player, trial.study) == (Trial.PlayerKind.HUMAN, "bot-1", "Study A")
    assert f"{trial.reward_composite:.6f}" == f"{Shift.objects.get(pk=person.shift_id).score_composite:.6f}"


def test_a_folder_already_written_is_kept(study, person, tmp_path, capsys):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    folder = tmp_path / f"steady-7-human-attempt{person.pk}"
    before = (folder / "summary.json").read_bytes()
    capsys.readouterr()
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    assert capsys.readouterr().out.splitlines()[0] == f"[1/1] kept       {folder} (already written)"
    assert (folder / "summary.json").read_bytes() == before


def test_rehearsal_bots_are_not_written(study, admin, bot, cell, tmp_path, capsys):
    bots.play(assignment.assign(admin, bot, cell), "clerk")
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    assert capsys.readouterr().out == (f"study {study.pk} (Study A) has no ended shift by a participant yet: "
                                       "nothing written\n")
    assert list(tmp_path.iterdir()) == []


def test_a_shift_force_ended_before_it_started_is_not_written(study, admin, bot, cell, tmp_path, capsys):
    attempt = assignment.assign(admin, bot, cell)
    Attempt.objects.filter(pk=attempt.pk).update(is_bot=False)
    attempts.force_end(admin, Attempt.objects.get(pk=attempt.pk), "no-show")
    assert Shift.objects.get(pk=attempt.shift_id).status == Shift.Status.ENDED
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    assert capsys.readouterr().out.endswith("nothing written\n")
    assert list(tmp_path.iterdir()) == []


def test_a_withdrawn_persons_shifts_are_not_written(study, admin, person, tmp_path, capsys):
    bulk.withdraw(admin, person.participant, "asked to leave")
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    assert capsys.readouterr().out.endswith("nothing written\n")
    assert list(tmp_path.iterdir()) == []


def test_a_withdrawal_removes_the_persons_imported_trials_and_says_how_many(study, admin, person, tmp_path):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    call_command("import_trials", str(tmp_path))
    Trial.objects.create(**{f.attname: getattr(Trial.objects.get(), f.attname) for f in Trial._meta.concrete_fields
                            if f.attname not in ("id", "content_hash", "study")}, content_hash="other", study="Study B")
    bulk.withdraw(admin, person.participant, "asked to leave")
    assert list(Trial.objects.values_list("study", "player")) == [("Study B", "bot-1")]  # another study's bot-1 stays
    event = AuditEvent.objects.get(action=AuditAction.WITHDRAWN)
    assert event.detail["copies_removed"] == 1


def test_a_withdrawn_persons_trial_folder_is_refused_at_import(study, admin, person, tmp_path, capsys):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    bulk.withdraw(admin, person.participant, "asked to leave")
    folder = tmp_path / f"steady-7-human-attempt{person.pk}"
    outcome = import_trial(folder)
    assert (outcome.status, outcome.reason) == (
        ImportStatus.REFUSED, "participant bot-1 has withdrawn from study Study A: their data may not be imported")
    assert not Trial.objects.exists()


def test_a_withdrawal_while_the_trial_is_analysed_is_seen_before_it_is_stored(study, admin, person, tmp_path,
                                                                              monkeypatch):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    real = importing.analyze

    def withdrawn_meanwhile(folder):
        bulk.withdraw(admin, person.participant, "asked to leave")
        return real(folder)

    monkeypatch.setattr(importing, "analyze", withdrawn_meanwhile)
    outcome = import_trial(tmp_path / f"steady-7-human-attempt{person.pk}")
    assert (outcome.status, outcome.reason) == (
        ImportStatus.REFUSED, "participant bot-1 has withdrawn from study Study A: their data may not be imported")
    assert not Trial.objects.exists()


def test_importing_again_names_the_study_of_a_trial_imported_without_it(study, admin, person, tmp_path):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    folder = tmp_path / f"steady-7-human-attempt{person.pk}"
    import_trial(folder)
    Trial.objects.update(study="")  # as trials imported before they kept their study
    assert import_trial(folder).status == ImportStatus.DUPLICATE
    assert Trial.objects.get().study == "Study A"
    Trial.objects.update(study="")
    bulk.withdraw(admin, person.participant, "asked to leave")
    assert Trial.objects.count() == 1  # the withdrawal could not find it
    outcome = import_trial(folder)
    assert (outcome.status, outcome.reason) == (
        ImportStatus.REFUSED, "participant bot-1 has withdrawn from study Study A: their data may not be imported "
                              "(the copy imported before was deleted)")
    assert not Trial.objects.exists()


def test_an_unknown_study_is_refused_naming_the_studies(study, tmp_path):
    with pytest.raises(CommandError, match=rf"^no study 999; studies: {study.pk} \(Study A\)$"):
        call_command("export_human_trials", "999", "--out", str(tmp_path))


def test_an_mcp_session_may_not_label_itself_a_participant():
    with pytest.raises(SessionError, match="^label\\(s\\) participant name a study's participant"):
        check_labels({"participant": "P-01"})


def test_a_composite_that_differs_from_the_shifts_says_what_its_grading_did_not_share(study, person, tmp_path,
                                                                                       capsys):
    from shifts.lifecycle import release

    Shift.objects.filter(pk=person.shift_id).update(score_composite=0.5, release="0.0.1",
                                                    calibration_hash="sha256:" + "f" * 64)
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    line = capsys.readouterr().out.splitlines()[0]
    assert study.calibration_hash.startswith("sha256:")
    assert line.endswith(f"; the shift was graded 0.500000 when it ended (graded with calibration ffffffffffff; this "
                         f"export uses the study's, {study.calibration_hash[7:19]} and by release 0.0.1; this is "
                         f"release {release()})")


def test_a_composite_that_differs_with_the_same_grading_says_the_replay_does_not_reproduce_it(study, person,
                                                                                               tmp_path, capsys):
    Shift.objects.filter(pk=person.shift_id).update(score_composite=0.5)
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    assert capsys.readouterr().out.splitlines()[0].endswith(
        "(same calibration and release: the replay does not reproduce the shift's store)")


def test_a_shift_whose_task_was_removed_is_skipped_saying_so_and_the_others_are_written(study, admin, bot, cell,
                                                                                        person, tmp_path, capsys):
    from studies.models import Cell

    other = bots.play(assignment.assign(admin, bot, Cell.objects.get(study=study, task_id="trade-war", seed=7)),
                      "clerk")
    Attempt.objects.filter(pk=other.pk).update(is_bot=False)
    Shift.objects.filter(pk=person.shift_id).update(task_id="retired-task")
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"[1/2] skipped    {tmp_path}/steady-7-human-attempt{person.pk}: its task cannot "
                                 "be loaded on this server (unknown task 'retired-task'; known tasks: ")
    assert printed[0].endswith("); install it again, then run this again to write it")
    assert printed[1].startswith(f"[2/2] wrote      {tmp_path}/trade-war-7-human-attempt{other.pk}: composite ")
    assert [p.name for p in tmp_path.iterdir()] == [f"trade-war-7-human-attempt{other.pk}"]


def test_a_deidentified_export_names_the_participant_by_code(study, person, tmp_path):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path), "--deidentified")
    summary = json.loads((tmp_path / f"steady-7-human-attempt{person.pk}" / "summary.json").read_text())
    assert summary["participant"] == person.participant.code
    assert "bot-1" not in "".join(p.read_text() for p in (tmp_path / f"steady-7-human-attempt{person.pk}").iterdir()
                                  if p.suffix in (".json", ".jsonl", ".md"))


def test_a_folder_written_with_labels_is_not_kept_in_a_deidentified_export(study, person, tmp_path):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    folder = tmp_path / f"steady-7-human-attempt{person.pk}"
    with pytest.raises(CommandError, match=rf"^{folder} is already there, written naming the participant otherwise "
                                           r"than by code \(--deidentified\) now; write into a new --out folder"):
        call_command("export_human_trials", str(study.pk), "--out", str(tmp_path), "--deidentified")


def test_a_withdrawal_removes_the_persons_trials_imported_de_identified(study, admin, person, tmp_path):
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path), "--deidentified")
    call_command("import_trials", str(tmp_path))
    assert list(Trial.objects.values_list("player", flat=True)) == [person.participant.code]
    bulk.withdraw(admin, person.participant, "asked to leave")
    assert not Trial.objects.exists()
    assert AuditEvent.objects.get(action=AuditAction.WITHDRAWN).detail["copies_removed"] == 1
    outcome = import_trial(tmp_path / f"steady-7-human-attempt{person.pk}")  # and the folder is refused now
    assert outcome.status == ImportStatus.REFUSED and "has withdrawn from study Study A" in outcome.reason


def test_an_ended_shift_whose_attempt_the_record_still_has_open_is_written(study, person, tmp_path, capsys):
    """The attempt's record catches up with its ended shift lazily (a page, a sweep, an export);
    the command settles the study first, where it had left such an attempt out."""
    Attempt.objects.filter(pk=person.pk).update(status="assigned")
    call_command("export_human_trials", str(study.pk), "--out", str(tmp_path))
    assert capsys.readouterr().out.splitlines()[0].startswith("[1/1] wrote ")
    assert (tmp_path / f"steady-7-human-attempt{person.pk}" / "summary.json").exists()
