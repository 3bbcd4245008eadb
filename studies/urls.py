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

urlpatterns = [
    path("", views.study_list, name="list"),
    path("new/", views.study_new, name="new"),
    path("me/", views.me, name="me"),
    path("me/next/", views.me_next, name="me_next"),
    path("me/complete/", views.me_complete, name="me_complete"),
    path("me/return/", views.me_return, name="me_return"),
    path("join/<str:token>/", views.join, name="join"),
    path("s/<slug:slug>/", views.enter, name="enter"),  # token_urlsafe: a NUL or any other byte is no link
    path("<rowid:pk>/", views.study_detail, name="detail"),
    path("<rowid:pk>/members/", views.member_add, name="member_add"),
    path("<rowid:pk>/members/remove/", views.member_remove, name="member_remove"),
    path("<rowid:pk>/close/", views.study_close, name="close"),
    path("<rowid:pk>/reopen/", views.study_reopen, name="reopen"),
    path("<rowid:pk>/quota/", views.quota_set, name="quota_set"),
    path("<rowid:pk>/participants/", views.participant_add, name="participant_add"),
    path("<rowid:pk>/invite/", views.invite, name="invite"),
    path("<rowid:pk>/invitations/<rowid:invitation_pk>/revoke/", views.invitation_revoke, name="revoke"),
    path("<rowid:pk>/assign/", views.assign, name="assign"),
    path("<rowid:pk>/assign-next/", views.assign_next, name="assign_next"),
    path("<rowid:pk>/attempts/<rowid:attempt_pk>/", views.attempt_act, name="attempt_act"),
    path("<rowid:pk>/select-by-rule/", views.select_by_rule, name="select_by_rule"),
    path("<rowid:pk>/monitor/", views.monitor, name="monitor"),
    path("<rowid:pk>/monitor/act/", views.monitor_act, name="monitor_act"),
    path("<rowid:pk>/monitor/rows/", views.monitor_partial, name="monitor_rows"),
    path("<rowid:pk>/rehearse/", views.rehearse, name="rehearse"),
    path("<rowid:pk>/entry/", views.entry_settings, name="entry_settings"),
    path("<rowid:pk>/pay/", views.pay_page, name="pay"),
    path("<rowid:pk>/pay/approve/", views.pay_approve, name="pay_approve"),
    path("<rowid:pk>/pay/bonus.csv", views.bonus_file, name="bonus_file"),
    path("<rowid:pk>/pay/payments.csv", views.payments_file, name="payments_file"),
    path("<rowid:pk>/import/", views.import_participants, name="import"),
    path("<rowid:pk>/invite-many/", views.invite_many, name="invite_many"),
    path("<rowid:pk>/attempts/bulk/", views.bulk_attempts, name="bulk_attempts"),
    path("<rowid:pk>/assign-many/", views.bulk_assign, name="bulk_assign"),
    path("<rowid:pk>/participants/<rowid:participant_pk>/", views.participant_page, name="participant"),
    path("<rowid:pk>/participants/<rowid:participant_pk>/withdraw/", views.withdraw, name="withdraw"),
    path("<rowid:pk>/consent/", views.consent_publish, name="consent_publish"),
    path("<rowid:pk>/attempts/<rowid:attempt_pk>/shift/", views.attempt_shift, name="attempt_shift"),
    path("<rowid:pk>/leaderboard/", views.leaderboard_page, name="leaderboard"),
    path("<rowid:pk>/leaderboard.svg", views.leaderboard_svg, name="leaderboard_svg"),
    path("<rowid:pk>/audit/", views.audit_page, name="audit"),
    path("<rowid:pk>/exports/", views.exports_page, name="exports"),
    path("<rowid:pk>/exports/<rowid:job_pk>/<str:name>", views.export_download, name="export_file"),
]
