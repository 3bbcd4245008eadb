"""Validation of the explorer's query parameters."""
from __future__ import annotations

import re

from django import forms

from .models import ToolFamily

WHOLE = re.compile(r"[+-]?[0-9]+")
# Beyond any page there can be (and short enough for int(): a page past the end is shown as the last).
PAGE_CAP = 10 ** 18


class ActionLogForm(forms.Form):
    """``family`` must be a tool family; ``page`` a whole number, any whole number: one out of
    range is shown as the nearest page there is, and the page says so (the service clamps it)."""

    family = forms.CharField(required=False)
    page = forms.CharField(required=False)

    def clean_family(self) -> str:
        family = self.cleaned_data["family"]
        if family and family not in ToolFamily.values:
            raise forms.ValidationError(f"There is no tool family {family[:40]!r}; choose one of "
                                        f"{', '.join(ToolFamily.values)}, or none for every call.")
        return family

    def clean_page(self) -> int | None:
        text = self.cleaned_data["page"].strip()
        if not text:
            return None
        if not WHOLE.fullmatch(text):
            raise forms.ValidationError(f"The action log's page must be a whole number such as 2, "
                                        f"not {text[:40]!r}.")
        sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
        return sign * (PAGE_CAP if len(digits) > 18 else min(int(digits), PAGE_CAP))

    def problem(self) -> str:
        """The first problem, as one sentence."""
        return next(str(message) for errors in self.errors.values() for message in errors)


class CompareForm(forms.Form):
    """``trial`` is repeated, two or three whole numbers (a number named twice counts once).  Any
    whole number passes: whether that trial exists is the service's business, and it says so."""

    trial = forms.MultipleChoiceField(required=True, error_messages={
        "required": "Choose two or three trials of one cell to compare."})

    def __init__(self, data, *args, **kwargs):
        super().__init__(data, *args, **kwargs)
        self.fields["trial"].choices = [(v, v) for v in data.getlist("trial")]

    def clean_trial(self) -> list[int]:
        named = self.cleaned_data["trial"]
        bad = next((v for v in named if not (v.isascii() and v.isdigit())), None)
        if bad is not None:
            raise forms.ValidationError(f"Trials are named by their numbers, and {bad[:40]!r} is not a number.")
        huge = next((v for v in named if len(v) > 40), None)  # no trial has one (and int() refuses 4,300 digits)
        if huge is not None:
            raise forms.ValidationError(f"There is no trial {huge[:20]}… ({len(huge):,} digits).")
        ids = list(dict.fromkeys(int(v) for v in named))
        if len(ids) > 3:
            raise forms.ValidationError(f"Choose two or three trials of one cell to compare, not {len(ids)}.")
        if len(ids) < 2:
            repeated = sorted({i for i in ids if [int(v) for v in named].count(i) > 1})
            if repeated:
                raise forms.ValidationError(f"Trial {repeated[0]} is named twice: choose two or three different "
                                            "trials of one cell to compare.")
            raise forms.ValidationError("Choose two or three trials of one cell to compare.")
        return ids
