"""The explorer's trial list: a page at a time, grouped by cell, narrowed by cell and kind."""
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from trial_helpers import stored_trial

from explorer import listing
from explorer.models import Trial

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client):
    client.force_login(get_user_model().objects.create_user("r", is_staff=True))
    return client


@pytest.fixture
def store(monkeypatch):
    monkeypatch.setattr(listing, "LIST_SIZE", 4)
    steady = [stored_trial(i, "steady", f"0.{i}") for i in range(1, 6)]  # 0.5 best
    other = [stored_trial(10 + i, "counter-punch", f"0.{i}", Trial.PlayerKind.MODEL, "acme") for i in (1, 2)]
    return steady, other


def _text(response):
    assert response.status_code == 200
    return response.content.decode()


def test_a_page_holds_the_list_size_best_first_and_a_cell_says_it_goes_on(researcher, store):
    steady, other = store
    html = _text(researcher.get("/explorer/"))
    assert "Imported trials <span class=\"x-muted\">· 7 in all" in html
    assert "counter-punch seed 7 <span class=\"x-muted\">· 2 trials</span>" in html  # counter-punch sorts first
    assert "steady seed 7 <span class=\"x-muted\">· 5 trials, continued on the next page" in html
    assert "page 1 of 2 · trials 1 to 4 of 7" in html
    assert f'value="{steady[4].pk}"' in html and f'value="{steady[3].pk}"' in html
    assert f'value="{steady[0].pk}"' not in html


def test_the_next_page_says_its_first_cell_began_on_the_page_before(researcher, store):
    steady, _ = store
    html = _text(researcher.get("/explorer/?page=2"))
    assert "steady seed 7 <span class=\"x-muted\">· 5 trials, continued from the page before" in html
    assert [f'value="{t.pk}"' in html for t in steady] == [True, True, True, False, False]


def test_a_cell_and_a_kind_narrow_the_list_and_the_pager_keeps_them(researcher, store, monkeypatch):
    steady, other = store
    monkeypatch.setattr(listing, "LIST_SIZE", 2)
    html = _text(researcher.get("/explorer/?cell=steady-7&kind=anchor"))
    assert '<option value="steady-7" selected>steady seed 7 (5)</option>' in html
    assert f'value="{other[0].pk}"' not in html
    assert 'href="?cell=steady-7&amp;kind=anchor&amp;page=2"' in html
    html = _text(researcher.get("/explorer/?kind=model"))
    assert [f'value="{t.pk}"' in html for t in other + steady[:1]] == [True, True, False]


def test_a_cell_without_trials_lists_none_and_says_so(researcher, store):
    html = _text(researcher.get("/explorer/?cell=steady-8"))
    assert "No trial of cell steady-8 has been imported." in html


@pytest.mark.parametrize(("query", "problem"), [
    ("cell=steady", "&#x27;steady&#x27; is not a cell: name one as task-seed, such as steady-7."),
    ("kind=robot", "There is no kind of player &#x27;robot&#x27;; choose one of anchor, model, human, recorded, "
                   "or none for every trial."),
    ("page=two", "The trial list&#x27;s page must be a whole number such as 2, not &#x27;two&#x27;."),
])
def test_a_filter_it_cannot_read_is_a_400_naming_the_problem(researcher, store, query, problem):
    response = researcher.get(f"/explorer/?{query}")
    assert response.status_code == 400 and problem in response.content.decode()


def test_a_page_past_the_end_shows_the_last_and_says_so(researcher, store):
    html = _text(researcher.get("/explorer/?page=9"))
    assert "The trial list has 2 pages; page 9 is past the end, so the last page is shown." in html


def test_the_list_reads_no_trial_s_score_or_calibration_cell(researcher, store):
    with CaptureQueriesContext(connection) as queries:
        _text(researcher.get("/explorer/"))
    reads = [q["sql"] for q in queries if '"explorer_trial"."' in q["sql"]]
    assert reads and not any('"explorer_trial"."score"' in sql or '"explorer_trial"."cell"' in sql for sql in reads)


def test_a_cell_across_three_pages_says_so_on_the_middle_one(researcher, store, monkeypatch):
    monkeypatch.setattr(listing, "LIST_SIZE", 2)
    html = _text(researcher.get("/explorer/?cell=steady-7&page=2"))
    assert "steady seed 7 <span class=\"x-muted\">· 5 trials, continued from the page before and on the next" in html


def test_a_cell_is_named_as_the_list_names_it_whatever_its_seed(researcher, store):
    big = stored_trial(99, "steady", "0.9")
    Trial.objects.filter(pk=big.pk).update(seed=2_000_000_000)
    html = _text(researcher.get("/explorer/?cell=steady-2000000000"))
    assert '<option value="steady-2000000000" selected>' in html and f'value="{big.pk}"' in html
    html = _text(researcher.get("/explorer/?cell=steady-007"))
    assert '<option value="steady-7" selected>' in html


def test_an_empty_list_past_its_end_says_only_that_nothing_matched(researcher, store):
    html = _text(researcher.get("/explorer/?kind=human&page=5"))
    assert "No trial by a player of kind human has been imported." in html and "past the end" not in html
