"""``storebench analyze DIR``: the failure-mode report of a trial, no model in the loop.

The action log is replayed in a fresh engine (it is deterministic), and the store
is inspected between calls, so the report can say what the operator could not:
which lines ran out and when they were restocked.  Modes reported, after the
paper's analysis of its trials: never restocked; restocked a line only after it ran
out (and lines that ran out and were never restocked); partial refunds that
escalated anyway; windows skipped or ended early; quitting before the horizon;
writes issued on data read windows earlier (or never read at all).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .api import arm
from .artifacts import ArtifactError, cell_from_folder_name, read_action_log, read_json_object, whole_number
from .engine.state import ReturnState
from .errors import StoreBenchError, check_seed
from .tasks import get_task

ID = re.compile(r"\b(?:ORD-\d+|RET-\d+|PRD-\d+(?:-[A-Z0-9]+-[A-Z]{3})?|SP-\d+|PO-\d+)\b")
WRITE_TARGETS = {
    "fulfill_order": "order_id", "cancel_order": "order_id", "refund_return": "return_id",
    "set_price": "product_id", "set_listing_status": "product_id", "update_listing_copy": "product_id",
    "list_supply_product": "supply_product_id", "place_purchase_order": "supply_product_id",
    "cancel_purchase_order": "po_id", "dispose_stock": "variant_id",
}
EXAMPLES = 5


def analyze(folder: str | Path) -> dict[str, Any]:
    folder = Path(folder)
    if not folder.is_dir():
        raise ArtifactError(f"{folder} is not a folder: give a trial folder written by storebench run, batch or mcp")
    if not (folder / "manifest.json").exists() and cell_from_folder_name(folder) and (folder / "score.json").is_file():
        raise ArtifactError(f"{folder} is in the release's layout, with no manifest.json, so there is no world or task "
                            "file hash to replay its action log against; storebench regrade checks its score "
                            "against its ledger")
    manifest = read_json_object(folder / "manifest.json")
    summary = read_json_object(folder / "summary.json")
    actions = read_action_log(folder / "actions.jsonl")
    if not isinstance(manifest.get("task"), str) or "seed" not in manifest:
        raise ArtifactError(f"{folder / 'manifest.json'} names no task and seed")
    try:
        task = get_task(manifest["task"])
        seed = check_seed(whole_number(manifest["seed"], "its seed"))
    except StoreBenchError as exc:
        raise ArtifactError(f"{folder / 'manifest.json'}: {exc.message}") from exc
    ep = arm(task, seed)
    budget = ep.task.ops_per_window

    last_seen: dict[str, int] = {}
    ops_spent: dict[int, int] = {}
    ended_early: list[dict[str, Any]] = []
    stale: list[dict[str, Any]] = []
    blind: list[dict[str, Any]] = []
    restocks: list[dict[str, Any]] = []
    out_since: dict[str, int] = {}
    ran_out: set[str] = set()
    partial_before: dict[str, int] = {}

    def sweep_stockouts() -> None:
        for p in ep.products:
            if not p.active:
                continue
            if all(v.available <= 0 for v in p.variants):
                out_since.setdefault(p.id, ep.window)
                ran_out.add(p.id)
            else:
                out_since.pop(p.id, None)

    sweep_stockouts()
    # Settlement liquidates every lot, so after it every line would read as out of stock: the last
    # sweep sees the store as the last window left it, and none runs once the episode is over.
    ep.before_settlement = sweep_stockouts
    for entry in actions:
        window = ep.window
        tool, arguments = entry["tool"], entry.get("arguments", {})
        if isinstance(arguments, dict) and set(arguments) == {"__not_an_object__"}:
            arguments = arguments["__not_an_object__"]
        if entry.get("op", tool != "store_status"):
            ops_spent[window] = ops_spent.get(window, 0) + 1
        if tool == "end_window" and ep.ops_left >= budget // 2 and ep.ops_left > 1:
            ended_early.append({"window": window + 1, "operations_left": ep.ops_left})
        target_key = WRITE_TARGETS.get(tool)
        target = arguments.get(target_key) if target_key and isinstance(arguments, dict) else None
        if isinstance(target, str):
            seen = last_seen.get(target)
            if tool == "dispose_stock":
                seen = last_seen.get(target, last_seen.get(target.rsplit("-", 2)[0]))
            if seen is None:
                blind.append({"window": window + 1, "tool": tool, "target": target})
            elif window - seen >= 2:
                stale.append({"window": window + 1, "tool": tool, "target": target, "read_in_window": seen + 1})
        if tool == "place_purchase_order" and isinstance(target, str) and target in ep.supply_products:
            product = ep.supply_products[target].product_id or ep.listed_supply.get(target)
            was_out = product in out_since
        result = ep.call(tool, arguments)
        # A partial refund: one that was paid (the call succeeded) and left the return open. A call
        # refused because the return had already escalated, or a refund that closed it, is not one.
        if tool == "refund_return" and result.ok and isinstance(target, str) and target in ep.returns \
                and ep.returns[target].status == ReturnState.OPEN:
            partial_before[target] = ep.returns[target].order.refunded  # refunded so far, in cents
        if tool == "place_purchase_order" and result.ok:
            restocks.append({"window": window + 1, "product_id": product, "after_running_out": was_out,
                             "out_for_windows": (window - out_since[product]) if was_out and product is not None else 0})
        if result.ok and result.data is not None:
            for found in ID.findall(json.dumps(result.data)):
                last_seen[found] = window
        if ep.window != window and not ep.over:
            sweep_stockouts()
    if summary.get("termination") == "stopped" and not ep.over:
        ep.stop()

    restocked_products = {r["product_id"] for r in restocks}
    late = [r for r in restocks if r["after_running_out"]]
    partial_escalated = [
        # What the operator had refunded when it escalated (the escalation then refunds the rest, so
        # the order's own refunded figure is always the whole payment).
        {"return_id": r.id, "refunded_cents": partial_before[r.id], "paid_cents": r.order.paid_cents}
        for r in sorted(ep.returns.values(), key=lambda r: r.id)
        if r.status == ReturnState.ESCALATED and r.id in partial_before
    ]
    skipped = [w + 1 for w in range(min(ep.window, ep.n_windows)) if not ops_spent.get(w)]
    quit_early = summary.get("termination") == "stopped" and ep.window < ep.n_windows
    never_restocked_lines = sorted(ran_out - restocked_products)
    return {
        "path": str(folder), "task": manifest["task"], "seed": manifest["seed"], "calls": len(actions),
        "windows_played": ep.window, "windows_total": ep.n_windows,
        "never_restocked": not restocks,
        "purchase_orders": len(restocks),
        "restocked_after_running_out": {"count": len(late), "examples": late[:EXAMPLES]},
        "lines_that_ran_out_and_were_never_restocked": {"count": len(never_restocked_lines),
                                                         "examples": never_restocked_lines[:EXAMPLES]},
        "partial_refunds_that_escalated": {"count": len(partial_escalated), "examples": partial_escalated[:EXAMPLES]},
        "windows_skipped": {"count": len(skipped), "examples": skipped[:EXAMPLES]},
        "windows_ended_early": {"count": len(ended_early), "examples": ended_early[:EXAMPLES]},
        "quit_before_horizon": quit_early,
        "writes_on_stale_reads": {"count": len(stale), "examples": stale[:EXAMPLES]},
        "writes_on_ids_never_read": {"count": len(blind), "examples": blind[:EXAMPLES]},
    }
