"""The explorer's URLs, under /explorer/: trial list, trial pages, comparison, ladder, and their downloads."""
from django.urls import path, register_converter

from . import views


class TableFormat:
    regex = "csv|json"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class RowId:
    """A row id: at most 18 digits, so a larger number is a 404 rather than an overflow."""
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(TableFormat, "fmt")
register_converter(RowId, "id")

app_name = "explorer"

urlpatterns = [
    path("", views.trial_list, name="trials"),
    path("trials/<id:pk>/", views.trial_detail, name="trial"),
    path("trials/<id:pk>/charts/<slug:measure>.svg", views.trial_chart, name="trial_chart"),
    path("trials/<id:pk>/components.<fmt:fmt>", views.trial_components, name="trial_components"),
    path("trials/<id:pk>/windows.<fmt:fmt>", views.trial_windows, name="trial_windows"),
    path("trials/<id:pk>/actions.<fmt:fmt>", views.trial_actions, name="trial_actions"),
    path("trials/<id:pk>/events.<fmt:fmt>", views.trial_events, name="trial_events"),
    path("trials/<id:pk>/calls/<id:seq>/", views.trial_call, name="trial_call"),
    path("compare/", views.compare, name="compare"),
    path("compare/charts/<slug:measure>.svg", views.compare_chart, name="compare_chart"),
    path("compare/components.<fmt:fmt>", views.compare_components, name="compare_components"),
    path("ladder/", views.ladder, name="ladder"),
    path("ladder.svg", views.ladder_chart, name="ladder_chart"),
    path("ladder.<fmt:fmt>", views.ladder_download, name="ladder_download"),
]
