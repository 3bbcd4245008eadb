from django.urls import path

from . import views

app_name = "studies"

_ = views.permission_denied_as_403

urlpatterns = [
    path("", _(views.study_list), name="list"),
    path("new/", _(views.study_new), name="new"),
    path("me/", _(views.me), name="me"),
    path("join/<str:token>/", views.join, name="join"),
    path("<int:pk>/", _(views.study_detail), name="detail"),
    path("<int:pk>/members/", _(views.member_add), name="member_add"),
    path("<int:pk>/quota/", _(views.quota_set), name="quota_set"),
    path("<int:pk>/participants/", _(views.participant_add), name="participant_add"),
    path("<int:pk>/invite/", _(views.invite), name="invite"),
    path("<int:pk>/invitations/<int:invitation_pk>/revoke/", _(views.invitation_revoke), name="revoke"),
    path("<int:pk>/assign/", _(views.assign), name="assign"),
    path("<int:pk>/assign-next/", _(views.assign_next), name="assign_next"),
    path("<int:pk>/attempts/<int:attempt_pk>/", _(views.attempt_act), name="attempt_act"),
    path("<int:pk>/select-by-rule/", _(views.select_by_rule), name="select_by_rule"),
    path("<int:pk>/monitor/", _(views.monitor), name="monitor"),
    path("<int:pk>/monitor/act/", _(views.monitor_act), name="monitor_act"),
    path("<int:pk>/monitor/rows/", _(views.monitor_partial), name="monitor_rows"),
    path("<int:pk>/leaderboard/", _(views.leaderboard_page), name="leaderboard"),
    path("<int:pk>/audit/", _(views.audit_page), name="audit"),
    path("<int:pk>/exports/", _(views.exports_page), name="exports"),
    path("<int:pk>/exports/<int:job_pk>/<str:name>", _(views.export_download), name="export_file"),
]
