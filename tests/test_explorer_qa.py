"""Fixes from a QA pass over the explorer's pages: long labels, honest charts, query
parameters, the comparison's messages and the failure-mode wording.

Reuses the pages module's trials (played once for the module)."""
import re
from decimal import Decimal
from pathlib import Path

import pytest
from test_explorer_pages import _as_player, as_researcher, researcher, trials  # noqa: F401

from explorer.charts import format_value
from explorer.importing import import_trial
from explorer.measures import BY_SLUG, WINDOW_COLUMNS, running_total
from explorer.models import TrialWindow

LONG = "model-" + "x" * 194  # the importer keeps 200 characters
CSS = Path(__file__).resolve().parent.parent / "static" / "explorer" / "explorer.css"


@pytest.fixture
def long_label(trials, tmp_path):  # noqa: F811
    folder = _as_player(Path(trials["other"].source_path), tmp_path / "long", "model", LONG)
    return import_trial(folder).trial


def test_the_label_class_cuts_long_labels_with_an_ellipsis():
    rule = re.search(r"\.x-label \{([^}]*)\}", CSS.read_text()).group(1)
    assert "text-overflow: ellipsis" in rule and "max-width" in rule and "white-space: nowrap" in rule


@pytest.mark.parametrize("page", ["/explorer/", "/explorer/ladder/", "trial", "compare"])
def test_a_long_player_label_is_cut_on_the_page_with_the_whole_label_in_its_title(as_researcher, trials,  # noqa: F811
                                                                                 long_label, page):
    url = {"trial": f"/explorer/trials/{long_label.pk}/",
           "compare": f"/explorer/compare/?trial={long_label.pk}&trial={trials['other'].pk}"}.get(page, page)
    html = as_researcher.get(url).content.decode()
    assert html.count(f">{LONG}<") == len(re.findall(f'class="x-label[^"]*" title="{LONG}">{LONG}<', html)) > 0


def _offset_dollars(trial) -> Decimal:
    w = {row.window: row for row in TrialWindow.objects.filter(trial=trial, window__lte=1)}
    return Decimal(w[1].dense_reward_cents - (w[1].dense_value_cents - w[0].dense_value_cents)) / 100


def test_the_dense_reward_chart_says_how_much_of_window_1_is_the_opening_value(as_researcher, trials):  # noqa: F811
    trial = trials["smart"]
    svg = as_researcher.get(f"/explorer/trials/{trial.pk}/charts/dense-reward.svg").content.decode()
    shown = format_value(float(_offset_dollars(trial)), "usd")
    assert f"incl. {shown} opening value above starting capital</text>" in svg


def test_the_cumulative_dense_reward_starts_at_the_opening_value_and_ends_at_business_raw(trials):  # noqa: F811
    trial = trials["smart"]
    rows = list(TrialWindow.objects.filter(trial=trial).order_by("window").values(*WINDOW_COLUMNS))
    curve = running_total(rows, BY_SLUG["dense-reward"], "dense_reward_cents")
    assert curve[0] == (0, float(_offset_dollars(trial))) and curve[0][1] > 0
    assert curve[-1] == (trial.windows_played, float(trial.business_raw))


def test_the_compared_cumulative_dense_reward_names_the_opening_value(as_researcher, trials):  # noqa: F811
    a, b = trials["smart"], trials["absentee"]
    svg = as_researcher.get(f"/explorer/compare/charts/dense-reward.svg?trial={a.pk}&trial={b.pk}").content.decode()
    assert f"opening value {format_value(float(_offset_dollars(a)), 'usd')}</text>" in svg


@pytest.mark.parametrize("page", ["abc", "1e3", "2.5"])
def test_a_page_that_is_not_a_whole_number_is_a_400_page_saying_so_with_a_link_back(as_researcher, trials,  # noqa: F811
                                                                                   page):
    pk = trials["smart"].pk
    response = as_researcher.get(f"/explorer/trials/{pk}/", {"page": page})
    assert response.status_code == 400
    assert response.context["problem"] == f"The action log's page must be a whole number such as 2, not {page!r}."
    assert f'href="/explorer/trials/{pk}/#actions"' in response.content.decode()


@pytest.mark.parametrize("query", ["page=999999999999999999999", "family=orders&page=9999"])
def test_a_page_past_the_end_shows_the_last_page_and_says_so(as_researcher, trials, query):  # noqa: F811
    response = as_researcher.get(f"/explorer/trials/{trials['smart'].pk}/?{query}")
    calls = response.context["page"].calls
    assert response.status_code == 200 and calls.number == calls.paginator.num_pages > 1
    assert "is past the end, so the last page is shown." in response.context["page"].page_note


@pytest.mark.parametrize("page", ["0", "-1"])
def test_a_page_before_the_first_shows_the_first_page_and_says_so(as_researcher, trials, page):  # noqa: F811
    response = as_researcher.get(f"/explorer/trials/{trials['smart'].pk}/", {"page": page})
    assert response.status_code == 200 and response.context["page"].calls.number == 1
    assert response.context["page"].page_note == (f"There is no page {page} of the action log; it starts at page 1, "
                                                  "shown here.")


def test_a_page_in_range_has_no_note(as_researcher, trials):  # noqa: F811
    response = as_researcher.get(f"/explorer/trials/{trials['smart'].pk}/", {"page": "2"})
    assert response.context["page"].page_note == ""


def test_a_trial_named_twice_is_said_to_be_named_twice(as_researcher, trials):  # noqa: F811
    pk = trials["smart"].pk
    response = as_researcher.get(f"/explorer/compare/?trial={pk}&trial={pk}")
    assert response.status_code == 400
    assert response.context["problem"] == (f"Trial {pk} is named twice: choose two or three different trials of one "
                                           "cell to compare.")


def test_a_number_too_large_for_any_trial_is_no_such_trial(as_researcher, trials):  # noqa: F811
    big = "9" * 23
    response = as_researcher.get(f"/explorer/compare/?trial={big}&trial={trials['smart'].pk}")
    assert response.status_code == 400 and response.context["problem"] == f"There is no trial {big}."


def test_a_trial_that_is_not_a_number_is_named(as_researcher, trials):  # noqa: F811
    response = as_researcher.get(f"/explorer/compare/?trial=abc&trial={trials['smart'].pk}")
    assert response.context["problem"] == "Trials are named by their numbers, and 'abc' is not a number."


def test_the_refused_comparison_page_says_the_viewer_is_a_researcher(as_researcher, trials):  # noqa: F811
    response = as_researcher.get(f"/explorer/compare/?trial={trials['smart'].pk}")
    assert response.status_code == 400 and "res · researcher</span>" in response.content.decode()


def test_the_failure_mode_for_no_purchase_order_says_so(as_researcher, trials):  # noqa: F811
    trial = trials["absentee"]
    modes = {m.label: m.value for m in as_researcher.get(f"/explorer/trials/{trial.pk}/").context["page"].failure_modes}
    assert modes["Placed no purchase order"] == ("yes" if trial.failure_modes["never_restocked"] else "no")
    assert "Never restocked" not in modes
