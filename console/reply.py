"""A tool call's reply, written out in Python: the markup the console's templates give.

The reply to a tool call (``templates/console/_call_response.html``) is the result panel,
the store header, the new history row, the inbox and cached views when the call changed
them, and the tool's form again.  Rendered through the template engine that was the
largest part of a call's CPU after the core (a node and a variable lookup per value);
here each panel is one function building the same text with f-strings, escaping every
value as the template does (``{{ value }}``: a ``str`` through ``html.escape``, anything
else through Django's own :func:`~django.template.base.render_value_in_context`).

The templates stay the markup's definition: the workspace page and the re-read view
still render them, and ``tests/test_console_reply.py`` checks every function here
against its template byte for byte, over calls of every tool, refusals included.  A
change to a template must be made here too (that test says where they differ).
"""
from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from django.template import Context
from django.template.base import render_value_in_context
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from shifts.results import CallResult, read_as_of, window_minutes

from .present import URGENT_HOURS, Card, Presentation, Table
from .templatetags.console_tags import (
    _forms_of,
    call_detail_url,
    call_detail_urls,
    compact_json,
    new_call_id,
    page_reads_html,
    shift_url,
    store_time,
    table_rows,
)

_PLAIN = Context(autoescape=True)  # how a value that is not a str is written: localised, escaped
_OOB = ' hx-swap-oob="true"'
_STALE = ' class="stale"'
_EARLIER = ' <small class="muted">(earlier window)</small>'
_CLOSED_TAG = '<span class="closed-tag">store closed</span>'


def _v(value: Any) -> str:
    """``{{ value }}`` as the template writes it."""
    if type(value) is str:
        return html.escape(value)
    if type(value) is int:
        return str(value)
    return render_value_in_context(value, _PLAIN)


def _or_blank(value: Any) -> str:
    """``{{ value|default_if_none:'' }}``."""
    return "" if value is None else _v(value)


def _url(name: str, *args: Any) -> str:
    return conditional_escape(shift_url(name, *args))


def _url_of_call(shift_pk: int, seq: Any) -> str:
    return conditional_escape(call_detail_url(shift_pk, seq))


def _urls_of_calls(shift_pk: int) -> Callable[[Any], str]:
    """:func:`_url_of_call` of ``shift_pk`` for a panel's many calls (the URL reversed once)."""
    url = call_detail_urls(shift_pk)
    return lambda seq: conditional_escape(url(seq))


def csrf_input(token: str) -> str:
    """``{% csrf_token %}`` with the request's token."""
    return f'<input type="hidden" name="csrfmiddlewaretoken" value="{_v(token)}">' if token else ""


class Page:
    """What every panel needs of the request: the shift (its number and status) and the
    CSRF token; and a template context for the tags the panels share with the templates."""

    def __init__(self, shift: Any, csrf_token: str) -> None:
        self.shift = shift
        self.active = shift.takes_calls
        self.csrf = csrf_input(csrf_token)
        self.context = Context({"shift": shift, "csrf_token": csrf_token}, autoescape=True)
        self.call_url = _url("console:shift_call", shift.pk)


# --- the store header (templates/console/_header.html) -------------------------------------------

def header_html(header: Any, oob: bool = False) -> str:
    closed = header is not None and header.closed
    out = [f'<div id="store-header" class="store-header{" closed" if closed else ""}"'
           f'{_OOB if oob else ""}\n'
           f'     data-ops-left="{_or_blank(header.ops_left if header else "")}"'
           f' data-window="{_or_blank(header.window if header else "")}"'
           f' data-windows="{_or_blank(header.windows if header else "")}"'
           f' data-time="{_or_blank(header.time if header else "")}">\n  ']
    if header:
        out.append(
            f"\n    <span><b>Time</b> {_v(header.time)} UTC</span>\n"
            f"    <span><b>Window</b> {_v(header.window)} of {_v(header.windows)}</span>\n"
            f'    <span class="ops{" low" if header.ops_left <= 1 else ""}"><b>Operations left</b>'
            f' <span class="ops-left">{_v(header.ops_left)}</span> of {_v(header.ops_total)}</span>\n'
            f"    <span><b>Cash</b> {_v(header.cash)}</span>\n"
            f"    <span><b>Net assets</b> {_v(header.net_assets)}</span>\n"
            f"    <span><b>Rating</b> {_v(header.rating)}</span>\n"
            f'    {_CLOSED_TAG if header.closed else ""}\n  ')
    else:
        out.append("\n    <span>No store status read yet.</span>\n  ")
    out.append("\n</div>\n")
    return "".join(out)


# --- one history row (templates/console/_history_item.html) --------------------------------------

def history_item_html(call: Any, shift_pk: int) -> str:
    seq = _v(call.seq)
    args = f'<span class="args-line">{_v(compact_json(call.arguments))}</span>' if call.arguments else ""
    window = "?" if call.window is None else _v(call.window)
    return (f'\n<li id="call-{seq}" class="{"is-error" if call.is_error else ""}">\n'
            f'  <a href="?call={seq}" hx-get="{_url_of_call(shift_pk, call.seq)}"'
            ' hx-target="#result" hx-swap="innerHTML">\n'
            f"    #{seq} <code>{_v(call.tool)}</code></a>\n"
            f"  {args}\n"
            f'  <small>window {window}{" · 1 op" if call.spent_operation else ""}'
            f'{" · error" if call.is_error else ""}</small>\n'
            "</li>\n")


# --- a result table (templates/console/_table.html) ----------------------------------------------

def table_html(table: Table, page: Page) -> str:
    title = table.title
    capped = title and title[0].upper() + title[1:]
    note = f' <span class="muted">{_v(table.note)}</span>' if table.note else ""
    has_actions = table.has_actions
    batch = ("\n  <div class=\"batch\" data-batch>\n"
             "    <span class=\"batch-count\" aria-live=\"polite\">Tick rows to queue their actions: each is one"
             " operation, sent one after another.</span>\n"
             "    <button type=\"button\" class=\"batch-send\" disabled>Send 0 operations</button>\n"
             "    <span class=\"batch-status\" role=\"status\"></span>\n  </div>\n  "
             if has_actions and page.active else "")
    action_head = ""
    if has_actions:
        pick_all = (' <input type="checkbox" class="pick-all" aria-label="Tick every shown row that has an action">'
                    if page.active else "")
        action_head = f'<th scope="col">Action{pick_all}</th>'
    columns = "".join(f'<th scope="col" aria-sort="none"><button type="button" class="sort" data-col="{index}">'
                      f"{_v(column)}</button></th>" for index, column in enumerate(table.columns))
    return ('<div class="table-block">\n  <div class="table-tools">\n'
            f'    <b class="table-title">{_v(capped)}</b>{note}{page_reads_html(page.context, table)}\n'
            f'    <label class="filter">Filter <input type="search" class="table-filter"'
            f' aria-label="Filter the {_v(title)} rows"></label>\n  </div>\n  {batch}\n'
            '  <div class="table-scroll">\n  <table class="data compact result-table sortable">\n'
            f"    <thead><tr>\n      {action_head}\n      {columns}\n    </tr></thead>\n"
            f"    <tbody>\n    {table_rows(page.context, table)}\n    </tbody>\n  </table>\n  </div>\n</div>\n")


# --- a result card (templates/console/_card.html) ------------------------------------------------

def _card_fields(fields) -> str:
    from .templatetags.console_tags import card_fields

    return card_fields(fields)


def card_html(card: Card, page: Page) -> str:
    out = [f'<div class="card" data-key="{_v(card.key)}">\n  ']
    if card.title:
        out.append(f"<h4>{_v(card.title)}</h4>")
    out.append("\n  ")
    if card.done:
        out.append(f'\n    <div class="card-actions"><span class="row-status">{_v(card.done)}</span></div>\n  ')
    elif card.actions and page.active:
        out.append(f'\n    <div class="card-actions">{_forms_of(page.context, card.actions, card.key)}'
                   '<span class="row-status" aria-live="polite"></span></div>\n  ')
    out.append(f'\n  <dl class="fields">\n    {_card_fields(card.fields)}\n  </dl>\n  ')
    lines = card.lines
    if lines and page.active:
        confirm = (f' data-moq="{_v(lines.moq)}"' if lines.moq else "") + (
            f' hx-confirm="{_v(lines.warning)}"' if lines.warning else "")
        minimum = f" (the vendor's minimum: {_v(lines.moq)})" if lines.moq else ""
        warning = f'<p class="late-warning" role="alert">{_v(lines.warning)}</p>' if lines.warning else ""
        skus = "".join(
            f"\n        <label>{_v(size)} {_v(colour)} <small class=\"muted\">{_v(cost)}</small>\n"
            f'          <input type="number" min="0" step="1" data-sku="{_v(sku)}" class="po-line"'
            f' aria-label="Units of {_v(sku)}"></label>\n      ' for sku, size, colour, cost in lines.skus)
        out.append(
            f'\n  \n  <form class="po-lines" method="post" action="{page.call_url}"\n'
            f'        hx-post="{page.call_url}" hx-target="#result" hx-swap="innerHTML"\n'
            f'        hx-disabled-elt="find button" data-spends="1"{confirm}>\n'
            f"    {page.csrf}\n"
            '    <input type="hidden" name="tool" value="place_purchase_order">\n'
            f'    <input type="hidden" name="call_id" value="{new_call_id(page.context)}">\n'
            f'    <input type="hidden" name="arg_supply_product_id" value="{_v(lines.supply_product_id)}">\n'
            '    <input type="hidden" name="arg_lines" value="">\n'
            f"    <fieldset><legend>Purchase order by size and colour ({_v(lines.supply_product_id)})</legend>\n"
            f"      {warning}\n"
            f'      <div class="po-grid">\n      {skus}\n      </div>\n'
            f'      <p><span class="po-total">0</span> units{minimum} · <button type="submit">Place purchase order'
            "</button></p>\n"
            '      <p class="po-short" role="alert" hidden></p>\n'
            "    </fieldset>\n  </form>\n  ")
    out.append("\n  ")
    out.extend(table_html(table, page) for table in card.tables)
    out.append("\n</div>\n")
    return "".join(out)


# --- the result panel (templates/console/_result.html) -------------------------------------------

def result_html(shown: Any, result: CallResult, view: Presentation | None, page: Page,
                rereading: bool = False, repeated: bool = False) -> str:
    """The panel for ``shown`` (``view`` is its presentation, :func:`console.present.present`)."""
    if not shown:
        return "\n\n  <p class=\"muted\">The result of your next call appears here.</p>\n\n"
    assert view is not None
    header = result.header
    seq, tool = _v(shown.seq), _v(shown.tool)
    out = [f'\n\n  \n  <div class="result{" is-error" if shown.is_error else ""}" data-seq="{seq}"'
           f' data-tool="{tool}">\n    ']
    read = read_as_of(shown, window_minutes(page.shift))
    if rereading:
        read_at = (f", as read at <b>{_v(read[0])} UTC</b> (store time), window {_v(read[1])}"
                   if read else "")
        out.append(f'\n      <p class="cached-banner">Cached view: stored result of call #{seq}{read_at}.'
                   " Re-reading spends nothing; call the tool again for fresh data.</p>\n    ")
    out.append("\n    ")
    if repeated:
        out.append(f'\n      <p class="repeat-banner" role="status">Sent again: call #{seq} had already been made,'
                   " so its answer is shown again and nothing more was spent.</p>\n    ")
    if shown.spent_operation:
        cost = '<span class="tag">1 operation</span>'
    elif not shown.reached_core:
        cost = '<span class="tag free">refused before the store · no operation</span>'
    else:
        cost = '<span class="tag free">free</span>'
    error = '<span class="tag err">error</span>' if shown.is_error else ""
    read_tag = (f'<span class="tag read-at">as read at {_v(read[0])} · window {_v(read[1])}</span>'
                if read and view.is_read else "")
    out.append(f"\n    <h3>#{seq} <code>{tool}</code>\n      {cost}\n      {error}\n      {read_tag}\n    </h3>\n    ")
    if header and shown.window and header.window > shown.window:
        out.append(f'<p class="window-marker">A new window started: this call moved the store to'
                   f" window {_v(header.window)} of {_v(header.windows)} ({_v(header.time)} UTC). Lists read"
                   " before it are from an earlier window.</p>")
    problem = view.problem
    if problem:
        where = " by the store" if problem.reached_store else " before the store (no operation spent)"
        said = f"Refused{where}: <b>{_v(problem.code)}</b>: {_v(problem.reason)}"
    else:
        said = _v(view.outcome)
    still_open = ' data-open="1"' if view.still_open else ""
    out.append(f'\n    <p class="outcome" data-ok="{"0" if shown.is_error else "1"}"'
               f' data-seq="{seq}"{still_open}>{said}</p>\n'
               f'    <p class="args">arguments: <code>{_v(compact_json(shown.arguments))}</code></p>\n    ')
    if problem:
        refused = ("The store refused this call" if problem.reached_store
                   else "Not sent to the store: an argument is not valid")
        details = ""
        if problem.details:
            details = ('<p class="muted">Details: '
                       + "; ".join(f"{_v(k)} = {_v(v)}" for k, v in problem.details.items()) + "</p>")
        if problem.reached_store:
            spent = ("A refused call still spends its operation." if shown.spent_operation
                     else "This tool is free: nothing was spent.")
        else:
            spent = "Correct the field and call again."
        named = f' data-field="{_v(problem.field)}"' if problem.field else ""
        out.append(f'\n      <div class="problem" role="alert"{named}>\n'
                   f"        <p><b>{refused}</b> ({_v(problem.code)}).</p>\n"
                   f'        <p class="reason">{_v(problem.reason)}</p>\n'
                   f"        {details}\n"
                   f'        <p class="muted">{spent}</p>\n      </div>\n    ')
    else:
        card = card_html(view.card, page) if view.card else ""
        tables = "".join(table_html(table, page) for table in view.tables)
        out.append(f"\n      {card}\n      {tables}\n    ")
    line = (f'<p class="result-header"><span class="muted">Store after this call:</span>'
            f' <code class="stamp">{_v(header.line)}</code></p>' if header else "")
    out.append(f"\n    {line}\n    ")
    if not problem and (result.pretty or result.message):
        opened = " open" if not view.tables and not view.card else ""
        message = f'<pre class="message">{_v(result.message)}</pre>' if result.message else ""
        pretty = f'<pre class="json">{_v(result.pretty)}</pre>' if result.pretty else ""
        out.append(f'\n    <details class="raw"{opened}><summary>JSON</summary>\n'
                   f"      {message}\n      {pretty}\n    </details>\n    ")
    out.append("\n  </div>\n\n")
    return "".join(out)


# --- the cached views (templates/console/_cached.html) -------------------------------------------

def cached_html(cached: list, header: Any, shift_pk: int, oob: bool = False) -> str:
    out = [f'<div id="cached-views" class="panel"{_OOB if oob else ""}>\n'
           "  <h3>Cached views <small>(free to re-read; one per tool and arguments)</small></h3>\n  "]
    if cached:
        out.append('\n    <div class="cached-scroll"><table class="data compact">\n'
                   "      <thead><tr><th>View</th><th>Read at (store time)</th><th>Action</th></tr></thead>\n"
                   "      <tbody>\n      ")
        url_of_call = _urls_of_calls(shift_pk)
        for view in cached:
            stale = bool(header) and view.window < header.window
            row_id = _v(view.tool) + ("" if view.newest else f"-{_v(view.seq)}")
            arguments = f'<br><small class="muted">{_v(view.arguments_text)}</small>' if view.arguments else ""
            out.append(
                f'\n        <tr id="cached-{row_id}"{_STALE if stale else ""}>\n'
                f"          <td><code>{_v(view.tool)}</code>{arguments}</td>\n"
                f"          <td>{_v(view.read_at)} · W{_v(view.window)}"
                f'{_EARLIER if stale else ""}</td>\n'
                f'          <td><a href="?call={_v(view.seq)}" class="reread"'
                f' hx-get="{url_of_call(view.seq)}" hx-target="#result"'
                ' hx-swap="innerHTML">Re-read</a></td>\n        </tr>\n      ')
        out.append("\n      </tbody>\n    </table></div>\n  ")
    else:
        out.append('\n    <p class="muted">What you read with a read tool appears here, re-readable without'
                   " spending an operation.</p>\n  ")
    out.append("\n</div>\n")
    return "".join(out)


# --- the returns inbox (templates/console/_inbox.html) -------------------------------------------

def inbox_html(inbox: Any, page: Page, oob: bool = False) -> str:
    out = [f'\n<div id="inbox" class="panel" data-urgent-hours="{URGENT_HOURS:g}"{_OOB if oob else ""}>\n'
           "  <h3>Returns inbox</h3>\n  "]
    if not inbox:
        out.append('\n    <p class="muted">Call <code>list_returns</code> to fill the inbox.</p>\n  \n</div>\n')
        return "".join(out)
    out.append(f'\n    <p class="cached">Cached view: <code>list_returns</code> ({_v(inbox.status_filter)}) as read'
               f" at <b>{_v(inbox.read_at)} UTC</b>, window {_v(inbox.window)}. Re-reading it here spends nothing;"
               " call <code>list_returns</code> to refresh. Soonest escalation first.</p>\n"
               '    <table class="inbox data compact">\n'
               "      <thead><tr><th>Return</th><th>Reason</th><th>Escalates at</th><th>Refund (USD)</th></tr></thead>\n"
               "      <tbody>\n      ")
    for r in inbox.rows:
        return_id = r.get("return_id", "")
        done = inbox.refunded.get(return_id, "")
        if done:
            action = f'\n              <span class="tag free">refund sent (#{_v(done)})</span>\n            '
        elif r.get("status", "") == "open" and page.active:
            declined = inbox.declined.get(return_id)
            said = (f'<span class="tag declined">refund #{_v(declined[0])} not accepted: still open</span>'
                    if declined else "")
            action = (f'\n              {said}\n'
                      f'              <form class="refund-form" method="post" action="{page.call_url}"\n'
                      f'                    hx-post="{page.call_url}" hx-target="#result" hx-swap="innerHTML"\n'
                      '                    hx-disabled-elt="find button" data-spends="1">\n'
                      f"                {page.csrf}\n"
                      '                <input type="hidden" name="tool" value="refund_return">\n'
                      f'                <input type="hidden" name="call_id" value="{new_call_id(page.context)}">\n'
                      f'                <input type="hidden" name="arg_return_id" value="{_field(r, "return_id")}">\n'
                      f'                <input type="text" inputmode="decimal" name="arg_amount"'
                      f' value="{_v(declined[1]) if declined else _field(r, "refundable")}" size="6"'
                      f' aria-label="Refund amount for {_field(r, "return_id")}">\n'
                      '                <button type="submit">Refund</button>\n              </form>\n            ')
        else:
            action = (f"\n              {_field(r, 'status')} · {_field(r, 'refundable')} refundable\n"
                      "            ")
        out.append(f'\n        <tr id="return-{_field(r, "return_id")}">\n'
                   f'          <td>{_field(r, "return_id")}<br><small class="muted">{_field(r, "order_id")}</small></td>\n'
                   f"          <td>{_field(r, 'reason')}</td>\n"
                   f'          <td class="when" data-escalates="{_field(r, "escalates_at")}">'
                   f"{_v(store_time(r.get('escalates_at')))}</td>\n"
                   f"          <td>\n            \n            {action}\n            \n          </td>\n"
                   "        </tr>\n      ")
    if not inbox.rows:
        out.append('\n        <tr><td colspan="4" class="muted">None.</td></tr>\n      ')
    out.append("\n      </tbody>\n    </table>\n    ")
    if inbox.total > len(inbox.rows):
        out.append(f'<p class="muted">{_v(len(inbox.rows))} of {_v(inbox.total)} shown (one page).</p>')
    out.append("\n  \n</div>\n")
    return "".join(out)


def _field(row: dict, key: str) -> str:
    """``{{ r.key }}`` of an inbox row (a dict): a missing key writes nothing."""
    return _v(row[key]) if key in row else ""


def call_reply(*, shown: Any, result: CallResult, view: Presentation, header: Any, fresh: bool, inbox: Any,
               inbox_changed: bool, cached: list, cached_changed: bool, form_html: str, page: Page) -> SafeString:
    """The whole reply (templates/console/_call_response.html)."""
    out = [result_html(shown, result, view, page, repeated=not fresh), "\n", header_html(header, oob=True), "\n"]
    if fresh:
        out.append('<template><ol hx-swap-oob="afterbegin:#history-list">'
                   f"{history_item_html(shown, page.shift.pk)}</ol></template>")
    out.append("\n")
    if inbox_changed:
        out.append(inbox_html(inbox, page, oob=True))
    out.append("\n")
    if cached_changed:
        out.append(cached_html(cached, header, page.shift.pk, oob=True))
    out.append("\n")
    out.append(form_html)
    out.append("\n")
    return mark_safe("".join(out))
