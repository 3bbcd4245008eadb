"""Helpers shared by the console's test modules (fixtures live in ``conftest.py``)."""
from django.contrib.auth import get_user_model
from django.utils import timezone

from console.briefing import BRIEFING_VERSION
from console.models import BriefingAcknowledgement


def briefed_user(name: str, *, password: bool = True):
    """A participant who has acknowledged the current briefing (password ``pw-<name>-123``)."""
    User = get_user_model()
    user = User.objects.create_user(name, password=f"pw-{name}-123") if password else User.objects.create_user(name)
    BriefingAcknowledgement.objects.create(user=user, version=BRIEFING_VERSION, acknowledged_at=timezone.now())
    return user
