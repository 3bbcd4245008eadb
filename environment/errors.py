"""The one error tree of the core.

Every refusal the core makes is a :class:`StoreBenchError` with a stable ``code``.
Front ends translate these and only these: the MCP server into tool errors, the
console into form errors, the CLI into a message and a non-zero exit.  Anything
else that escapes the core is a bug and is left to surface as one.
"""

from __future__ import annotations

from typing import Any


class StoreBenchError(Exception):
    code = "storebench_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            out["details"] = self.details
        return out
