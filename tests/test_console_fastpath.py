"""The fast call path keeps what a participant sees and what is stored.

The parts of a call's reply written out in Python (table rows, row actions, cells, card
fields) give the markup the template loops they replaced gave, escaping included; the
cached views are grouped as before; a parsed result is kept per call, not per text;
the site's Redis cache shares one pool and one client per process; HTTP is served
through the WSGI handler under ASGI with the same middleware (security headers,
CSRF, sign-in) and a tool call made that way is stored.
"""
import asyncio
import re
import uuid

import httpx
import pytest
from asgiref.sync import async_to_sync
from console_helpers import briefed_user
from django.conf import settings
from django.template import Context, Template, engines
from django.test import Client
from hypothesis import example, given
from hypothesis import settings as settings_
from hypothesis import strategies as st

from console import present
from console.cached import cached_views
from shifts import lifecycle
from shifts.models import ShiftCall
from shifts.results import result_of

pytestmark = pytest.mark.usefixtures("fresh_console_cache")

# The template loops the tags replaced, as they were (templates/console/_table.html's rows
# and _row_action.html), kept here as the reference the tags must match byte for byte.
ROW_ACTION = """{% load console_tags %}
<form class="row-action" method="post" action="{% url 'console:shift_call' shift.pk %}"
      hx-post="{% url 'console:shift_call' shift.pk %}" hx-target="next .row-status" hx-select=".repeat-banner, .window-marker, .outcome" hx-swap="innerHTML"
      hx-disabled-elt="find button" data-spends="1" data-key="{{ action.key }}" data-tool="{{ action.tool }}"{% if action.confirm %} hx-confirm="{{ action.confirm }}"{% endif %}{% if action.late %} data-late="1"{% endif %}>
  {% csrf_token %}
  <input type="hidden" name="tool" value="{{ action.tool }}">
  <input type="hidden" name="call_id" value="{% new_call_id %}">
  {% for name, value in action.fixed.items %}<input type="hidden" name="arg_{{ name }}" value="{{ value }}">{% endfor %}
  {% for input in action.inputs %}<input type="text" inputmode="{% if input.kind == 'int' %}numeric{% else %}decimal{% endif %}" name="arg_{{ input.name }}" value="{{ input.value }}" size="6" aria-label="{{ input.label }} for {{ target }}">{% endfor %}
  {% if action.late %}<span class="late" title="{{ action.confirm }}">lands after close</span>{% endif %}
  <button type="submit" aria-label="{{ action.label }} {{ target }}" title="{{ action.label }} ({{ action.tool }}, 1 operation){% if action.key %} · key {{ action.key }}{% endif %}">{{ action.label }}</button>
</form>
"""
ROWS = """{% for row in table.rows %}
      <tr data-key="{{ row.key }}" tabindex="-1" class="{% if row.done %}done{% elif row.urgent %}urgent{% endif %}">
        {% if table.has_actions %}<td class="row-actions">
          {% if row.done %}<span class="row-status">{{ row.done }}</span>
          {% elif shift.takes_calls %}
            {% if row.actions %}<input type="checkbox" class="pick" aria-label="Tick {{ row.key }} for a batch ({{ row.actions.0.label }})" title="Tick for a batch · key x">{% endif %}
            {% for action in row.actions %}{% include "row_action" with target=row.key %}{% endfor %}
            <span class="row-status" aria-live="polite"></span>
          {% endif %}
        </td>{% endif %}
        {% for c in row.cells %}<td data-sort="{{ c.sort }}" class="k-{{ c.kind }}">{% if c.copy %}<button type="button" class="copy" data-copy="{{ c.text }}" title="Copy {{ c.text }}">{{ c.text }}</button>{% else %}{{ c.text }}{% endif %}</td>{% endfor %}
      </tr>
    {% endfor %}"""
FIELDS = ("""{% for label, c in card.fields %}<div><dt>{{ label }}</dt><dd class="k-{{ c.kind }}">{% if c.copy %}"""
          """<button type="button" class="copy" data-copy="{{ c.text }}" title="Copy {{ c.text }}">{{ c.text }}</button>"""
          """{% else %}{{ c.text }}{% endif %}</dd></div>{% endfor %}""")
CALL_ID = re.compile(r'(name="call_id" value=")[0-9a-f]{32}')

TRICKY = "<b>\"O'Neil\" & co</b>"


class FakeShift:
    pk = 42

    def __init__(self, status: str) -> None:
        self.status = status
        self.takes_calls = status == "active"  # and not past a deadline: these shifts have none


def tricky_table() -> present.Table:
    late = present.Action("Reorder", "place_purchase_order", {"supply_product_id": "SP-1"},
                          (present.Input("quantity", "units of SP-1 <x>", "12", "int"),), key="o",
                          confirm=f"Lands after close: {TRICKY}", late=True)
    rows = [
        present.Row(cells=[present.cell("order_id", "ORD-1"), present.cell("total", "1234.50"),
                           present.cell("note", TRICKY), present.cell("hours_to_ship", 3.25),
                           present.cell("units", 1200), present.cell("gift", True), present.cell("x", None)],
                    actions=[present.Action("Ship", "fulfill_order", {"order_id": "ORD-1"}, key="s")],
                    key="ORD-1", urgent=True),
        present.Row(cells=[present.cell("order_id", "ORD-2"), present.cell("note", "a&b")],
                    actions=[late, present.Action("Refund", "refund_return", {"return_id": TRICKY, "n": 7},
                                                  (present.Input("amount", "refund (USD)", "3.10", "money"),)),
                             present.Action("Cancel", "cancel_purchase_order", {"po_id": "PO-1"},
                                            confirm=f"Cancel {TRICKY}?")],
                    key=TRICKY),
        present.Row(cells=[present.cell("order_id", "ORD-3")], actions=[], key="ORD-3", done="shipped (#4)"),
        present.Row(cells=[present.cell("order_id", "ORD-4")], actions=[], key="4"),
    ]
    return present.Table(title="orders", columns=["order id"], rows=rows)


def reference_rows(context: dict) -> str:
    engine = engines["django"].engine
    from django.template.loaders.locmem import Loader  # the reference include, from memory

    loader = Loader(engine, {"row_action": ROW_ACTION})
    template = Template(ROWS, engine=engine)
    original = engine.template_loaders
    engine.template_loaders = [loader]
    try:
        return template.render(Context(context))
    finally:
        engine.template_loaders = original


@pytest.mark.parametrize("status", ["active", "paused"])
def test_table_rows_are_the_markup_the_template_loop_gave(status):
    context = {"table": tricky_table(), "shift": FakeShift(status), "csrf_token": "tok<en>"}
    mine = Template("{% load console_tags %}{% table_rows table %}").render(Context(context))
    theirs = reference_rows(context)
    assert CALL_ID.sub(r"\1X", mine) == CALL_ID.sub(r"\1X", theirs)
    assert "&lt;b&gt;&quot;O&#x27;Neil&quot; &amp; co&lt;/b&gt;" in mine and TRICKY not in mine
    # each form its own call id
    assert len(set(re.findall(r'name="call_id" value="([0-9a-f]{32})"', mine))) == (4 if status == "active" else 0)


def test_row_actions_and_card_fields_are_the_markup_the_template_loops_gave():
    table = tricky_table()
    card = present.Card("t", [("note", present.cell("note", TRICKY)), ("id", present.cell("order_id", "ORD-9")),
                              ("count", present.cell("n", 3))], [], table.rows[1].actions, TRICKY)
    context = Context({"card": card, "shift": FakeShift("active"), "csrf_token": "tok"})
    mine = Template("{% load console_tags %}{% row_actions card.actions card.key %}").render(context)
    engine = engines["django"].engine
    theirs = "".join(Template(ROW_ACTION, engine=engine).render(
        Context({"action": action, "target": card.key, "shift": FakeShift("active"), "csrf_token": "tok"}))
        for action in card.actions)
    assert CALL_ID.sub(r"\1X", mine) == CALL_ID.sub(r"\1X", theirs)
    fields = Template("{% load console_tags %}{{ card.fields|card_fields }}").render(context)
    assert fields == Template(FIELDS).render(context)


@pytest.mark.parametrize("oob", [False, True])
def test_a_kept_tool_form_is_the_included_template_with_a_fresh_call_id(oob):
    from console.toolforms import tool_forms

    for name, form in tool_forms().items():
        values = {field.input_name: f'{TRICKY} action="/shifts/987654321/call/"' for field in form.fields[:1]}
        context = {"form": form, "shift": FakeShift("active"), "values": values, "oob": oob, "csrf_token": "tok<>"}
        included = Template('{% include "console/_tool_form.html" %}').render(Context(context))
        kept = [Template("{% load console_tags %}{% tool_form form oob %}").render(Context(context)) for _ in range(2)]
        assert CALL_ID.sub(r"\1X", kept[0]) == CALL_ID.sub(r"\1X", included), name
        assert CALL_ID.search(kept[0])[0] != CALL_ID.search(kept[1])[0]  # each copy its own call id
        assert 'action="/shifts/42/call/"' in kept[0]
        if form.fields:  # a refill value that looks like the marked URL is left as typed
            assert "/shifts/987654321/call/" in kept[0]


class Call:
    def __init__(self, seq, tool, arguments):
        self.seq, self.tool, self.arguments = seq, tool, arguments
        self.is_error, self.reached_core, self.window = False, True, 1
        from environment.tools.format import StoreHeader

        self.typed_header = StoreHeader(time="2026-08-01 06:00", window=1, windows=6, ops_left=3, ops_total=24,
                                        cash_cents=100, net_assets_cents=100, rating="4.50", closed=False)


def test_cached_views_tell_apart_what_json_tells_apart():
    calls = [Call(1, "get_product", {"product_id": "PRD-1"}), Call(2, "list_orders", {"page": 1}),
             Call(3, "list_orders", {"page": 1.0}), Call(4, "list_orders", {"page": True}),
             Call(5, "list_orders", {"page": "1"}), Call(6, "list_orders", {"page": 1}),
             Call(7, "list_orders", {"page": 0.0}), Call(8, "list_orders", {"page": -0.0}),
             Call(9, "list_orders", {"page": 1, "status": "open"}), Call(10, "list_orders", {"status": "open", "page": 1}),
             Call(11, "get_product", {"product_id": ["PRD-1"]}), Call(12, "get_product", {"product_id": ["PRD-1"]})]
    views = cached_views(calls, 720)
    assert sorted(v.seq for v in views) == [1, 3, 4, 5, 6, 7, 8, 10, 12]


def test_cached_views_kept_per_shift_read_only_the_calls_after_the_last_reply():
    """A reply's cached views continue what the last reply of the shift worked out when the
    calls are the same objects (the live cache's records), and start afresh otherwise."""
    import random

    from console import cached

    rng = random.Random(3)
    tools = ["get_product", "list_orders", "list_returns", "fulfill_order"]
    calls: list = []
    for seq in range(1, 120):
        call = Call(seq, rng.choice(tools), {"page": rng.randint(1, 4)})
        call.is_error = rng.random() < 0.2
        calls.append(call)
        views = cached_views(list(calls), 720, shift_id=77)
        assert views == cached_views(list(calls), 720)  # the same as reading every call
        assert cached._seen[77].count == len(calls)
    rebuilt = [Call(c.seq, c.tool, c.arguments) for c in calls[:50]]  # a rebuilt cache: other objects
    assert cached_views(rebuilt, 720, shift_id=77) == cached_views(rebuilt, 720)
    # a list that does not continue the one seen (its object at that place differs) is read whole
    calls[49].tool = "list_returns"
    assert cached_views(calls, 720, shift_id=77) == cached_views(calls, 720)


def test_a_parsed_result_is_kept_per_call_and_follows_its_text():
    call = Call(1, "store_status", {})
    call.result_text = call.typed_header.line + '\n{"a": 1}'
    first = result_of(call)
    assert result_of(call) is first and first.data == {"a": 1}
    call.result_text = call.typed_header.line + '\n{"a": 2}'
    assert result_of(call).data == {"a": 2}


@pytest.fixture
def redis_url(require_service):
    require_service("Redis", "127.0.0.1", 6379)
    return "redis://127.0.0.1:6379/9"


@pytest.mark.services
def test_every_cache_object_of_a_process_shares_one_pool_and_one_client(redis_url):
    from config.cache import RedisCache

    params = {"KEY_PREFIX": f"fastpath-{uuid.uuid4().hex}"}
    first, second = RedisCache(redis_url, params), RedisCache(redis_url, params)  # two requests' caches
    first.set("k", {"v": 1}, 30)
    try:
        assert second.get("k") == {"v": 1}
        assert first._cache.get_client() is second._cache.get_client()
        assert first._cache._get_connection_pool(False) is second._cache._get_connection_pool(False)
        assert first._cache.get_client(write=True).connection_pool is first._cache._get_connection_pool(True)
    finally:
        first.delete("k")


def test_the_redis_cache_is_the_sites_when_redis_is_configured():
    import subprocess
    import sys

    code = ("import django; django.setup(); from django.conf import settings; "
            "print(settings.CACHES['default']['BACKEND'], settings.SESSION_ENGINE)")
    env = {"DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_DEBUG": "1", "REDIS_URL": "redis://127.0.0.1:6379/9",
           "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=settings.BASE_DIR).stdout.split()
    assert out == ["config.cache.RedisCache", "django.contrib.sessions.backends.cached_db"]


def asgi_post(path: str, data: dict, cookies: dict[str, str], csrf: str | None) -> httpx.Response:
    from config.asgi import application

    async def go():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            headers = {"HX-Request": "true", "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}
            if csrf:
                headers["X-CSRFToken"] = csrf
            return await http.post(path, data=data, headers=headers)

    return async_to_sync(go)()


def test_http_goes_through_the_site_middleware_under_asgi():
    from django.core.signals import request_finished, request_started

    from config.asgi import application

    signals = []

    def started(**kwargs):
        signals.append("started")

    def finished(**kwargs):
        signals.append("finished")

    async def go():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await http.get("/healthz"), await http.get("/shifts/1/")

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        health, anonymous = asyncio.run(go())
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    # each response is closed, as a WSGI server must: request_finished gives the request's
    # database connection back to the pool
    assert signals == ["started", "finished", "started", "finished"]
    assert health.status_code == 200 and health.json() == {"ok": True}
    assert health.headers["x-frame-options"] == "DENY" and health.headers["x-content-type-options"] == "nosniff"
    assert anonymous.status_code == 302 and anonymous.headers["location"].startswith(settings.LOGIN_URL)


@pytest.mark.django_db(transaction=True)
def test_a_tool_call_over_asgi_is_checked_for_csrf_and_stored():
    user = briefed_user("asgi-participant", password=False)
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    client = Client()
    client.force_login(user)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    csrf = "c" * 32
    cookies = {settings.SESSION_COOKIE_NAME: session, settings.CSRF_COOKIE_NAME: csrf}
    data = {"tool": "list_orders", "call_id": uuid.uuid4().hex, "arg_page_size": "2"}

    refused = asgi_post(f"/shifts/{shift.pk}/call/", data, cookies, csrf=None)
    assert refused.status_code == 403 and not ShiftCall.objects.filter(call_id=data["call_id"]).exists()

    reply = asgi_post(f"/shifts/{shift.pk}/call/", data, cookies, csrf=csrf)
    assert reply.status_code == 200 and 'id="store-header"' in reply.text
    stored = ShiftCall.objects.get(shift=shift, call_id=data["call_id"])
    assert stored.tool == "list_orders" and stored.arguments == {"page_size": 2} and not stored.is_error


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_requests_queued_on_one_connection_are_all_answered(tmp_path):
    """A browser sends its next request on a connection before the server has finished
    the last response (the page a 204 redirects to): the server starts it from inside
    the last ``send``, and it must not inherit that send's thread executor."""
    import os
    import socket
    import subprocess
    import sys
    import time

    port = _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings",
           "STOREBENCH_SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    env.pop("DATABASE_URL", None)
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1",
                               "--port", str(port), "--log-level", "warning"],
                              cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.1)
        request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(request * 3)  # three requests at once on one connection
            received = b""
            while received.count(b'{"ok": true}') < 3:
                chunk = sock.recv(65536)
                assert chunk, f"the connection closed after {received!r}"
                received += chunk
        assert received.count(b"HTTP/1.1 200 OK") == 3
        assert b"Traceback" not in (tmp_path / "server.log").read_bytes()
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_an_asgiref_without_the_adapted_hook_gets_djangos_own_asgi_handler(monkeypatch):
    """config/asgi.py adapts an internal of asgiref; a release that moves it must not break the
    site, only lose the shortcut."""
    import importlib

    from asgiref.wsgi import WsgiToAsgiInstance
    from django.core.handlers.asgi import ASGIHandler

    import config.asgi

    assert isinstance(config.asgi.django_http_app, config.asgi.DjangoHttp)
    monkeypatch.delattr(WsgiToAsgiInstance, "run_wsgi_app")
    try:
        assert isinstance(importlib.reload(config.asgi).django_http_app, ASGIHandler)
    finally:
        monkeypatch.undo()
        importlib.reload(config.asgi)
    assert isinstance(config.asgi.django_http_app, config.asgi.DjangoHttp)


def test_the_server_process_collects_garbage_less_often():
    """config.asgi (what uvicorn imports) raises the collector's first threshold: a tool call
    no longer pays for hundreds of collections."""
    import gc

    import config.asgi

    assert gc.get_threshold() == config.asgi.GC_THRESHOLDS and config.asgi.GC_THRESHOLDS[0] >= 10_000


@pytest.mark.django_db(transaction=True)
def test_a_tool_call_over_asgi_announces_its_shift_once_after_the_reply(monkeypatch):
    """The request's events go to its outbox; the server's loop sends them, each shift once,
    after the response (shifts.events.deliver), and the request never waits for them."""
    from config.asgi import application
    from shifts import events

    user = briefed_user("asgi-announcer", password=False)
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    client = Client()
    client.force_login(user)
    csrf = "d" * 32
    cookies = {settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME].value,
               settings.CSRF_COOKIE_NAME: csrf}
    sent: list = []

    class Layer:
        async def group_send(self, group, message):
            sent.append((group, message))

    monkeypatch.setattr(events, "get_channel_layer", lambda: Layer())

    async def go():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            headers = {"HX-Request": "true", "X-CSRFToken": csrf,
                       "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}
            reply = await http.post(f"/shifts/{shift.pk}/call/", headers=headers,
                                    data={"tool": "store_status", "call_id": uuid.uuid4().hex})
            for _ in range(100):
                if sent:
                    break
                await asyncio.sleep(0.01)
            return reply

    reply = asyncio.run(go())
    assert reply.status_code == 200
    stored = shift.calls.latest("seq")  # the event carries the call's seq and stored header: a page needs no read
    assert sent == [(f"shift-{shift.pk}", {"type": "shift.changed", "seq": stored.seq, "header": stored.store_header})]
    assert stored.store_header["ops_left"] > 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20)


@settings_(max_examples=600, deadline=None)
@given(json_values)
@example({"a": "\ud800 lone", "b": [1, 2**64 + 1, -(2**63) - 1]})
@example([1.0, 1e16, 1e-05, -0.0, 12.5])
@example([0.0001, 9.999999999999998e15, 1e15, 0.1, 1 / 3, 4.6, -2.5e-3, 5e-324, 1.7976931348623157e308])
@example({"rating": 4.6, "share": 0.25, "inf": float("inf"), "ninf": float("-inf")})
def test_a_results_body_reads_and_prints_as_the_json_module_has_it(value):
    """A result's body is parsed and pretty-printed by orjson only where that gives what the
    json module gives (shifts.results): the same objects, the same text."""
    import json

    from shifts import results

    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    data, pretty = results._read(text)
    assert json.dumps(data) == json.dumps(json.loads(text))  # 1 and 1.0 told apart, at any depth
    assert pretty == json.dumps(json.loads(text), indent=2, ensure_ascii=False)
