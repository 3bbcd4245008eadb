"""Graded MCP sessions: every episode served over MCP ends as a trial folder.

A :class:`Session` is one live episode as an MCP front end holds it: the episode, who
plays it (labels given by the operator or the command line, never by a tool), where
its calls are kept and where its trial folder goes.  The MCP server calls
:meth:`Session.record` after every tool call, under the episode's lock:

* the call's action-log entry is appended to ``calls.jsonl`` in the session's state
  folder (one ``os.write`` of one line; an operation is also ``fsync``-ed before its
  answer leaves, a free ``store_status`` only written, which already survives the
  process being killed; ``fsync=False`` writes operations the same way, trading the
  machine-crash guarantee for about 4 ms per operation on this machine's disk).  The log is the episode: replaying it on a fresh episode of
  the same task and seed rebuilds the store exactly (the engine is deterministic), which
  is how a restarted HTTP server resumes every live episode (:func:`restore_session`);
* when the call reached the horizon (or suspended the store), the session settles:
  :func:`environment.trial.settle` grades it and writes the trial folder, the same
  writer, layout, manifest and checksums as ``storebench run``.

Ending a session early appends a ``stop`` line naming who ended it (``ended_by``:
``client``, a stdio host hanging up; ``operator``, the operator API; ``server stopped``,
an HTTP server without ``--state`` settling its open sessions as it stops; or the
in-process agent runner's reason), freezes the store and settles it the same way; a
server restarted between the stop and the settlement settles it with that reason.  A settled session writes
``ended.json`` (the session as the operator API shows it: task, seed, window, calls,
labels, folder, score), then ``settled.json`` (its score) beside its log, so a restart
lists it as settled and does not serve it again.  A restart does not replay a settled
session either: it keeps a :class:`SettledSession` built from those two files and
``meta.json`` (:func:`read_settled`), two small dicts instead of an episode, so start
time and memory do not grow with the sessions settled before (``python -m
benchmarks.mcp_state`` measures a start on a folder of settled sessions).  ``settled.json`` is
written last, so a folder that has it has ``ended.json`` too, unless a server from before
``ended.json`` settled it: that session is replayed once and its ``ended.json`` written
then.

A settlement the disk refuses (the trial folder, ``ended.json`` or ``settled.json``: a full
disk) leaves the session unsettled, in memory as on disk (:meth:`Session._mark_settled`), so
that settling it again grades and writes it again.  Ended by the operator or the server,
the refusal is the answer to whoever ended it.  Reached by a call (the horizon, or the
store suspended), it is not that call's: the call was answered and its line is logged, so
the agent gets its answer, and the server's log says the session is not settled, why, and
what to do (free the disk, then end it again; its next call tries again too; a restart on
the state folder settles it, as it settles any session whose store ended).

Folder names follow the release: ``<task>__s<seed>__<id>``.

Labels and who may set them
---------------------------
A trial's labels (``summary.json``: :data:`~environment.artifacts.SUMMARY_LABELS`) come
from three sides, and a side never overwrites what a side above it set:

1. **the server** (:data:`SERVER_LABELS`): ``env`` (``storebench-mcp``) and ``ended_by``
   (``horizon``, ``suspended``, ``client``, ``operator``, ``server stopped``, or the reason
   the in-process agent runner passes to :meth:`Session.end`) are what the server saw, written when the session
   settles.  Nobody gives them: :func:`check_labels` refuses them from the operator API, the
   command line and a labels file alike, so no one can claim an episode ended at its
   horizon when it was stopped, or came from another environment;
2. **the operator**: whoever starts the episode (``storebench mcp --model/--harness`` on
   stdio; the operator API, behind the operator token, over HTTP; the agent runner, which
   is its own operator).  The operator may set and correct any other label;
3. **the playing side** (:meth:`Session.add_client_labels`; stdio's ``--labels-file``, which
   the harness writes while it plays): it may add labels the operator left unset (token
   ``metrics``, its ``context_policy``), never replace one the operator set: a harness
   cannot rename the model or claim another harness.  Over HTTP an agent has no way to
   label at all: no tool takes labels, and its episode token is refused by the operator API.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import secrets
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environment.api import arm
from environment.artifacts import SUMMARY_LABELS
from environment.engine import Episode
from environment.errors import StoreBenchError
from environment.trial import play_actions, settle

from .codes import ServerErrorCode

__all__ = ["CALLS", "ENDED", "META", "SERVER_LABELS", "SETTLED", "Session", "SessionError", "SettledSession",
           "check_labels", "new_session_id", "read_meta", "read_settled", "restore_session", "session_folder_name",
           "write_ended"]

logger = logging.getLogger(__name__)

CALLS = "calls.jsonl"
META = "meta.json"
SETTLED = "settled.json"
ENDED = "ended.json"  # the settled session's as_json(), written just before settled.json
STOP = {"stop": True}  # a log's last line when the session was ended early; "by" says who (ENDED_BY_*)
ENDED_BY_CLIENT = "client"
ENDED_BY_OPERATOR = "operator"
ENDED_BY_SERVER = "server stopped"


def _rows(entries: list[dict]) -> list[dict]:
    """Action-log entries as the call log keeps them."""
    return [{"tool": e["tool"], "arguments": e["arguments"]} for e in entries]


def stop_line(ended_by: str) -> dict:
    return {**STOP, "by": ended_by}


def is_stop(row: dict) -> bool:
    return row.get("stop") is True


class SessionError(StoreBenchError):
    code = ServerErrorCode.SESSION_ERROR


def _already_settled(session_id: str) -> SessionError:
    return SessionError(f"session {session_id} is already settled; labels go in before it ends")


def new_session_id() -> str:
    return secrets.token_hex(4)


def session_folder_name(task_id: str, seed: int, session_id: str) -> str:
    return f"{task_id}__s{seed}__{session_id}"


TEXT_LABELS = ("model", "harness", "context_policy", "ended_by", "env")
COUNT_LABELS = ("max_turns", "turns_taken")
LABEL_TEXT_MAX = 500  # characters of a text label, or of a text metric
SERVER_LABELS = ("env", "ended_by")  # what the server saw, written at settlement; never given (module docstring)
HUMAN_LABELS = ("participant", "study")  # a study's human shift written as a trial (studies.trials); never an MCP session's
MCP_ENV = "storebench-mcp"


def check_labels(labels: Any) -> dict:
    """Labels as the operator or the playing side gives them: an object with known keys only,
    none of the server's own (:data:`SERVER_LABELS`), each of its type (text; a whole count;
    ``metrics`` an object of numbers or short texts), every number finite, so that
    ``summary.json`` stays JSON."""
    if labels is None:
        return {}
    if not isinstance(labels, dict):
        raise SessionError("labels must be an object such as {\"model\": \"...\", \"harness\": \"...\"}")
    unknown = sorted(set(labels) - set(SUMMARY_LABELS))
    if unknown:
        known = [key for key in SUMMARY_LABELS if key not in HUMAN_LABELS]
        raise SessionError(f"unknown label(s) {', '.join(unknown)}; known: {', '.join(known)}")
    human = [key for key in HUMAN_LABELS if key in labels]
    if human:
        raise SessionError(f"label(s) {', '.join(human)} name a study's participant, whose shifts the console "
                           "writes as trials: an MCP session's player is a model or harness; leave "
                           f"{'it' if len(human) == 1 else 'them'} out")
    servers = [key for key in SERVER_LABELS if key in labels]
    if servers:
        raise SessionError(f"label(s) {', '.join(servers)} are the server's own: env is {MCP_ENV} and ended_by is "
                           "how the episode ended (horizon, suspended, or who stopped it: client, operator or server), written when it settles; leave "
                           f"{'it' if len(servers) == 1 else 'them'} out")
    for key, value in labels.items():
        if key in TEXT_LABELS and not (value is None or _short_text(value)):
            raise SessionError(f"label {key} must be a text of at most {LABEL_TEXT_MAX} characters")
        if key in COUNT_LABELS and not (value is None or (type(value) is int and value >= 0)):
            raise SessionError(f"label {key} must be a whole number, 0 or more")
        if key == "metrics" and not (value is None or _metrics(value)):
            raise SessionError("label metrics must be an object of finite numbers or short texts, such as "
                               "{\"prompt_tokens\": 1200, \"completion_tokens\": 340}")
    return dict(labels)


def _short_text(value: object) -> bool:
    return isinstance(value, str) and len(value) <= LABEL_TEXT_MAX


def _metrics(value: object) -> bool:
    return isinstance(value, dict) and len(value) <= 100 and all(
        isinstance(k, str) and len(k) <= 100 and (
            v is None or _short_text(v) or (type(v) in (int, float) and math.isfinite(v)))
        for k, v in value.items())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    _fsync_dir(path.parent)


@dataclass
class Session:
    """One live MCP episode; see the module docstring."""

    id: str
    episode: Episode
    out: Path | None  # where trial folders go (None: never written, e.g. a throwaway test hub)
    state: Path | None = None  # this session's state folder (None: not durable)
    labels: dict = field(default_factory=dict)
    calibration: dict | None = None
    calibration_hash: str | None = None
    started: float = field(default_factory=time.perf_counter)
    result: dict | None = None  # the settled score, once settled
    auto_settle: bool = True  # settle as soon as the horizon is reached (off: the owner calls end())
    fsync: bool = True  # fsync each operation's line (off: written only; survives a killed process, not a crash)
    stopped_by: str | None = None  # who ended it early, once a stop is logged (restored from the log)
    _logged: int = 0
    _stop_logged: bool = False  # a stop line was written: the log takes nothing after it
    _fd: int | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _record: SettledSession | None = None  # what it showed when it settled, as ended.json keeps it

    # --- durable log -------------------------------------------------------------------------

    @classmethod
    def open(cls, task: str, seed: int, *, out: Path | None, state_root: Path | None, labels: dict | None = None,
             calibration: dict | None = None, calibration_hash: str | None = None,
             token_digest: str | None = None, session_id: str | None = None, fsync: bool = True) -> Session:
        episode = arm(task, seed, record=True)
        session = cls(session_id or new_session_id(), episode, out, labels=check_labels(labels),
                      calibration=calibration, calibration_hash=calibration_hash, fsync=fsync)
        if state_root is not None:
            session.state = state_root / session.id
            session.state.mkdir(parents=True, exist_ok=False)
            _write_json(session.state / META, {"id": session.id, "task": episode.task.id, "seed": seed,
                                               "labels": session.labels, "token_sha256": token_digest,
                                               "task_file_hash": episode.task.file_hash})
            session._open_log()
        return session

    def _open_log(self) -> None:
        assert self.state is not None
        self._fd = os.open(self.state / CALLS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        _fsync_dir(self.state)

    def _append(self, rows: list[dict], *, sync: bool) -> None:
        """Write ``rows`` whole, or not at all: a write the disk refuses (full, failing) is
        taken back to where the log ended and raised as a :class:`SessionError`, so the log
        never holds a torn line before a later one, and the next call writes what this one
        could not.  Nothing is written after a stop line."""
        if self._fd is None or not rows or self._stop_logged:
            return
        data = "".join(json.dumps(row, separators=(",", ":"), sort_keys=True) + "\n" for row in rows).encode()
        size = os.fstat(self._fd).st_size
        try:
            written = 0
            while written < len(data):  # os.write may write part of it
                written += os.write(self._fd, data[written:])
            if sync and self.fsync:
                os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)
            raise SessionError(f"session {self.id}: its call log could not be written ({exc.strerror or exc}); the "
                               "call was made but is not yet kept, and will be written with the next call once the "
                               "disk takes it (a restart before then loses it): free the disk under --state") from exc
        self._stop_logged = any(is_stop(row) for row in rows)

    @property
    def settled(self) -> bool:
        return self.result is not None

    @property
    def folder(self) -> Path | None:
        if self.out is None:
            return None
        return self.out / session_folder_name(self.episode.task.id, self.episode.seed, self.id)

    def record(self) -> None:
        """After each call (under the episode's lock): log what the call did; settle at the horizon."""
        with self._lock:
            new = self.episode.action_log[self._logged:]
            self._append(_rows(new), sync=any(e.get("op") for e in new))
            self._logged += len(new)  # only once written: a failed write is tried again with the next call
            ended = self.ended_by_itself()
            if ended is not None and not self.settled and self.auto_settle:
                try:
                    self._settle(ended_by=ended)
                except StoreBenchError as exc:  # the call stands (module docstring)
                    logger.error("session %s reached its end (%s) in a call that was answered%s, but it is not "
                                 "settled: %s%s", self.id, ended, "" if self.state is None else " and logged",
                                 exc.message, "" if self.state is None else "; a restart of the server on its "
                                 "--state folder settles it too")

    @property
    def over(self) -> bool:
        return self.episode.over

    def set_labels(self, labels: dict) -> None:
        """The operator's labels, kept in ``meta.json`` (fsynced) under the session's lock, which
        a call's :meth:`record` and a settlement also hold: labels land before the settlement
        (and in its summary) or are refused after it.  Blocks for a disk write, and for a
        settlement in progress: call it off an event loop."""
        with self._lock:
            if self.settled:
                raise _already_settled(self.id)
            self.labels.update(check_labels(labels))
            if self.state is not None:
                meta = json.loads((self.state / META).read_text())
                meta["labels"] = self.labels
                _write_json(self.state / META, meta)

    def add_client_labels(self, labels: Any) -> list[str]:
        """Labels the playing side reports about itself (stdio's ``--labels-file``): checked as
        any, added where the operator set nothing, never replacing an operator's label (see
        the module docstring).  Returns the keys left out because the operator had set them."""
        labels = check_labels(labels)
        with self._lock:
            kept = sorted(key for key in labels if self.labels.get(key) is not None)
            self.set_labels({key: value for key, value in labels.items() if key not in kept})
        return kept

    def ended_by_itself(self) -> str | None:
        """How the episode ended without being stopped, as its trial summary's ``termination``
        says it: ``suspended`` (cash stayed below zero) or ``horizon``; None while it runs or
        once it was stopped."""
        if not self.episode.over:
            return None
        if self.episode.bankrupt:
            return "suspended"
        return "horizon" if self.episode.window >= self.episode.n_windows else None

    def end(self, labels: dict | None = None, *, ended_by: str = ENDED_BY_CLIENT) -> dict:
        """The client, the operator or the server ends the session: freeze the store, settle,
        return the score.

        ``labels`` are the operator's; ``ended_by`` is recorded as the server's own label (who
        ended it, or why the in-process agent runner stopped: ``turn cap``, ``no tool
        calls``...).  An episode that already ended by itself (in a session that does not
        settle on its own, :attr:`auto_settle`) keeps that reason, ``horizon`` or
        ``suspended``, and one stopped before a restart keeps who stopped it."""
        with self._lock:
            if labels:
                self.set_labels(labels)
            if self.settled:
                return self.result  # type: ignore[return-value]
            # Calls a refused write left out (the call that reached the horizon, perhaps) go in
            # first, then the stop when the store is stopped here: the log stays the store.
            running = not self.episode.over
            new = self.episode.action_log[self._logged:]
            self._append([*_rows(new), *([stop_line(ended_by)] if running else [])], sync=True)
            self._logged += len(new)
            if running:
                self.episode.stop()
                self.stopped_by = ended_by
            return self._settle(ended_by=self.ended_by_itself() or self.stopped_by or ended_by)

    def _settle(self, *, ended_by: str) -> dict:
        labels = {"env": MCP_ENV, "ended_by": ended_by,
                  **{key: value for key, value in self.labels.items() if key not in SERVER_LABELS}}
        folder = self.folder
        if folder is None:  # no out folder: nothing is written
            return self._mark_settled({"out": None})
        if folder.exists() and self.state is not None:
            # Written by a settlement killed (or refused) before its settled.json: nobody was answered with it,
            # and settling is deterministic, so it is written again (its wall time aside).
            logger.warning("session %s: its trial folder %s was written by a settlement that did not mark the "
                           "session settled (killed before it, or its record refused); settling it again", self.id,
                           folder)
            try:
                shutil.rmtree(folder)
            except OSError as exc:
                raise SessionError(f"session {self.id} could not be settled: its earlier trial folder {folder} could "
                                   f"not be removed ({exc.strerror or exc}); remove it, then end the session "
                                   "again") from exc
        result = settle(self.episode, folder, policy="mcp session", calibration=self.calibration,
                        calibration_hash=self.calibration_hash, wall_seconds=time.perf_counter() - self.started,
                        labels=labels)
        return self._mark_settled(result)

    def _mark_settled(self, result: dict) -> dict:
        """Settled with ``result``: its record kept (in memory, and as ``ended.json`` then
        ``settled.json``) and its log closed.  A record the disk refuses leaves it unsettled,
        in memory as on disk, so that ending it again grades and writes it again."""
        self.result = result
        record = SettledSession(self.id, self.as_json(), result)
        if self.state is not None:
            try:
                _write_json(self.state / ENDED, record.view)  # first: a folder with settled.json has ended.json too
                _write_json(self.state / SETTLED, result)
            except OSError as exc:
                self.result = None
                raise SessionError(f"session {self.id} was graded but could not be marked settled "
                                   f"({exc.strerror or exc}): free the disk under --state, then end it again (it is "
                                   "graded again the same way)") from exc
        self._record = record
        self.close_log()
        return result

    def close_log(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def as_json(self) -> dict:
        ep = self.episode
        return {"id": self.id, "task": ep.task.id, "seed": ep.seed, "window": min(ep.window + 1, ep.n_windows),
                "windows_total": ep.n_windows, "calls": len(ep.action_log), "over": ep.over,
                "settled": self.settled, "labels": self.labels,
                "folder": None if self.result is None else self.result.get("out"),
                "reward_composite": None if self.result is None else self.result.get("reward_composite")}

    def settled_record(self) -> SettledSession:
        """What a server keeps of this session once it is settled (see :class:`SettledSession`):
        the record its settlement kept, so memory and ``ended.json`` agree even if a call
        refused after the settlement has grown the action log since."""
        if self._record is None:
            raise SessionError(f"session {self.id} is not settled yet; end it first")
        return self._record


@dataclass(frozen=True)
class SettledSession:
    """A settled session as a server keeps it, without its episode: one settled before this
    server started (read from its folder) or while it ran (swapped in when it settled).  The operator API lists it (:meth:`as_json`, as the session showed when it settled),
    refuses labels for it as for any settled session, and answers an end or a settle with its
    score; its token is refused saying its episode has ended (the hub keeps that digest)."""

    id: str
    view: dict  # Session.as_json() as it settled (ended.json)
    result: dict  # its score (settled.json)

    @property
    def settled(self) -> bool:
        return True

    @property
    def over(self) -> bool:
        return True

    def as_json(self) -> dict:
        return dict(self.view)

    def set_labels(self, labels: dict) -> None:
        raise _already_settled(self.id)

    def end(self, labels: dict | None = None) -> dict:
        """Its score, as :meth:`Session.end` answers for a settled session (labels refused)."""
        if labels:
            self.set_labels(labels)
        return self.result


def write_ended(session: Session) -> None:
    """Keep ``session``'s :file:`ended.json` (its view once settled) in its state folder."""
    assert session.state is not None
    _write_json(session.state / ENDED, session.settled_record().view)


def read_meta(state: Path) -> dict:
    """A session folder's ``meta.json``: ``OSError`` if it cannot be read, ``ValueError`` if it
    is not JSON, :class:`SessionError` if it is not a session's."""
    meta = json.loads((state / META).read_text())
    if not isinstance(meta, dict) or not all(key in meta for key in ("id", "task", "seed")):
        raise SessionError(f"{state / META} is not a session's meta.json (an object with id, task and seed); move "
                           f"the folder out of {state.parent} once it is no longer wanted")
    return meta


def read_settled(state: Path, meta: dict) -> SettledSession | None:
    """The settled session kept in ``state`` (``meta`` is its :func:`read_meta`), read without
    replaying its log; None while it is live, or when a server from before ``ended.json``
    settled it (replay it with :func:`restore_session`, then :func:`write_ended`)."""
    if not (state / SETTLED).exists() or not (state / ENDED).exists():
        return None
    view = json.loads((state / ENDED).read_text())
    result = json.loads((state / SETTLED).read_text())
    if not isinstance(view, dict) or not isinstance(result, dict):
        raise SessionError(f"{state}: {ENDED} and {SETTLED} must each hold a JSON object; move the folder out of "
                           f"{state.parent} once it is no longer wanted")
    return SettledSession(str(meta["id"]), view, result)


def restore_session(state: Path, *, out: Path | None, calibration: dict | None = None,
                    calibration_hash: str | None = None, fsync: bool = True,
                    meta: dict | None = None) -> tuple[Session, str | None]:
    """Rebuild a session from its state folder by replaying its calls; also its token digest.
    ``meta``: its ``meta.json`` when the caller has read it already (:func:`read_meta`).

    A torn last line (the process died inside ``os.write``) is dropped: its call never
    answered, so the client never saw it.
    """
    if meta is None:
        meta = read_meta(state)
    episode = arm(meta["task"], int(meta["seed"]), record=True)
    if episode.task.file_hash != meta.get("task_file_hash"):
        raise SessionError(f"{state}: the task file of {meta['task']} changed since the session opened; "
                           "it cannot be resumed exactly")
    raw = (state / CALLS).read_bytes() if (state / CALLS).exists() else b""
    lines = raw.split(b"\n")
    complete, torn = lines[:-1], lines[-1]
    if torn:
        with (state / CALLS).open("r+b") as fh:
            fh.truncate(len(raw) - len(torn))
    rows = [json.loads(line) for line in complete if line.strip()]
    stop = next((i for i, row in enumerate(rows) if is_stop(row)), None)
    if stop is not None:  # the store was stopped there: a line after it (a server before this rule) is no call
        rows = rows[:stop + 1]
    stopped = stop is not None
    play_actions(episode, [r for r in rows if not is_stop(r)], stop=stopped)
    try:
        stored = meta.get("labels")
        if isinstance(stored, dict) and any(key in stored for key in SERVER_LABELS):
            # kept by a server from before the server's labels were its own: set again at settlement
            logger.warning("%s: label(s) %s left out on resume: the server sets them", state,
                           ", ".join(key for key in SERVER_LABELS if key in stored))
            stored = {key: value for key, value in stored.items() if key not in SERVER_LABELS}
        labels = check_labels(stored)
    except SessionError as exc:  # kept by a server from before labels were checked
        logger.warning("%s: labels left out on resume: %s", state, exc.message)
        labels = {}
    session = Session(meta["id"], episode, out, state=state, labels=labels,
                      calibration=calibration, calibration_hash=calibration_hash, fsync=fsync)
    session._logged = len(episode.action_log)
    session._stop_logged = stopped
    if stopped:  # a log from before stops said who reads as the client's, as it was then settled
        session.stopped_by = str(rows[-1].get("by") or ENDED_BY_CLIENT)
    if (state / SETTLED).exists():  # settled by a server from before ended.json: its view is the replay's
        session.result = json.loads((state / SETTLED).read_text())
        session._record = SettledSession(session.id, session.as_json(), session.result)
    else:
        session._open_log()
    return session, meta.get("token_sha256")
