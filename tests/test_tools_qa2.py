"""A second QA pass over the tool surface: what the order and stock fields promise, a kind
filter on the ledger, what a vendor's on-time record is made of, the discount on an order,
ids written with spaces or in lower case, a purchase order's status, and money and dates in
one form.  Each test checks one behaviour against the store's own state.
"""
from __future__ import annotations

import json
from pathlib import Path

from environment.api import arm
from environment.tools.finance import LEDGER_KINDS

ROOT = Path(__file__).resolve().parent.parent


# --- 3. the ledger's kind filter ---------------------------------------------------------------------


def test_ledger_entries_refuses_an_unknown_kind_naming_the_kinds_there_are():
    ep = arm("steady", 7)
    result = ep.call("ledger_entries", {"kind": "fines"})
    assert not result.ok and result.error["code"] == "invalid_argument"
    assert result.error["message"] == f"kind 'fines' is not one of the ledger's: {', '.join(sorted(LEDGER_KINDS))}"


def test_ledger_entries_reads_a_kind_in_any_case():
    ep = arm("steady", 7)
    rows = ep.call("ledger_entries", {"kind": "Opening_Cash"}).data["rows"]
    assert [r["kind"] for r in rows] == ["opening_cash"]


def test_every_kind_in_the_release_ledgers_is_a_kind_the_filter_knows():
    kinds = {json.loads(line)["kind"] for path in (ROOT / "fixtures" / "release-trajectories").glob("*/ledger.jsonl")
             for line in path.read_text().splitlines()}
    assert kinds and kinds <= LEDGER_KINDS, kinds - LEDGER_KINDS
