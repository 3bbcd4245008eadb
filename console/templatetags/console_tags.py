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
