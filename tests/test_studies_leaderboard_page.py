"""What the leaderboard page says about its rows: model trials only when a source gives
some, anchors over the cells the humans' mean covers, and labels that say what each
figure and count is over."""
import pytest
from test_studies_support import admin, bot, cell, study  # noqa: F401

from studies import assignment, attempts, bots, exports, figures
from studies import leaderboard as lb
from studies.models import SCORE_FIELDS


@pytest.fixture
def model_source():
    def source(study):
        return [("steady/7", "0.5", "model-x")]
    lb._sources.append(source)
    yield source
    lb._sources.remove(source)


def test_without_model_trials_the_page_promises_none(client, study, admin):
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/").content.decode()
    assert "orange: models" not in html and "Model trials over the cells they cover" not in html
    assert "Model trials are not on this leaderboard: compare them with the anchors in the trial explorer." in html


def test_a_registered_trial_source_shows_its_model_row_and_legend(client, study, admin, model_source):
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/").content.decode()
    assert '<tr class="kind-model"><td>model-x</td>' in html and "orange: models" in html


@pytest.fixture
def one_selected(study, admin, bot, cell):
    """One bot attempt, selected (a rule may select bots' attempts when asked to)."""
    bots.play(assignment.assign(admin, bot, cell), "clerk")
    attempts.select_by_rule(admin, study, "latest", include_bots=True)
    return study


def _anchor_cells(html):
    rows = [part.split("</tr>")[0] for part in html.split('<tr class="kind-anchor">')[1:]]
    return {row.rsplit("<td>", 1)[1].split("<")[0] for row in rows}


def test_before_any_selection_the_page_says_the_anchors_cover_every_cell(client, study, admin):
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/").content.decode()
    assert "No cell has a selected attempt yet, so the anchors are averaged over all 4 cells." in html
    assert "Anchors are averaged over the same" not in html and _anchor_cells(html) == {"4"}


def test_anchors_cover_the_cells_of_the_equal_cell_mean(client, one_selected, admin):
    client.force_login(admin)
    html = client.get(f"/studies/{one_selected.pk}/leaderboard/?include_bots=1").content.decode()
    assert "Anchors are averaged over the same 1 cell as the equal-cell mean." in html
    assert _anchor_cells(html) == {"1"}


def test_aggregates_average_anchors_over_the_equal_cell_mean_cells(one_selected):
    rows = list(exports.aggregate_rows(one_selected, figures.Filters(include_bots=True), resamples=50))
    assert {r["n_cells"] for r in rows if r["figure"] in ("equal_cell_mean", "anchor_mean")} == {1}


def test_the_codebook_says_anchors_cover_every_cell_while_none_is_selected(study):
    meaning = next(r["meaning"] for r in exports.codebook(study) if (r["table"], r["column"]) == ("aggregates", "figure"))
    assert "anchor_mean (anchors over the cells of equal_cell_mean, i.e. with a selected attempt; " \
           "over every cell of the study while no cell has one)" in meaning


def test_the_counts_say_what_each_counts(client, study, admin, bot, cell):
    bots.play(assignment.assign(admin, bot, cell), "clerk")
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/?include_bots=1").content.decode()
    assert "1 completed attempt under these filters; 0 people with a selected attempt;" in html


def test_with_bots_included_the_rows_are_not_labelled_humans(client, study, admin, bot, cell):
    bots.play(assignment.assign(admin, bot, cell), "clerk")
    client.force_login(admin)
    html = client.get(f"/studies/{study.pk}/leaderboard/?include_bots=1").content.decode()
    assert "<td>Participants, bots included (earliest attempt)</td><td>participants</td>" in html
    assert "Humans" not in html


def test_component_means_cover_every_part_of_the_composite_with_the_attempts_export_names(one_selected):
    rows = exports.aggregate_rows(one_selected, figures.Filters(include_bots=True), resamples=50)
    groups = [r["group"] for r in rows if r["figure"] == "component_mean"]
    assert groups == ["business", "reliability", "on_time_rate", "return_handled_rate", "continuity"]
    assert set(groups) <= set(exports.columns_of(one_selected, "attempts"))


def test_the_continuity_mean_is_the_selected_attempts_continuity(one_selected):
    selected = one_selected.attempts.get(is_selected=True)
    f = figures.study_figures(one_selected.created_by, one_selected, figures.Filters(include_bots=True), resamples=50)
    assert (f.components["continuity"].value, f.components["continuity"].n) == (selected.outcome.components["continuity"], 1)


def test_the_equal_person_row_says_how_many_people_it_averages(client, one_selected, admin):
    client.force_login(admin)
    html = client.get(f"/studies/{one_selected.pk}/leaderboard/?include_bots=1").content.decode()
    assert "<td>Participants, bots included (equal-person mean over 1 person)</td>" in html


def test_the_page_has_a_component_row_for_every_score_field_before_any_attempt(study, admin):
    _entries, f = lb.leaderboard(admin, study, use_cache=False)
    assert tuple(f.components) == SCORE_FIELDS
