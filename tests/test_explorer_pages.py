"""The explorer's pages and downloads, through Django's test client.

Played once for the module: smart-triage and absentee on supply-shock seed 7 (60
windows; four events, on all three channels) and absentee on counter-punch seed 7
(another cell).  The counter-punch folder is also imported twice more, re-signed
as a model's and a person's trial, for the ladder.
"""
import csv
import io
import json
import shutil
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from environment.artifacts import file_digest
from environment.calibration import load_calibration
from environment.trial import run_trial
from explorer.access import RESEARCHER_GROUP
from explorer.importing import import_trial
from explorer.models import Trial, TrialCall, TrialEvent

CALIBRATION = "calibration/public.json"
SVG = "{http://www.w3.org/2000/svg}"


def _play(root, name, task, policy):
    doc, digest = load_calibration(CALIBRATION)
    out = root / name
    run_trial(task, 7, out, policy=policy, calibration=doc, calibration_hash=digest)
    return out


def _as_player(folder, target, key, value):
    shutil.copytree(folder, target)
    summary = json.loads((target / "summary.json").read_text())
    summary[key] = value
    (target / "summary.json").write_text(json.dumps(summary))
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["files"]["summary.json"] = file_digest((target / "summary.json").read_bytes())
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


@pytest.fixture(scope="module")
def trials(tmp_path_factory, django_db_setup, django_db_blocker):
    root = tmp_path_factory.mktemp("explorer-pages")
    folders = {"smart": _play(root, "ss-smart", "supply-shock", "smart-triage"),
               "absentee": _play(root, "ss-absentee", "supply-shock", "absentee"),
               "other": _play(root, "cp-absentee", "counter-punch", "absentee")}
    folders["model"] = _as_player(folders["other"], root / "cp-model", "model", "acme-llm-1")
    folders["human"] = _as_player(folders["other"], root / "cp-human", "participant", "expert-3")
    with django_db_blocker.unblock():
        imported = {name: import_trial(path).trial for name, path in folders.items()}
        yield imported
        Trial.objects.all().delete()


@pytest.fixture
def researcher(db):
    return get_user_model().objects.create(username="res", is_staff=True)


@pytest.fixture
def participant(db):
    return get_user_model().objects.create(username="part")


def client_for(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def as_researcher(client, researcher):
    return client_for(client, researcher)


@pytest.fixture
def as_participant(client, participant):
    return client_for(client, participant)


def test_the_explorer_needs_a_signed_in_user(client, trials):
    response = client.get(f"/explorer/trials/{trials['smart'].pk}/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_trial_page_shows_the_components_against_threshold_and_anchors(as_researcher, trials):
    trial = trials["smart"]
    page = as_researcher.get(f"/explorer/trials/{trial.pk}/")
    html = page.content.decode()
    components = {c["key"]: c["value"] for c in page.context["page"].components}
    assert components == {"business": trial.business, "reliability": trial.reliability,
                          "on_time_rate": trial.on_time_rate, "return_handled_rate": trial.return_handled_rate,
                          "continuity": trial.continuity}
    assert f"threshold <strong>{trial.threshold:.3f}</strong>" in html
    for name, anchor in trial.cell["anchors"].items():
        assert f"<td>{name}</td>" in html
        assert f"{float(anchor['reward_composite']):.3f}" in html


def test_the_anchor_table_puts_the_threshold_between_the_anchors_it_separates(as_researcher, trials):
    rows = as_researcher.get(f"/explorer/trials/{trials['absentee'].pk}/").context["page"].anchors
    at = next(i for i, r in enumerate(rows) if r.get("is_threshold"))
    assert all(r["composite"] >= rows[at]["composite"] for r in rows[:at])
    assert all(r["composite"] < rows[at]["composite"] for r in rows[at + 1:])


def test_the_trial_page_has_a_chart_for_each_measure(as_researcher, trials):
    html = as_researcher.get(f"/explorer/trials/{trials['smart'].pk}/").content.decode()
    for title in ("Cash", "Net assets", "Dense reward per window", "Stock on hand", "Orders placed per window",
                  "Shipments per window"):
        assert f">{title}</title>" in html


def test_a_researcher_sees_the_events_with_their_channels(as_researcher, trials):
    html = as_researcher.get(f"/explorer/trials/{trials['smart'].pk}/").content.decode()
    events = TrialEvent.objects.filter(trial=trials["smart"])
    assert {e.channel for e in events} == {"announced", "rumoured", "silent"}
    assert html.count('class="event-marker"') == 6 * events.count()
    for e in events:
        assert f'<tr class="x-event" data-channel="{e.channel}">' in html


def test_a_participant_is_refused_the_trial_page(as_participant, trials):
    response = as_participant.get(f"/explorer/trials/{trials['smart'].pk}/")
    html = response.content.decode()
    assert response.status_code == 403
    assert "event-marker" not in html and "threshold" not in html.lower()


def test_a_member_of_the_researcher_group_sees_the_events(client, participant, trials):
    participant.groups.add(Group.objects.create(name=RESEARCHER_GROUP))
    html = client_for(client, participant).get(f"/explorer/trials/{trials['smart'].pk}/").content.decode()
    assert "event-marker" in html


def test_a_study_researcher_is_a_researcher_here(client, participant, trials):
    from studies.models import Role, Study, StudyMembership
    study = Study.objects.create(name="s", calibration_path="x", calibration_hash="h")
    StudyMembership.objects.create(study=study, user=participant, role=Role.RESEARCHER)
    html = client_for(client, participant).get(f"/explorer/trials/{trials['smart'].pk}/").content.decode()
    assert "event-marker" in html


def test_a_participant_gets_no_chart(as_participant, trials):
    response = as_participant.get(f"/explorer/trials/{trials['smart'].pk}/charts/cash.svg")
    assert response.status_code == 403 and b"<svg" not in response.content


def test_a_researcher_downloads_the_events_with_their_channels(as_researcher, trials):
    rows = json.loads(as_researcher.get(f"/explorer/trials/{trials['smart'].pk}/events.json").content)["rows"]
    assert [(r["tag"], r["channel"]) for r in rows] == [("E1", "announced"), ("E2", "rumoured"), ("E3", "announced"),
                                                        ("E4", "silent")]


def test_a_participant_cannot_download_the_events(as_participant, trials):
    response = as_participant.get(f"/explorer/trials/{trials['smart'].pk}/events.csv")
    assert response.status_code == 403 and b"E1" not in response.content


def test_the_action_log_filters_by_tool_family(as_researcher, trials):
    trial = trials["smart"]
    page = as_researcher.get(f"/explorer/trials/{trial.pk}/?family=sourcing").context["page"]
    assert {c.family for c in page.calls} == {"sourcing"}
    assert page.calls.paginator.count == TrialCall.objects.filter(trial=trial, family="sourcing").count() > 0


def test_the_action_log_is_paginated_in_call_order(as_researcher, trials):
    page = as_researcher.get(f"/explorer/trials/{trials['smart'].pk}/?page=2").context["page"]
    assert [c.seq for c in page.calls] == list(range(51, 101))


def test_an_unknown_tool_family_is_a_bad_request(as_researcher, trials):
    response = as_researcher.get(f"/explorer/trials/{trials['smart'].pk}/?family=magic")
    assert response.status_code == 400
    assert response.context["problem"] == ("There is no tool family 'magic'; choose one of status and time, catalog "
                                           "and listings, inventory, orders, returns, sourcing, finance and market, "
                                           "unknown, or none for every call.")


def test_two_trials_of_one_cell_are_compared_window_by_window(as_researcher, trials):
    a, b = trials["smart"], trials["absentee"]
    response = as_researcher.get(f"/explorer/compare/?trial={a.pk}&trial={b.pk}")
    page = response.context["page"]
    assert response.status_code == 200
    assert [t.pk for t in page.trials] == [a.pk, b.pk]
    assert page.display[0] == ("composite", "score", [f"{a.reward_composite:.3f}", f"{b.reward_composite:.3f}"])
    for chart in page.charts:
        assert chart.svg.count("<polyline") == 2


def test_trials_of_different_cells_are_not_compared(as_researcher, trials):
    a, c = trials["smart"], trials["other"]
    response = as_researcher.get(f"/explorer/compare/?trial={a.pk}&trial={c.pk}")
    assert response.status_code == 400
    assert response.context["problem"] == (f"Only trials of the same cell can be compared: trial {a.pk} is "
                                           f"supply-shock seed 7; trial {c.pk} is counter-punch seed 7.")


def test_a_trial_number_of_thousands_of_digits_is_no_trial_not_a_server_error(as_researcher, trials):
    huge = "9" * 5000
    for path in ("/explorer/compare/", "/explorer/compare/components.csv"):
        response = as_researcher.get(f"{path}?trial={trials['smart'].pk}&trial={huge}")
        assert response.status_code == 400, path
    page = as_researcher.get(f"/explorer/compare/?trial={trials['smart'].pk}&trial={huge}")
    assert page.context["problem"] == "There is no trial 99999999999999999999… (5,000 digits)."


def test_a_comparison_needs_two_or_three_trials(as_researcher, trials):
    response = as_researcher.get(f"/explorer/compare/?trial={trials['smart'].pk}")
    assert response.status_code == 400
    assert response.context["problem"] == "Choose two or three trials of one cell to compare."


def test_the_ladder_shows_human_and_model_results_per_cell(as_researcher, trials):
    page = as_researcher.get("/explorer/ladder/").context["page"]
    row = next(r for r in page.rows if (r.task, r.seed) == ("counter-punch", 7))
    assert {(t.player_kind, t.player) for t in row.results} == {("model", "acme-llm-1"), ("human", "expert-3")}
    assert [name for name, _ in row.anchors] == ["do-nothing", "absentee", "blast-list", "rule-based",
                                                 "smart-triage", "exploiter"]
    assert "acme-llm-1 (trial" in page.svg and "expert-3 (trial" in page.svg


def test_a_ladder_result_without_a_verdict_is_drawn_neither_pass_nor_fail(as_researcher, trials):
    model = trials["model"]
    Trial.objects.filter(pk=model.pk).update(threshold=None, passed=None)
    try:
        html = as_researcher.get("/explorer/ladder/").content.decode()
    finally:
        Trial.objects.filter(pk=model.pk).update(threshold=model.threshold, passed=model.passed)
    chip = html[html.index(f'href="/explorer/trials/{model.pk}/"') - 120:html.index(f'href="/explorer/trials/{model.pk}/"')]
    assert 'class="x-result-chip " title="no threshold: no known calibration file has this cell"' in chip


def _parse(kind: str, body: bytes):
    text = body.decode()
    if kind == "csv":
        return list(csv.reader(io.StringIO(text)))
    if kind == "json":
        return json.loads(text)
    return ET.fromstring(text)


DOWNLOADS = [
    ("trial components csv", "/explorer/trials/{smart}/components.csv", "text/csv; charset=utf-8", "csv"),
    ("trial components json", "/explorer/trials/{smart}/components.json", "application/json", "json"),
    ("windows csv", "/explorer/trials/{smart}/windows.csv", "text/csv; charset=utf-8", "csv"),
    ("windows json", "/explorer/trials/{smart}/windows.json", "application/json", "json"),
    ("actions csv", "/explorer/trials/{smart}/actions.csv?family=orders", "text/csv; charset=utf-8", "csv"),
    ("actions json", "/explorer/trials/{smart}/actions.json", "application/json", "json"),
    ("trial chart", "/explorer/trials/{smart}/charts/shipments.svg", "image/svg+xml", "svg"),
    ("compare chart", "/explorer/compare/charts/net-assets.svg?trial={smart}&trial={absentee}", "image/svg+xml", "svg"),
    ("compare csv", "/explorer/compare/components.csv?trial={smart}&trial={absentee}", "text/csv; charset=utf-8", "csv"),
    ("compare json", "/explorer/compare/components.json?trial={smart}&trial={absentee}", "application/json", "json"),
    ("ladder svg", "/explorer/ladder.svg", "image/svg+xml", "svg"),
    ("ladder csv", "/explorer/ladder.csv", "text/csv; charset=utf-8", "csv"),
    ("ladder json", "/explorer/ladder.json", "application/json", "json"),
]


@pytest.mark.parametrize("name,url,content_type,kind", DOWNLOADS, ids=[d[0] for d in DOWNLOADS])
def test_each_download_has_its_content_type_and_parses(as_researcher, trials, name, url, content_type, kind):
    response = as_researcher.get(url.format(**{k: t.pk for k, t in trials.items()}))
    assert response.status_code == 200
    assert response["Content-Type"] == content_type
    assert response["Content-Disposition"].startswith("attachment; filename=")
    parsed = _parse(kind, response.content)
    if kind == "svg":
        assert parsed.tag == f"{SVG}svg"
    else:
        assert len(parsed) > 1 if kind == "csv" else len(parsed["rows"]) > 0


def test_the_windows_download_has_one_row_per_window_with_the_stored_balances(as_researcher, trials):
    trial = trials["smart"]
    rows = json.loads(as_researcher.get(f"/explorer/trials/{trial.pk}/windows.json").content)["rows"]
    assert [r["window"] for r in rows] == list(range(trial.windows_played + 1))
    assert rows[-1]["net_assets_cents"] == trial.windows.get(window=trial.windows_played).net_assets_cents


def test_the_components_download_keeps_the_exact_score(as_researcher, trials):
    trial = trials["smart"]
    rows = json.loads(as_researcher.get(f"/explorer/trials/{trial.pk}/components.json").content)["rows"]
    composite = next(r for r in rows if r["component"] == "reward_composite")
    assert Decimal(composite["value"]) == trial.reward_composite
    assert composite["value"] == str(Trial.objects.get(pk=trial.pk).reward_composite)
