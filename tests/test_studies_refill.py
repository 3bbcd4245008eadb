"""A refused form on a study page comes back filled in as it was sent (studies.refill)."""
import json
import re

import pytest
from test_studies_support import admin, bot, cell, coordinator, study  # noqa: F401

from studies import assignment, refill
from studies.models import AuditAction, AuditEvent


@pytest.fixture
def coord_client(client, coordinator):
    client.force_login(coordinator)
    return client


def kept(html: str) -> dict | None:
    found = re.search(r'<script id="refill" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(found.group(1)) if found else None


def test_a_refused_attempt_action_comes_back_with_its_reason(coord_client, study, bot, cell, coordinator):
    attempt = assignment.assign(coordinator, bot, cell)
    path = f"/studies/{study.pk}/attempts/{attempt.pk}/"
    response = coord_client.post(path, {"action": "extend", "minutes": "", "reason": "a long note the coordinator typed"})
    assert response.status_code == 302 and response["Location"] == f"/studies/{study.pk}/#attempts"
    html = coord_client.get(response["Location"]).content.decode()
    assert kept(html) == {"action": path, "data": {"action": ["extend"], "minutes": [""],
                                                   "reason": ["a long note the coordinator typed"]}}
    assert '<script src="/static/studies/refill.js" defer></script>' in html
    again = coord_client.get(f"/studies/{study.pk}/").content.decode()  # taken once
    assert kept(again) is None and "refill.js" not in again


def test_nothing_is_kept_when_the_form_is_taken(coord_client, study, bot, cell, coordinator):
    attempt = assignment.assign(coordinator, bot, cell)
    response = coord_client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/",
                                 {"action": "force_end", "minutes": "", "reason": "never started"})
    assert response.status_code == 302 and AuditEvent.objects.filter(action=AuditAction.FORCE_ENDED).exists()
    assert refill.SESSION_KEY not in coord_client.session
    assert kept(coord_client.get(f"/studies/{study.pk}/").content.decode()) is None


def test_the_token_is_not_kept_and_a_field_too_long_is_left_out_not_cut(coord_client, study, bot, cell, coordinator):
    attempt = assignment.assign(coordinator, bot, cell)
    coord_client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/", {
        "action": "extend", "minutes": "", "reason": "x" * (refill.MAX_CHARS + 1), "csrfmiddlewaretoken": "t"})
    data = kept(coord_client.get(f"/studies/{study.pk}/").content.decode())["data"]
    assert data == {"action": ["extend"], "minutes": [""]}


def test_an_old_refusal_fills_nothing(coord_client, study, bot, cell, coordinator, monkeypatch):
    attempt = assignment.assign(coordinator, bot, cell)
    coord_client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/", {"action": "extend", "minutes": ""})
    later = refill.clock() + refill.FRESH_SECONDS + 1
    monkeypatch.setattr(refill, "clock", lambda: later)
    assert kept(coord_client.get(f"/studies/{study.pk}/").content.decode()) is None
    assert refill.SESSION_KEY not in coord_client.session


def test_another_page_takes_nothing_kept_for_the_study_page(coord_client, study, bot, cell, coordinator):
    attempt = assignment.assign(coordinator, bot, cell)
    coord_client.post(f"/studies/{study.pk}/attempts/{attempt.pk}/", {"action": "extend", "minutes": ""})
    assert kept(coord_client.get(f"/studies/{study.pk}/monitor/").content.decode()) is None


def test_a_refused_monitor_action_comes_back_on_the_monitor(coord_client, study, bot, cell, coordinator):
    attempt = assignment.assign(coordinator, bot, cell)
    sent = {"attempt": str(attempt.pk), "action": "reassign", "to": "", "minutes": "", "reason": "wrong person"}
    response = coord_client.post(f"/studies/{study.pk}/monitor/act/", sent)
    assert response.status_code == 302 and response["Location"] == f"/studies/{study.pk}/monitor/"
    html = coord_client.get(response["Location"]).content.decode()
    assert kept(html) == {"action": f"/studies/{study.pk}/monitor/act/", "data": {k: [v] for k, v in sent.items()}}
    # monitor.js first (it builds the To list the refill then sets)
    assert html.index("studies/monitor.js") < html.index("studies/refill.js")
    assert not AuditEvent.objects.filter(action=AuditAction.REASSIGNED).exists()


def test_a_refused_pay_approval_comes_back_with_its_reason(coord_client, study):
    response = coord_client.post(f"/studies/{study.pk}/pay/approve/", {"reason": "checked the logs"})
    assert response.status_code == 302 and response["Location"] == f"/studies/{study.pk}/pay/"
    html = coord_client.get(response["Location"]).content.decode()
    assert "choose at least one attempt to approve" in html
    assert kept(html) == {"action": f"/studies/{study.pk}/pay/approve/", "data": {"reason": ["checked the logs"]}}
