"""What a participant may see: only their own shifts, and nothing that identifies the cell."""
import re

import pytest
from console_helpers import CSRF_VALUE, briefed_user, call, without_tokens
from django.urls import get_resolver, reverse

from environment.tasks import get_task
from environment.tasks.model import EventKind
from shifts import calls, lifecycle

pytestmark = pytest.mark.usefixtures("fast_password_hashing", "fresh_console_cache")

HX = {"HTTP_HX_REQUEST": "true"}
TASK, SEED = "counter-punch", 7


def make_user(name):
    return briefed_user(name)


@pytest.fixture
def owner(db):
    return make_user("jane")


@pytest.fixture
def shift(owner):
    shift = lifecycle.start_shift(owner, TASK, SEED, practice=True)
    calls.call_tool(shift, "list_returns", {}, "iso-returns-01")
    calls.call_tool(shift, "list_orders", {"page_size": 3}, "iso-orders-001")
    return shift


def shift_url_names() -> set[str]:
    names = set()
    for pattern in get_resolver("console.urls").url_patterns:
        if "<int:pk>" in str(pattern.pattern):
            names.add(pattern.name)
    return names


# Every URL that takes a shift: (name, method, extra args, data).
SHIFT_REQUESTS = [
    ("shift", "get", [], None),
    ("shift_start", "post", [], {}),
    ("shift_call", "post", [], {"tool": "list_orders", "call_id": "someone-else-0001"}),
    ("shift_call_detail", "get", [2], None),
    ("shift_call_status", "get", ["iso-orders-001"], None),
    ("shift_history", "get", [], None),
    ("shift_panels", "get", [], None),
    ("shift_bar", "get", [], None),
    ("shift_pause", "post", [], {"reason": "not mine"}),
    ("shift_resume", "post", [], {}),
    ("shift_end", "post", [], {}),
]


def test_the_list_covers_every_shift_url():
    assert {name for name, *_ in SHIFT_REQUESTS} == shift_url_names()


@pytest.mark.parametrize("name, method, extra, data", SHIFT_REQUESTS, ids=[r[0] for r in SHIFT_REQUESTS])
def test_another_participant_gets_404(client, shift, name, method, extra, data):
    client.force_login(make_user("kurt"))
    url = reverse(f"console:{name}", args=[shift.pk, *extra])
    for headers in ({}, HX):
        response = getattr(client, method)(url, data, **headers) if data is not None else client.get(url, **headers)
        assert response.status_code == 404, (url, headers)
    shift.refresh_from_db()
    assert shift.status == "active" and shift.calls.count() == 3 and not shift.pauses.exists()


def leak_patterns():
    task = get_task(TASK)
    words = [TASK, task.title, "seed", *[kind.value for kind in EventKind], *[kind.value.replace("_", " ") for kind in EventKind]]
    return [re.compile(re.escape(w), re.I) for w in words] + [re.compile(rf"\bseed\W{{0,20}}{SEED}\b", re.I)]


def participant_pages(client, shift) -> dict[str, str]:
    pages = {}

    def keep(label, response):
        assert response.status_code in (200, 400), (label, response.status_code)
        pages[label] = response.content.decode()

    keep("home", client.get("/"))
    keep("briefing", client.get("/briefing/"))
    keep("workspace", client.get(f"/shifts/{shift.pk}/"))
    keep("workspace call", client.get(f"/shifts/{shift.pk}/?call=2"))
    keep("call response", call(client, shift, "list_returns"))
    keep("refusal", call(client, shift, "get_order", order_id="ORD-NOPE"))
    keep("call detail", client.get(f"/shifts/{shift.pk}/calls/2/", **HX))
    keep("history", client.get(f"/shifts/{shift.pk}/history/"))
    keep("history search", client.get(f"/shifts/{shift.pk}/history/", {"q": "RET", "tool": "list_returns"}))
    keep("history error", client.get(f"/shifts/{shift.pk}/history/", {"tool": "nope"}))
    keep("bar", client.get(f"/shifts/{shift.pk}/bar/"))
    client.post(f"/shifts/{shift.pk}/pause/", {"reason": "break"})
    keep("paused workspace", client.get(f"/shifts/{shift.pk}/"))
    keep("paused refusal", call(client, shift, "list_orders"))
    client.post(f"/shifts/{shift.pk}/resume/")
    client.post(f"/shifts/{shift.pk}/end/")
    keep("end page", client.get(f"/shifts/{shift.pk}/"))
    keep("home after", client.get("/"))
    return pages


def test_no_participant_page_reveals_the_cell(client, owner, shift):
    client.force_login(owner)
    pages = participant_pages(client, shift)
    assert len(pages) == 15
    assert CSRF_VALUE.search(pages["history"])  # what is taken out below is there to take
    for label, html in pages.items():
        for pattern in leak_patterns():
            assert not pattern.search(without_tokens(html)), f"{label} page shows {pattern.pattern!r}"
