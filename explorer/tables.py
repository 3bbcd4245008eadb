"""A downloadable table: named columns and rows, rendered as CSV or JSON.

Decimals are written as their exact text in both formats, in positional notation
(a zero contribution is 0.0000000, never 0E-7), so a score downloaded as JSON reads
back to the same digits it was imported with.  A yes/no figure is JSON's ``true`` or
``false`` in both, as in the study exports.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from decimal import Decimal

from environment.csvcells import safe_cell


def _cell(value) -> str:
    """A CSV cell: text a spreadsheet would run as a formula is neutralised (environment.csvcells)."""
    plain = _plain(value)
    return safe_cell(plain if isinstance(plain, str) else str(plain))


def _decimal(value: Decimal) -> str:
    """Every digit the decimal holds, in positional notation (str() would give 0E-7 or 1E+2)."""
    return format(value, "f")


def _plain(value):
    if isinstance(value, bool):  # as in JSON and the study exports, not Python's True/False
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    return value


@dataclass
class Table:
    name: str  # the download's file name, without extension
    columns: tuple[str, ...]
    rows: list[tuple]

    def as_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([safe_cell(str(c)) for c in self.columns])
        for row in self.rows:
            writer.writerow(["" if v is None else _cell(v) for v in row])
        return out.getvalue()

    def as_json(self) -> str:
        rows = [{c: (_decimal(v) if isinstance(v, Decimal) else v) for c, v in zip(self.columns, row, strict=False)}
                for row in self.rows]
        return json.dumps({"table": self.name, "columns": list(self.columns), "rows": rows}, indent=1) + "\n"
