from django.urls import path, register_converter

from . import views


class RowId:
    """A row id: at most 18 digits, so a larger number is a 404 rather than an overflow."""
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(RowId, "rowid")

app_name = "studies"

_ = views.permission_denied_as_403

urlpatterns = [
    path("", _(views.study_list), name="list"),
    path("new/", _(views.study_new), name="new"),
    path("me/", _(views.me), name="me"),
    path("me/next/", _(views.me_next), name="me_next"),
    path("me/complete/", _(views.me_complete), name="me_complete"),
    path("me/return/", _(views.me_return), name="me_return"),
    path("join/<str:token>/", views.join, name="join"),
    path("s/<str:slug>/", views.enter, name="enter"),
    path("<rowid:pk>/", _(views.study_detail), name="detail"),
    path("<rowid:pk>/members/", _(views.member_add), name="member_add"),
    path("<rowid:pk>/quota/", _(views.quota_set), name="quota_set"),
    path("<rowid:pk>/participants/", _(views.participant_add), name="participant_add"),
    path("<rowid:pk>/invite/", _(views.invite), name="invite"),
    path("<rowid:pk>/invitations/<rowid:invitation_pk>/revoke/", _(views.invitation_revoke), name="revoke"),
    path("<rowid:pk>/assign/", _(views.assign), name="assign"),
    path("<rowid:pk>/assign-next/", _(views.assign_next), name="assign_next"),
    path("<rowid:pk>/attempts/<rowid:attempt_pk>/", _(views.attempt_act), name="attempt_act"),
    path("<rowid:pk>/select-by-rule/", _(views.select_by_rule), name="select_by_rule"),
    path("<rowid:pk>/monitor/", _(views.monitor), name="monitor"),
    path("<rowid:pk>/monitor/act/", _(views.monitor_act), name="monitor_act"),
    path("<rowid:pk>/monitor/rows/", _(views.monitor_partial), name="monitor_rows"),
    path("<rowid:pk>/rehearse/", _(views.rehearse), name="rehearse"),
    path("<rowid:pk>/entry/", _(views.entry_settings), name="entry_settings"),
    path("<rowid:pk>/pay/", _(views.pay_page), name="pay"),
    path("<rowid:pk>/pay/approve/", _(views.pay_approve), name="pay_approve"),
    path("<rowid:pk>/pay/bonus.csv", _(views.bonus_file), name="bonus_file"),
    path("<rowid:pk>/pay/payments.csv", _(views.payments_file), name="payments_file"),
    path("<rowid:pk>/import/", _(views.import_participants), name="import"),
    path("<rowid:pk>/invite-many/", _(views.invite_many), name="invite_many"),
    path("<rowid:pk>/attempts/bulk/", _(views.bulk_attempts), name="bulk_attempts"),
    path("<rowid:pk>/assign-many/", _(views.bulk_assign), name="bulk_assign"),
    path("<rowid:pk>/participants/<rowid:participant_pk>/", _(views.participant_page), name="participant"),
    path("<rowid:pk>/participants/<rowid:participant_pk>/withdraw/", _(views.withdraw), name="withdraw"),
    path("<rowid:pk>/consent/", _(views.consent_publish), name="consent_publish"),
    path("<rowid:pk>/attempts/<rowid:attempt_pk>/shift/", _(views.attempt_shift), name="attempt_shift"),
    path("<rowid:pk>/leaderboard/", _(views.leaderboard_page), name="leaderboard"),
    path("<rowid:pk>/leaderboard.svg", _(views.leaderboard_svg), name="leaderboard_svg"),
    path("<rowid:pk>/audit/", _(views.audit_page), name="audit"),
    path("<rowid:pk>/exports/", _(views.exports_page), name="exports"),
    path("<rowid:pk>/exports/<rowid:job_pk>/<str:name>", _(views.export_download), name="export_file"),
]
