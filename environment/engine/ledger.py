"""The double-entry-free, append-only money ledger of an episode.

Every movement of money is one entry on one of four accounts.  Balances are the
running sums of their entries, so "cash equals the sum of its ledger entries"
holds by construction and is checked by tests.  The exported ledger is JSON
lines with fixed key order: byte-identical for the same action sequence.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from .. import simtime


class Account(StrEnum):
    CASH = "cash"
    DEPOSIT = "deposit"
    RECEIVABLE = "receivable"
    IN_TRANSIT = "in_transit"


class Ledger:
    __slots__ = ("entries", "balance")

    def __init__(self) -> None:
        self.entries: list[tuple[int, int, Account, str, int, str]] = []
        self.balance: dict[Account, int] = {a: 0 for a in Account}

    def post(self, at: int, window: int, account: Account, kind: str, amount: int, ref: str = "") -> None:
        if amount == 0:
            return
        self.balance[account] += amount
        self.entries.append((at, window, account, kind, amount, ref))

    def net_assets(self) -> int:
        b = self.balance
        return b[Account.CASH] + b[Account.DEPOSIT] + b[Account.RECEIVABLE] + b[Account.IN_TRANSIT]

    def total(self, account: Account) -> int:
        return sum(e[4] for e in self.entries if e[2] == account)

    def rows(self) -> list[dict[str, Any]]:
        running = {a: 0 for a in Account}
        out = []
        for seq, (at, window, account, kind, amount, ref) in enumerate(self.entries, start=1):
            running[account] += amount
            out.append({"seq": seq, "at": simtime.iso(at), "window": window + 1, "account": str(account),
                        "kind": kind, "amount_cents": amount, "balance_cents": running[account], "ref": ref})
        return out

    def to_jsonl(self) -> str:
        return "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in self.rows())
