"""Errors the study services raise; each message names the problem for the person who caused it."""
from django.core.exceptions import PermissionDenied


class StudyError(ValueError):
    """A request that cannot be carried out as asked (bad input, wrong state)."""


class StudyPermissionDenied(PermissionDenied):
    """The user has no role in this study that allows the action."""


class InvitationUsed(StudyError):
    """An invitation link that was already accepted: it is bound to one participant account."""

    def __init__(self, message: str, user_id: int | None) -> None:
        super().__init__(message)
        self.user_id = user_id
