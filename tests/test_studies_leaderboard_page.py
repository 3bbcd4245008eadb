"""What the leaderboard page says about its rows: model trials only when a source gives
some, anchors over the cells the humans' mean covers, and labels that say what each
figure and count is over."""
import pytest
from test_studies_support import admin, study  # noqa: F401

from studies import leaderboard as lb


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
