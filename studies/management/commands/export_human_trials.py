"""``manage.py export_human_trials STUDY --out DIR``: a study's ended human shifts as trial folders."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from environment.cli import writable_folder
from environment.errors import StoreBenchError
from studies.errors import StudyError
from studies.models import Study
from studies.settling import settle_study
from studies.trials import export_trials, exported_attempts


def known_studies() -> str:
    """The first studies by number, for a refusal to name: ``3 (Demo study), 4 (Pilot)``."""
    return ", ".join(f"{s.pk} ({s.name})" for s in Study.objects.order_by("pk")[:10]) or "none yet"


def study_numbered(given: str) -> Study:
    """The study ``given`` names by its number; a CommandError naming the studies when it is not
    a number (a study's name, say) or no study has that number."""
    try:
        number = int(given)
    except ValueError:
        raise CommandError(f"{given!r} is not a study number: give the study's number, as in /studies/<number>/; "
                           f"studies: {known_studies()}") from None
    study = Study.objects.filter(pk=number).first()
    if study is None:
        raise CommandError(f"no study {number}; studies: {known_studies()}")
    return study


class Command(BaseCommand):
    help = ("Write a study's ended human shifts (not rehearsal bots, practice or invalidated attempts) as trial "
            "folders under --out, one per attempt, replayed from their stored calls and graded with the study's "
            "calibration: `manage.py import_trials DIR` then shows them in the explorer as human trials, and "
            "`storebench regrade` and `replay` check them. A folder already written is kept; run it again after "
            "more shifts end. Participants are named by their study label, or with --deidentified by their "
            "participant code (for sharing).")

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's number, as in /studies/<number>/ (not its name)")
        parser.add_argument("--out", required=True, help="folder to write the trial folders in (created if need be)")
        parser.add_argument("--selected", action="store_true",
                            help="only the attempts selected as the study's reference scores")
        parser.add_argument("--deidentified", action="store_true",
                            help="name each participant by their code, not their study label (folders to share; "
                                 "a folder already written naming them by label is refused: use a new --out)")

    def handle(self, *args, **options):
        study = study_numbered(str(options["study"]))
        try:
            out = writable_folder(Path(options["out"]), "--out")
            settle_study(study)  # an ended shift whose attempt the record still has open is written too
            total = exported_attempts(study, selected=options["selected"]).count()
            if total == 0:
                which = "selected attempt" if options["selected"] else "ended shift by a participant"
                self.stdout.write(f"study {study.pk} ({study.name}) has no {which} yet: nothing written")
                return
            written_all = export_trials(study, out, selected=options["selected"], deidentified=options["deidentified"])
            for index, written in enumerate(written_all, start=1):
                self.stdout.write(f"[{index}/{total}] {written.line()}")
        except (StudyError, StoreBenchError) as refused:
            raise CommandError(str(refused)) from refused
        self.stdout.write(f"import them with: manage.py import_trials {out}")
