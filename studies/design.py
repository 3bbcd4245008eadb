"""A study's design: its calibration file, its cells (task x seed), its members, and whether it is open.

A study records the hash of the calibration file it was created from; every cell
copies its threshold and anchor composites out of that file, and
:func:`check_calibration` refuses a file whose hash has changed since (a new release).
A study whose file changed is stale: it assigns no new cell (:func:`studies.assignment.create_attempt`
asks), no attempt of it starts its shift (:func:`calibration_gate`, a start gate), and its
page says so (:func:`stale_calibration`).  Shifts already running are left to end; they are
graded with the new file and so marked invalid (:func:`studies.models.outcome_of`).

A closed study (:func:`close_study`) admits nobody new and creates no attempt: every path
that adds a participant, issues or accepts a link for someone who has not joined, or creates
an attempt (by hand, by policy, by its participant, as a retry or reassignment, in a
rehearsal) asks :func:`refuse_closed`.  Nothing else changes: its pages, monitor, exports,
pay and leaderboard read what exists, and its open shifts are left to be finished.

A team role is removed (:func:`remove_member`) by a coordinator or admin, an admin role only
by an admin; a study keeps an admin (who adds and removes its team) and someone who can run
its participants and attempts (an admin or a coordinator).  Roles are read from the memberships on
every request (:mod:`studies.permissions`), so a removal takes effect at once.
"""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from environment.calibration import CalibrationError, cell_of, load_calibration
from environment.errors import StoreBenchError
from environment.tasks import get_task
from environment.tasks.loader import PRACTICE
from shifts.errors import StartRefused
from shifts.installed import installed
from shifts.models import Shift

from . import audit
from .errors import StudyClosed, StudyError
from .models import (
    OPEN_STATUSES,
    Attempt,
    AuditAction,
    Cell,
    ConsentVersion,
    FormerTeamRole,
    Role,
    Study,
    StudyMembership,
)
from .permissions import Action, require
from .wording import counted, plural

# The console's practice task is played before any scored shift; were it a cell, a
# participant could be assigned the very store they practised on.
PRACTICE_REFUSAL = ("{task!r} is the console's practice task, never a study cell: every participant plays it "
                    "before their scored shifts; choose an eval or train task")


def default_calibration_path() -> Path:
    return Path(getattr(settings, "STOREBENCH_CALIBRATION",
                        settings.BASE_DIR / "calibration" / "public.json"))


def _load(path: Path) -> tuple[dict, str]:
    try:
        return load_calibration(path)
    except CalibrationError as exc:
        raise StudyError(str(exc)) from exc


def _on_disk(path: Path) -> tuple | None:
    """What changes when the file or its recorded-hash side file is written or replaced
    (None when the file cannot be read: then it is read, and refused, every time)."""
    try:
        file = path.stat()
    except OSError:
        return None
    try:
        side = path.with_name(path.name + ".sha256").stat()
    except OSError:
        return (file.st_ino, file.st_size, file.st_mtime_ns, file.st_ctime_ns)
    return (file.st_ino, file.st_size, file.st_mtime_ns, file.st_ctime_ns,
            side.st_ino, side.st_size, side.st_mtime_ns, side.st_ctime_ns)


# A study's file, read and hashed once for as long as it is unchanged on disk (its inode, size,
# and the times of its last write and of its last change of any kind, a rename or chmod too): every study
# page view, new attempt and study shift start checks it.  The document is shared: read only.
_checked: dict[str, tuple[tuple, dict, str]] = {}


def _load_checked(path: Path) -> tuple[dict, str]:
    seen, kept = _on_disk(path), _checked.get(str(path))
    if seen is not None and kept is not None and kept[0] == seen:
        return kept[1], kept[2]
    doc, digest = _load(path)
    if seen is not None:
        _checked[str(path)] = (seen, doc, digest)
    return doc, digest


# What a participant reads when their study's calibration changed: what they can act on, not
# the server's file and hashes (the study's page names those for its coordinators).
ON_HOLD_SHIFT = ("This shift is on hold: its study's scoring changed after the study was set up. "
                 "Your coordinator's study page says so; ask them what to do next.")
ON_HOLD_CELLS = ("New shifts in this study are on hold: its scoring changed after the study was set up. "
                 "Your coordinator's study page says so; ask them what to do next.")
STALE_ADVICE = ("it assigns no new cell and starts no new attempt (shifts already running end as before, "
                "and are marked invalid): start a new study on the current calibration")


def check_calibration(study: Study) -> dict:
    """The study's calibration document, refused if the file's hash has changed (naming both
    hashes and what to do).  Read again whenever the file changes on disk."""
    doc, digest = _load_checked(Path(study.calibration_path))
    if digest != study.calibration_hash:
        raise StudyError(f"calibration file {study.calibration_path} has hash {digest}, "
                         f"but study {study.name!r} was created with {study.calibration_hash}: {STALE_ADVICE}")
    return doc


def stale_calibration(study: Study) -> str | None:
    """Why the study can take no new work because its calibration file changed or cannot be
    read (see :func:`check_calibration`), or None while it holds."""
    try:
        check_calibration(study)
    except StudyError as exc:
        return str(exc)
    return None


def missing_task_cells(study: Study) -> list[Cell]:
    """The study's cells whose task this server no longer has: automatic assignment leaves
    them out, and the study page names them."""
    return [cell for cell in study.cells.order_by("task_id", "seed") if not installed(cell.task_id)]


def calibration_gate(user, shift: Shift) -> StartRefused | None:
    """The shift domain's start gate for a study's calibration (added in ``StudiesConfig.ready``):
    a shift a study assigned does not start once the study's calibration file has changed, since
    it would be graded with the new file and marked invalid after being played.  Only asked
    before a shift starts, so one already running is left to end."""
    if shift.is_practice:
        return None
    attempt = Attempt.objects.filter(shift_id=shift.pk).select_related("study").first()
    if attempt is None:
        return None
    problem = stale_calibration(attempt.study)
    if problem is None:
        return None
    return StartRefused(ON_HOLD_SHIFT)


def _refuse_uncalibrated(doc: dict, tasks: list[str], seeds: list[int]) -> None:
    """Refuse cells the calibration file lacks, naming the seeds it holds for the task: a study's
    file is the server's (``STOREBENCH_CALIBRATION``), so the form can only choose among them."""
    problems = []
    for task_id in tasks:
        missing = [s for s in seeds if cell_of(doc, task_id, s) is None]
        if not missing:
            continue
        held = sorted(int(s) for s in doc["tasks"].get(task_id, {}))
        cells = " and ".join(f"{task_id}/{s}" for s in missing)
        problems.append(f"the calibration file has no {plural(len(missing), 'cell')} {cells}; it holds "
                        + (f"{task_id} with {plural(len(held), 'seed')} {', '.join(map(str, held))}: choose from those"
                           if held else f"no {task_id} cell at all: choose another task"))
    if problems:
        raise StudyError("; ".join(problems))


def _cell_values(doc: dict, task_id: str, seed: int) -> tuple[Decimal, dict]:
    cell = cell_of(doc, task_id, seed)
    if cell is None:
        raise StudyError(f"the calibration file has no cell {task_id}/{seed}")
    anchors = {name: str(Decimal(str(a["reward_composite"]))) for name, a in cell.get("anchors", {}).items()}
    return Decimal(str(cell["threshold"])), anchors


@transaction.atomic
def repeated(noun: str, values: list) -> str | None:
    """Why ``values`` are refused when one is named more than once (as ``storebench`` refuses a
    repeated ``--tasks`` or ``--seeds`` value: each task-seed pair is one cell, made once)."""
    again = list(dict.fromkeys(v for i, v in enumerate(values) if v in values[:i]))
    if not again:
        return None
    return (f"{plural(len(again), noun)} {', '.join(map(str, again))} {'is' if len(again) == 1 else 'are'} given "
            f"more than once: give each {noun} once (each task and seed make one cell of the study)")


def create_study(actor, name: str, tasks: list[str], seeds: list[int], *, quota: int = 1,
                 calibration_path: str | Path | None = None, policy: str = "balanced",
                 random_seed: int = 0, description: str = "") -> Study:
    """Create a study and its cells; the creator becomes its admin.  Only staff may create studies."""
    if not (actor.is_superuser or actor.is_staff):
        raise StudyError(f"{actor} may not create studies (staff only)")
    name = name.strip()
    if not name:
        raise StudyError("a study needs a name")
    clash = Study.objects.filter(name__iexact=name).values_list("name", flat=True).first()
    if clash is not None:  # the explorer and exports tell studies apart by name
        raise StudyError(f"a study named {clash!r} already exists; study names must differ by more than case")
    if not tasks or not seeds:
        raise StudyError("a study needs at least one task and one seed")
    for noun, named in (("task", tasks), ("seed", seeds)):
        problem = repeated(noun, named)
        if problem is not None:
            raise StudyError(problem)
    if quota < 1:
        raise StudyError(f"the per-cell quota must be at least 1, not {quota}")
    for task_id in tasks:
        try:
            task = get_task(task_id)
        except StoreBenchError as exc:
            raise StudyError(f"unknown task {task_id!r}") from exc
        if task.split == PRACTICE:
            raise StudyError(PRACTICE_REFUSAL.format(task=task_id))
    path = Path(calibration_path) if calibration_path else default_calibration_path()
    doc, digest = _load(path)
    _refuse_uncalibrated(doc, tasks, [int(s) for s in seeds])
    values = {(t, int(s)): _cell_values(doc, t, int(s)) for t in tasks for s in seeds}
    try:
        with transaction.atomic():
            study = Study.objects.create(name=name, description=description, calibration_path=str(path),
                                         calibration_hash=digest, default_quota=quota, policy=policy,
                                         random_seed=random_seed, created_by=actor)
    except IntegrityError as exc:
        raise StudyError(f"a study named {name!r} already exists") from exc
    Cell.objects.bulk_create([Cell(study=study, task_id=t, seed=s, quota=quota, threshold=threshold,
                                   anchors=anchors) for (t, s), (threshold, anchors) in values.items()])
    StudyMembership.objects.create(study=study, user=actor, role=Role.ADMIN)
    audit.record(study, actor, AuditAction.STUDY_CREATED, calibration_hash=digest, cells=len(values))
    return study


def add_member(actor, study: Study, user, role: str) -> StudyMembership:
    require(actor, study, Action.ADMINISTER)
    if user is None:
        raise StudyError("no such user")
    if role not in Role.values:
        raise StudyError(f"unknown role {role!r}; choose one of {', '.join(Role.values)}")
    if role != Role.PARTICIPANT:
        scored = (Shift.objects.filter(participant=user, is_practice=False).exclude(status=Shift.Status.ENDED)
                  .count())
        if scored:
            raise StudyError(f"{user.get_username()} still has {counted(scored, 'scored shift')} to play or "
                             f"finish; a {role} role would show them what a participant may not see (pass "
                             "thresholds, the anchors' play): give it once those shifts have ended")
    membership, created = StudyMembership.objects.get_or_create(study=study, user=user, role=role)
    if not created:
        raise StudyError(f"{user.get_username()} already has the role {role} in this study; nothing was changed")
    audit.record(study, actor, AuditAction.MEMBER_ADDED, user=user.get_username(), role=role)
    return membership


def remove_member(actor, study: Study, user, role: str) -> None:
    """Take one team role away from ``user``; their other roles stay.  The role is kept as a
    :class:`~studies.models.FormerTeamRole`: what it showed them bars scored attempts still."""
    require(actor, study, Action.MANAGE)
    if user is None:
        raise StudyError("no such user")
    name = user.get_username()
    if role == Role.PARTICIPANT:
        raise StudyError(f"{name}'s participant role is not a team role: a participant leaves the study by "
                         "withdrawal (Withdraw in the Participants panel)")
    if role not in Role.values:
        raise StudyError(f"unknown role {role!r}; choose one of {', '.join(Role.values)}")
    if role == Role.ADMIN:
        require(actor, study, Action.ADMINISTER)  # only an admin gives an admin role, and takes one away
    with transaction.atomic():
        # The study's running roles are locked first, so two removals at once cannot take the last two.
        running = list(StudyMembership.objects.select_for_update().order_by("pk")
                       .filter(study=study, role__in=(Role.ADMIN, Role.COORDINATOR)).values_list("user_id", "role"))
        left = [held for held in running if held != (user.pk, role)]
        if role == Role.ADMIN and (user.pk, role) in running and not any(r == Role.ADMIN for _u, r in left):
            raise StudyError(f"{name} is the study's last admin, and a study keeps one to add and remove its team: "
                             "give another person the admin role first, then remove this one")
        if role == Role.COORDINATOR and (user.pk, role) in running and not left:
            raise StudyError(f"{name} is the last person who can run the study's participants and attempts (an "
                             "admin or a coordinator): add another coordinator first (an admin of the study adds "
                             "team members), then remove this role")
        removed, _ = StudyMembership.objects.filter(study=study, user=user, role=role).delete()
        if not removed:
            raise StudyError(f"{name} does not hold the role {role} in this study; nothing was changed")
        FormerTeamRole.objects.create(study=study, user=user, role=role, removed_at=timezone.now())
        audit.record(study, actor, AuditAction.MEMBER_REMOVED, user=name, role=role)


def remove_member_by_username(actor, study: Study, username: str, role: str) -> None:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        require(actor, study, Action.MANAGE)
        raise StudyError(f"no user named {username!r}; nothing was changed")
    remove_member(actor, study, user, role)


# What a closed study refuses, as :func:`refuse_closed` says it.
NO_NEW_ATTEMPT = "it assigns no cell and creates no attempt"
NO_NEW_PARTICIPANT = "it admits no new participant"


def _closed_when(study: Study) -> str:
    by = f" by {study.closed_by.get_username()}" if study.closed_by is not None else ""
    return f"on {study.closed_at:%Y-%m-%d}{by}"


def refuse_closed(study: Study, refused: str) -> None:
    """Refuse work a closed study takes no more (``refused``: what it is, in words), naming when
    and by whom it was closed and what to do."""
    if study.closed_at is not None:
        raise StudyClosed(f"study {study.name!r} was closed {_closed_when(study)}: {refused} until it is reopened "
                         "(Reopen on the study page)")


def open_shifts(study: Study) -> int:
    """How many of the study's attempts are open (assigned, or their shift running): closing the
    study leaves them to be finished."""
    found = Attempt.objects.filter(study=study, status__in=OPEN_STATUSES).select_related("shift", "study")
    return sum(1 for attempt in found if attempt.outcome.is_open)


def close_study(actor, study: Study, reason: str) -> Study:
    """Close the study (see the module docstring); its open shifts are not ended, and the audit
    event counts them."""
    require(actor, study, Action.MANAGE)
    if not reason.strip():
        raise StudyError("a reason is required to close a study")
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=study.pk)  # an assignment locks it with its cell
        if study.closed_at is not None:
            raise StudyError(f"study {study.name!r} was already closed {_closed_when(study)}; nothing was changed")
        study.closed_at, study.closed_by = timezone.now(), actor
        study.save(update_fields=["closed_at", "closed_by"])
        audit.record(study, actor, AuditAction.STUDY_CLOSED, reason=reason.strip(), open_shifts=open_shifts(study))
    return study


def reopen_study(actor, study: Study, reason: str) -> Study:
    """Reopen a closed study: it admits people and creates attempts again."""
    require(actor, study, Action.MANAGE)
    if not reason.strip():
        raise StudyError("a reason is required to reopen a study")
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=study.pk)
        closed = study.closed_at
        if closed is None:
            raise StudyError(f"study {study.name!r} is not closed; nothing was changed")
        study.closed_at, study.closed_by = None, None
        study.save(update_fields=["closed_at", "closed_by"])
        audit.record(study, actor, AuditAction.STUDY_REOPENED, reason=reason.strip(), closed_at=closed.isoformat())
    return study


def add_consent_version(actor, study: Study, text: str) -> ConsentVersion:
    require(actor, study, Action.MANAGE)
    if not text.strip():
        raise StudyError("consent text is empty")
    with transaction.atomic():
        latest = study.consent_versions.select_for_update().order_by("-version").first()
        consent = ConsentVersion.objects.create(study=study, version=(latest.version + 1) if latest else 1,
                                                text=text.strip())
        audit.record(study, actor, AuditAction.CONSENT_PUBLISHED, version=consent.version)
    return consent


def set_quota(actor, study: Study, cell: Cell, quota: int) -> Cell:
    """How many first attempts ``cell`` takes (open or completed); 0 holds it: it is assigned no
    more, and what it has stays.  Below the places already taken, it takes no new one until
    some are freed."""
    require(actor, study, Action.MANAGE)
    if cell.study_id != study.pk:
        raise StudyError(f"cell {cell.key} is not in study {study.name!r}")
    if quota < 0:
        raise StudyError(f"the per-cell quota must be 0 (the cell is assigned no more) or more, not {quota}")
    with transaction.atomic():
        before = cell.quota
        cell.quota = quota
        cell.save(update_fields=["quota"])
        audit.record(study, actor, AuditAction.QUOTA_CHANGED, cell=cell, before=before, after=quota)
    return cell


def add_member_by_username(actor, study: Study, username: str, role: str) -> StudyMembership:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        require(actor, study, Action.ADMINISTER)
        raise StudyError(f"no user named {username!r}: check the spelling (usernames are case-sensitive), "
                         "or create the account in the admin first")
    return add_member(actor, study, user, role)
