"""Shift names as people read them (:mod:`shifts.naming`), never the database id."""
from django import template

from shifts.models import Shift
from shifts.naming import name_of, names_of

register = template.Library()


@register.simple_tag
def shift_name(shift: Shift) -> str:
    """``{% shift_name shift %}``: "Practice shift", "Shift 2", ..."""
    return name_of(shift)


@register.simple_tag
def shift_names(shifts) -> dict[int, str]:
    """``{% shift_names shifts as names %}`` for a participant's whole list (no query)."""
    return names_of(shifts)
