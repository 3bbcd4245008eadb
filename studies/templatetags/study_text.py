"""Filters that write stored values for people: ``{{ cents|dollars }}``, ``{{ seconds|duration }}``,
``{{ composite|score }}``, ``{{ name|component_label }}``, ``{{ value|component:name }}``, ``{{ call.arguments|arguments }}``,
``{{ event.detail|detail }}``, ``{{ error|sentence }}`` (see :mod:`studies.wording`)."""
from __future__ import annotations

from django import template

from studies import wording

register = template.Library()
register.filter("dollars", wording.dollars)
register.filter("duration", wording.duration_text)
register.filter("score", wording.score_text)
register.filter("component_label", wording.component_label)
register.filter("component", lambda value, name: wording.component_text(name, value))
register.filter("arguments", wording.arguments_text)
register.filter("detail", wording.detail_text)
register.filter("sentence", wording.sentence)
