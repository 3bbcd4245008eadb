import json
import uuid
from functools import lru_cache

from django import template
from django.utils.html import conditional_escape
from django.urls import get_script_prefix, get_urlconf, reverse
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


def _cell_content(cell) -> str:
    text = conditional_escape(cell.text)
    if cell.copy:
        return f'<button type="button" class="copy" data-copy="{text}" title="Copy {text}">{text}</button>'
    return text


@register.filter
def row_cells(cells) -> SafeString:
    """A table row's cells (:class:`console.present.Cell`), escaped as the template
    would: a row has a dozen cells and a result a hundred rows, so this loop is written
    out here rather than as template nodes (the same markup, several times cheaper)."""
    return mark_safe("".join(f'<td data-sort="{conditional_escape(c.sort)}" class="k-{conditional_escape(c.kind)}">'
                             f"{_cell_content(c)}</td>" for c in cells))


@register.filter
def card_fields(fields) -> SafeString:
    """A card's (label, cell) fields as ``<dt>``/``<dd>`` pairs (see :func:`row_cells`)."""
    return mark_safe("".join(f"<div><dt>{conditional_escape(label)}</dt><dd class=\"k-{conditional_escape(c.kind)}\">"
                             f"{_cell_content(c)}</dd></div>" for label, c in fields))


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
