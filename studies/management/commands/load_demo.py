"""Create the demo users, the demo participant's practice shift and the demo study. Safe to run any number of times."""
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from shifts.briefing import PRACTICE_CELL
from shifts.lifecycle import assign_shift
from shifts.models import Shift
from studies.demo import ensure_demo_study

# The practice shift every demo participant gets: the console's practice cell.
DEMO_PRACTICE = PRACTICE_CELL

# (username, password, is_superuser)
DEMO_USERS = (
    ("admin", "admin", True),
    ("coordinator", "coordinator", False),
    ("participant", "participant", False),
)


class Command(BaseCommand):
    help = ("Create or reset the demo users (admin, coordinator, participant) and the participant's practice "
            "shift, and create the demo study (\"Demo study\": coordinator runs it, participant is enrolled in it) "
            "unless it exists. Runs in debug only; safe to run any number of times.")

    def handle(self, *args, **options) -> None:
        if not settings.DEMO_DATA_ALLOWED:
            raise CommandError(
                "load_demo creates a superuser admin/admin and other known passwords, so it runs "
                "only in debug (DJANGO_DEBUG=1, as `make run` sets). This process is not in debug: "
                "on a real deployment create accounts with `manage.py createsuperuser` instead."
            )
        self._load()

    @transaction.atomic
    def _load(self) -> None:
        User = get_user_model()
        for username, password, is_superuser in DEMO_USERS:
            user, created = User.objects.get_or_create(username=username)
            user.is_superuser = is_superuser
            user.is_staff = is_superuser
            user.is_active = True
            if created or not user.check_password(password):
                user.set_password(password)
            user.save()
            self.stdout.write(
                f"{'created' if created else 'exists '}  {username} / {password}"
                + ("  (superuser)" if is_superuser else "")
            )
        participant = User.objects.get(username="participant")
        task_id, seed = DEMO_PRACTICE
        if Shift.objects.filter(participant=participant, task_id=task_id, seed=seed,
                                is_practice=True).exists():
            self.stdout.write("exists   practice shift for participant")
        else:
            assign_shift(participant, task_id, seed, practice=True)
            self.stdout.write("created  practice shift for participant")
        study, created = ensure_demo_study(User.objects.get(username="admin"),
                                           User.objects.get(username="coordinator"), participant)
        self.stdout.write(f"{'created' if created else 'exists '}  study {study.name!r} "
                          f"(coordinator: /studies/{study.pk}/)")
        self.stdout.write(self.style.SUCCESS("Demo users ready."))
