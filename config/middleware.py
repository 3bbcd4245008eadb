"""Site-wide answers to errors a view cannot do anything about.

:class:`CalibrationUnavailable`: grading needs the calibration file; when that file
cannot be used (unreadable, truncated, or not matching its ``.sha256`` side file),
``environment.calibration.load_calibration`` raises ``CalibrationError``. Any request
that reaches it (ending a shift, for one) is answered with a 503 page that says so,
instead of a server error; nothing was changed, because grading happens before the
shift's state is written. The full message, with the file's path, goes to the log.
"""
from __future__ import annotations

import logging
from pathlib import PurePath

from django.http import HttpResponse
from django.utils.html import escape

from environment.calibration import CalibrationError

logger = logging.getLogger(__name__)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Grading unavailable · StoreBench</title></head>
<body><h1>Grading is unavailable right now</h1>
<p>The calibration file the store grades with ({name}) cannot be used, so nothing was
changed: your shift is exactly as it was. Try again later, and tell your coordinator.</p>
<p><a href="/">StoreBench home</a></p></body></html>
"""


class CalibrationUnavailable:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, CalibrationError):
            return None
        message = exception.problem  # without the command line's advice, which means nothing to a site's operator
        logger.error("calibration unavailable for %s %s: %s; restore the file from the release (with its .sha256 "
                     "side file) and the next request grades again", request.method, request.path, message)
        path = exception.details.get("path")
        name = PurePath(path).name if path else "calibration"
        return HttpResponse(PAGE.format(name=escape(name)), status=503)
