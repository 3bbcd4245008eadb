"""Fixes from a QA pass over the CLI (run, batch, regrade, replay, analyze) and the explorer."""
from __future__ import annotations

import gzip
import json
import re
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from test_explorer_pages import _as_player, as_researcher, researcher  # noqa: F401

from environment.analyze import analyze
from environment.api import arm
from environment.artifacts import OBSERVATIONS, file_digest, read_action_log
from environment.calibration import load_calibration
from environment.cli import main
from environment.replay import replay
from environment.tasks import get_task
from environment.trial import run_trial
from environment.world import world_hash
from explorer import importing
from explorer.importing import ImportStatus, import_trial, import_trials
from explorer.models import Trial
from explorer.tables import Table

REPO = Path(__file__).resolve().parent.parent
CALIBRATION = REPO / "calibration" / "public.json"


@pytest.fixture(scope="module")
def smart_counter_punch(tmp_path_factory) -> Path:
    """smart-triage on counter-punch seed 7: 14 windows, no purchase order, plays to the horizon."""
    doc, digest = load_calibration(CALIBRATION)
    folder = tmp_path_factory.mktemp("qa") / "smart"
    run_trial("counter-punch", 7, folder, policy="smart-triage", calibration=doc, calibration_hash=digest)
    return folder


@pytest.fixture(scope="module")
def absentee_trial(tmp_path_factory, django_db_setup, django_db_blocker):
    """absentee on counter-punch seed 7, imported: business 0, so its weighted contribution is zero."""
    doc, digest = load_calibration(CALIBRATION)
    folder = tmp_path_factory.mktemp("qa-explorer") / "absentee"
    run_trial("counter-punch", 7, folder, policy="absentee", calibration=doc, calibration_hash=digest)
    with django_db_blocker.unblock():
        trial = import_trial(folder).trial
        yield trial
        Trial.objects.all().delete()


def _lines_out_at_window_boundaries(folder: Path) -> tuple[set[str], int]:
    """Every active line with no unit available at some window's start, before the episode is settled."""
    ep = arm(get_task("counter-punch"), 7)
    out: set[str] = set()

    def sweep() -> None:
        out.update(p.id for p in ep.products if p.active and all(v.available <= 0 for v in p.variants))

    sweep()
    for entry in read_action_log(folder / "actions.jsonl"):
        window = ep.window
        ep.call(entry["tool"], entry.get("arguments", {}))
        if ep.window != window and not ep.over:
            sweep()
    assert ep.over
    return out, sum(1 for p in ep.products if p.active)


def test_settlement_is_not_read_as_every_line_running_out(smart_counter_punch):
    # Settlement liquidates every lot at the horizon; analyze used to sweep the store after it and
    # report all 105 active lines as "ran out and never restocked".
    report = analyze(smart_counter_punch)["lines_that_ran_out_and_were_never_restocked"]
    seen, active = _lines_out_at_window_boundaries(smart_counter_punch)
    assert len(seen) <= report["count"] < active
    assert report["count"] <= len(seen) + active // 10  # only the last window's stock-outs can add to them
    assert "PRD-001" not in report["examples"]  # had stock on the shelf in every window


def _with_manifest(source: Path, folder: Path, **fields) -> Path:
    shutil.copytree(source, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, **fields}))
    return folder


def _cli(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("fields", "named"), [
    ({"task": "no-such-task"}, "unknown task 'no-such-task'"),
    ({"seed": "x"}, "its seed must be a whole number, got 'x'"),
    ({"seed": -5}, "-5 is not a task seed"),
])
def test_replay_names_a_manifest_it_cannot_use_and_goes_on_with_the_next_folder(smart_counter_punch, tmp_path,
                                                                                 capsys, fields, named):
    # An unknown task or a bad seed in one manifest used to stop the whole run (exit 2, nothing on stdout).
    bad = _with_manifest(smart_counter_punch, tmp_path / "bad", **fields)
    code, out, err = _cli(capsys, "replay", bad, smart_counter_punch, "--json")
    assert (code, err) == (1, "")
    first, second = json.loads(out)["trials"]
    assert first["matches"] is False and len(first["problems"]) == 1
    assert first["problems"][0].startswith(f"cannot read the trial: {bad / 'manifest.json'}: ")
    assert named in first["problems"][0]
    assert second["matches"] is True


def test_analyze_names_the_manifest_whose_task_it_does_not_know(smart_counter_punch, tmp_path, capsys):
    bad = _with_manifest(smart_counter_punch, tmp_path / "bad", task="no-such-task")
    code, _out, err = _cli(capsys, "analyze", bad)
    assert code == 2
    assert err.startswith(f"storebench: {bad / 'manifest.json'}: unknown task 'no-such-task'")


def test_a_table_writes_decimals_in_positional_notation():
    table = Table("t", ("a", "b", "c"), [(Decimal("0E-7"), Decimal("1E+2"), Decimal("0.100000"))])
    assert table.as_csv() == "a,b,c\n0.0000000,100,0.100000\n"
    assert json.loads(table.as_json())["rows"] == [{"a": "0.0000000", "b": "100", "c": "0.100000"}]


def test_a_table_writes_yes_and_no_as_json_does():
    table = Table("t", ("passed", "flagged"), [(True, False)])
    assert table.as_csv() == "passed,flagged\ntrue,false\n"
    assert json.loads(table.as_json())["rows"] == [{"passed": True, "flagged": False}]


@pytest.mark.django_db
def test_components_and_compare_downloads_say_passed_alike(absentee_trial, as_researcher, tmp_path):
    # components.csv wrote 1 and compare's CSV True for the same figure
    passed = absentee_trial.passed
    word = "true" if passed else "false"
    components = as_researcher.get(f"/explorer/trials/{absentee_trial.pk}/components.csv").content.decode()
    assert f"\npassed,{word},,\n" in components
    other = import_trial(_as_player(Path(absentee_trial.source_path), tmp_path / "model", "model", "acme-9")).trial
    compared = as_researcher.get(f"/explorer/compare/components.csv?trial={absentee_trial.pk}"
                                 f"&trial={other.pk}").content.decode()
    assert f"\npassed,{word},{word}\n" in compared
    rows = json.loads(as_researcher.get(f"/explorer/trials/{absentee_trial.pk}/components.json").content)["rows"]
    assert {"component": "passed", "value": passed, "weight": None, "contribution": None} in rows


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_a_zero_contribution_downloads_as_a_number_not_0e_7(as_researcher, absentee_trial, fmt):  # noqa: F811
    # A business of 0 times its weight is Decimal('0E-7'): the components download said "0E-7".
    body = as_researcher.get(f"/explorer/trials/{absentee_trial.pk}/components.{fmt}").content.decode()
    assert "E-" not in body and "E+" not in body
    assert "0.0000000" in body


def test_a_model_trial_on_a_cell_the_ladder_file_lacks_is_listed_not_dropped(as_researcher, absentee_trial,  # noqa: F811
                                                                             settings, tmp_path):
    # The ladder is drawn per cell of the first known calibration file; a human or model trial on any
    # other cell used to appear nowhere on the page or in its downloads.
    doc, _digest = load_calibration(CALIBRATION)
    lacking = {**doc, "tasks": {"counter-punch": {"11": doc["tasks"]["counter-punch"]["11"]}}}
    (tmp_path / "lacking.json").write_text(json.dumps(lacking))
    settings.EXPLORER_CALIBRATIONS = [str(tmp_path / "lacking.json")]
    model = import_trial(_as_player(Path(absentee_trial.source_path), tmp_path / "model", "model", "acme-9")).trial
    response = as_researcher.get("/explorer/ladder/")
    page = response.context["page"]
    assert [(r.task, r.seed) for r in page.rows] == [("counter-punch", 11)]
    assert page.off_ladder == [model]
    html = response.content.decode()
    assert 'id="off-ladder"' in html and f'href="/explorer/trials/{model.pk}/"' in html
    rows = as_researcher.get("/explorer/ladder.csv").content.decode().splitlines()
    assert rows[-1] == f"counter-punch,7,model,acme-9,0.100000,,{model.pk}"  # no threshold, so no pass
    assert json.loads(as_researcher.get("/explorer/ladder.json").content)["rows"][-1]["trial"] == model.pk


def _forged(source: Path, folder: Path, name: str, edit) -> Path:
    """A copy of ``source`` with ``name`` edited and re-signed in the manifest (so only the shape checks
    can catch it)."""
    shutil.copytree(source, folder)
    path = folder / name
    if name.endswith(".jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        edit(rows)
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    else:
        record = json.loads(path.read_text())
        edit(record)
        path.write_text(json.dumps(record))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"][name] = file_digest(path.read_bytes())
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


FORGED = [
    # A negative count used to pass the shape check and then crash the whole import run
    # (IntegrityError on a positive column, taken for a duplicate: Trial.DoesNotExist).
    ("summary.json", lambda r: r.update(turns=-3), "summary.json: 'turns' is not a whole number from 0"),
    ("summary.json", lambda r: r.update(windows_played=-1), "summary.json: 'windows_played' is not a whole number"),
    ("actions.jsonl", lambda rows: rows[3].update(window=-1), "actions.jsonl row 4: 'window' is not a whole number"),
    ("events.jsonl", lambda rows: rows[0].update(index=-2), "events.jsonl row 1: 'index' is not a whole number"),
    ("windows.jsonl", lambda rows: rows[2].update(inventory_units=2 ** 40),
     "windows.jsonl row 3: 'inventory_units' is not a whole number in range"),
    # A rating a decimal(6, 4) column cannot hold: stored on SQLite, and the trial page was a 500.
    ("windows.jsonl", lambda rows: rows[2].update(rating=12345.678), "windows.jsonl row 3: 'rating' is too large"),
    ("summary.json", lambda r: r.update(wall_seconds=1e12), "summary.json: 'wall_seconds' is too large"),
    # A policy that is not text became the player label "['x']".
    ("summary.json", lambda r: r.update(policy=["x"]), "summary.json: 'policy' is not text"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "edit", "reason"), FORGED, ids=[f[2].split(": ")[1] for f in FORGED])
def test_a_field_the_explorer_cannot_store_is_refused_naming_it(smart_counter_punch, tmp_path, name, edit, reason):
    folder = _forged(smart_counter_punch, tmp_path / "forged", name, edit)
    outcomes = import_trials([folder, smart_counter_punch])
    assert [o.status for o in outcomes] == [ImportStatus.REFUSED, ImportStatus.IMPORTED]
    assert outcomes[0].reason.startswith(reason), outcomes[0].reason
    assert not Trial.objects.filter(source_path=str(folder.resolve())).exists()


@pytest.mark.django_db
def test_a_figure_the_database_refuses_is_a_refusal_not_a_traceback(smart_counter_punch, monkeypatch):
    from django.db import DataError

    def out_of_range(*args, **kwargs):
        raise DataError("numeric field overflow")

    monkeypatch.setattr(importing, "_window_rows", out_of_range)
    outcome = import_trial(smart_counter_punch)
    assert outcome.status == ImportStatus.REFUSED
    assert "the database cannot store a figure of this folder (numeric field overflow)" in outcome.reason
    assert not Trial.objects.filter(source_path=str(smart_counter_punch.resolve())).exists()


@pytest.fixture(scope="module")
def exploiters(tmp_path_factory) -> dict[str, Path]:
    doc, digest = load_calibration(CALIBRATION)
    root = tmp_path_factory.mktemp("exploiters")
    for task in ("counter-punch", "steady"):
        run_trial(task, 7, root / task, policy="exploiter", calibration=doc, calibration_hash=digest)
    return {task: root / task for task in ("counter-punch", "steady")}


def _refund_calls(folder: Path) -> dict[str, list[dict]]:
    calls: dict[str, list[dict]] = {}
    for entry in read_action_log(folder / "actions.jsonl"):
        if entry["tool"] == "refund_return":
            calls.setdefault(entry["arguments"]["return_id"], []).append(entry)
    return calls


def test_a_refund_refused_because_the_return_had_escalated_is_not_a_partial_refund(exploiters):
    # On counter-punch the exploiter's three partial refunds all come after the returns escalated and
    # are refused (return_closed); analyze counted each as "a partial refund that escalated".
    calls = _refund_calls(exploiters["counter-punch"])
    assert calls and all(not c["ok"] and c["error"] == "return_closed" for cs in calls.values() for c in cs)
    assert analyze(exploiters["counter-punch"])["partial_refunds_that_escalated"]["count"] == 0


def test_a_partial_refund_paid_before_the_return_escalated_is_counted(exploiters):
    report = analyze(exploiters["steady"])["partial_refunds_that_escalated"]
    calls = _refund_calls(exploiters["steady"])
    assert report["count"] >= 1
    for example in report["examples"]:
        paid = [c for c in calls[example["return_id"]] if c["ok"]]
        assert paid and all("amount" in c["arguments"] for c in paid)
        # what the operator refunded, not the order's refunded total after the escalation refunded the rest
        # (the example said "refunded 4700, paid 4700" for a refund of 37.60)
        assert example["refunded_cents"] == sum(round(Decimal(c["arguments"]["amount"]) * 100) for c in paid)
        assert 0 < example["refunded_cents"] < example["paid_cents"]


@pytest.fixture
def do_nothing_trial(tmp_path):
    """do-nothing on counter-punch seed 7: it stops before its first window ends (0 windows played)."""
    doc, digest = load_calibration(CALIBRATION)
    run_trial("counter-punch", 7, tmp_path / "dn", policy="do-nothing", calibration=doc, calibration_hash=digest)
    return import_trial(tmp_path / "dn").trial


@pytest.mark.django_db
def test_a_trial_that_played_no_window_is_not_said_to_predate_the_order_counters(as_researcher,  # noqa: F811
                                                                                 do_nothing_trial):
    # The flow charts of a trial with 0 windows played said "Not recorded in this trial's folder (written
    # before the engine logged order counters)" and "not recorded in this trial", over an axis labelled
    # $0, $0, $0, $1, $1, $1.
    assert do_nothing_trial.windows_played == 0
    html = as_researcher.get(f"/explorer/trials/{do_nothing_trial.pk}/").content.decode()
    assert "Not recorded in this trial" not in html and "not recorded in this trial" not in html
    svg = as_researcher.get(f"/explorer/trials/{do_nothing_trial.pk}/charts/dense-reward.svg").content.decode()
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "no window was played" in labels
    assert not [label for label in labels if label.startswith("$")]


@pytest.fixture
def truncated_ladder_file(settings, tmp_path):
    broken = tmp_path / "public.json"
    broken.write_text(CALIBRATION.read_text()[:5000])
    settings.EXPLORER_CALIBRATIONS = [str(broken)]
    return broken


@pytest.mark.parametrize("url", ["/explorer/ladder.svg", "/explorer/ladder.csv", "/explorer/ladder.json"])
def test_the_ladder_downloads_of_an_unreadable_file_are_a_503_naming_it(as_researcher, truncated_ladder_file,  # noqa: F811
                                                                        url):
    # They were a 200: an empty (invalid) SVG, and a table with no rows, as if that were the ladder.
    response = as_researcher.get(url)
    assert response.status_code == 503
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert f"{truncated_ladder_file}: not a calibration file" in response.content.decode()


def test_the_ladder_page_gives_advice_for_the_page_not_the_command_line(as_researcher, truncated_ladder_file):  # noqa: F811
    problem = as_researcher.get("/explorer/ladder/").context["page"].problem
    assert "leave the option out" not in problem
    assert problem.endswith(f"Restore {truncated_ladder_file}, or write it again with `storebench calibrate --out "
                            f"{truncated_ladder_file}`, then reload this page.")


def test_import_warns_of_an_unreadable_calibration_without_command_line_advice(truncated_ladder_file):
    from explorer.calibrations import problems

    [warning] = problems()
    assert warning.startswith(f"calibration {truncated_ladder_file} left out: {truncated_ladder_file}: not a calibration")
    assert "leave the option out" not in warning


@pytest.mark.parametrize(("fields", "said"), [
    ({"task_file_hash": "sha256:" + "0" * 64}, "the trial ran on task file sha256:" + "0" * 64 + ", this engine's is "
     + get_task("counter-punch").file_hash),
    ({"world_hash": "sha256:" + "0" * 64}, "the trial ran on world sha256:" + "0" * 64 + ", this engine has "
     + world_hash()),
])
def test_analyze_warns_of_a_trial_played_on_another_task_file_or_world(smart_counter_punch, tmp_path, capsys,
                                                                        fields, said):
    # replay refuses such a trial and the explorer leaves its failure modes out; analyze reported on this
    # engine's store without a word.
    folder = _with_manifest(smart_counter_punch, tmp_path / "elsewhere", **fields)
    code, out, err = _cli(capsys, "analyze", folder)
    assert code == 0 and out.startswith(f"path: {folder}")
    assert err == (f"storebench: warning: {folder}: {said}; the report replays its action log on this engine's, so "
                   "it may describe another store than the one played (storebench replay refuses it)\n")
    assert _cli(capsys, "analyze", smart_counter_punch)[2] == ""
    assert replay(folder).problems == [said]  # one rule, one wording: replay refuses it for the same reason


@pytest.mark.django_db
def test_a_folder_with_only_a_score_is_not_called_the_release_layout(smart_counter_punch, tmp_path):
    # It was refused as "a trial folder in the release's published layout ... re-grade it instead", which
    # storebench regrade cannot do without a summary, an action log and a ledger.
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(smart_counter_punch / "score.json", lone / "score.json")
    [outcome] = import_trials([lone])
    assert outcome.status == ImportStatus.REFUSED
    assert outcome.reason == ("the folder has no manifest.json, summary.json, actions.jsonl, ledger.jsonl, "
                              "windows.jsonl, events.jsonl")
    [release] = import_trials([REPO / "fixtures" / "release-trajectories" / "cash-crunch__s7__do-nothing-04"])
    assert release.reason.startswith("a trial folder in the release's published layout")


@pytest.mark.parametrize("command", [
    ["run", "--task", "counter-punch", "--seed", "7", "--policy", "absentee", "--calibration", str(CALIBRATION)],
    ["batch", "--tasks", "counter-punch", "--seeds", "7", "--policy", "absentee", "--workers", "1",
     "--calibration", str(CALIBRATION)],
    ["calibrate", "--tasks", "counter-punch", "--seeds", "7"],
])
def test_an_empty_out_is_refused_before_anything_is_written(tmp_path, monkeypatch, capsys, command):
    # batch --out "" wrote its trial folders into the current folder ("trial folders under " and nothing).
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--out", ""])
    assert exit_.value.code == 2
    assert "argument --out: an empty path names nothing: give the folder or file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_batch_line_rounds_the_mean_composite_once(smart_counter_punch, tmp_path, capsys):
    # counter-punch's action log replayed on short-runway seed 7 scores 0.13246: the summary line said
    # "mean composite 0.133" (0.13246 rounded to 0.1325, then to 3 places) beside "[1/1] ...: composite 0.132".
    code, out, err = _cli(capsys, "batch", "--tasks", "short-runway", "--seeds", "7", "--actions",
                          smart_counter_punch / "actions.jsonl", "--out", tmp_path / "b", "--workers", "1",
                          "--calibration", CALIBRATION)
    assert code == 0
    composite = json.loads((tmp_path / "b" / "short-runway-7-actions" / "score.json").read_text())["reward_composite"]
    assert composite == 0.13246
    assert ": composite 0.132" in err and out.startswith("1 trial, 0 passed, mean composite 0.132, ")


def _with_observations(source: Path, folder: Path, payload: bytes) -> Path:
    shutil.copytree(source, folder)
    data = gzip.compress(payload)
    (folder / OBSERVATIONS).write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"][OBSERVATIONS] = file_digest(data)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


OBSERVATION_ROWS = [b'{"call": 1}\n', b"[1, 2]\n", b'{"call": 1, "result": 5}\n']


@pytest.mark.django_db
@pytest.mark.parametrize("payload", OBSERVATION_ROWS)
def test_an_observation_row_without_a_text_result_is_refused_not_a_traceback(smart_counter_punch, tmp_path,
                                                                             payload):
    # import_trials stopped with KeyError/TypeError on a re-signed observations.jsonl.gz whose row had no
    # 'result' (or was not an object): the whole run ended in a traceback.
    folder = _with_observations(smart_counter_punch, tmp_path / "obs", payload)
    outcomes = import_trials([folder, smart_counter_punch])
    assert [o.status for o in outcomes] == [ImportStatus.REFUSED, ImportStatus.IMPORTED]
    assert outcomes[0].reason.startswith(f"{OBSERVATIONS} row 1: 'result' is missing or not text")


@pytest.mark.parametrize("payload", OBSERVATION_ROWS[:2])
def test_replay_names_the_observation_line_it_cannot_read(smart_counter_punch, tmp_path, payload):
    # It said "observations.jsonl.gz cannot be read: 'result'" (a KeyError's text).
    result = replay(_with_observations(smart_counter_punch, tmp_path / "obs", payload))
    assert f"{OBSERVATIONS} cannot be read: line 1 is not an object with a 'result'" in result.problems


def test_analyze_says_a_release_layout_folder_is_one_and_points_to_regrade(capsys):
    # It asked "manifest.json is missing: is ... a trial folder written by storebench?" (replay names the layout).
    folder = REPO / "fixtures" / "release-trajectories" / "cash-crunch__s7__do-nothing-04"
    code, _out, err = _cli(capsys, "analyze", folder)
    assert code == 2
    assert err == (f"storebench: {folder} is in the release's layout, with no manifest.json, so there is no world or "
                   "task file hash to replay its action log against; storebench regrade checks its score against its "
                   "ledger\n")


@pytest.mark.django_db
def test_a_trial_calibrated_on_the_spot_outside_the_known_files_says_why_it_has_no_threshold(
        smart_counter_punch, settings, tmp_path):
    # Its page said only "no threshold: no known calibration file has counter-punch seed 7", though
    # storebench run had printed a threshold for it: the folder does not keep it.
    doc, _digest = load_calibration(CALIBRATION)
    (tmp_path / "lacking.json").write_text(json.dumps({**doc, "tasks": {}}))
    settings.EXPLORER_CALIBRATIONS = [str(tmp_path / "lacking.json")]
    spot = import_trial(_with_manifest(smart_counter_punch, tmp_path / "spot", calibration_hash=None)).trial
    assert spot.threshold is None
    assert spot.calibration_label == ("no known calibration file has counter-punch seed 7; the trial calibrated it "
                                      "on the spot, and a trial folder does not record the threshold")
    graded = import_trial(smart_counter_punch).trial
    assert graded.calibration_label == "no known calibration file has counter-punch seed 7"


@pytest.mark.parametrize(("command", "argument"), [
    (["replay", ""], "dirs"),
    (["analyze", ""], "dirs"),
    (["regrade", "", "--calibration", str(CALIBRATION)], "dirs"),
    (["regrade", "some-trial", "--calibration", ""], "--calibration"),
    (["run", "--task", "counter-punch", "--seed", "7", "--out", "x", "--calibration", ""], "--calibration"),
    (["mcp", "--task", "counter-punch", "--seed", "7", "--trials", ""], "--trials"),
    (["mcp", "--task", "counter-punch", "--seed", "7", "--labels-file", ""], "--labels-file"),
    (["mcp", "--http", "--state", ""], "--state"),
    (["agent", "--model", "m", "--base-url", "http://127.0.0.1:9", "--trials", ""], "--trials"),
])
def test_an_empty_path_is_refused_not_read_as_the_current_folder(tmp_path, monkeypatch, capsys, command, argument):
    # replay "" replayed the current folder, named "."; mcp --trials "" wrote under ./trials.
    from mcp_client.cli import main as full_main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        full_main(command)
    assert exit_.value.code == 2
    assert f"argument {argument}: an empty path names nothing: give the folder or file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_batch_without_a_calibration_says_one_cell_in_the_singular(tmp_path, capsys):
    assert main(["batch", "--tasks", "counter-punch", "--seeds", "7", "--policy", "absentee", "--workers", "1",
                 "--out", str(tmp_path / "trials")]) == 0
    assert ("storebench: no --calibration, so the cell counter-punch seed 7 is calibrated on the spot\n"
            in capsys.readouterr().err)


@pytest.mark.django_db
def test_the_explorer_leaves_out_the_failure_modes_of_a_trial_played_on_another_world(smart_counter_punch, tmp_path):
    folder = _with_manifest(smart_counter_punch, tmp_path / "elsewhere", world_hash="sha256:" + "0" * 64)
    trial = import_trial(folder).trial
    assert trial.failure_modes is None
    assert trial.failure_modes_note == ("not analysed: the trial ran on world sha256:" + "0" * 64
                                        + ", this engine has " + world_hash())
