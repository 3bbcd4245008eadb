"""Errors the study services raise; each message names the problem for the person who caused it."""
from django.core.exceptions import PermissionDenied


class StudyError(ValueError):
    """A request that cannot be carried out as asked (bad input, wrong state)."""


class StudyPermissionDenied(PermissionDenied):
    """The user has no role in this study that allows the action."""
