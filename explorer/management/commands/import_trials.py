"""``manage.py import_trials DIR...``: import trial folders, one line of progress per folder.

A DIR is a trial folder or a folder holding trial folders (``storebench batch`` output), directly or
in subfolders a few levels down (a folder of batches).  Every subfolder passed over is listed as
skipped with the reason; a trial in the release's published layout is refused saying that the
explorer cannot import it and that ``storebench regrade`` checks it instead.
Exits 1 when any folder was refused; the refused ones are named with the reason.
A known calibration file that cannot be used is named first, with why, and the run
goes on with the others.
"""
from django.core.management.base import BaseCommand, CommandError

from explorer.calibrations import problems
from explorer.importing import ImportStatus, import_trials


class Command(BaseCommand):
    help = "Import trial folders (from storebench run/batch, MCP sessions or human shifts: manage.py export_human_trials) into the explorer."

    def add_arguments(self, parser):
        parser.add_argument("dirs", nargs="+", metavar="DIR", help="a trial folder, or a folder of them")

    def handle(self, *args, **options):
        def progress(i: int, total: int, outcome) -> None:
            style = {ImportStatus.REFUSED: self.style.ERROR,
                     ImportStatus.SKIPPED: self.style.WARNING}.get(outcome.status, lambda text: text)
            self.stdout.write(style(f"[{i}/{total}] {outcome.line()}"))

        for problem in problems():
            self.stderr.write(self.style.WARNING(f"warning: {problem}"))
        outcomes = import_trials(options["dirs"], progress)
        counts = {status: sum(o.status == status for o in outcomes) for status in ImportStatus}
        self.stdout.write(", ".join(f"{n} {status.label.lower()}" for status, n in counts.items()
                                    if n or status != ImportStatus.SKIPPED))
        if counts[ImportStatus.REFUSED]:
            raise CommandError(f"{counts[ImportStatus.REFUSED]} of {len(outcomes)} folders refused")
