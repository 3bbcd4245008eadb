"""Scripted bot participants that play whole shifts through the console's own views.

A bot signs in (``Client.force_login``) as its participant's user and posts the same
forms a person's browser posts (``/shifts/<id>/start/``, ``/shifts/<id>/call/`` with
htmx headers, ``/shifts/<id>/end/``), so every bot shift exercises the console end to
end.  It reads each result back from the stored call, as the page shows it.

A skill sets how many windows the bot plays, how many orders it ships and how many
returns it refunds per window; then it ends the shift, which settles and grades the
rest of the horizon as played.  Bots are flagged (participant and attempt ``is_bot``)
and left out of figures and exports by default.

A rehearsal delivery plays an attempt only under a :class:`Claim` on it (:func:`claim`),
so two deliveries of one rehearsal running at once (a redelivered ``acks_late`` task)
never play the same attempt.  The claim is a token and an expiry on the attempt's row,
taken by one conditional UPDATE, so it holds across processes on PostgreSQL and SQLite
alike.  It lapses after :data:`LEASE` unless renewed, which the bot does before each
step of its play, so a worker that died does not block the attempt for good.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.test import Client
from django.utils import timezone

from shifts import briefing
from shifts.models import Shift, ShiftCall
from shifts.results import result_of

from .models import Attempt
from .settling import settle

HX = {"HX-Request": "true"}

# Far longer than the bot's longest step between renewals (ending its shift, which grades
# the rest of the horizon, takes seconds), and well under the broker's visibility timeout
# (900 s), so the redelivery of a task whose worker died finds the claim lapsed.
LEASE = timedelta(minutes=5)


class BotError(RuntimeError):
    """The console answered a bot's request with something other than success."""


class ClaimLost(BotError):
    """The bot's claim on its attempt lapsed and another delivery has taken it over."""


@dataclass(frozen=True)
class Claim:
    attempt_id: int
    token: str


def claim(attempt: Attempt) -> Claim | None:
    """Claim ``attempt`` for playing for :data:`LEASE`; None while another claim on it
    holds.  A single conditional UPDATE: of two claims at once only one matches the row."""
    now = timezone.now()
    held = Claim(attempt.pk, uuid.uuid4().hex)
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)
    taken = Attempt.objects.filter(free, pk=attempt.pk).update(claim_token=held.token, claimed_until=now + LEASE)
    return held if taken else None


def renew(held: Claim) -> None:
    """Extend ``held`` by :data:`LEASE` from now; :class:`ClaimLost` if another took it over."""
    mine = Attempt.objects.filter(pk=held.attempt_id, claim_token=held.token)
    if not mine.update(claimed_until=timezone.now() + LEASE):
        raise ClaimLost(f"attempt {held.attempt_id} is being played by another delivery (this one's claim lapsed)")


def release(held: Claim) -> None:
    """Give ``held`` up (nothing happens if another delivery has taken it over)."""
    Attempt.objects.filter(pk=held.attempt_id, claim_token=held.token).update(claim_token="", claimed_until=None)


@dataclass(frozen=True)
class Skill:
    name: str
    windows: int  # windows played before the bot ends its shift
    ships: int  # orders shipped per window, soonest deadline first
    refunds: int  # returns refunded per window, soonest escalation first


SKILLS = {
    "idle": Skill("idle", 1, 0, 0),
    "novice": Skill("novice", 1, 1, 0),
    "clerk": Skill("clerk", 1, 3, 1),
    "expert": Skill("expert", 1, 5, 3),
}


def site_host() -> str:
    """A host name the site answers to, for requests made in process.

    Django's test client says ``testserver``, which a deployment's ``ALLOWED_HOSTS``
    does not name: every request would be refused (400). The first named host is used;
    ``*`` stands for any host and ``.example.org`` for example.org and its subdomains.
    """
    for host in settings.ALLOWED_HOSTS:
        if host == "*":
            return "localhost"
        if host:
            return host.lstrip(".")
    return "localhost"


class SiteClient(Client):
    """A test client addressed to this site as a browser reaches it: one of its host
    names (:func:`site_host`), over HTTPS where the site redirects plain HTTP there."""

    def __init__(self, **options) -> None:
        super().__init__(SERVER_NAME=site_host(), **options)
        self.https = settings.SECURE_SSL_REDIRECT

    def request(self, **request):
        if self.https:  # every request, whatever ``secure`` its caller passed
            request.update({"wsgi.url_scheme": "https", "SERVER_PORT": "443"})
        return super().request(**request)


class Bot:
    def __init__(self, attempt: Attempt, skill: Skill, held: Claim | None = None) -> None:
        if not attempt.participant.is_bot:
            raise BotError(f"participant {attempt.participant.label} is not a bot")
        self.attempt = attempt
        self.skill = skill
        self.held = held
        self.shift = attempt.shift
        user = attempt.participant.user
        if user is None:
            raise BotError(f"participant {attempt.participant.label} has no user to sign in with")
        self.client = SiteClient()
        self.client.force_login(user)

    def _post(self, url: str, data: dict | None = None, htmx: bool = False):
        response = self.client.post(url, data or {}, headers=HX if htmx else None)
        if response.status_code not in (200, 204, 302):
            raise BotError(f"POST {url} answered {response.status_code}: {response.content[:200]!r}")
        return response

    def call(self, tool: str, **arguments):
        call_id = uuid.uuid4().hex
        data = {"tool": tool, "call_id": call_id, **{f"arg_{k}": str(v) for k, v in arguments.items()}}
        self._post(f"/shifts/{self.shift.pk}/call/", data, htmx=True)
        stored = ShiftCall.objects.filter(shift=self.shift, call_id=call_id).first()
        return result_of(stored) if stored else None

    def _renew(self) -> None:
        if self.held is not None:
            renew(self.held)

    def _ids(self, result, key: str) -> list[str]:
        if result is None or not isinstance(result.data, dict):
            return []
        return [row[key] for row in result.data.get("rows", []) if key in row]

    def onboard(self) -> None:
        """Acknowledge the briefing and play the practice shift, as the console requires first."""
        user = self.attempt.participant.user
        if briefing.acknowledgement(user) is None:
            self._post("/briefing/", {"version": briefing.BRIEFING_VERSION})
        if not self.attempt.is_practice and not briefing.practice_completed(user):
            practice = briefing.practice_shifts(user).exclude(status=Shift.Status.ENDED).first()
            if practice is None:
                raise BotError(f"bot {self.attempt.participant.label} has no practice shift to play")
            self._post(f"/shifts/{practice.pk}/start/")
            self._post(f"/shifts/{practice.pk}/end/")

    def play(self) -> Attempt:
        self.onboard()
        self._renew()
        self.shift.refresh_from_db()
        if self.shift.status == Shift.Status.ASSIGNED:
            self._post(f"/shifts/{self.shift.pk}/start/")
        elif self.shift.status == Shift.Status.PAUSED:  # a run cut short mid-play (a redelivered rehearsal)
            self._post(f"/shifts/{self.shift.pk}/resume/")
        self.shift.refresh_from_db()
        if self.shift.status != Shift.Status.ACTIVE:
            raise BotError(f"the console did not start shift {self.shift.pk} (it is {self.shift.status})")
        for _ in range(self.skill.windows):
            self._renew()
            if self.skill.ships:
                for order_id in self._ids(self.call("list_orders", page_size=self.skill.ships), "order_id"):
                    self.call("fulfill_order", order_id=order_id)
            if self.skill.refunds:
                for return_id in self._ids(self.call("list_returns", page_size=self.skill.refunds), "return_id"):
                    self.call("refund_return", return_id=return_id)
            self.shift.refresh_from_db()
            if self.shift.status != Shift.Status.ACTIVE:
                break
            self.call("end_window")
        self._renew()
        self._post(f"/shifts/{self.shift.pk}/end/")
        self.attempt.refresh_from_db()
        return settle(self.attempt)


def play(attempt: Attempt, skill: str | Skill = "clerk", held: Claim | None = None) -> Attempt:
    """Play an assigned bot attempt to its end; returns the synchronised attempt.  Under
    claim ``held`` (if given) the bot renews it as it plays and stops with
    :class:`ClaimLost` once another delivery has taken it over; releasing it is the
    caller's."""
    if isinstance(skill, str):
        if skill not in SKILLS:
            raise BotError(f"unknown bot skill {skill!r}; choose one of {', '.join(SKILLS)}")
        skill = SKILLS[skill]
    return Bot(attempt, skill, held).play()


def add_bot(actor, study, label: str, qualifications: dict | None = None):
    """A bot participant with its own (password-less) account."""
    from django.contrib.auth import get_user_model

    from .participants import add_participant

    username = f"bot-{study.pk}-{label}"[:150]
    user, _ = get_user_model().objects.get_or_create(username=username)
    if user.has_usable_password():
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return add_participant(actor, study, label, qualifications, is_bot=True, user=user)
