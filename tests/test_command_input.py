"""The project's management commands with bad input: refused before any work, with a
message that names the problem and what to give instead; and every argument says what
it is in ``--help``.  (The job commands' refusals: tests/test_jobs_calibration.py.)"""
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command, get_commands, load_command_class

from shifts.models import Shift

PROJECT_APPS = {"shifts", "console", "studies", "jobs", "explorer", "benchmarks"}


@pytest.mark.django_db
@pytest.mark.parametrize("seed", ["99999999999999999999999", "2147483648", "-1", "seven"])
def test_assign_shift_refuses_a_seed_outside_0_to_2_31(seed):
    get_user_model().objects.create_user("qa")
    refusal = (r"is not a whole number" if seed == "seven" else
               rf"argument seed: {seed} is not a task seed: give a whole number from 0 to 2,147,483,647, e\.g\. 7")
    with pytest.raises(CommandError, match=refusal):
        call_command("assign_shift", "qa", "steady", seed)
    assert not Shift.objects.exists()


@pytest.mark.parametrize("option, refusal", [
    (["--task", "nope"], r"^unknown task 'nope'; known tasks: .*full-year"),
    (["--policy", "nope"], r"^unknown policy 'nope'; the anchors are .*smart-triage"),
    (["--requests", "0"], r"argument --requests: 0 is too small: give 1 or more"),
])
def test_bench_explorer_refuses_a_bad_option_before_playing(option, refusal):
    with pytest.raises(CommandError, match=refusal):
        call_command("bench_explorer", *option)


def test_every_argument_of_the_project_commands_has_help_and_the_timeouts_state_their_default():
    commands = {name: load_command_class(app, name) for name, app in get_commands().items() if app in PROJECT_APPS}
    assert {"run_batch", "run_calibration", "bench_explorer", "bench_console", "assign_shift"} <= set(commands)
    for name, command in commands.items():
        parser = command.create_parser("manage.py", name)
        assert [action.dest for action in parser._actions if not action.help] == [], name
    for name in ("run_batch", "run_calibration"):
        help_text = " ".join(commands[name].create_parser("manage.py", name).format_help().split())
        assert "seconds to wait for the job (default 3600)" in help_text, name


def test_flush_help_says_it_empties_the_audit_log_and_lifts_its_triggers():
    help_text = load_command_class("studies", "flush").create_parser("manage.py", "flush").format_help()
    assert "Removes ALL DATA from the database" in help_text
    assert "The audit log is emptied too: its append-only triggers are dropped for the flush and created again" in (
        " ".join(help_text.split()))
