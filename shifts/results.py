"""A stored call's result, typed: the store header the core gave, and the JSON body.

The result text of a call that reached the core is the header line the core rendered
from the typed header stored with the call, then the JSON body; it is split at that
known line, never searched for something header-shaped (a refusal may echo what the
caller typed).  A call refused before the core (bad arguments at the MCP layer) has
no header: its whole text is the message.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from environment.tools.format import StoreHeader

from .installed import task_of


@dataclass(frozen=True)
class CallResult:
    header: StoreHeader | None
    message: str  # a refusal made before the core (the whole text), or ""
    data: Any  # the JSON body, or None
    pretty: str  # the body formatted for reading


def result_of(call) -> CallResult:
    """``call`` is a ``ShiftCall`` (anything with ``typed_header`` and ``result_text``).

    Worked out once per call object (a page asks for it more than once: the header
    tags, the table, the JSON): kept on the object beside the text it was parsed from,
    so a changed text is parsed afresh."""
    text = call.result_text or ""
    kept = getattr(call, "_parsed_result", None)
    if kept is not None and kept[0] is text:
        return kept[1]
    parsed = _parse(call, text)
    try:
        call._parsed_result = (text, parsed)
    except AttributeError:  # an object that takes no new attributes (a named tuple, a slotted class)
        pass
    return parsed


def _parse(call, text: str) -> CallResult:
    header = call.typed_header
    prefix = header.line + "\n" if header is not None else None
    if prefix is None or not text.startswith(prefix):
        return CallResult(header, text, None, "")
    body = text[len(prefix):].strip()
    try:
        data, pretty = _read(body) if body else (None, "")
    except ValueError:
        data = None
    return CallResult(header, "", data, pretty if data is not None else body)


def _floats_written_alike(data: Any) -> bool:
    """Whether orjson writes every float in ``data`` as ``json`` does: both write a float
    by its shortest round-trip digits, and differ only in the exponent form (``1e16``
    against ``1e+16``, ``1e-05`` against ``1e-5``), which ``repr`` uses outside
    [1e-4, 1e16); orjson also writes infinities as ``null``."""
    stack = [data]
    while stack:
        item = stack.pop()
        if type(item) is float:
            if item != 0.0 and not 1e-4 <= abs(item) < 1e16:  # an infinity fails this too
                return False
        elif type(item) is dict:
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return True


def _read(body: str) -> tuple[Any, str]:
    """``json.loads(body)`` and that as a person reads it, ``json.dumps(data, indent=2,
    ensure_ascii=False)``: both by orjson where it gives the same objects and text, which
    is everywhere but floats written in exponent form (orjson writes ``1e16`` where
    ``json`` writes ``1e+16``) or infinite, integers past 64 bits (orjson reads them as
    floats) and what orjson refuses (NaN, lone surrogates): those go through ``json``.  Raises ``ValueError`` for a body that is not JSON."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = body  # a str: read again below
    if type(data) is not str and _floats_written_alike(data):
        try:
            return data, orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
        except orjson.JSONEncodeError:
            pass
    data = json.loads(body)
    return data, json.dumps(data, indent=2, ensure_ascii=False)


def window_minutes(shift: Any) -> int:
    """The length of one of ``shift``'s windows, in minutes of store time; raises
    :class:`~shifts.errors.TaskUnavailable` when the shift's task is not installed."""
    return task_of(shift.task_id).window_hours * 60


def read_as_of(call: Any, minutes_per_window: int) -> tuple[str, int] | None:
    """The store time and window ``call``'s result describes (None without a header): the
    window it was made in.  A call that spent the window's last operation is answered with
    the next window's header, but what it read is as of the window it was made in."""
    header = call.typed_header
    if header is None:
        return None
    made_in = call.window
    if made_in is None or made_in >= header.window:
        return header.time, header.window
    return header.time_of_window(made_in, minutes_per_window), made_in
