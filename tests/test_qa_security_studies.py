"""A hostile participant and a curious coordinator against the studies pages: what the
refusals, the public entry page and the coordinator's CSV downloads give away."""
import pytest
from test_studies_support import admin, coordinator, other_study, study  # noqa: F401

from studies import participants


@pytest.fixture
def participant_of_a(study, admin, django_user_model):
    user = django_user_model.objects.create_user("p-of-a", password=None)
    participants.add_participant(admin, study, "P-A", user=user)
    return user


def test_the_refusal_of_a_study_the_user_holds_no_role_in_does_not_name_it(client, participant_of_a, other_study):
    client.force_login(participant_of_a)
    response = client.get(f"/studies/{other_study.pk}/")
    html = response.content.decode()
    assert response.status_code == 403
    assert '<p class="reason">p-of-a may not view the study: they hold no role in this study</p>' in html
    assert "Study B" not in html
