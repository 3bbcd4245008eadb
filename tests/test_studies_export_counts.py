"""The participants and wide tables of one export give a person the same attempt count:
their attempts that are not practice, the export's filters applied, as the codebook says of both.  With
practice included, the wide table used to count the person's practice attempts too (and
could take a practice composite as a cell's best), so the two tables disagreed."""
import csv

import pytest
from test_studies_support import admin, bot, cell, study  # noqa: F401

from studies import bots
from studies.assignment import assign
from studies.export_jobs import request_export
from studies.exports import codebook, job_dir
from studies.figures import Filters

WITH_PRACTICE = Filters(include_bots=True, include_practice=True)


@pytest.fixture(autouse=True)
def export_root(settings, tmp_path):
    settings.STOREBENCH_EXPORT_ROOT = tmp_path / "exports"


def table(job, name):
    with (job_dir(job.pk) / f"{name}.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_with_practice_included_both_tables_count_the_scored_attempts(study, admin, bot, cell,  # noqa: F811
                                                                     django_capture_on_commit_callbacks):
    scored = bots.play(assign(admin, bot, cell), "novice")
    practice = bots.play(assign(admin, bot, cell, practice=True), "expert")  # practice on the same cell, played better
    assert practice.is_practice and practice.composite > scored.composite
    with django_capture_on_commit_callbacks(execute=True):
        job = request_export(admin, study, WITH_PRACTICE)
    assert sorted(r["practice"] for r in table(job, "attempts")) == ["false", "true"]  # the export lists both
    (person,) = table(job, "participants")
    (wide,) = table(job, "wide")
    assert (person["attempts"], person["attempts_in_study"]) == ("1", "2")
    assert wide["attempts"] == person["attempts"]
    assert (wide["steady_7__attempts"], wide["steady_7__best_composite"]) == ("1", str(scored.composite))


def test_the_codebook_says_both_counts_are_the_same_attempts(study):  # noqa: F811
    meanings = {(r["table"], r["column"]): r["meaning"] for r in codebook(study)}
    assert meanings[("participants", "attempts")] == (
        "attempts in this export, of any status (the export's filters applied; practice attempts are not counted, even "
        "when the export includes them): the wide table's attempts")
    assert meanings[("wide", "attempts")] == (
        "attempts in this export, of any status (the export's filters applied; practice attempts are not counted, even "
        "when the export includes them): the participants table's attempts")
    assert meanings[("wide", "steady_7__best_composite")] == (
        "best composite of this participant's completed attempts on the cell (practice attempts left out) "
        "(steady/7)")
