"""Assign one task-seed cell to a user as a shift (prints the new shift's id)."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from environment.cli import seed_arg
from environment.errors import SEED_MAX, StoreBenchError
from shifts.lifecycle import assign_shift


class Command(BaseCommand):
    help = "Assign a shift on TASK with SEED to USERNAME; prints the shift id."

    def add_arguments(self, parser):
        parser.add_argument("username", help="the participant's username")
        parser.add_argument("task", help="task id (see `storebench tasks list`)")
        parser.add_argument("seed", type=seed_arg,
                            help=f"task seed, a whole number from 0 to {SEED_MAX:,} (e.g. 7, 11 or 13)")
        parser.add_argument("--practice", action="store_true", help="an unscored practice shift")

    def handle(self, *args, **options) -> None:
        User = get_user_model()
        try:
            user = User.objects.get(username=options["username"])
        except User.DoesNotExist:
            raise CommandError(f"there is no user named {options['username']!r}") from None
        try:
            shift = assign_shift(user, options["task"], options["seed"], practice=options["practice"])
        except StoreBenchError as problem:
            raise CommandError(str(problem)) from None
        self.stdout.write(str(shift.pk))
