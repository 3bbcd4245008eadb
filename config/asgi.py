"""ASGI entry point (``uvicorn config.asgi:application``).

HTTP goes to Django; websockets go through the allowed-hosts origin check and the
session authentication middleware to the routes listed in ``config/routing.py``
(add new websocket routes there). A later issue adds the MCP endpoint here.

HTTP requests run through Django's WSGI handler, adapted by asgiref's ``WsgiToAsgi``
(:class:`DjangoHttp`): the views are synchronous, and Django's ASGI handler hops between
the event loop and the request's thread three times per request (the request-started
signal, the middleware chain, the response's close) and starts two tasks per request;
here the whole of Django's handling is one hop.  That was about a millisecond of CPU on
every request.  A buffered response is then sent from the event loop (asgiref sends each
of its messages from the thread, one more hop each), about half a millisecond more.
What a view sees is the same: the same middleware, signals, session, CSRF and database
handling, each request on a thread of its own.
"""
import asyncio
import contextvars
import gc
import os
import threading
from tempfile import SpooledTemporaryFile

from asgiref.sync import AsyncToSync, SyncToAsync
from asgiref.wsgi import WsgiToAsgi, WsgiToAsgiInstance
from django.core.asgi import get_asgi_application
from django.core.wsgi import get_wsgi_application
from django.http import HttpResponse

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


# The plain function under asgiref's sync_to_async (an internal of asgiref 3.9 to 3.13, the range
# pyproject.toml allows); if a release moves it, the site falls back to Django's own ASGI handler.
_ASGIREF_RUN = getattr(WsgiToAsgiInstance.__dict__.get("run_wsgi_app"), "func", None)


def _buffered(response: object) -> bool:
    """Whether a WSGI response is Django's buffered ``HttpResponse`` (its body one bytes
    object in memory), which is sent whole from the event loop; a streaming response
    (``StreamingHttpResponse``, ``FileResponse``) is sent chunk by chunk from its thread."""
    return isinstance(response, HttpResponse)


class _Request(WsgiToAsgiInstance):
    """One request: the response is sent from the request's own context.

    A buffered response (every page and reply of the site) is sent from the event loop
    once the request's thread has finished with it, as two messages: asgiref sends each
    of its three messages from the thread through ``AsyncToSync``, a hop to the loop and
    back for each, which was a good part of the bridge's CPU.  A streaming response is
    sent as asgiref sends it, from the thread.

    The WSGI thread sends through ``AsyncToSync``, whose task on the event loop carries
    that call's thread executor in a context variable (and the request's task gets the
    thread's context back from ``sync_to_async``, with any executor the view's own
    ``async_to_sync`` left in it); the server starts the next request queued on the same
    connection from inside ``send`` (a browser sends the request a 204 redirects to before
    the 204's empty body is sent), and that request's task would inherit the executor,
    gone by then ("CurrentThreadExecutor already quit").  So each ``send`` runs in a copy
    of the context the request began in: a streaming response's in a task of its own, a
    buffered one's in the request's task, whose context is still that one (the request
    ran in a copy of it)."""

    # Each request on a thread of the event loop's pool, as Django's ASGI handler runs each
    # on a thread of its own (so a slow request does not hold up the others of its process),
    # without starting a thread per request: the whole request runs in one call, so its
    # database connection (kept per context) is used by one thread.
    def _run_and_close(self: WsgiToAsgiInstance, body) -> tuple[dict, bytes] | None:
        """Run the application and ``close()`` what it returned, as a WSGI server must:
        Django's response sends ``request_finished`` there, which gives the request's
        database connection back to the pool and closes a file.  A buffered response is
        returned (start message, body) to be sent from the loop; a streaming one is sent
        from here by asgiref's ``run_wsgi_app`` (then ``None``)."""
        returned = []
        application = self.wsgi_application

        def keeping_the_response(environ, start_response):
            returned.append(application(environ, start_response))
            return returned[-1]

        try:
            try:
                environ = self.build_environ(self.scope, body)
            except ValueError:  # too many duplicate headers: asgiref's answer
                return ({"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"text/plain")]},
                        b"Bad Request: Too many duplicate headers")
            response = keeping_the_response(environ, self.start_response)
            if _buffered(response):
                content = b"".join(response)
                length = self.response_content_length
                # as asgiref: never more bytes than the application's Content-Length says
                return self.response_start, content if length is None else content[:length]
            self.wsgi_application = lambda _environ, _start: response  # asgiref iterates it
            body.seek(0)
            run = _ASGIREF_RUN
            assert run is not None  # this class is used only when asgiref has it (see below)
            run(self, body)
            return None
        finally:
            self.wsgi_application = application
            for response in returned:
                close = getattr(response, "close", None)
                if close is not None:
                    close()

    def _on_the_thread(self, loop: asyncio.AbstractEventLoop, body) -> tuple[dict, bytes] | None:
        """:meth:`_run_and_close` on a thread of the loop's pool, which this marks as
        working for ``loop``, as ``sync_to_async`` marks its threads: ``async_to_sync`` in
        the request (a streaming response's chunks) then runs its coroutine on ``loop``,
        and :mod:`shifts.events` hands its events to it."""
        local = SyncToAsync.threadlocal
        local.main_event_loop, local.main_event_loop_pid, local.task_context = loop, os.getpid(), None
        return self._run_and_close(body)

    async def __call__(self, scope, receive, send):
        began = contextvars.copy_context()
        loop = asyncio.get_running_loop()

        async def send_from_the_request(message):
            await loop.create_task(send(message), context=began.copy())

        if scope["type"] != "http":
            raise ValueError("WSGI wrapper received a non-HTTP scope")
        self.scope = scope
        with SpooledTemporaryFile(max_size=65536) as body:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    raise ValueError("WSGI wrapper received a non-HTTP-request message")
                body.write(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body.seek(0)
            self.sync_send = AsyncToSync(send_from_the_request)  # a streaming response's chunks
            # The request runs in a copy of this task's context, as sync_to_async runs it (without
            # copying the thread's context back afterwards: nothing here reads it), with an
            # outbox for the shift events it raises, sent from here once the response is.
            context, outbox = contextvars.copy_context(), []
            context.run(events.outbox.set, outbox)
            try:
                answer = await loop.run_in_executor(None, context.run, self._on_the_thread, loop, body)
                if answer is not None:
                    # From this task (see the class): no task of its own for each message.
                    start, content = answer
                    await send(start)
                    await send({"type": "http.response.body", "body": content})
            finally:
                if outbox:  # what was committed is announced, whatever became of the response
                    events.deliver(outbox, loop)


class DjangoHttp(WsgiToAsgi):
    """Django's WSGI handler served over ASGI (see the module)."""

    async def __call__(self, scope, receive, send):
        await _Request(self.wsgi_application, self.duplicate_header_limit)(scope, receive, send)


# Set up Django (apps registry) before importing anything that touches models.
django_http_app = (DjangoHttp(get_wsgi_application()) if _ASGIREF_RUN is not None
                   and hasattr(WsgiToAsgi(None), "duplicate_header_limit")
                   and isinstance(getattr(SyncToAsync, "threadlocal", None), threading.local)
                   else get_asgi_application())

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from config.routing import websocket_urlpatterns  # noqa: E402
from shifts import events  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_http_app,
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
})


# The garbage collector, tuned for a server process.  A tool call allocates some tens of
# thousands of objects; with the default first threshold (700) the collector ran a couple of
# hundred times per hundred calls, each time walking the request's live objects again: about
# half a millisecond of CPU per call.  The middle generation is collected after 10 collections
# of the youngest (the default), the oldest after 100 (10 by default).  The middle one fills
# with what the live episodes add (a process's warm-up builds a hundred of them): after 50
# young collections it held enough for pauses of 0.35 to 0.38 s with 100 shifts a process;
# after 10, pauses under 0.11 s for about the same CPU (200 participants, two processes).
# (Freezing what is loaded at start was tried: it makes the first full collection come early,
# and that one walks every live episode, a pause of a few hundred milliseconds.)
GC_THRESHOLDS = (20_000, 10, 100)
gc.set_threshold(*GC_THRESHOLDS)
