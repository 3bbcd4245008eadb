"""Websocket routes of the studies app (appended to ``config/routing.py``)."""
from django.urls import path

from .consumers import MonitorConsumer

websocket_urlpatterns = [
    path("ws/studies/<int:pk>/monitor/", MonitorConsumer.as_asgi()),
]
