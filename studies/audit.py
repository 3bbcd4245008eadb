"""Append one event to a study's audit log (the model refuses updates and deletes)."""
from __future__ import annotations

from .models import AuditEvent


def record(study, actor, action, *, reason: str = "", attempt=None, participant=None, cell=None,
           **detail) -> AuditEvent:
    if attempt is not None:
        participant = participant or attempt.participant
        cell = cell or attempt.cell
    return AuditEvent.objects.create(
        study=study, actor=actor if actor is not None and actor.is_authenticated else None,
        action=action, reason=reason, attempt=attempt, participant=participant, cell=cell,
        detail={k: v for k, v in detail.items() if v is not None},
    )
