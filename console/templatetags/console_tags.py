import html
import json
import os
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django import template
from django.template.base import render_value_in_context
from django.template.defaulttags import CsrfTokenNode
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from console import endpage, present
from console.present import URGENT_HOURS
from shifts import results
from shifts.clock import hms
from shifts.ending import shown_to_participant
from shifts.models import Shift, ShiftCall

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


def call_detail_urls(shift_pk: int) -> Callable[[Any], str]:
    """:func:`call_detail_url` of ``shift_pk`` for any call number: the URL is reversed once
    with :data:`_MARK_SHIFT` for the call number, its last part, which is then filled in."""
    head, _mark, tail = shift_url("console:shift_call_detail", shift_pk, _MARK_SHIFT).rpartition(str(_MARK_SHIFT))
    return lambda seq: f"{head}{int(seq)}{tail}"


@register.simple_tag
def call_detail_url(shift_pk: int, seq: int) -> str:
    """``{% shift_url 'console:shift_call_detail' shift_pk seq %}``, remembered per shift
    (:func:`call_detail_urls`: every reply names a new call number, which ``shift_url`` would
    reverse afresh)."""
    return call_detail_urls(shift_pk)(seq)


@register.simple_tag
def read_as_of(call, shift) -> tuple[str, int] | None:
    """``{% read_as_of shown shift as read %}``: the store time and window the call's result
    describes (:func:`shifts.results.read_as_of`), or None without a header."""
    return results.read_as_of(call, results.window_minutes(shift))


@register.simple_tag(takes_context=True)
def new_call_id(context) -> str:
    """A fresh client-side id for one rendering of a tool form (double submits share it);
    a mark in place of it when the form is rendered to be kept (:func:`tool_form`)."""
    return _CALL_ID_MARK if context.get(_KEEPING) else _fresh_call_id()


def _fresh_call_id() -> str:
    """A fresh call id: 128 random bits as 32 hex digits, as ``uuid.uuid4().hex`` writes one
    (without building a UUID: a reply has a form, and so an id, per row action)."""
    return os.urandom(16).hex()


_CALL_ID_MARK, _CSRF_MARK, _KEEPING = "\x00call-id\x00", "\x00csrf\x00", "_keeping_tool_form"
_CSRF_INPUT = f'<input type="hidden" name="csrfmiddlewaretoken" value="{_CSRF_MARK}">'


class _ShiftNumber:
    """What ``_tool_form.html`` reads of the shift: its number (in the form's URL)."""

    def __init__(self, pk: int) -> None:
        self.pk = pk


_MARK_SHIFT = 987654321  # a number a URL is reversed with, then replaced (a kept form's shift, a call)


@lru_cache(maxsize=1024)
def _kept_tool_form(name: str, oob: bool, values: tuple, prefix: str, urlconf) -> tuple[str, str]:
    """The form rendered with marks for its call id, CSRF token and shift number, and the
    URL it posts to as rendered with that mark (replaced in its two attributes)."""
    from django.template.loader import get_template

    from console.toolforms import tool_forms

    html = get_template("console/_tool_form.html").render({
        "form": tool_forms()[name], "values": dict(values), "shift": _ShiftNumber(_MARK_SHIFT), "oob": oob,
        "csrf_token": _CSRF_MARK, _KEEPING: True})
    return html, conditional_escape(shift_url("console:shift_call", _MARK_SHIFT))


@register.simple_tag(takes_context=True)
def tool_form(context, form, oob=False, call_id: str = "") -> SafeString:
    """``{% include "console/_tool_form.html" %}``, rendered once per tool, refill values
    and script prefix and kept (a call's reply carries its tool's form again, and the
    workspace all 29): each copy gets the shift's URL, a call id (``call_id``, the one the
    reply answers, the form then marked ``data-held`` for the page's script, which renews it
    soon; else a fresh one) and this request's CSRF token.  The URL is replaced only
    in the ``action`` and ``hx-post`` attributes, where no refill value can reach (a value's
    quotes are escaped)."""
    values = context.get("values") or {}
    kept, marked_url = _kept_tool_form(form.name, bool(oob), tuple(sorted(values.items())),
                                       get_script_prefix(), get_urlconf())
    url = conditional_escape(shift_url("console:shift_call", context["shift"].pk))
    if call_id:
        kept = kept.replace("<form ", '<form data-held="1" ', 1)
    return mark_safe(kept.replace(f'action="{marked_url}"', f'action="{url}"')
                     .replace(f'hx-post="{marked_url}"', f'hx-post="{url}"')
                     .replace(_CSRF_INPUT, CsrfTokenNode().render(context))
                     .replace(_CALL_ID_MARK, call_id or _fresh_call_id()))


@register.filter
def get(mapping, key):
    return mapping.get(key, "") if hasattr(mapping, "get") else ""


def _escape(value) -> str:
    """``conditional_escape``; a plain ``str`` (every cell's text) escaped directly, as
    Django's ``escape`` does it (``html.escape``), without making a safe string of it."""
    return html.escape(value) if type(value) is str else conditional_escape(value)


def _cell_content(cell) -> str:
    text = html.escape(cell.text)
    if cell.copy:
        return f'<button type="button" class="copy" data-copy="{text}" title="Copy {text}">{text}</button>'
    return text


def _cells_html(cells) -> str:
    """:func:`row_cells`' markup.  A cell's text and sort key are ``str`` (escaped as the
    template escapes a ``str``); its kind is one of :func:`console.present.cell`'s names,
    which need no escaping."""
    out = []
    for cell in cells:
        out.append(f'<td data-sort="{html.escape(cell.sort)}" class="k-{cell.kind}">{_cell_content(cell)}</td>')
    return "".join(out)


@register.filter
def row_cells(cells) -> SafeString:
    """A table row's cells (:class:`console.present.Cell`), escaped as the template
    would: a row has a dozen cells and a result a hundred rows, so this loop is written
    out here rather than as template nodes (the same markup, several times cheaper)."""
    return mark_safe(_cells_html(cells))


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
    confirm_attrs = (f' hx-confirm="{confirm}"' if confirm else "") + (' data-late="1"' if action.late else "")
    late = f'<span class="late" title="{confirm}">lands after close</span>' if action.late else ""
    key = f" · key {_value(action.key, context)}" if action.key else ""
    return (f'\n<form class="row-action" method="post" action="{url}"\n'
            f'      hx-post="{url}" hx-target="next .row-status" hx-select=".repeat-banner, .window-marker, .outcome" hx-swap="innerHTML"\n'
            f'      hx-disabled-elt="find button" data-spends="1" data-key="{_value(action.key, context)}"'
            f' data-tool="{tool}"{confirm_attrs}>\n'
            f"  {csrf}\n"
            f'  <input type="hidden" name="tool" value="{tool}">\n'
            f'  <input type="hidden" name="call_id" value="{_fresh_call_id()}">\n'
            f"  {fixed}\n"
            f"  {inputs}\n"
            f"  {late}\n"
            f'  <button type="submit" aria-label="{label} {_value(target, context)}"'
            f' title="{label} ({tool}, 1 operation){key}">{label}</button>\n'
            "</form>\n")


def _form_parts(context) -> tuple[str, str]:
    """What every row action's form of one rendering shares: the CSRF input and the call URL."""
    return CsrfTokenNode().render(context), conditional_escape(shift_url("console:shift_call", context["shift"].pk))


def _forms_of(context, actions, target, parts: tuple[str, str] | None = None) -> str:
    if not actions:
        return ""
    csrf, url = parts or _form_parts(context)
    return "".join(_row_action(context, action, target, csrf, url) for action in actions)


@register.simple_tag(takes_context=True)
def row_actions(context, actions, target) -> SafeString:
    """The forms of a card's or a row's actions, each one metered call.  Written out here
    rather than as an included template: a result has a form per row."""
    return mark_safe(_forms_of(context, actions, target))


def page_reads_html(context, table) -> str:
    """A paged table's Previous page / Next page: each the same read again, one metered call
    whose result replaces the result panel ("" when the table has neither, or the shift takes
    no calls)."""
    actions = [a for a in (table.previous_page, table.next_page) if a is not None]
    if not actions or not context["shift"].takes_calls:
        return ""
    csrf, url = _form_parts(context)
    forms = []
    for action in actions:
        tool, label = _value(action.tool, context), _value(action.label, context)
        fixed = "".join(f'<input type="hidden" name="arg_{_value(name, context)}" value="{_value(value, context)}">'
                        for name, value in action.fixed.items())
        forms.append(f'<form class="page-read" method="post" action="{url}" hx-post="{url}" hx-target="#result"'
                     f' hx-swap="innerHTML" hx-disabled-elt="find button" data-spends="1">{csrf}'
                     f'<input type="hidden" name="tool" value="{tool}">'
                     f'<input type="hidden" name="call_id" value="{_fresh_call_id()}">{fixed}'
                     f'<button type="submit" title="{tool}, page {_value(action.fixed["page"], context)}'
                     f' (1 operation)">{label}</button></form>')
    return (f' <span class="page-reads" role="group" aria-label="Pages of the {_value(table.title, context)}">'
            f'{"".join(forms)}</span>')


@register.simple_tag(takes_context=True)
def page_reads(context, table) -> SafeString:
    return mark_safe(page_reads_html(context, table))


@register.simple_tag(takes_context=True)
def table_rows(context, table) -> SafeString:
    """A result table's ``<tr>`` rows: what each row is (its key, done or urgent), its
    actions while the shift is active, its cells (:func:`row_cells`).  Written out here
    rather than as template nodes: a result has up to a hundred rows."""
    active = context["shift"].takes_calls and not context.get("earlier_window")
    has_actions = table.has_actions
    parts = _form_parts(context) if has_actions and active else None  # worked out once, not once a row
    out = []
    for row in table.rows:
        key = html.escape(row.key)  # a row's key is a str (console.present._row_key)
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
                out.append(f"\n            {pick}\n            {_forms_of(context, row.actions, row.key, parts)}"
                           '\n            <span class="row-status" aria-live="polite"></span>\n          ')
            out.append("\n        </td>")
        out.append(f"\n        {_cells_html(row.cells)}\n      </tr>\n    ")
    return mark_safe("".join(out))


@register.filter
def end_reason_shown(reason: str) -> str:
    """Why a shift ended, as its participant may see it (:func:`shifts.ending.shown_to_participant`)."""
    return shown_to_participant(reason)


@register.filter
def compact_json(value) -> str:
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


@register.filter
def duration(seconds) -> str:
    """Whole seconds as H:MM:SS."""
    try:
        return hms(int(seconds))
    except (TypeError, ValueError):
        return ""


register.filter("usd", endpage.usd)


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


@register.simple_tag
def urgent_hours() -> str:
    """Hours left within which an open return is marked urgent, for the inbox's script."""
    return f"{URGENT_HOURS:g}"


@register.filter
def store_time(value) -> str:
    """A tool result's timestamp ("2026-08-01T12:00Z") as the header writes time ("2026-08-01 12:00")."""
    text = str(value or "")
    return text.replace("T", " ").removesuffix("Z") if text else "—"


@register.simple_tag
def present_call(call, calls=None):
    """The table/card presentation of a stored call (:mod:`console.present`), with the
    row actions already made on its rows since it was read, and for inventory rows the
    supply sources the shift has read (two small queries, only for those results).
    ``calls``, the shift's calls as the caller knows them all (records or stored calls),
    says which of them are supply reads: with none, inventory rows need no query."""
    if call is None:
        return None
    # A call just made is the shift's latest (shifts.calls marks it): no query for later calls.
    later = [] if call.is_latest else (
        ShiftCall.objects.filter(shift_id=call.shift_id, seq__gt=call.seq, is_error=False,
                                 tool__in=list(present.DONE_WORDS))
        .only("seq", "tool", "arguments", "is_error", "result_text", "store_header"))  # a refund's: was it taken?
    sources = {}
    if call.tool == "list_inventory":
        seqs = None if calls is None else [
            c.seq for c in calls if c.seq < call.seq and not c.is_error and c.tool in present.SOURCE_TOOLS]
        if seqs is None or seqs:  # the caller's calls name no supply read: nothing to query
            reads = ShiftCall.objects.filter(shift_id=call.shift_id, seq__lt=call.seq, is_error=False,
                                             tool__in=present.SOURCE_TOOLS).order_by("seq")
            sources = present.known_sources(reads if seqs is None else reads.filter(seq__in=seqs))
    horizon_end = None
    if call.tool in present.SOURCE_TOOLS:
        horizon_end = _horizon_end(call.shift_id)
    return present.present(call, sources=sources, done=present.done_since(later), horizon_end=horizon_end)


def _horizon_end(shift_id: int):
    """When the shift's store closes for good (store time): its task's start plus horizon.
    Used only to warn about purchase orders landing too late; never shown as the task."""
    from datetime import datetime, timedelta

    from shifts.installed import task_of

    task = task_of(Shift.objects.values_list("task_id", flat=True).get(pk=shift_id))
    start = datetime.fromisoformat(task.start.replace("Z", "+00:00")).replace(tzinfo=None)
    return start + timedelta(days=task.horizon_days)


# The reads a shift needs most, one click each from above the result (list tools with 100 rows).
QUICK_READS = (("list_orders", "Orders"), ("list_returns", "Returns"), ("list_products", "Products"),
               ("list_inventory", "Inventory"), ("search_supply_catalog", "Supply"),
               ("list_purchase_orders", "Purchase orders"), ("competitor_watch", "Competitors"))


@register.inclusion_tag("console/_quick_reads.html", takes_context=True)
def quick_reads(context):
    return {"shift": context["shift"], "quick_reads": QUICK_READS, "csrf_token": context.get("csrf_token")}
