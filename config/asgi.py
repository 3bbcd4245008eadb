"""ASGI entry point (``uvicorn config.asgi:application``).

HTTP goes to Django; websockets go through the allowed-hosts origin check and the
session authentication middleware to the routes listed in ``config/routing.py``
(add new websocket routes there). A later issue adds the MCP endpoint here.

HTTP requests run through Django's WSGI handler, adapted by asgiref's ``WsgiToAsgi``:
the views are synchronous, and Django's ASGI handler runs them on the same single
thread per process (``thread_sensitive``) but hops between the event loop and that
thread three times per request (the request-started signal, the middleware chain, the
response's close) and starts two tasks per request; the WSGI handler does all of it in
one hop.  That was about a millisecond of CPU on every request.  What a view sees is
the same: the same middleware, signals, session, CSRF and database handling.
"""
import os

from asgiref.wsgi import WsgiToAsgi
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# Set up Django (apps registry) before importing anything that touches models.
django_http_app = WsgiToAsgi(get_wsgi_application())

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from config.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_http_app,
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
})
