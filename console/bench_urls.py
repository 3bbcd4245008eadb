"""The URLconf ``manage.py bench_console`` runs under: the site's, plus a no-op view
to compare tool pages with. Never the site's own URLconf."""
from django.urls import path

from config.urls import urlpatterns as site_urlpatterns

from . import views

urlpatterns = [
    path("bench/noop", views.bench_noop, name="bench_noop"),
    *site_urlpatterns,
]
