"""What the console shows of a shift: the workspace, the call reply, history, home.

Presentation only: every change to a shift is an action of :mod:`shifts` (this module
calls them and shapes what they return for the templates).  The store header is the
typed one stored with each call (``ShiftCall.typed_header``); a result's text is split
at that known header line, never searched for something header-shaped.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from typing import Any

from environment.brief import brief
from environment.tools import REGISTRY
from environment.tools.format import StoreHeader
from shifts.affiliation import affiliation_of
from shifts.briefing import acknowledgement, practice_completed, refusal_to_start
from shifts.calls import make_call
from shifts.clock import TimeAccount, time_account
from shifts.ending import PARTICIPANT_REASON, end_if_due, end_shift, is_due
from shifts.errors import ShiftError, StartRefused
from shifts.installed import task_of
from shifts.lifecycle import OPENING_CALL_ID, begin_shift
from shifts.models import Shift, ShiftCall, ShiftPause
from shifts.results import read_as_of, result_of, window_minutes

from .cached import CachedView, cached_views
from .present import done_marks, left_open


@dataclass(frozen=True)
class Inbox:
    read_at: str  # simulated time the list was read
    window: int
    status_filter: str
    rows: list  # sorted by escalation deadline, soonest first
    total: int
    refunded: dict  # return id -> seq of the refund_return made after the read that closed the return
    declined: dict  # return id -> (seq, amount still refundable) of an open return's refunds since the read


def _inbox(calls: list, minutes_per_window: int) -> Inbox | None:
    """The returns inbox: the last successful ``list_returns``, with the refunds made since."""
    for index in range(len(calls) - 1, -1, -1):
        call = calls[index]
        if call.tool != "list_returns" or call.is_error:
            continue
        parsed = result_of(call)
        read = read_as_of(call, minutes_per_window)
        if read is None or not isinstance(parsed.data, dict):
            continue
        rows = sorted(parsed.data.get("rows", []),
                      key=lambda r: (r.get("escalates_at") or "9999", str(r.get("return_id"))))
        refunds = _with_texts([c for c in calls[index + 1:] if c.tool == "refund_return" and not c.is_error])
        refunded, declined = _refunds_since(rows, refunds)
        return Inbox(read_at=read[0], window=read[1],
                     status_filter=str(call.arguments.get("status", "open")), rows=rows,
                     total=int(parsed.data.get("total", 0)), refunded=refunded, declined=declined)
    return None


def _refunds_since(rows: list, refunds: list) -> tuple[dict, dict]:
    """The refunds made since an inbox's read: those that closed their return (the
    customer accepted), and, for a return a smaller refund left open, the last such
    refund and what is still refundable (as read, less what was paid since)."""
    refunded: dict = {}
    declined: dict = {}
    paid: dict[str, Decimal] = {}
    for c in refunds:
        return_id = str(c.arguments.get("return_id"))
        data = result_of(c).data
        if left_open(c, data):
            try:
                paid[return_id] = paid.get(return_id, Decimal(0)) + Decimal(str(data.get("refunded_now")))
            except ArithmeticError:  # what it paid cannot be read: the form offers the amount as read
                paid.setdefault(return_id, Decimal(0))
            declined[return_id] = c.seq
        else:
            refunded[return_id] = c.seq
    still = {}
    for r in rows:
        return_id = str(r.get("return_id"))
        if return_id in declined and return_id not in refunded:
            try:
                left = max(Decimal(str(r.get("refundable"))) - paid[return_id], Decimal(0))
            except ArithmeticError:
                continue
            still[return_id] = (declined[return_id], f"{left:.2f}")
    return refunded, still


def _with_texts(calls: list) -> list:
    """``calls`` with their result text read, in one query for the stored ones whose text a
    page deferred (:func:`_stored_calls`)."""
    deferred = [c for c in calls if isinstance(c, ShiftCall) and "result_text" in c.get_deferred_fields()]
    if deferred:
        texts = dict(ShiftCall.objects.filter(pk__in=[c.pk for c in deferred]).values_list("pk", "result_text"))
        for c in deferred:
            c.result_text = texts[c.pk]
    return calls


def done_elsewhere(calls: list) -> dict:
    """:func:`console.present.done_marks` of ``calls`` (the panels' answer), the texts of their
    refunds read in one query (whether each closed its return)."""
    _with_texts([c for c in calls if c.tool == "refund_return" and not c.is_error])
    return done_marks(calls)


def _last_header(calls: list) -> StoreHeader | None:
    return next((c.typed_header for c in reversed(calls) if c.typed_header is not None), None)


def _stored_calls(shift: Shift) -> list[ShiftCall]:
    """The shift's calls in order, without their result text (read on access, for the
    one or two calls a page shows), so a long shift's page stays cheap."""
    return list(shift.calls.order_by("seq").defer("result_text"))


@dataclass(frozen=True)
class Overview:
    shift: Shift
    calls: list[ShiftCall]
    header: StoreHeader | None
    shown: ShiftCall | None
    inbox: Inbox | None
    cached: list[CachedView]
    clock: TimeAccount
    pause: ShiftPause | None  # the pause in progress
    due: bool  # open, but past its deadline: the page offers the end, which a POST makes


def shift_brief(shift: Shift) -> str:
    """The merchant's brief for the shift's task: the very text the shift's MCP server
    gives an agent as its instructions and its prompt ``brief``
    (:func:`environment.brief.brief` of the task), so a person reads what an agent reads."""
    return brief(task_of(shift.task_id))


def coach_note(shift: Shift) -> str:
    """What the coordinator wrote for this shift (a coached retry's note), while it is open; ""
    for none, or once it has ended."""
    if shift.status == Shift.Status.ENDED:
        return ""
    found = affiliation_of(shift)
    return found.coach_note if found is not None else ""


def brief_open(shift: Shift, calls: list[ShiftCall]) -> bool:
    """Whether the brief is shown open: until the participant's first call (the
    store's opening ``store_status`` read is not theirs)."""
    return shift.status != Shift.Status.ENDED and all(c.call_id == OPENING_CALL_ID for c in calls)


def shift_overview(shift: Shift, show_seq: int | None = None) -> Overview:
    """The workspace's content, read from stored calls only.  A page view writes nothing: a
    shift past its deadline is shown as due (:attr:`Overview.due`), and ends when the page
    posts its end (:func:`end_when_due`), when a call reaches it, or at the sweep."""
    calls = _stored_calls(shift)
    shown = None
    if show_seq is not None:
        shown = next((c for c in calls if c.seq == show_seq), None)
    elif calls:
        shown = calls[-1]
    pause = shift.pauses.filter(ended_at__isnull=True).first() if shift.status == Shift.Status.PAUSED else None
    minutes = window_minutes(shift)
    return Overview(shift=shift, calls=calls, header=_last_header(calls), shown=shown, inbox=_inbox(calls, minutes),
                    cached=cached_views(calls, minutes), clock=time_account(shift), pause=pause,
                    due=is_due(shift))


class CallDone:
    """What the workspace updates after one call: not the whole history (it only grows).
    The inbox and the cached views are worked out when asked for: a reply renders them
    only when the call can have changed them."""

    def __init__(self, shift: Shift, call: ShiftCall, fresh: bool, calls: list) -> None:
        self.shift = shift
        self.call = call
        self.fresh = fresh  # False when the call_id was already stored (a double submit)
        self.calls = calls  # the shift's calls, as records or stored calls, in order
        self.header: StoreHeader | None = _last_header(calls)

    @cached_property
    def inbox(self) -> Inbox | None:
        return _inbox(self.calls, window_minutes(self.shift))

    @cached_property
    def cached(self) -> list[CachedView]:
        return cached_views(self.calls, window_minutes(self.shift), self.shift.pk)


def perform_call(shift: Shift, tool: str, arguments: dict, call_id: str, owner: int | None = None) -> CallDone:
    """The call (:func:`shifts.calls.make_call`), then the parts of the workspace that
    change with it, from the calls the live cache holds when the call is new (they are
    the stored ones: the call's transaction checked the count)."""
    called = make_call(shift, tool, arguments, call_id, owner)
    calls = called.records if called.records is not None else _stored_calls(shift)
    return CallDone(shift, called.call, called.fresh, calls)


def start_assigned(shift: Shift) -> Overview:
    """Start an assigned shift (no-op if already started) and return its workspace;
    raises :class:`shifts.errors.StartRefused` with the reason when it may not start yet."""
    return shift_overview(begin_shift(shift))


def end_when_due(shift: Shift) -> Overview:
    """End the shift if it is past its deadline (settled as played, ``deadline``), else nothing."""
    end_if_due(shift)
    return shift_overview(shift)


def end_by_participant(shift: Shift) -> Overview:
    end_if_due(shift)
    if shift.is_open:
        end_shift(shift, PARTICIPANT_REASON)
    return shift_overview(shift)


@dataclass(frozen=True)
class LiveState:
    """What open pages refresh live: the last store header and the wall clock."""

    header: StoreHeader | None
    clock: TimeAccount


def live_state(shift: Shift, upto: int | None = None) -> LiveState:
    """The shift's clock and the header of its newest call that has one (of those up to
    call ``upto``: a call stored after the caller read its newest seq must not lend its
    header to that seq)."""
    calls = shift.calls if upto is None else shift.calls.filter(seq__lte=upto)
    last = calls.exclude(store_header=None).order_by("-seq").values_list("store_header", flat=True).first()
    return LiveState(header=StoreHeader.from_dict(last) if last else None, clock=time_account(shift))


@dataclass(frozen=True)
class Home:
    """A participant's home page: their shifts and how far through the gates they are."""

    shifts: list[Shift]
    acknowledgement: Any  # BriefingAcknowledgement of the current briefing, or None
    practice_done: bool
    locks: dict[int, StartRefused]  # assigned shift id -> why it may not start yet, and where to go
    due: frozenset[int]  # open shifts past their deadline (shown so; their page ends them)


def participant_home(user) -> Home:
    """Read only: a shift past its deadline is listed as due, not ended here."""
    shifts = list(Shift.objects.filter(participant=user))
    locks = {}
    for shift in shifts:
        if shift.status == Shift.Status.ASSIGNED:
            refusal = refusal_to_start(user, shift)
            if refusal is not None:
                locks[shift.pk] = refusal
    return Home(shifts=shifts, acknowledgement=acknowledgement(user), practice_done=practice_completed(user),
                locks=locks, due=frozenset(s.pk for s in shifts if is_due(s)))


@dataclass(frozen=True)
class History:
    calls: list[ShiftCall]
    text: str
    tool: str
    total: int  # calls in the shift


HISTORY_QUERY_MAX = 200


class HistorySearchRefused(ShiftError):
    """A history search the page cannot run (text too long, a tool that does not exist)."""


def search_history(shift: Shift, text: str = "", tool: str = "") -> History:
    """The shift's calls, newest first, whose tool, arguments or result contain
    ``text`` (case-insensitive), optionally of one ``tool``; free (nothing is sent)."""
    text, tool = (text or "").strip(), (tool or "").strip()
    if len(text) > HISTORY_QUERY_MAX:
        raise HistorySearchRefused(f"The search text is {len(text)} characters long; at most {HISTORY_QUERY_MAX} are allowed.")
    if tool and tool not in REGISTRY:
        raise HistorySearchRefused(f"There is no tool {tool!r}: pick one of the {len(REGISTRY)} tools or leave the tool blank.")
    calls = list(shift.calls.order_by("-seq"))
    total = len(calls)
    if tool:
        calls = [c for c in calls if c.tool == tool]
    if text:
        needle = text.lower()
        calls = [c for c in calls if needle in c.tool.lower()
                 or needle in json.dumps(c.arguments, ensure_ascii=False).lower()
                 or needle in c.result_text.lower()]
    return History(calls=calls, text=text, tool=tool, total=total)
