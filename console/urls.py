from django.contrib.auth import views as auth_views
from django.urls import path

from . import views
from .signin import ThrottledLoginView

app_name = "console"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    # Throttled as the site's own /login/ is (config/urls.py answers this path first), so the
    # console's URLconf offers no unthrottled sign-in wherever it is included.
    path("login/", ThrottledLoginView.as_view(template_name="console/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("briefing/", views.briefing_page, name="briefing"),
    path("shifts/<int:pk>/", views.shift_workspace, name="shift"),
    path("shifts/<int:pk>/start/", views.shift_start, name="shift_start"),
    path("shifts/<int:pk>/call/", views.shift_call, name="shift_call"),
    path("shifts/<int:pk>/calls/<int:seq>/", views.shift_call_detail, name="shift_call_detail"),
    path("shifts/<int:pk>/call-status/<str:call_id>/", views.shift_call_status, name="shift_call_status"),
    path("shifts/<int:pk>/history/", views.shift_history, name="shift_history"),
    path("shifts/<int:pk>/panels/", views.shift_panels, name="shift_panels"),
    path("shifts/<int:pk>/bar/", views.shift_bar, name="shift_bar"),
    path("shifts/<int:pk>/pause/", views.shift_pause, name="shift_pause"),
    path("shifts/<int:pk>/resume/", views.shift_resume, name="shift_resume"),
    path("shifts/<int:pk>/end/", views.shift_end, name="shift_end"),
]
