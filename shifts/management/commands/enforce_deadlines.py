"""End and settle every shift whose 12-hour deadline has passed (safe to run any time)."""
import json

from django.core.management.base import BaseCommand

from shifts.ending import enforce_deadlines


class Command(BaseCommand):
    help = "End and settle every open shift past its wall-clock deadline; prints the shifts ended."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print {\"ended\": [shift ids]}")

    def handle(self, *args, **options) -> None:
        ended = enforce_deadlines()
        if options["json"]:
            self.stdout.write(json.dumps({"ended": ended}))
        else:
            self.stdout.write(f"ended {len(ended)} shift(s) past their deadline"
                              + (": " + ", ".join(map(str, ended)) if ended else ""))
