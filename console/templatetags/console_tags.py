import json
import uuid

from django import template

register = template.Library()


@register.simple_tag
def new_call_id() -> str:
    """A fresh client-side id for one rendering of a tool form (double submits share it)."""
    return uuid.uuid4().hex


@register.filter
def get(mapping, key):
    return mapping.get(key, "") if hasattr(mapping, "get") else ""


@register.filter
def compact_json(value) -> str:
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


@register.filter
def duration(seconds) -> str:
    """Whole seconds as H:MM:SS."""
    try:
        seconds = max(0, int(seconds))
    except (TypeError, ValueError):
        return ""
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


@register.filter
def percent(value) -> str:
    """A rate stored as decimal text ("0.8125") as a percentage ("81.2%"); "—" if undefined."""
    if value in (None, ""):
        return "—"
    from decimal import Decimal, InvalidOperation

    try:
        return f"{Decimal(str(value)) * 100:.1f}%"
    except InvalidOperation:
        return "—"


@register.filter
def store_time(value) -> str:
    """A tool result's timestamp ("2026-08-01T12:00Z") as the header writes time ("2026-08-01 12:00")."""
    text = str(value or "")
    return text.replace("T", " ").removesuffix("Z") if text else "—"
