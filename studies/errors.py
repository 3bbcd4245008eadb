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


class LinkRefused(StudyError):
    """An invitation link refused for whom it is for (an account with staff powers, a scripted
    bot, a withdrawn participant).  The message names them and why, for the team; whoever holds
    the link is told only :attr:`shown_to_holder` (a link may be forwarded: the page must not
    say who withdrew, or when, or whose account is staff)."""

    shown_to_holder = ("This invitation link signs nobody in. If you expected to take part in this study, "
                       "ask the study team for a new link.")


class StudyClosed(StudyError):
    """Work a closed study takes no more (:func:`studies.design.refuse_closed`); the message is
    the team's (who closed it, and the Reopen button)."""
