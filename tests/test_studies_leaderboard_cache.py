"""The leaderboard is computed once per study state and read afterwards; the forest plot."""
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest
from django.core.cache import cache
from test_studies_support import admin  # noqa: F401

from benchmarks.management.commands.bench_leaderboard import build
from studies import attempts as attempt_actions
from studies import leaderboard as lb
from studies.forest import forest_svg

RESAMPLES = 200


@pytest.fixture
def built(admin):
    cache.clear()
    study, cells, attempts = build(admin)
    return study


def _keys():
    return {k for k in cache._cache if lb.CACHE_PREFIX in k}  # the test settings use the local-memory cache


def test_shape_of_the_benchmark_study(built):
    assert built.cells.count() == 33 and built.attempts.count() == 36
    assert built.attempts.filter(is_selected=True).count() == 33


def test_second_view_reads_the_cached_figures(admin, built):
    first, _ = lb.leaderboard(admin, built, resamples=RESAMPLES)
    assert len(_keys()) == 1
    second, _ = lb.leaderboard(admin, built, resamples=RESAMPLES)
    assert len(_keys()) == 1  # nothing new computed or stored
    assert [(e.name, e.estimate) for e in second] == [(e.name, e.estimate) for e in first]
    fresh, _ = lb.leaderboard(admin, built, resamples=RESAMPLES, use_cache=False)
    assert [(e.name, e.estimate) for e in fresh] == [(e.name, e.estimate) for e in first]


def test_a_new_selection_changes_the_key_and_the_figures(admin, built):
    before, _ = lb.leaderboard(admin, built, resamples=RESAMPLES)
    cell = built.cells.filter(quota=2).first()
    other = cell.attempts.get(is_selected=False)
    attempt_actions.select(admin, other, "the other attempt is the retained one")
    after, _ = lb.leaderboard(admin, built, resamples=RESAMPLES)
    assert len(_keys()) == 2
    humans = {e.name: e.estimate for e in before if e.kind == "human"}
    humans_after = {e.name: e.estimate for e in after if e.kind == "human"}
    assert humans["Humans (equal-cell mean)"] != humans_after["Humans (equal-cell mean)"]
    assert humans["Humans (earliest attempt)"] == humans_after["Humans (earliest attempt)"]


def test_a_recalibrated_study_does_not_read_the_old_figures(admin, built):
    lb.leaderboard(admin, built, resamples=RESAMPLES)
    built.calibration_hash = "other"
    lb.leaderboard(admin, built, resamples=RESAMPLES)
    assert len(_keys()) == 2


def test_forest_plot_has_a_mark_per_entry_and_escapes_names(admin, built):
    entries, _ = lb.leaderboard(admin, built, resamples=RESAMPLES, trials=[("black-swan/7", Decimal("0.5"), "<model & co>")])
    svg = forest_svg(entries)
    root = ET.fromstring(svg)  # well-formed XML
    ns = {"s": "http://www.w3.org/2000/svg"}
    circles = root.findall(".//s:circle", ns)
    assert len(circles) == sum(1 for e in entries if e.estimate.value is not None)
    assert {c.get("class").split()[1] for c in circles} == {"kind-human", "kind-anchor", "kind-model"}
    labels = [t.text for t in root.findall(".//s:text[@class='label']", ns)]
    assert "<model & co>" in labels and "&lt;model &amp; co&gt;" in svg


def test_leaderboard_page_and_svg(client, admin, built):
    client.force_login(admin)
    html = client.get(f"/studies/{built.pk}/leaderboard/").content.decode()
    assert '<figure id="forest"><svg' in html
    response = client.get(f"/studies/{built.pk}/leaderboard.svg")
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert client.get(f"/studies/{built.pk}/leaderboard.svg?include_x=1").status_code == 400


def test_a_withdrawal_or_a_regrade_is_not_served_from_the_cache(admin, built):
    from shifts.models import Shift
    from studies import bulk

    before, _ = lb.leaderboard(admin, built, resamples=RESAMPLES)
    person = built.participants.get(label="person 3")
    bulk.withdraw(admin, person, "asked to leave")
    after, _ = lb.leaderboard(admin, built, resamples=RESAMPLES)
    n = {e.name: e.estimate.n for e in before}["Humans (equal-cell mean)"]
    assert {e.name: e.estimate.n for e in after}["Humans (equal-cell mean)"] < n
    open_attempt = built.attempts.filter(participant__withdrawn_at=None, is_selected=True).first()
    # A shift regraded in place (its stored score changes; the attempt's decision stays) changes the key.
    Shift.objects.filter(pk=open_attempt.shift_id).update(score_composite=Decimal("0.123456"))
    keys = _keys()
    lb.leaderboard(admin, built, resamples=RESAMPLES)
    assert len(_keys()) == len(keys) + 1
