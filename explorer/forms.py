"""Validation of the explorer's query parameters."""
from __future__ import annotations

from django import forms

from .models import ToolFamily


class ActionLogForm(forms.Form):
    family = forms.ChoiceField(choices=[("", "All families"), *ToolFamily.choices], required=False)
    page = forms.IntegerField(min_value=1, required=False)


class CompareForm(forms.Form):
    trial = forms.TypedMultipleChoiceField(coerce=int, required=True, error_messages={
        "required": "Choose two or three trials of one cell to compare."})

    def __init__(self, data, *args, **kwargs):
        super().__init__(data, *args, **kwargs)
        # Any whole number is a valid choice here; whether the trial exists is the service's business.
        # (at most 18 digits: larger numbers name no row and overflow the database's integers).
        self.fields["trial"].choices = [(v, v) for v in data.getlist("trial")
                                        if v.isascii() and v.isdigit() and len(v) <= 18]
        self.fields["trial"].error_messages["invalid_choice"] = "Trials are named by their numbers."

    def clean_trial(self) -> list[int]:
        ids = list(dict.fromkeys(self.cleaned_data["trial"]))
        if not 2 <= len(ids) <= 3:
            raise forms.ValidationError("Choose two or three trials of one cell to compare.")
        return ids
