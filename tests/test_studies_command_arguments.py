"""The studies' management commands say what they take: ``export_human_trials`` takes a study's
number and refuses its name naming the studies (argparse said only "invalid int value"), and
``load_demo`` says it creates the demo study too."""
import pytest
from django.core.management import CommandError, call_command
from test_studies_support import admin, study  # noqa: F401

from studies.management.commands.export_human_trials import Command as ExportHumanTrials
from studies.management.commands.load_demo import Command as LoadDemo


def test_a_study_given_by_its_name_is_refused_naming_the_studies_by_number(study, tmp_path):
    with pytest.raises(CommandError, match=(r"^'Study A' is not a study number: give the study's number, as in "
                                            rf"/studies/<number>/; studies: {study.pk} \(Study A\)$")):
        call_command("export_human_trials", "Study A", "--out", str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_the_study_arguments_help_says_it_is_the_number_in_the_studys_address():
    (study_argument,) = [a for a in ExportHumanTrials().create_parser("manage.py", "export_human_trials")._actions
                         if a.dest == "study"]
    assert study_argument.help == "the study's number, as in /studies/<number>/ (not its name)"


def test_load_demos_help_says_it_creates_the_demo_study():
    assert 'create the demo study ("Demo study"' in LoadDemo.help
