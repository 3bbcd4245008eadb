"""The URLconf ``manage.py bench_console`` runs under: the site's, plus a no-op view
to compare tool pages with. Never the site's own URLconf."""
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from config.urls import urlpatterns as site_urlpatterns


@require_GET
def bench_noop(request: HttpRequest) -> HttpResponse:
    """The minimal view ``bench_console`` compares tool pages with."""
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    path("bench/noop", bench_noop, name="bench_noop"),
    *site_urlpatterns,
]
