"""Malformed trial folders are refused with a reason naming the file, row and field, and
an import run goes on to the next folder (each of these raised a traceback before)."""
import gzip
import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from test_explorer_import import folder, resign  # noqa: F401

from environment.artifacts import OBSERVATIONS
from explorer import folders
from explorer.importing import ImportStatus, import_trial, import_trials
from explorer.models import Trial


def _rows(path, change):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    change(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _doc(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


MALFORMED = {
    "a tool name that is a number": ("actions.jsonl", _rows, lambda r: r[0].update(tool=5),
                                     "actions.jsonl row 1: 'tool' is not text"),
    "a tool name that is a list": ("actions.jsonl", _rows, lambda r: r[0].update(tool=["a"]),
                                   "actions.jsonl row 1: 'tool' is not text"),
    "a window that is text": ("actions.jsonl", _rows, lambda r: r[0].update(window="w"),
                              "actions.jsonl row 1: 'window' is not a whole number"),
    "a rate that is text": ("score.json", _doc, lambda d: d.update(on_time_rate="high"),
                            "score.json: 'on_time_rate' is not a number"),
    "a count that is text": ("summary.json", _doc, lambda d: d.update(windows_played="many"),
                             "summary.json: 'windows_played' is not a whole number"),
    "a duration that is text": ("summary.json", _doc, lambda d: d.update(wall_seconds="fast"),
                                "summary.json: 'wall_seconds' is not a number"),
    "a time that is not a date": ("windows.jsonl", _rows, lambda r: r[0].update(at="yesterday"),
                                  "windows.jsonl row 1: 'at' is not a date and time"),
    "a time that is a number": ("windows.jsonl", _rows, lambda r: r[0].update(at=5),
                                "windows.jsonl row 1: 'at' is not a date and time"),
    "cents beyond any column": ("windows.jsonl", _rows, lambda r: r[1].update(cash_cents=10 ** 30),
                                "windows.jsonl row 2: 'cash_cents' is not a whole number in range"),
    "a rating that is text": ("windows.jsonl", _rows, lambda r: r[1].update(rating="good"),
                              "windows.jsonl row 2: 'rating' is not a number"),
}


def malformed_copy(folder, target, case):
    shutil.copytree(folder, target)
    name, edit, change, _ = MALFORMED[case]
    edit(target / name, change)
    resign(target)
    return target


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_field_is_refused_with_its_name(folder, tmp_path, case):
    outcome = import_trial(malformed_copy(folder, tmp_path / "bad", case))
    assert outcome.status == ImportStatus.REFUSED
    assert MALFORMED[case][3] in outcome.reason
    assert not Trial.objects.exists()


@pytest.mark.django_db
def test_the_run_goes_on_after_a_malformed_folder(folder, tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    malformed_copy(folder, batch / "a-bad", "a tool name that is a number")
    malformed_copy(folder, batch / "b-bad", "a time that is not a date")
    shutil.copytree(folder, batch / "c-good")
    outcomes = import_trials([batch])
    assert [o.status for o in outcomes] == [ImportStatus.REFUSED, ImportStatus.REFUSED, ImportStatus.IMPORTED]
    out = StringIO()
    Trial.objects.all().delete()
    with pytest.raises(CommandError, match="2 of 3 folders refused"):
        call_command("import_trials", str(batch), stdout=out)
    text = out.getvalue()
    assert "'tool' is not text" in text and "'at' is not a date and time" in text and "imported" in text


RELEASE = "fixtures/release-trajectories"


@pytest.mark.django_db
def test_trial_folders_in_a_subfolder_of_the_folder_named_are_imported(folder, tmp_path):  # noqa: F811
    shutil.copytree(folder, tmp_path / "parent" / "batch" / "cp")
    outcomes = import_trials([tmp_path / "parent"])
    assert [(o.status, o.path) for o in outcomes] == [(ImportStatus.IMPORTED, str(tmp_path / "parent/batch/cp"))]


@pytest.mark.django_db
def test_a_subfolder_holding_no_trial_is_listed_as_skipped_with_why(folder, tmp_path):  # noqa: F811
    shutil.copytree(folder, tmp_path / "parent" / "cp")
    (tmp_path / "parent" / "notes").mkdir()
    out = StringIO()
    call_command("import_trials", str(tmp_path / "parent"), stdout=out)
    assert out.getvalue().splitlines()[1] == (f"[2/2] skipped    {tmp_path / 'parent/notes'}: holds no trial folder "
                                              "(none has a manifest.json)")


@pytest.mark.django_db
def test_a_subfolder_with_trial_files_but_no_manifest_is_refused_naming_what_it_lacks(folder, tmp_path):  # noqa: F811
    shutil.copytree(folder, tmp_path / "parent" / "cp")
    (tmp_path / "parent" / "cp" / "manifest.json").unlink()
    outcome, = import_trials([tmp_path / "parent"])
    assert (outcome.status, outcome.reason) == (ImportStatus.REFUSED, "the folder has no manifest.json")


@pytest.mark.django_db
def test_a_folder_of_release_layout_trials_is_refused_saying_to_regrade_them_instead():
    outcomes = import_trials([RELEASE])
    assert len(outcomes) == 10 and {o.status for o in outcomes} == {ImportStatus.REFUSED}
    first = outcomes[0]
    assert first.reason.startswith("a trial folder in the release's published layout")
    assert first.reason.endswith(f"storebench regrade {first.path} --calibration calibration/public.json")


@pytest.mark.django_db
@pytest.mark.parametrize(("below", "reason"), [
    ("a/b/c/trial", "its subfolders were not searched: they are more than 3 levels below the folder named; name "
                    "this folder to import the trials in it"),
    ("x/.hidden/trial", "a hidden folder (a trial still being written is hidden until it is complete); name it "
                        "directly to import it"),
])
def test_a_trial_passed_over_below_is_named_with_its_reason_not_as_no_trial(folder, tmp_path, below, reason):
    shutil.copytree(folder, tmp_path / "parent" / below)
    outcomes = import_trials([tmp_path / "parent"])
    passed = str(tmp_path / "parent" / below.rsplit("/", 1)[0])
    assert [(o.path, o.reason) for o in outcomes if o.reason == reason] == [(passed, reason)]
    assert not [o for o in outcomes if "none has a manifest.json" in (o.reason or "")]
    assert outcomes[-1].status == ImportStatus.REFUSED and "name them directly" in outcomes[-1].reason


@pytest.mark.django_db
def test_an_empty_folder_at_the_last_searched_level_is_said_to_hold_no_trial(tmp_path):
    (tmp_path / "x" / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "x" / "a" / "b" / "c" / "calls.jsonl").write_text("")  # e.g. an MCP session's log: no trial
    outcomes = import_trials([tmp_path / "x"])
    assert not [o for o in outcomes if "not searched" in (o.reason or "")]
    assert [o.reason for o in outcomes if o.path == str(tmp_path / "x" / "a")] == [
        "holds no trial folder (none has a manifest.json)"]


@pytest.mark.django_db
def test_an_action_with_a_fractional_number_or_null_arguments_is_imported_as_sent(folder, tmp_path):  # noqa: F811
    from explorer.models import TrialCall

    def agent_like(rows):
        rows[0]["arguments"] = {"product_id": "PRD-001", "price": 49.5}  # a number, as an agent sends it
        rows[1]["arguments"] = None

    target = tmp_path / "agent"
    shutil.copytree(folder, target)
    _rows(target / "actions.jsonl", agent_like)
    resign(target)
    outcome = import_trial(target)
    assert outcome.status == ImportStatus.IMPORTED, outcome.reason
    calls = TrialCall.objects.filter(trial=outcome.trial).order_by("seq")
    assert [calls[0].arguments, calls[1].arguments] == [{"product_id": "PRD-001", "price": 49.5}, {}]


@pytest.mark.django_db
def test_a_business_edited_with_its_composite_is_refused_against_the_trials_own_calibration(folder, tmp_path):  # noqa: F811
    from decimal import Decimal

    from environment.engine.settlement import compose

    def inflate(doc):
        doc["business"] = 0.95
        doc["reward_composite"] = float(compose(Decimal("0.95"), Decimal(str(doc["reliability"])),
                                                Decimal(str(doc["continuity"]))))

    target = tmp_path / "edited"
    shutil.copytree(folder, target)
    _doc(target / "score.json", inflate)
    resign(target)
    outcome = import_trial(target)
    assert outcome.status == ImportStatus.REFUSED
    assert outcome.reason.startswith("score.json: business 0.95 is not what business_raw ")
    assert outcome.reason.endswith("the score was edited, so the trial is not imported")
    assert not Trial.objects.exists()


@pytest.mark.django_db
def test_a_trial_imported_while_its_calibration_could_not_be_read_takes_its_cell_when_imported_again(
        folder, tmp_path, settings):  # noqa: F811
    broken = tmp_path / "public.json"
    broken.write_text("{ not json")
    settings.EXPLORER_CALIBRATIONS = [str(broken)]
    first = import_trial(folder)
    assert first.status == ImportStatus.IMPORTED and first.trial.threshold is None
    assert first.trial.calibration_label == (f"no known calibration file that could be read has {first.trial.task_id} "
                                             f"seed {first.trial.seed}; a known calibration file could not be read "
                                             "(see import_trials' warnings)")
    settings.EXPLORER_CALIBRATIONS = [str(settings.BASE_DIR / "calibration" / "public.json")]
    again = import_trial(folder)
    trial = Trial.objects.get()
    assert again.status == ImportStatus.DUPLICATE and trial.threshold is not None
    assert trial.passed == (trial.reward_composite >= trial.threshold) and trial.cell["threshold"]


@pytest.mark.django_db
def test_symbolic_links_are_neither_followed_nor_read(folder, tmp_path):  # noqa: F811
    outside = tmp_path / "outside"
    shutil.copytree(folder, outside / "elsewhere")
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "linked").symlink_to(outside / "elsewhere")
    outcomes = {Path(o.path).name: (o.status, o.reason) for o in import_trials([batch])}
    assert outcomes["linked"] == (ImportStatus.SKIPPED, "a symbolic link, not followed; name the folder it points "
                                  "to, to import the trials in it")
    assert not Trial.objects.exists()
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / "ledger.jsonl").unlink()
    (copy / "ledger.jsonl").symlink_to(folder / "ledger.jsonl")
    refused = import_trial(copy)
    assert (refused.status, refused.reason) == (ImportStatus.REFUSED, "ledger.jsonl is a symbolic link; a trial folder "
                                                "holds its own files (copy them in)")
    assert not Trial.objects.exists()


@pytest.mark.django_db
def test_a_file_larger_than_a_trial_may_take_is_refused_before_it_is_read(folder, tmp_path, monkeypatch):  # noqa: F811
    copy = shutil.copytree(folder, tmp_path / "big")
    size = (copy / "ledger.jsonl").stat().st_size
    monkeypatch.setattr(folders, "MAX_FILE_BYTES", size - 1)
    outcome = import_trial(copy)
    assert (outcome.status, outcome.reason) == (
        ImportStatus.REFUSED, f"ledger.jsonl takes {size / 2**20:,.0f} MiB, more than the "
                              f"{(size - 1) / 2**20:,.0f} MiB a trial's file may take; it is not imported")


@pytest.mark.django_db
def test_observations_that_unpack_past_the_limit_are_refused(folder, tmp_path, monkeypatch):  # noqa: F811
    copy = shutil.copytree(folder, tmp_path / "bomb")
    (copy / OBSERVATIONS).write_bytes(gzip.compress(b" " * 5_000_000))  # 5 MB of nothing packs to a few KB
    resign(copy)
    monkeypatch.setattr(folders, "MAX_OBSERVATIONS_BYTES", 4_000_000)
    outcome = import_trial(copy)
    assert (outcome.status, outcome.reason) == (
        ImportStatus.REFUSED, f"{OBSERVATIONS} unpacks to more than the 4 MiB a trial's observations may take; "
                              "it is not imported")


@pytest.mark.django_db
def test_a_corrupt_gzip_stream_is_refused_and_the_run_goes_on(folder, tmp_path):  # noqa: F811
    copy = shutil.copytree(folder, tmp_path / "corrupt")
    packed = bytearray(gzip.compress(b'{"result": "x"}\n' * 10_000))
    packed[20:40] = bytes(b ^ 0xFF for b in packed[20:40])  # inside the deflate stream: zlib's own error
    (copy / OBSERVATIONS).write_bytes(bytes(packed))
    resign(copy)
    (outcome,) = import_trials([copy])
    assert outcome.status == ImportStatus.REFUSED
    assert outcome.reason.startswith(f"{OBSERVATIONS} is not a readable gzip file (")
