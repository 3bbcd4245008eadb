"""``manage.py unlock_signin USERNAME``: lift a sign-in pause at once (see :mod:`console.signin`)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from console.signin import counts_are_shared, unlock


class Command(BaseCommand):
    help = ("Forget the failed sign-ins counted for USERNAME from every address, so a username paused "
            "after too many failures can sign in again at once (otherwise the pause ends by itself "
            "STOREBENCH_LOGIN_LOCKOUT seconds after the last attempt). A new password does not lift it.")

    def add_arguments(self, parser):
        parser.add_argument("username", help="the account's username, as typed on the sign-in page")

    def handle(self, *args, **options) -> None:
        username = options["username"]
        User = get_user_model()
        if not User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": username.strip()}).exists():
            raise CommandError(f"no account is named {username!r}; check the spelling (the admin lists accounts)")
        if not counts_are_shared():
            raise CommandError("the sign-in counts live in each web process's own memory (no REDIS_URL is set), "
                               "out of this command's reach: the pause ends by itself, or restart the web "
                               "processes; set REDIS_URL so that all processes, and this command, share them")
        unlock(username)
        self.stdout.write(f"sign-in pause lifted for {username.strip()}: it can sign in again from any address")
