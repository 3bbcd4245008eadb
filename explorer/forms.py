"""Validation of the explorer's query parameters."""
from __future__ import annotations

import re

from django import forms

from .models import ToolFamily, Trial

WHOLE = re.compile(r"[+-]?[0-9]+")
CELL = re.compile(r"(?P<task>.{1,64})-(?P<seed>[0-9]{1,10})")  # a task id (any text), then its seed
SEED_MAX = 2 ** 31 - 1  # the seed column's largest
# Beyond any page there can be (and short enough for int(): a page past the end is shown as the last).
PAGE_CAP = 10 ** 18


def whole_page(text: str, what: str) -> int | None:
    """A page number as typed: any whole number (None for none); out of range is the service's business."""
    text = text.strip()
    if not text:
        return None
    if not WHOLE.fullmatch(text):
        raise forms.ValidationError(f"The {what}'s page must be a whole number such as 2, not {text[:40]!r}.")
    sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
    return sign * (PAGE_CAP if len(digits) > 18 else min(int(digits), PAGE_CAP))


class _OneProblem(forms.Form):
    def problem(self) -> str:
        """The first problem, as one sentence."""
        return next(str(message) for errors in self.errors.values() for message in errors)


class ActionLogForm(_OneProblem):
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
        return whole_page(self.cleaned_data["page"], "action log")


class TrialListForm(_OneProblem):
    """``cell`` names a cell as ``task-seed`` (``steady-7``); ``kind`` a player kind; ``page`` as
    :class:`ActionLogForm`'s.  A well-formed cell that has no trial is not an error: it lists none."""

    cell = forms.CharField(required=False)
    kind = forms.CharField(required=False)
    page = forms.CharField(required=False)

    def clean_cell(self) -> str:
        cell = self.cleaned_data["cell"].strip()
        if not cell:
            return ""
        named = CELL.fullmatch(cell)
        if named is None or int(named["seed"]) > SEED_MAX:
            raise forms.ValidationError(f"{cell[:40]!r} is not a cell: name one as task-seed, such as steady-7.")
        return f"{named['task']}-{int(named['seed'])}"  # steady-007 is steady-7, as the list names it

    def clean_kind(self) -> str:
        kind = self.cleaned_data["kind"]
        if kind and kind not in Trial.PlayerKind.values:
            raise forms.ValidationError(f"There is no kind of player {kind[:40]!r}; choose one of "
                                        f"{', '.join(Trial.PlayerKind.values)}, or none for every trial.")
        return kind

    def clean_page(self) -> int | None:
        return whole_page(self.cleaned_data["page"], "trial list")


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
