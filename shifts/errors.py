"""The shift domain's refusals: one small tree, each with a message naming what to do."""
from __future__ import annotations


class ShiftError(Exception):
    """A shift action was refused; the message says why and what to do next."""


class ShiftNotActive(ShiftError):
    """The shift cannot take a tool call (not started, or ended)."""


class ShiftPaused(ShiftNotActive):
    """The shift is paused: tool calls wait until it is resumed."""


class StaleBriefing(ShiftError):
    """An acknowledgement of a briefing version that is not the current one."""


class PauseRefused(ShiftError):
    """A pause was asked for without a usable reason (none, or too long)."""


class StartRefused(ShiftError):
    """A shift may not start yet; the message says what to do first and ``next_url``,
    when set, is the page where that is done (a study's consent page, say)."""

    def __init__(self, message: str, next_url: str = "") -> None:
        super().__init__(message)
        self.next_url = next_url


class TaskUnavailable(ShiftError):
    """The shift's task cannot be loaded on this server (removed, renamed or broken since the
    shift was assigned), so its store cannot be opened: the message says so without naming the
    task (a participant never sees it), ``reason`` is the core's own account."""

    def __init__(self, reason: str) -> None:
        super().__init__("This shift's store cannot be opened on this server: its task is not available here any "
                         "more. What the shift recorded is kept; ask your study's coordinator.")
        self.reason = reason
