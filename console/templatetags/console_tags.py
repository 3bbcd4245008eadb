import html
import json
import uuid
from functools import lru_cache

from django import template
from django.template.base import render_value_in_context
from django.template.defaulttags import CsrfTokenNode
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@lru_cache(maxsize=16384)
def _reversed(prefix: str, urlconf, name: str, args: tuple) -> str:
    return reverse(name, urlconf=urlconf, args=args)


@register.simple_tag
def shift_url(name: str, *args) -> str:
    """``{% url name args %}`` remembered per process (a URL is the same every time for
    the same name, arguments, script prefix and URLconf): a call's reply has a form per
    row action, each naming the call URL twice."""
    return _reversed(get_script_prefix(), get_urlconf(), name, args)


@register.simple_tag
def new_call_id() -> str:
    """A fresh client-side id for one rendering of a tool form (double submits share it)."""
    return uuid.uuid4().hex


@register.filter
def get(mapping, key):
    return mapping.get(key, "") if hasattr(mapping, "get") else ""


def _escape(value) -> str:
    """``conditional_escape``; a plain ``str`` (every cell's text) escaped directly, as
    Django's ``escape`` does it (``html.escape``), without making a safe string of it."""
    return html.escape(value) if type(value) is str else conditional_escape(value)


def _cell_content(cell) -> str:
    text = _escape(cell.text)
    if cell.copy:
        return f'<button type="button" class="copy" data-copy="{text}" title="Copy {text}">{text}</button>'
    return text


@register.filter
def row_cells(cells) -> SafeString:
    """A table row's cells (:class:`console.present.Cell`), escaped as the template
    would: a row has a dozen cells and a result a hundred rows, so this loop is written
    out here rather than as template nodes (the same markup, several times cheaper)."""
    return mark_safe("".join(f'<td data-sort="{_escape(c.sort)}" class="k-{_escape(c.kind)}">'
                             f"{_cell_content(c)}</td>" for c in cells))


@register.filter
def card_fields(fields) -> SafeString:
    """A card's (label, cell) fields as ``<dt>``/``<dd>`` pairs (see :func:`row_cells`)."""
    return mark_safe("".join(f"<div><dt>{_escape(label)}</dt><dd class=\"k-{_escape(c.kind)}\">"
                             f"{_cell_content(c)}</dd></div>" for label, c in fields))


def _value(value, context) -> str:
    """``{{ value }}`` as the template writes it (escaped; a number localised)."""
    return html.escape(value) if type(value) is str else render_value_in_context(value, context)


def _row_action(context, action, target, csrf: str, url: str) -> str:
    """One row action's form: one metered call of a write tool (see ``console.present.Action``)."""
    tool, label = _value(action.tool, context), _value(action.label, context)
    confirm = _value(action.confirm, context) if action.confirm else ""
    fixed = "".join(f'<input type="hidden" name="arg_{_value(name, context)}" value="{_value(value, context)}">'
                    for name, value in action.fixed.items())
    inputs = "".join(
        f'<input type="text" inputmode="{"numeric" if field.kind == "int" else "decimal"}"'
        f' name="arg_{_value(field.name, context)}" value="{_value(field.value, context)}" size="6"'
        f' aria-label="{_value(field.label, context)} for {_value(target, context)}">' for field in action.inputs)
    confirm_attrs = f' hx-confirm="{confirm}" data-late="1"' if confirm else ""
    late = f'<span class="late" title="{confirm}">lands after close</span>' if confirm else ""
    key = f" · key {_value(action.key, context)}" if action.key else ""
    return (f'\n<form class="row-action" method="post" action="{url}"\n'
            f'      hx-post="{url}" hx-target="next .row-status" hx-select=".outcome" hx-swap="innerHTML"\n'
            f'      hx-disabled-elt="find button" data-spends="1" data-key="{_value(action.key, context)}"'
            f' data-tool="{tool}"{confirm_attrs}>\n'
            f"  {csrf}\n"
            f'  <input type="hidden" name="tool" value="{tool}">\n'
            f'  <input type="hidden" name="call_id" value="{new_call_id()}">\n'
            f"  {fixed}\n"
            f"  {inputs}\n"
            f"  {late}\n"
            f'  <button type="submit" title="{label} ({tool}, 1 operation){key}">{label}</button>\n'
            "</form>\n")


def _forms_of(context, actions, target) -> str:
    if not actions:
        return ""
    csrf = CsrfTokenNode().render(context)
    url = conditional_escape(shift_url("console:shift_call", context["shift"].pk))
    return "".join(_row_action(context, action, target, csrf, url) for action in actions)


@register.simple_tag(takes_context=True)
def row_actions(context, actions, target) -> SafeString:
    """The forms of a card's or a row's actions, each one metered call.  Written out here
    rather than as an included template: a result has a form per row."""
    return mark_safe(_forms_of(context, actions, target))


@register.simple_tag(takes_context=True)
def table_rows(context, table) -> SafeString:
    """A result table's ``<tr>`` rows: what each row is (its key, done or urgent), its
    actions while the shift is active, its cells (:func:`row_cells`).  Written out here
    rather than as template nodes: a result has up to a hundred rows."""
    active = context["shift"].status == "active"
    has_actions = table.has_actions
    out = []
    for row in table.rows:
        key = _value(row.key, context)
        out.append(f'\n      <tr data-key="{key}" tabindex="-1" class="'
                   f'{"done" if row.done else "urgent" if row.urgent else ""}">\n        ')
        if has_actions:
            out.append('<td class="row-actions">\n          ')
            if row.done:
                out.append(f'<span class="row-status">{_value(row.done, context)}</span>\n          ')
            elif active:
                pick = (f'<input type="checkbox" class="pick" aria-label="Tick {key} for a batch'
                        f' ({_value(row.actions[0].label, context)})" title="Tick for a batch · key x">'
                        if row.actions else "")
                out.append(f"\n            {pick}\n            {_forms_of(context, row.actions, row.key)}"
                           '\n            <span class="row-status" aria-live="polite"></span>\n          ')
            out.append("\n        </td>")
        out.append(f"\n        {row_cells(row.cells)}\n      </tr>\n    ")
    return mark_safe("".join(out))


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


@register.simple_tag
def present_call(call):
    """The table/card presentation of a stored call (:mod:`console.present`), with the
    row actions already made on its rows since it was read, and for inventory rows the
    supply sources the shift has read (two small queries, only for those results)."""
    from console import present
    from shifts.models import ShiftCall

    if call is None:
        return None
    # A call just made is the shift's latest (shifts.calls marks it): no query for later calls.
    later = [] if call.is_latest else (
        ShiftCall.objects.filter(shift_id=call.shift_id, seq__gt=call.seq, is_error=False,
                                 tool__in=list(present.DONE_WORDS)).only("seq", "tool", "arguments", "is_error"))
    sources = {}
    if call.tool == "list_inventory":
        reads = ShiftCall.objects.filter(shift_id=call.shift_id, seq__lt=call.seq, is_error=False,
                                         tool__in=present.SOURCE_TOOLS).order_by("seq")
        sources = present.known_sources(reads)
    horizon_end = None
    if call.tool in present.SOURCE_TOOLS:
        horizon_end = _horizon_end(call.shift_id)
    return present.present(call, sources=sources, done=present.done_since(later), horizon_end=horizon_end)


def _horizon_end(shift_id: int):
    """When the shift's store closes for good (store time): its task's start plus horizon.
    Used only to warn about purchase orders landing too late; never shown as the task."""
    from datetime import datetime, timedelta

    from environment.tasks import get_task
    from shifts.models import Shift

    task = get_task(Shift.objects.values_list("task_id", flat=True).get(pk=shift_id))
    start = datetime.fromisoformat(task.start.replace("Z", "+00:00")).replace(tzinfo=None)
    return start + timedelta(days=task.horizon_days)


# The reads a shift needs most, one click each from above the result (list tools with 100 rows).
QUICK_READS = (("list_orders", "Orders"), ("list_returns", "Returns"), ("list_products", "Products"),
               ("list_inventory", "Inventory"), ("search_supply_catalog", "Supply"),
               ("list_purchase_orders", "Purchase orders"), ("competitor_watch", "Competitors"))


@register.inclusion_tag("console/_quick_reads.html", takes_context=True)
def quick_reads(context):
    return {"shift": context["shift"], "quick_reads": QUICK_READS, "csrf_token": context.get("csrf_token")}
