"""E-mail notices to participants, sent by Celery tasks through Django's mail backends.

Four notices: a cell was assigned, a shift was reassigned to you, your shift's deadline
is two hours away or less, and your completion code is ready.  Each is sent at most
once per attempt (a :class:`~studies.models.Notice` row, unique per attempt and kind,
is written in the same transaction as the send, so a task run twice sends once).

* ``assigned``/``reassigned`` are scheduled on commit by
  :func:`studies.assignment.create_attempt` (``transaction.on_commit``), with ids only.
* an ``assigned``/``reassigned`` notice whose task never reached the queue (the broker down
  at that moment) or ran out of retries is sent by :func:`sweep` once it has waited
  :data:`UNSENT_GRACE`, while its shift is not started;
* ``deadline`` and ``code_ready`` are found by :func:`sweep`, which Celery beat runs
  every few minutes: open attempts whose shift deadline is within two hours, and
  attempts whose shift has a committed score.
* Links are absolute when ``STOREBENCH_SITE_URL`` is set (``settings.SITE_URL``), paths
  otherwise.
* A participant without an e-mail address (their account's) gets no mail; nothing
  fails (the address is the participant's, else their account's).  The backend is ``settings.EMAIL_BACKEND`` (the console backend unless
  configured: ``EMAIL_BACKEND``/``EMAIL_HOST``... in the environment).
"""
from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailable

from shifts.models import RUNNING, Shift

from .models import OPEN_STATUSES, Attempt, AttemptKind, AttemptStatus, Notice, NoticeKind

DEADLINE_NOTICE = timedelta(hours=2)
# How long an assigned notice may wait for its task before the sweep sends it (the task, with
# its retries, normally sends it within seconds).
UNSENT_GRACE = timedelta(minutes=10)
# ... and how long after its assignment it is still worth sending (an older one is left unsent).
UNSENT_WINDOW = timedelta(days=2)
logger = logging.getLogger(__name__)

SUBJECTS = {
    NoticeKind.ASSIGNED: "A new shift is ready for you",
    NoticeKind.REASSIGNED: "A shift was reassigned to you",
    NoticeKind.DEADLINE: "Your shift ends in less than two hours",
    NoticeKind.CODE_READY: "Your completion code is ready",
}


def _body(attempt: Attempt, kind: str) -> str:
    site = settings.SITE_URL  # STOREBENCH_SITE_URL: a mail is read away from the site
    shift_url = site + reverse("console:shift", args=[attempt.shift_id])
    me_url = site + reverse("studies:me")
    if kind == NoticeKind.DEADLINE:
        deadline = attempt.shift.deadline
        return (f"Your shift in {attempt.study.name} ends at {deadline:%Y-%m-%d %H:%M} UTC. "
                f"Whatever you have not done by then is graded as it stands.\n\nOpen it: {shift_url}\n")
    if kind == NoticeKind.CODE_READY:
        return (f"Your shift in {attempt.study.name} is saved. Your completion code is on your study page: "
                f"{me_url}\n")
    what = "was reassigned to you after a platform fault" if kind == NoticeKind.REASSIGNED else "is ready"
    return (f"A shift in {attempt.study.name} {what}. Its 12-hour deadline starts when you press Start.\n\n"
            f"Open it: {shift_url}\n")


def send_notice(attempt_id: int, kind: str) -> bool:
    """Send one notice (at most once per attempt and kind); True if a mail went out now."""
    attempt = Attempt.objects.select_related("participant__user", "study", "shift").filter(pk=attempt_id).first()
    if attempt is None or attempt.participant.user is None or attempt.is_bot:
        return False
    address = attempt.participant.email or attempt.participant.user.email
    if not address:
        return False
    try:
        with transaction.atomic():
            Notice.objects.create(attempt=attempt, kind=kind, address=address)
            send_mail(SUBJECTS[NoticeKind(kind)], _body(attempt, kind), settings.DEFAULT_FROM_EMAIL, [address])
    except IntegrityError:
        return False  # sent before
    return True


def schedule_assignment_notice(attempt: Attempt) -> None:
    kind = NoticeKind.REASSIGNED if attempt.kind == AttemptKind.REASSIGNMENT else NoticeKind.ASSIGNED
    if attempt.is_practice or attempt.is_bot:
        return
    attempt_id = attempt.pk
    transaction.on_commit(lambda: _send_to_the_queue(attempt_id, kind))


def _send_to_the_queue(attempt_id: int, kind: str) -> None:
    """Hand the notice to the task queue; with the broker down, log it and leave the notice to
    :func:`sweep`, which sends an assigned notice still unsent after :data:`UNSENT_GRACE` (the
    assignment stands: it was committed, and the page answers as for any assignment)."""
    try:
        # No publish retries: the sweep is the safety net, and an assignment (a bulk one, say) should
        # not wait a second or more per notice while the broker is down.
        notify.apply_async((attempt_id, kind), retry=False)
    except BrokerUnavailable as exc:
        logger.error("the %s notice of attempt %s could not be sent to the task queue (%s: %s); the notice sweep "
                     "sends it once the queue is back", kind, attempt_id, type(exc).__name__, exc)


# A killed pool process sends the message back (reject_on_worker_lost); a mail server that
# cannot be reached (OSError, smtplib's errors included) is tried again 1, 2, 4, 8 and then
# every 10 minutes, for about an hour; after that the sweep sends an assigned or reassigned
# notice still unsent, within UNSENT_WINDOW of the assignment.  The delays stay under
# Redis's visibility timeout (config/celery.py); a Notice row keeps a retry from sending twice.
@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OSError,), retry_backoff=60,
             retry_backoff_max=600, retry_jitter=False, max_retries=8)
def notify(attempt_id: int, kind: str) -> str:
    return "sent" if send_notice(attempt_id, kind) else "skipped"


def sweep(now=None) -> dict:
    """Send the deadline and code-ready notices that are due, and an assigned or reassigned
    notice still unsent :data:`UNSENT_GRACE` after its attempt was made, its shift not yet
    started (its task never reached the queue, or ran out of retries) (idempotent)."""
    now = now or timezone.now()
    sent = {NoticeKind.ASSIGNED: 0, NoticeKind.REASSIGNED: 0, NoticeKind.DEADLINE: 0, NoticeKind.CODE_READY: 0}
    base = (Attempt.objects.filter(is_bot=False, is_practice=False).exclude(participant__user=None)
            .exclude(participant__email="", participant__user__email=""))
    waiting = (base.filter(status=AttemptStatus.ASSIGNED, shift__status=Shift.Status.ASSIGNED,
                           shift__started_at__isnull=True, assigned_at__lte=now - UNSENT_GRACE,
                           assigned_at__gte=now - UNSENT_WINDOW, study__closed_at=None,
                           participant__withdrawn_at=None, participant__returned_at=None)
               .exclude(notices__kind__in=(NoticeKind.ASSIGNED, NoticeKind.REASSIGNED)))
    for attempt_id, attempt_kind in waiting.values_list("pk", "kind"):
        kind = NoticeKind.REASSIGNED if attempt_kind == AttemptKind.REASSIGNMENT else NoticeKind.ASSIGNED
        sent[kind] += _swept(attempt_id, kind)
    near = base.filter(status__in=OPEN_STATUSES, shift__status__in=RUNNING,
                       shift__deadline__lte=now + DEADLINE_NOTICE, shift__deadline__gt=now) \
        .exclude(notices__kind=NoticeKind.DEADLINE)
    for attempt_id in near.values_list("pk", flat=True):
        sent[NoticeKind.DEADLINE] += _swept(attempt_id, NoticeKind.DEADLINE)
    done = base.filter(shift__status=Shift.Status.ENDED, shift__score_composite__isnull=False) \
        .exclude(notices__kind=NoticeKind.CODE_READY)
    for attempt_id in done.values_list("pk", flat=True):
        sent[NoticeKind.CODE_READY] += _swept(attempt_id, NoticeKind.CODE_READY)
    return {str(k): v for k, v in sent.items()}


def _swept(attempt_id: int, kind: str) -> bool:
    """One notice of the sweep: an address the mail server refuses (or a server that cannot be
    reached) is logged and passed over, so that one person's notice does not stop everyone's."""
    try:
        return send_notice(attempt_id, kind)
    except OSError as exc:  # smtplib's errors included
        logger.error("the %s notice of attempt %s could not be sent: %s; the next sweep tries again", kind,
                     attempt_id, exc)
        return False


@shared_task
def sweep_notices() -> dict:
    return sweep()
