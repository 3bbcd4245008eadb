"""Helpers shared by the console's test modules (fixtures live in ``conftest.py``)."""
import re
import uuid

from django.contrib.auth import get_user_model
from django.utils import timezone

from environment.tasks import get_task
from shifts.briefing import BRIEFING_VERSION
from shifts.models import BriefingAcknowledgement

# Operations a window on the cell of the ``shift`` fixture (conftest.py: counter-punch, seed 7).
OPS = get_task("counter-punch").ops_per_window


# A page's CSRF token values (a form's hidden field, the body's htmx header): random
# letters and digits that may spell anything ("SEeD" once), taken out before a page is
# searched for words it must not show.
CSRF_VALUE = re.compile(r'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[A-Za-z0-9]+')


def without_tokens(html: str) -> str:
    return CSRF_VALUE.sub(r"\1", html)


def briefed_user(name: str, *, password: bool = True):
    """A participant who has acknowledged the current briefing (password ``pw-<name>-123``)."""
    User = get_user_model()
    user = User.objects.create_user(name, password=f"pw-{name}-123") if password else User.objects.create_user(name)
    BriefingAcknowledgement.objects.create(user=user, version=BRIEFING_VERSION, acknowledged_at=timezone.now())
    return user


HX = {"HTTP_HX_REQUEST": "true"}


def ops_left(html: str) -> int:
    """Operations left, as the store header on a page shows them."""
    match = re.search(r'id="store-header"[^>]*data-ops-left="(\d+)"', html, re.S)
    assert match, "no store header in the page"
    return int(match.group(1))


def call(client, shift, tool, call_id=None, htmx=True, **args):
    """Submit the tool's form on the shift's call view, as the workspace does."""
    data = {"tool": tool, "call_id": call_id or uuid.uuid4().hex}
    data.update({f"arg_{k}": v for k, v in args.items()})
    return client.post(f"/shifts/{shift.pk}/call/", data, **(HX if htmx else {}))
