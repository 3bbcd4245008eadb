"""The log line format: one line per record, and no traceback for a refused request.

Django logs a 4xx that a view raised (``PermissionDenied``, ``Http404``, a
``SuspiciousOperation``) as a WARNING or ERROR carrying the exception's traceback. A
refusal is the site working as meant, so its record is written as one line: Django's
message with the exception's own words after it ("Forbidden (Permission denied):
/explorer/ (The trial explorer is for researchers only.)"). A 500 keeps its traceback.
Records without a ``status_code`` (everything but Django's request and security
loggers) are written as they are.
"""
from __future__ import annotations

import copy
import logging


class LineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500 and (record.exc_info or record.exc_text):
            # A copy: the record itself goes on to any other handler unchanged.
            exc = record.exc_info[1] if record.exc_info else None
            record = copy.copy(record)
            reason = str(exc).strip() if exc is not None else ""
            message = record.getMessage()
            if reason and reason not in message:
                record.msg, record.args = f"{message} ({reason})", None
            record.exc_info = None
            record.exc_text = None
        return super().format(record)
