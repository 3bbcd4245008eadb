"""System checks of the studies app's settings (``manage.py check``, run at every start).

A notice mailed to a participant links to their shift: without ``STOREBENCH_SITE_URL`` the
link is a bare path (``/shifts/12/``) that no mail client can open.  Mail kept on the server
(the console and in-memory backends of a demo or a test) is not read away from the site, so
only a backend that sends mail out is warned about.
"""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Warning as CheckWarning
from django.core.checks import register

KEPT_ON_THE_SERVER = ("django.core.mail.backends.console.EmailBackend", "django.core.mail.backends.locmem.EmailBackend",
                      "django.core.mail.backends.dummy.EmailBackend", "django.core.mail.backends.filebased.EmailBackend")


@register()
def notice_links(app_configs: Any = None, **kwargs: Any) -> list[CheckWarning]:
    if settings.SITE_URL or settings.EMAIL_BACKEND in KEPT_ON_THE_SERVER:
        return []
    return [CheckWarning(
        "STOREBENCH_SITE_URL is not set, so the notices mailed to participants link to bare paths such as "
        "/shifts/12/, which a mail client cannot open",
        hint="set STOREBENCH_SITE_URL to the site's address as participants open it, e.g. https://bench.example.org",
        id="studies.W001")]
