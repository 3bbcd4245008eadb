from django.conf import settings
from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("explorer/", include("explorer.urls")),
    path("studies/", include("studies.urls")),
    path("", include("console.urls")),
]

if settings.DEBUG:
    # uvicorn does not serve static files; in DEBUG let Django do it.
    urlpatterns += staticfiles_urlpatterns()
