"""The codes the MCP server's own refusals carry, in one place.

The core's refusals carry :class:`environment.errors.ErrorCode`; the server adds its own
for what only a server refuses (a session it does not have, an address it cannot listen
on, an operator request it will not read).  Both are ``StrEnum``: a code is its string,
in JSON as in a comparison.
"""
from __future__ import annotations

from enum import StrEnum


class ServerErrorCode(StrEnum):
    SESSION_ERROR = "session_error"
    UNKNOWN_SESSION = "unknown_session"
    CANNOT_LISTEN = "cannot_listen"
    BODY_TOO_LARGE = "body_too_large"
    UNAUTHORISED = "unauthorised"  # the operator API without the operator's token
    INVALID_REQUEST = "invalid_request"  # the operator API's answer to a refusal that carries no code
