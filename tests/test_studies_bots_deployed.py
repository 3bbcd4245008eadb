"""Bots play through the site's own views in process; on a deployed site (debug off, its
own host names, HTTPS) their requests must reach the views, not Django's host check or
the HTTPS redirect."""
import pytest
from test_studies_support import admin, study  # noqa: F401

from studies import assignment, bots
from studies.models import AttemptStatus


def test_a_bot_plays_a_shift_on_a_deployed_site(deployed_site, study, admin):
    attempt = assignment.assign_next(admin, study, [bots.add_bot(admin, study, "b")], include_bots=True)
    assert bots.play(attempt, "clerk").status == AttemptStatus.SUBMITTED


@pytest.mark.parametrize(("allowed", "host"), [
    (["bench.example.org", "localhost"], "bench.example.org"),
    ([".example.org"], "example.org"),
    (["*"], "localhost"),
])
def test_the_bots_address_a_host_the_site_answers_to(settings, allowed, host):
    settings.ALLOWED_HOSTS = allowed
    assert bots.site_host() == host
