"""Importing trial folders into the explorer: trust, duplicates, and what is stored.

One counter-punch trial (7 days, 14 windows) is played once for the module and
imported once; tampering tests work on copies of its folder.
"""
import gzip
import json
import shutil
from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from trial_helpers import resign

from environment.artifacts import OBSERVATIONS, file_digest
from environment.calibration import load_calibration
from environment.engine.settlement import compose
from environment.tools import REGISTRY, Family
from environment.trial import run_trial
from explorer.importing import ImportStatus, import_trial
from explorer.models import ToolFamily, Trial, TrialCall, TrialWindow

CALIBRATION = "calibration/public.json"
TASK, SEED = "counter-punch", 7
CHANGED = "{} does not match its checksum in manifest.json (the file was changed after the trial was written)"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    doc, digest = load_calibration(CALIBRATION)
    out = tmp_path_factory.mktemp("explorer-import") / "cp-smart-triage"
    run_trial(TASK, SEED, out, policy="smart-triage", calibration=doc, calibration_hash=digest)
    return out


@pytest.fixture(scope="module")
def imported(folder, django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        outcome = import_trial(folder)
        yield outcome
        Trial.objects.all().delete()


@pytest.fixture
def copy(folder, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(folder, target)
    return target


def edit_line(path, number: int, old: str, new: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    assert old in lines[number]
    lines[number] = lines[number].replace(old, new, 1)
    path.write_text("".join(lines))


def test_the_manifest_records_a_checksum_for_every_other_file(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    others = {p.name for p in folder.iterdir()} - {"manifest.json"}
    assert set(manifest["files"]) == others
    assert all(manifest["files"][name] == file_digest((folder / name).read_bytes()) for name in others)


@pytest.mark.django_db
def test_an_imported_folder_is_verified_against_its_manifest(imported):
    assert imported.status == ImportStatus.IMPORTED
    assert imported.trial.integrity == Trial.Integrity.VERIFIED


@pytest.mark.django_db
def test_importing_the_same_folder_again_creates_no_second_trial(imported, folder):
    again = import_trial(folder)
    assert again.status == ImportStatus.DUPLICATE
    assert again.trial.pk == imported.trial.pk
    assert Trial.objects.count() == 1


@pytest.mark.django_db
def test_a_copy_of_a_folder_elsewhere_is_the_same_trial(imported, copy):
    again = import_trial(copy)
    assert (again.status, again.trial.pk) == (ImportStatus.DUPLICATE, imported.trial.pk)


@pytest.mark.django_db
def test_a_ledger_line_edited_after_the_run_is_refused_naming_the_file(imported, copy):
    edit_line(copy / "ledger.jsonl", 5, '"amount_cents":', '"amount_cents":1')
    outcome = import_trial(copy)
    assert outcome.status == ImportStatus.REFUSED
    assert outcome.reason == CHANGED.format("ledger.jsonl")
    assert Trial.objects.count() == 1


@pytest.mark.django_db
def test_an_edited_score_is_refused_naming_the_file(imported, copy):
    score = json.loads((copy / "score.json").read_text())
    score["reward_composite"] = 0.99
    (copy / "score.json").write_text(json.dumps(score, indent=2) + "\n")
    outcome = import_trial(copy)
    assert (outcome.status, outcome.reason) == (ImportStatus.REFUSED, CHANGED.format("score.json"))


@pytest.mark.django_db
def test_a_re_signed_score_whose_composite_its_components_do_not_give_is_refused(imported, copy):
    score = json.loads((copy / "score.json").read_text())
    real = compose(*(Decimal(str(score[k])) for k in ("business", "reliability", "continuity")))
    score["reward_composite"] = 0.99
    (copy / "score.json").write_text(json.dumps(score, indent=2) + "\n")
    resign(copy)
    outcome = import_trial(copy)
    assert outcome.status == ImportStatus.REFUSED
    assert outcome.reason.startswith(f"score.json: reward_composite 0.99 is not what its components give ({real} ")
    assert Trial.objects.count() == 1


@pytest.mark.django_db
def test_a_folder_missing_its_action_log_is_refused(imported, copy):
    (copy / "actions.jsonl").unlink()
    assert import_trial(copy).reason == "the folder has no actions.jsonl"


@pytest.mark.django_db
def test_a_file_the_manifest_does_not_list_is_refused(imported, copy):
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["files"][OBSERVATIONS]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert import_trial(copy).reason == f"{OBSERVATIONS} is not covered by the checksums in manifest.json"


@pytest.mark.django_db
def test_an_old_manifest_without_checksums_imports_as_unchecked(imported, copy):
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["files"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    (copy / OBSERVATIONS).unlink()  # a different folder, so not a duplicate
    outcome = import_trial(copy)
    assert (outcome.status, outcome.trial.integrity) == (ImportStatus.IMPORTED, Trial.Integrity.UNCHECKED)
    outcome.trial.delete()


@pytest.mark.django_db
def test_an_unchecked_folder_whose_score_disagrees_with_its_ledger_is_refused(imported, copy):
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["files"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    score = json.loads((copy / "score.json").read_text())
    real = Decimal(str(score["net_assets"]))
    score["net_assets"] = float(real + 100)
    (copy / "score.json").write_text(json.dumps(score))
    assert import_trial(copy).reason == (f"score.json net_assets {real + 100:.2f} is not what ledger.jsonl adds up "
                                         f"to ({real:.2f})")


@pytest.mark.django_db
def test_a_summary_for_another_cell_is_refused(imported, copy):
    summary = json.loads((copy / "summary.json").read_text())
    summary["seed"] = 11
    (copy / "summary.json").write_text(json.dumps(summary))
    resign(copy)
    assert import_trial(copy).reason == "summary.json is for counter-punch seed 11, manifest.json for counter-punch seed 7"


@pytest.mark.django_db
def test_every_window_is_stored_and_the_dense_rewards_sum_to_business_raw(imported):
    trial = imported.trial
    windows = TrialWindow.objects.filter(trial=trial)
    assert list(windows.values_list("window", flat=True)) == list(range(trial.windows_played + 1))
    total = sum(w.dense_reward_cents for w in windows if w.dense_reward_cents is not None)
    assert total == trial.business_raw * 100


@pytest.mark.django_db
def test_orders_placed_per_window_add_up_to_the_ledger_sales(imported, folder):
    ledger = [json.loads(line) for line in (folder / "ledger.jsonl").read_text().splitlines()]
    sales = sum(1 for e in ledger if e["kind"] == "sale")
    placed = sum(TrialWindow.objects.filter(trial=imported.trial).values_list("orders_placed", flat=True))
    assert placed == sales > 0


@pytest.mark.django_db
def test_operator_shipments_per_window_add_up_to_the_labels_bought(imported, folder):
    ledger = [json.loads(line) for line in (folder / "ledger.jsonl").read_text().splitlines()]
    labels = sum(1 for e in ledger if e["kind"] == "shipping_label")
    rows = TrialWindow.objects.filter(trial=imported.trial)
    assert sum(w.shipped_on_time + w.shipped_late for w in rows) == labels > 0


@pytest.mark.django_db
def test_every_call_is_stored_with_its_recorded_result(imported, folder):
    actions = (folder / "actions.jsonl").read_text().splitlines()
    results = [json.loads(line)["result"] for line in gzip.decompress((folder / OBSERVATIONS).read_bytes()).splitlines()]
    calls = list(TrialCall.objects.filter(trial=imported.trial).order_by("seq"))
    assert [c.tool for c in calls] == [json.loads(a)["tool"] for a in actions]
    assert [c.result for c in calls] == results


@pytest.mark.django_db
def test_the_threshold_and_anchors_come_from_the_calibration_named_by_the_manifest(imported):
    doc, _ = load_calibration(CALIBRATION)
    cell = doc["tasks"][TASK][str(SEED)]
    trial = imported.trial
    assert trial.calibration_label == CALIBRATION
    assert trial.threshold == Decimal(str(cell["threshold"]))
    assert trial.cell["anchors"]["smart-triage"]["reward_composite"] == str(cell["anchors"]["smart-triage"]["reward_composite"])


@pytest.mark.django_db
def test_the_failure_mode_report_is_stored_at_import(imported):
    assert imported.trial.failure_modes["calls"] == imported.trial.turns
    assert imported.trial.failure_modes["windows_total"] == 14


def test_tool_families_are_the_registrys():
    assert {f.value for f in Family} == {f.value for f in ToolFamily} - {ToolFamily.UNKNOWN}
    assert {spec.family.value for spec in REGISTRY.values()} <= {f.value for f in ToolFamily}


@pytest.mark.django_db
def test_the_command_reports_each_folder_and_fails_on_a_refusal(imported, folder, copy):
    edit_line(copy / "ledger.jsonl", 2, '"amount_cents":', '"amount_cents":9')
    out = StringIO()
    with pytest.raises(CommandError, match="^1 of 2 folders refused$"):
        call_command("import_trials", str(folder), str(copy), stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"[1/2] duplicate  {folder} -> trial {imported.trial.pk} (counter-punch seed 7")
    assert lines[1] == f"[2/2] refused    {copy}: {CHANGED.format('ledger.jsonl')}"
    assert lines[2] == "0 imported, 1 already imported, 1 refused"


@pytest.mark.django_db
def test_a_trial_calibrated_on_the_spot_is_judged_against_the_public_file_and_says_so(imported, copy):
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["calibration_hash"] = None
    (copy / "manifest.json").write_text(json.dumps(manifest))
    trial = import_trial(copy).trial
    assert trial.calibration_label == f"{CALIBRATION} (the trial calibrated its cell on the spot)"
    assert trial.threshold == imported.trial.threshold


@pytest.mark.django_db
def test_the_benchmark_reports_page_times_and_leaves_the_database_as_it_was(imported, copy):
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["source_version"] = "bench-copy"  # a new folder, so the benchmark imports it afresh
    (copy / "manifest.json").write_text(json.dumps(manifest))
    out = StringIO()
    call_command("bench_explorer", "--trial", str(copy), "--requests", "2", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["trial"]["windows"] == 14 and report["requests"] == 2
    assert report["trial_page"]["status"] == 200 and report["trial_page"]["bytes"] > 0
    assert Trial.objects.count() == 1
    assert not get_user_model().objects.filter(username="bench-explorer").exists()
