"""Websocket routes, served by ``config.asgi`` behind session authentication.

Apps add their consumers here: append ``path(...)`` entries to
``websocket_urlpatterns`` (paths start with ``ws/``).
"""
from django.urls import path

from console.consumers import ShiftConsumer

websocket_urlpatterns = [
    path("ws/shifts/<int:pk>/", ShiftConsumer.as_asgi()),
]

from studies.routing import websocket_urlpatterns as studies_websockets  # noqa: E402

websocket_urlpatterns += studies_websockets
