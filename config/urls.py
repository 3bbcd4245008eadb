"""The site's URLs. The admin lives at ``settings.ADMIN_PATH`` (``DJANGO_ADMIN_PATH``);
both sign-in pages throttle failed attempts (:mod:`console.signin`); static files are
served by WhiteNoise's middleware, in debug and outside it."""
from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from console.signin import ThrottledAdminAuthenticationForm, ThrottledLoginView

admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path(settings.ADMIN_PATH, admin.site.urls),
    path("explorer/", include("explorer.urls")),
    path("studies/", include("studies.urls")),
    # The console's sign-in page, with throttling; it answers at the same path the
    # console's own URLconf names ("console:login"), which it shadows.
    path("login/", ThrottledLoginView.as_view(template_name="console/login.html"), name="signin"),
    path("", include("console.urls")),
]
