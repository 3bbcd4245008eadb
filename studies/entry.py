"""The study-level entry link: one URL for everyone a recruiting platform sends.

Prolific gives every participant the same study URL with their ``PROLIFIC_PID``,
``STUDY_ID`` and ``SESSION_ID`` in the query string.  Here that URL is
``/studies/s/<entry_slug>/`` (the slug is unguessable and the link can be closed).

* A GET only shows the consent text (no write).  The POST that gives consent creates
  the participant and their account on the first visit, or finds them again by their
  ``PROLIFIC_PID``; the link must carry a ``SESSION_ID`` and a returning visit the same
  ``SESSION_ID`` as the first one (the platform's ids are in a URL, so the PID alone
  would let anyone sign in as someone else).  The participant is signed in and sent to the briefing.
* The completion page sends a participant who has finished a scored attempt to the
  study's completion URL with the study's completion code (``?cc=CODE``, the form
  Prolific checks).  The return path (a POST: "I want to stop") closes their unstarted
  attempts, records the return and sends them to the completion URL with the return code.
* Personal invitations (:mod:`studies.participants`) stay for hand-picked experts.
* A closed study (:func:`studies.design.close_study`) takes nobody new through its link: only
  someone who entered before, in the same session, signs back in (to finish an open shift or
  collect their code).
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from . import audit
from .assignment import abandon_unstarted
from .completion import RETURNED
from .errors import StudyError
from .models import Attempt, AttemptStatus, AuditAction, Participant, Role, Study, StudyMembership
from .participants import current_consent, external_ids_from, new_code, pid_holder
from .permissions import Action, require

CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def new_platform_code() -> str:
    return "".join(secrets.choice(CODE_CHARS) for _ in range(8))


def open_study(slug: str) -> Study:
    study = Study.objects.filter(entry_slug=slug).first()
    if study is None or not slug:
        raise StudyError("this study link is not valid; check the address you were given")
    if not study.entry_open:
        raise StudyError(f"study {study.name!r} is not taking participants through this link now")
    return study


def returning(study: Study, ids: dict) -> Participant | None:
    """The participant these platform ids sign back in: the same PID in the same session, who
    entered through this link before (has an account); None for anyone else (the page reveals no
    one else).  Someone who joined by a personal invitation is never signed in by the study link:
    their ids were shown to the study's team (the study page, the exports), so with the link they
    would be a way in for anyone on it."""
    found = pid_holder(study, ids["PROLIFIC_PID"])
    if found is None or found.user_id is None or not found.entered_via_link \
            or found.external_ids.get("SESSION_ID") != ids.get("SESSION_ID"):
        return None
    return found


def refuse_newcomer(study: Study) -> None:
    """A closed study takes no new participant through its link."""
    if study.closed_at is not None:
        raise StudyError(f"study {study.name!r} is closed: it takes no new participants")


def platform_ids(query) -> dict:
    ids = external_ids_from(query)
    if "PROLIFIC_PID" not in ids or "SESSION_ID" not in ids:
        raise StudyError("this study link needs your PROLIFIC_PID and SESSION_ID in the address; "
                         "open it from Prolific again")
    return ids


@transaction.atomic
def enter(study: Study, query, consent_version: int | None) -> Participant:
    """Create or find the participant of these platform ids, with their consent recorded."""
    study = Study.objects.select_for_update().get(pk=study.pk)  # one creation per PID at a time
    if not study.entry_open:
        raise StudyError(f"study {study.name!r} is not taking participants through this link now")
    ids = platform_ids(query)
    consent = current_consent(study)
    if consent is not None and consent_version != consent.version:
        raise StudyError(f"consent version {consent_version} is not the current version ({consent.version}); "
                         "reload the page and read the current text")
    participant = pid_holder(study, ids["PROLIFIC_PID"])
    now = timezone.now()
    if participant is None:
        refuse_newcomer(study)
        user = get_user_model().objects.create_user(username=f"p-{secrets.token_hex(8)}")
        user.set_unusable_password()
        user.save()
        participant = Participant.objects.create(
            study=study, user=user, code=new_code(), label=f"prolific-{ids['PROLIFIC_PID']}"[:80],
            external_ids=ids, entered_via_link=True,
            consent_version=consent, consented_at=now if consent else None)
        StudyMembership.objects.get_or_create(study=study, user=user, role=Role.PARTICIPANT)
        audit.record(study, None, AuditAction.ENTERED, participant=participant, external_ids=sorted(ids))
        if consent is not None:
            audit.record(study, user, AuditAction.CONSENTED, participant=participant, version=consent.version)
        return participant
    if participant.withdrawn_at is not None:
        raise StudyError("you have withdrawn from this study; contact the researchers if this is a mistake")
    known = participant.external_ids.get("SESSION_ID")
    if ids["SESSION_ID"] != known:  # none recorded (an entry from before both were required) matches nothing
        raise StudyError("this PROLIFIC_PID entered the study in another session; open the study from "
                         "Prolific again (the link carries your session), or contact the researchers")
    if participant.user_id is None:  # added by the team (an import), never signed in: their invitation signs them in
        raise StudyError("this PROLIFIC_PID was added to the study by its team; open the invitation link "
                         "the coordinator sent you, or contact the researchers")
    if not participant.entered_via_link:  # joined by invitation: see returning()
        raise StudyError("this PROLIFIC_PID joined the study through a personal invitation, which is how it signs "
                         "in; if you were signed out, ask the coordinator for a new invitation link")
    if consent is not None and participant.consent_version_id != consent.pk:
        participant.consent_version = consent
        participant.consented_at = now
        participant.save(update_fields=["consent_version", "consented_at"])
        audit.record(study, participant.user, AuditAction.CONSENTED, participant=participant,
                     version=consent.version)
    return participant


@dataclass(frozen=True)
class Finish:
    url: str | None  # where to send the participant, or None if they are not done
    missing: str  # what is still to do, when url is None


def completion_target(study: Study, code: str) -> str:
    sep = "&" if "?" in study.completion_url else "?"
    return f"{study.completion_url}{sep}{urlencode({'cc': code})}"


def finish(participant: Participant) -> Finish:
    """Where the completion page sends ``participant`` (a read: nothing is written)."""
    study = participant.study
    if not study.completion_code:
        return Finish(None, "the study has no completion code yet; the coordinator will pay you by hand")
    scored = [a for a in participant.attempts.filter(is_practice=False).select_related("shift", "study")]
    if any(a.outcome.is_open and a.outcome.status != AttemptStatus.ASSIGNED for a in scored):
        return Finish(None, "your shift is still running; end it on your shifts page first")
    if not any(a.outcome.is_completed or a.platform_fault for a in scored):
        return Finish(None, "you have not finished a scored shift yet")
    return Finish(completion_target(study, study.completion_code), "")


def leave(participant: Participant) -> str:
    """The return path: close unstarted attempts, record the return; the URL to send them to."""
    study = participant.study
    with transaction.atomic():
        locked = Participant.objects.select_for_update().get(pk=participant.pk)
        if locked.returned_at is None:
            locked.returned_at = timezone.now()
            locked.save(update_fields=["returned_at"])
            for attempt in Attempt.objects.filter(participant=locked, status=AttemptStatus.ASSIGNED):
                if attempt.shift.started_at is None:
                    abandon_unstarted(attempt, RETURNED)
            audit.record(study, locked.user, AuditAction.RETURNED, participant=locked)
    return completion_target(study, study.return_code or "RETURNED")


@transaction.atomic
def configure(actor, study: Study, *, entry_open: bool, completion_url: str, completion_code: str,
              return_code: str, base_pay_cents: int, bonus_bands: list, fault_compensation_cents: int,
              reason: str, show_threshold: bool | None = None) -> dict[str, list]:
    """Set the entry link, the pay rule and, unless ``show_threshold`` is None, whether
    participants' end pages show the pass threshold (audited with a reason); a slug is
    made on first opening.  What changed, by field (``[before, after]``); a submission that
    changes nothing is neither saved nor audited, and answers ``{}``."""
    require(actor, study, Action.MANAGE)
    if not reason.strip():
        raise StudyError("a reason is required to change the entry link or the pay rule")
    study = Study.objects.select_for_update().get(pk=study.pk)
    before = {"entry_open": study.entry_open, "entry_slug": study.entry_slug,
              "completion_url": study.completion_url, "completion_code": study.completion_code,
              "return_code": study.return_code, "base_pay_cents": study.base_pay_cents,
              "bonus_bands": study.bonus_bands, "fault_compensation_cents": study.fault_compensation_cents,
              "show_threshold_to_participants": study.show_threshold_to_participants}
    if entry_open and not study.entry_slug:
        study.entry_slug = secrets.token_urlsafe(12)
    study.entry_open = entry_open
    study.completion_url = completion_url
    study.completion_code = completion_code or study.completion_code or new_platform_code()
    study.return_code = return_code or study.return_code or new_platform_code()
    if study.completion_code == study.return_code:  # the platform could not tell finishing from returning
        raise StudyError(f"the completion code and the return code are both {study.completion_code!r}: change "
                         "one of them")
    study.base_pay_cents = base_pay_cents
    study.bonus_bands = bonus_bands
    study.fault_compensation_cents = fault_compensation_cents
    if show_threshold is not None:
        study.show_threshold_to_participants = show_threshold
    changed = {k: [before[k], getattr(study, k)] for k in before if before[k] != getattr(study, k)}
    if changed:
        study.save()
        audit.record(study, actor, AuditAction.ENTRY_CHANGED, reason=reason.strip(), changed=changed)
    return changed
