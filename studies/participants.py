"""Participants, signed invitation links and versioned consent.

* A participant has an unguessable ``code`` (``secrets.token_urlsafe``) and a label
  chosen by the coordinator; qualifications are self-reported and not verified.
* An invitation link carries a token signed with ``django.core.signing`` (salted,
  timestamped, checked with ``max_age``); the token names an :class:`Invitation` row
  by its random nonce, so a link can also be revoked before it expires.
* Accepting a link creates (or reuses) the participant's account and records the
  recruitment ids found in the link's query string (e.g. Prolific's
  ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``), each checked for shape. A link is
  accepted once: that binds it to the participant's account, and a later use signs
  nobody in (:class:`~studies.errors.InvitationUsed`; the account's own session
  goes on). Recruitment ids already recorded are never overwritten (a differing
  value is noted in the audit event), and a ``PROLIFIC_PID`` another participant of
  the study holds is not recorded (noted too): one Prolific account is one participant.
* The sessions a link signed in are remembered on the invitation; revoking the link
  ends them.
* Consent is versioned: the participant records the version they accepted and when.
  Scripted bots are not asked (:func:`needs_consent`).
* A closed study (:func:`studies.design.close_study`) adds no participant, and issues and
  accepts no link for someone who has not joined yet (no account); a participant who has
  one may still be sent a link to sign back in and finish an open shift.
"""
from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from importlib import import_module

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Case, Q, When
from django.urls import reverse
from django.utils import timezone

from shifts.affiliation import Affiliation, PersonPage
from shifts.errors import StartRefused

from . import audit
from .design import NO_NEW_PARTICIPANT, refuse_closed
from .errors import InvitationUsed, LinkRefused, StudyError
from .models import (
    Attempt,
    AuditAction,
    ConsentVersion,
    FormerTeamRole,
    Invitation,
    Participant,
    Role,
    Study,
    StudyMembership,
)
from .permissions import Action, require
from .wording import counted, plural

SALT = "studies.invitation"
DEFAULT_MAX_AGE = 7 * 24 * 3600
EXTERNAL_ID_KEYS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
EXTERNAL_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
QUALIFICATION_KEYS = ("years_ecommerce", "role", "platforms", "notes")


def new_code() -> str:
    """An unguessable code that never begins with '-' (so a CSV export writes it as it is)."""
    while True:
        code = secrets.token_urlsafe(18)
        if not code.startswith("-"):
            return code


def clean_qualifications(raw: dict) -> dict:
    unknown = sorted(set(raw) - set(QUALIFICATION_KEYS))
    if unknown:
        raise StudyError(f"unknown qualification {plural(len(unknown), 'field')}: {', '.join(unknown)}; "
                         f"allowed: {', '.join(QUALIFICATION_KEYS)}")
    out: dict[str, int | str] = {}
    if raw.get("years_ecommerce") not in (None, ""):
        try:
            years = int(raw["years_ecommerce"])
        except (TypeError, ValueError) as exc:
            raise StudyError(f"years_ecommerce must be a whole number, not {raw['years_ecommerce']!r}") from exc
        if not 0 <= years <= 60:
            raise StudyError(f"years_ecommerce must be between 0 and 60, not {years}")
        out["years_ecommerce"] = years
    for key in ("role", "platforms", "notes"):
        value = str(raw.get(key) or "").strip()
        if len(value) > 500:
            raise StudyError(f"{key} is longer than 500 characters")
        if value:
            out[key] = value
    return out


@transaction.atomic
def add_participant(actor, study: Study, label: str, qualifications: dict | None = None, *,
                    is_bot: bool = False, user=None, email: str = "") -> Participant:
    """A new participant of ``study``; ``email`` is where their notices go (else their account's)."""
    require(actor, study, Action.MANAGE)
    refuse_closed(study, NO_NEW_PARTICIPANT)
    label = label.strip()
    if not label:
        raise StudyError("a participant needs a label")
    if len(label) > 80:
        raise StudyError("a participant label is at most 80 characters")
    email = email.strip()
    if email:
        try:
            validate_email(email)
        except ValidationError as exc:
            raise StudyError(f"email {email[:80]!r} is not an e-mail address") from exc
        if len(email) > 254:
            raise StudyError(f"an e-mail address is at most 254 characters, not {len(email)}")
    with transaction.atomic():
        # As the study stands now (a rehearsal task's copy may be older): closing locks this row too.
        refuse_closed(Study.objects.select_for_update().get(pk=study.pk), NO_NEW_PARTICIPANT)
        taken = label.casefold()  # labels differ by more than case: "Alice" and "alice" are one person on a page
        if any(other.casefold() == taken for other in study.participants.values_list("label", flat=True)):
            raise StudyError(f"study {study.name!r} already has a participant labelled {label!r} (labels differ by "
                             "more than case); choose another label")
        participant = Participant.objects.create(study=study, label=label, code=new_code(), is_bot=is_bot,
                                                 qualifications=clean_qualifications(qualifications or {}),
                                                 user=user, email=email)
        if user is not None:
            StudyMembership.objects.get_or_create(study=study, user=user, role=Role.PARTICIPANT)
        audit.record(study, actor, AuditAction.PARTICIPANT_ADDED, participant=participant, bot=is_bot or None)
    return participant


@dataclass(frozen=True)
class IssuedInvitation:
    invitation: Invitation
    token: str


def team_powers(participant: Participant) -> str:
    """What the participant's account holds beyond taking part (staff, or a team role in a
    study), in words; "" for none (or no account)."""
    user = participant.user
    if user is None:
        return ""
    if user.is_staff or user.is_superuser:
        return "is a staff account"
    here_first = Case(When(study_id=participant.study_id, then=0), default=1)  # a role in this study is named
    role = (user.study_memberships.exclude(role=Role.PARTICIPANT).select_related("study")
            .order_by(here_first, "study_id").first())
    return f"holds the role {role.role} {_in_study(role.study, participant)}" if role else ""


def _in_study(study: Study, participant: Participant) -> str:
    """Where a team role is held, as this study's team may be told: another study is not named
    (its name is its own team's to know)."""
    return f"in this study ({study.name!r})" if study.pk == participant.study_id else "in another study"


# Why an account that has seen the team's pages takes no scored attempt.
SAW_THRESHOLDS = "pass thresholds and the anchors' play"


def scored_bar(participant: Participant) -> str:
    """Why ``participant``'s account takes no scored attempt, in words ("" for none): staff
    powers or a team role held now (:func:`team_powers`), or a team role taken away since
    (:class:`~studies.models.FormerTeamRole`): what those pages showed is not unseen."""
    powers = team_powers(participant)
    if powers:
        return f"{powers}, which shows {SAW_THRESHOLDS}"
    if participant.user_id is None:
        return ""
    former = (FormerTeamRole.objects.filter(user_id=participant.user_id).select_related("study")
              .order_by("removed_at", "id").first())
    if former is None:
        return ""
    return (f"held the role {former.role} {_in_study(former.study, participant)} until {former.removed_at:%Y-%m-%d}, "
            f"which showed them {SAW_THRESHOLDS}")


def barred_users(user_ids) -> set[int]:
    """Of ``user_ids``, the accounts :func:`scored_bar` bars, in three queries (for a pool)."""
    ids = [pk for pk in user_ids if pk is not None]
    barred = set(get_user_model().objects.filter(Q(is_staff=True) | Q(is_superuser=True), pk__in=ids)
                 .values_list("pk", flat=True))
    barred |= set(StudyMembership.objects.filter(user_id__in=ids).exclude(role=Role.PARTICIPANT)
                  .values_list("user_id", flat=True))
    barred |= set(FormerTeamRole.objects.filter(user_id__in=ids).values_list("user_id", flat=True))
    return barred


def refuse_staff_account(participant: Participant) -> None:
    """Refuse a link that would sign in as an account with powers beyond taking part: a
    link signs in whoever opens it as the participant's account, so a coordinator of one
    study could otherwise become a staff member, or another study's coordinator, whose
    account was also made a participant here. Such a person signs in with their password."""
    if team_powers(participant):
        raise LinkRefused(f"{participant.label}'s account holds a staff role; an invitation link would sign "
                         "whoever opens it in with those powers, so none is issued or accepted: they sign in "
                         "with their own password")


def refuse_link(participant: Participant) -> None:
    """Refuse an invitation link, issued or accepted, for a participant whom nobody should
    be signed in as by a link: an account with staff powers (:func:`refuse_staff_account`),
    a scripted bot (its shifts are played by a script, which gives no consent: a person
    signed in as it would play scored shifts without one) or a withdrawn participant."""
    refuse_staff_account(participant)
    if participant.is_bot:
        raise LinkRefused(f"{participant.label} is a scripted bot: its shifts are played by a script, and an "
                         "invitation link would let a person play them as the bot, without consent; invite a "
                         "person instead")
    if participant.withdrawn_at is not None:
        raise LinkRefused(f"{participant.label} withdrew from the study on {participant.withdrawn_at:%Y-%m-%d}; "
                          "no invitation link is issued or accepted for them")


def invite(actor, participant: Participant, max_age_seconds: int = DEFAULT_MAX_AGE) -> IssuedInvitation:
    study = participant.study
    require(actor, study, Action.MANAGE)
    refuse_link(participant)
    if participant.user_id is None:
        refuse_closed(study, f"{NO_NEW_PARTICIPANT}, so {participant.label}, who has not joined yet, gets no "
                             "invitation link")
    if not 60 <= max_age_seconds <= 90 * 24 * 3600:
        raise StudyError(f"an invitation lasts between 60 seconds and 90 days, not {counted(max_age_seconds, 'second')}")
    invitation = Invitation.objects.create(participant=participant, nonce=secrets.token_urlsafe(18),
                                           max_age_seconds=max_age_seconds, created_by=actor)
    token = signing.dumps({"n": invitation.nonce}, salt=SALT)
    audit.record(study, actor, AuditAction.INVITED, participant=participant, invitation=invitation.pk,
                 max_age_seconds=max_age_seconds)
    return IssuedInvitation(invitation, token)


def revoke(actor, invitation: Invitation, reason: str) -> Invitation:
    study = invitation.participant.study
    require(actor, study, Action.MANAGE)
    if not reason.strip():
        raise StudyError("a reason is required to revoke an invitation")
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().select_related("participant").get(pk=invitation.pk)
        if invitation.revoked_at is None:
            ended = _end_sessions(invitation.session_keys)
            invitation.revoked_at = timezone.now()
            invitation.session_keys = []
            invitation.save(update_fields=["revoked_at", "session_keys"])
            audit.record(study, actor, AuditAction.INVITATION_REVOKED, reason=reason.strip(),
                         participant=invitation.participant, invitation=invitation.pk,
                         sessions_ended=ended or None)
    return invitation


def _end_sessions(keys: list[str]) -> int:
    store = import_module(settings.SESSION_ENGINE).SessionStore
    ended = 0
    for key in keys:
        session = store(session_key=key)
        if session.exists(key):
            session.delete(key)
            ended += 1
    return ended


def refuse_if_closed(invitation: Invitation) -> None:
    """Refuse a link that would admit someone new (no account yet) to a closed study."""
    study = invitation.participant.study
    if invitation.participant.user_id is None and study.closed_at is not None:
        raise StudyError(f"study {study.name!r} is closed: it takes no new participants, so this invitation "
                         "link signs nobody in")


def check_link(invitation: Invitation) -> None:
    """Refuse a link that may not be accepted (see :func:`refuse_link`, :func:`refuse_if_used`,
    :func:`refuse_if_closed`): checked when its page opens and again when it is accepted.  Whom
    it is for comes first: an accepted link of a withdrawn participant says no more than any
    refused link (not when it was accepted, nor to ask for a new one, which would be refused)."""
    refuse_link(invitation.participant)
    refuse_if_used(invitation)
    refuse_if_closed(invitation)


def refuse_if_used(invitation: Invitation) -> None:
    """Raise :class:`InvitationUsed` when the link was already accepted."""
    if invitation.accepted_at is not None:
        raise InvitationUsed(
            f"this invitation link was already accepted on {invitation.accepted_at:%Y-%m-%d %H:%M} UTC and "
            "belongs to the participant account it signed in; it signs nobody in again. If that was you "
            "and you have been signed out, ask the coordinator for a new link.", invitation.participant.user_id)


def bind_session(invitation: Invitation, session_key: str | None) -> None:
    """Remember a session the link signed in, so that revoking the link ends it."""
    if not session_key:
        return
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if session_key not in invitation.session_keys:
            invitation.session_keys = [*invitation.session_keys, session_key]
            invitation.save(update_fields=["session_keys"])


def resolve(token: str) -> Invitation:
    """The invitation a token names, if its signature holds, it has not expired and is not revoked."""
    try:
        nonce = signing.loads(token, salt=SALT, max_age=None)["n"]
    except (signing.BadSignature, KeyError, TypeError) as exc:
        raise StudyError("this invitation link is not valid") from exc
    invitation = Invitation.objects.select_related("participant__study").filter(nonce=nonce).first()
    if invitation is None:
        raise StudyError("this invitation link is not valid")
    try:
        signing.loads(token, salt=SALT, max_age=invitation.max_age_seconds)
    except signing.SignatureExpired as exc:
        raise StudyError("this invitation link has expired; ask the coordinator for a new one") from exc
    if invitation.revoked_at is not None:
        raise StudyError("this invitation link has been revoked; ask the coordinator for a new one")
    return invitation


def external_ids_from(query: dict) -> dict:
    ids = {}
    for key in EXTERNAL_ID_KEYS:
        value = query.get(key)
        if value in (None, ""):
            continue
        if not EXTERNAL_ID_RE.fullmatch(value):
            raise StudyError(f"{key} must be 1-64 letters, digits, '_' or '-', not {value[:80]!r}")
        ids[key] = value
    return ids


@transaction.atomic
def accept(token: str, query: dict):
    """Accept an invitation: returns the participant, with an account to sign in with."""
    invitation = resolve(token)
    invitation = Invitation.objects.select_for_update().select_related("participant__study").get(pk=invitation.pk)
    participant = invitation.participant
    check_link(invitation)
    ids = external_ids_from(query)
    joined_now = participant.user is None
    if joined_now:
        User = get_user_model()
        try:
            with transaction.atomic():
                user = User.objects.create_user(username=f"p-{participant.code[:16]}")
        except IntegrityError as exc:
            raise StudyError("an account for this participant already exists") from exc
        user.set_unusable_password()
        user.save()
        participant.user = user
        StudyMembership.objects.get_or_create(study=participant.study, user=user, role=Role.PARTICIPANT)
    conflicts = sorted(k for k, v in ids.items() if participant.external_ids.get(k, v) != v)
    pid = ids.get("PROLIFIC_PID")
    taken = bool(pid) and pid_holder(participant.study, str(pid), other_than=participant) is not None
    if taken:  # one Prolific account is one participant: another's id is not recorded for this one
        ids = {k: v for k, v in ids.items() if k != "PROLIFIC_PID"}
    participant.external_ids = {**ids, **participant.external_ids}
    participant.save(update_fields=["user", "external_ids"])
    invitation.accepted_at = timezone.now()
    invitation.save(update_fields=["accepted_at"])
    audit.record(participant.study, participant.user, AuditAction.INVITATION_ACCEPTED, participant=participant,
                 invitation=invitation.pk, external_ids=sorted(ids) or None,
                 external_ids_kept=conflicts or None, prolific_pid_held_by_another=taken or None)
    if joined_now:
        _revoke_the_other_links(invitation)
    return participant


SUPERSEDED = "another invitation link of theirs was accepted first"


def _revoke_the_other_links(accepted: Invitation) -> None:
    """The person's other open links, all issued before they had an account (the team was not
    told, as it is for a link issued after, that whoever opens one is signed in as them), stop
    signing anyone in once one of them is accepted: each revoked and audited."""
    participant = accepted.participant
    others = Invitation.objects.select_for_update().filter(
        participant=participant, accepted_at=None, revoked_at=None).exclude(pk=accepted.pk).order_by("pk")
    for other in others:
        other.revoked_at = accepted.accepted_at
        other.save(update_fields=["revoked_at"])
        audit.record(participant.study, participant.user, AuditAction.INVITATION_REVOKED, reason=SUPERSEDED,
                     participant=participant, invitation=other.pk)


def current_consent(study: Study) -> ConsentVersion | None:
    return study.consent_versions.order_by("-version").first()


def give_consent(user, participant: Participant, version: int) -> Participant:
    if participant.user_id != user.pk:
        raise StudyError("only the participant can give their consent")
    if participant.is_bot:
        raise StudyError(f"{participant.label} is a scripted bot; a script gives no consent, and a bot needs none")
    if participant.withdrawn_at is not None:
        raise StudyError(f"you withdrew from this study on {participant.withdrawn_at:%Y-%m-%d}: no consent is "
                         "asked of you or recorded")
    current = current_consent(participant.study)
    if current is None:
        raise StudyError(f"study {participant.study.name!r} has no consent text yet")
    if version != current.version:
        raise StudyError(f"consent version {version} is not the current version ({current.version}); "
                         "reload the page and read the current text")
    participant.consent_version = current
    participant.consented_at = timezone.now()
    participant.save(update_fields=["consent_version", "consented_at"])
    audit.record(participant.study, user, AuditAction.CONSENTED, participant=participant, version=version)
    return participant


def needs_consent(participant: Participant) -> bool:
    """Whether the participant must accept the study's current consent text before a
    cell is assigned or a shift starts.  A scripted bot is never asked: a script gives
    no consent, so none is recorded for it (its consent fields stay empty in exports)
    and it may rehearse a study that has a consent text."""
    if participant.is_bot:
        return False
    current = current_consent(participant.study)
    return current is not None and participant.consent_version_id != current.pk


def consent_gate(user, shift) -> StartRefused | None:
    """The shift domain's start gate for studies (added in ``StudiesConfig.ready``): a
    study participant who has not accepted the study's current consent text starts no
    shift, practice included, and is sent to their page for that study to give it.
    Studies the person has left (withdrawn or returned) ask nothing of them."""
    for participant in Participant.objects.filter(user_id=user.pk, withdrawn_at=None, returned_at=None
                                                  ).select_related("study"):
        if needs_consent(participant):
            return StartRefused(f"Give your consent to study {participant.study.name!r} on your study page "
                                "before starting a shift: read the consent text there and tick the box.",
                                next_url=my_page_url(participant))
    return None


def affiliation(shift) -> Affiliation | None:
    """The shift domain's lookup for studies (added in ``StudiesConfig.ready``): the study
    that assigned ``shift``, as its pages need it (the participant's page there, whether the
    pass threshold may be shown, the coordinator's note for a coached retry); None for a shift
    no study assigned."""
    attempt = (Attempt.objects.filter(shift=shift).select_related("participant__study")
               .only("coach_note", "participant__id", "participant__study_id",
                     "participant__study__show_threshold_to_participants").first())
    if attempt is None:
        return None
    found = attempt.participant
    return Affiliation(page_url=my_page_url(found), show_threshold=found.study.show_threshold_to_participants,
                       coach_note=attempt.coach_note)


def person_page(user_id: int) -> PersonPage | None:
    """The shift domain's person page lookup (added in ``StudiesConfig.ready``): the study page
    of the person's latest participation still going on (else their latest), and why it gives
    them no more shifts (withdrawn, left, or the study closed); None for someone in no study."""
    mine = Participant.objects.filter(user_id=user_id).select_related("study").order_by("-pk")
    latest = (mine.filter(withdrawn_at=None, returned_at=None, study__closed_at=None).first() or mine.first())
    if latest is None:
        return None
    if latest.withdrawn_at is not None:
        why = "You have been withdrawn from this study: no further shift will be assigned to you."
    elif latest.returned_at is not None:
        why = "You have left this study: no further shift will be assigned to you."
    elif latest.study.closed_at is not None:
        why = "This study is closed: it gives no new shifts."
    else:
        why = ""
    return PersonPage(url=my_page_url(latest), study=latest.study.name, no_more_shifts=why)


def has_withdrawn(study_name: str, label: str, lock: bool = False) -> bool:
    """The shift domain's withdrawal check (added in ``StudiesConfig.ready``): whether the
    participant ``label`` of the study named ``study_name`` has withdrawn (``label`` may be their
    code, as a de-identified trial folder names them).  With ``lock``, their row is locked as a
    withdrawal locks it, so the two wait for each other."""
    found = Participant.objects.filter(Q(label=label) | Q(code=label), study__name=study_name)
    if lock:
        found = found.select_for_update(of=("self",))
    return any(when is not None for when in found.values_list("withdrawn_at", flat=True))


def pid_holder(study: Study, pid: str, other_than: Participant | None = None) -> Participant | None:
    """The study's participant whose ``PROLIFIC_PID`` is ``pid`` (one Prolific account is one
    participant), leaving ``other_than`` out."""
    found = study.participants.filter(external_ids__PROLIFIC_PID=pid)
    if other_than is not None:
        found = found.exclude(pk=other_than.pk)
    return found.select_related("user").first()


def my_page_url(participant: Participant) -> str:
    """The participant's own study page, for this study (a person may be in several)."""
    return f"{reverse('studies:me')}?study={participant.study_id}"
