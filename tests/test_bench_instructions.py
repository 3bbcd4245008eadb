"""The instruction-count benchmark (benchmarks.call_instructions): its counted process makes
real tool calls through the site's ASGI application, its arithmetic and its refusals say
what went wrong, and on PostgreSQL a real run under callgrind gives a count."""
import subprocess
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session

from benchmarks import call_instructions as ci


def test_the_count_is_read_from_callgrinds_last_lines():
    assert ci.collected("==12== Events    : Ir\n==12== Collected : 16496999538\n==12==\n") == 16496999538
    with pytest.raises(ci.InstructionCountError, match="printed no instruction count; its output ended:\nboom"):
        ci.collected("boom")


def test_one_requests_instructions_are_the_difference_over_the_extra_requests():
    assert ci.per_request(1_000_000, 3_000_000, 100) == 20_000
    with pytest.raises(ci.InstructionCountError, match="the run with 100 more requests counted 900 instructions, "
                                                       "not more than the shorter run's 1,000"):
        ci.per_request(1000, 900, 100)


def test_without_valgrind_it_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(ci.shutil, "which", lambda name: None)
    with pytest.raises(ci.InstructionCountError, match=r"valgrind is not installed \(Debian: apt-get install valgrind\)"):
        ci.count("call", 3)


def test_a_counted_run_that_fails_says_so_with_its_last_lines(monkeypatch):
    def failing(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, "", "Traceback\nOperationalError: no such table")

    with pytest.raises(ci.InstructionCountError, match="the counted run of 3 call requests failed \\(exit 1\\):\n"
                                                       "Traceback\nOperationalError: no such table"):
        ci.count("call", 3, run=failing)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ci.KINDS)
def test_the_counted_process_makes_every_request_and_leaves_nothing_behind(kind):
    sessions = Session.objects.count()
    assert ci.drive(kind, 4) == {200: 4}  # a refused CSRF token, a redirect or a server error would not be
    assert not get_user_model().objects.filter(username__startswith="instructions-").exists()
    assert Session.objects.count() == sessions


def test_requests_not_answered_200_are_named_by_status():
    assert ci.unanswered("call", 3, Counter({200: 3})) == ""
    assert ci.unanswered("call", 3, Counter({301: 2, 200: 1})) == (
        "only 1 of 3 call requests were answered 200 (1 answered 200, 2 answered 301): a 301 is the redirect to "
        "HTTPS (set STOREBENCH_PLAIN_HTTP=1), a 403 a refused sign-in or CSRF token")


def test_bad_counts_are_refused_naming_the_options(capsys):
    with pytest.raises(SystemExit):
        ci.main(["--calls", "0"])
    assert "--calls and --warm take a whole number of at least 1" in capsys.readouterr().err


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_run_under_callgrind_counts_the_process(monkeypatch):
    from benchmarks.realistic import _database_url

    monkeypatch.setenv("DATABASE_URL", _database_url())  # the counted process uses this run's test database
    assert ci.count("noop", 2) > 100_000_000  # a Python process with Django loaded runs billions
