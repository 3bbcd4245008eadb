"""A study's human trials are for that study's researchers and the site's, not another study's."""
import pytest
from django.test import Client
from test_studies_support import admin, make_user, other_study, study  # noqa: F401
from trial_helpers import stored_trial

from explorer.models import Trial
from studies.design import add_member
from studies.models import Role

pytestmark = pytest.mark.django_db
HUMAN = Trial.PlayerKind.HUMAN


@pytest.fixture
def trials(study, other_study):
    return {"mine": stored_trial(1, "steady", "0.5", HUMAN, "P01", study="Study A"),
            "theirs": stored_trial(2, "steady", "0.6", HUMAN, "P01", study="Study B"),
            "nameless": stored_trial(3, "steady", "0.4", HUMAN, "P02"),
            "model": stored_trial(4, "steady", "0.7", Trial.PlayerKind.MODEL, "acme")}


@pytest.fixture
def study_researcher(admin, study):
    user = make_user("res-a")
    add_member(admin, study, user, Role.RESEARCHER)
    client = Client()
    client.force_login(user)
    return client


def _listed(client, trials):
    html = client.get("/explorer/").content.decode()
    return sorted(name for name, t in trials.items() if f'value="{t.pk}"' in html)


def test_a_study_researcher_lists_their_studys_human_trials_and_every_other_kind(study_researcher, trials):
    assert _listed(study_researcher, trials) == ["mine", "model"]


def test_a_site_researcher_lists_every_trial(admin, trials):
    client = Client()
    client.force_login(make_user("staffer", is_staff=True))
    assert _listed(client, trials) == ["mine", "model", "nameless", "theirs"]


@pytest.mark.parametrize("path", ["/explorer/trials/{pk}/", "/explorer/trials/{pk}/components.csv",
                                  "/explorer/trials/{pk}/windows.json", "/explorer/trials/{pk}/actions.csv",
                                  "/explorer/trials/{pk}/charts/cash.svg"])
def test_another_studys_human_trial_is_not_found(study_researcher, trials, path):
    assert study_researcher.get(path.format(pk=trials["mine"].pk)).status_code == 200
    assert study_researcher.get(path.format(pk=trials["theirs"].pk)).status_code == 404


def test_another_studys_human_trial_cannot_be_compared_or_seen_on_the_ladder(study_researcher, trials):
    mine, theirs = trials["mine"].pk, trials["theirs"].pk
    response = study_researcher.get(f"/explorer/compare/?trial={mine}&trial={theirs}")
    assert response.status_code == 400 and f"There is no trial {theirs}." in response.content.decode()
    rows = study_researcher.get("/explorer/ladder.csv").content.decode()
    assert f",{mine}\n" in rows and f",{theirs}\n" not in rows
