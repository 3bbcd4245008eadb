"""CSV cells that a spreadsheet will not run as formulas.

A cell whose text begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
is read by Excel, LibreOffice and Google Sheets as a formula (or the start of one):
a participant's label, a coordinator's reason or a hostile trial's tool name could
then compute, fetch or link when a researcher opens the export. Such a cell is written
with a leading apostrophe (``'=cmd...``), which spreadsheets show as text. Plain numbers
(``-0.25``, ``+3``, ``-1e-05``) are left as they are. JSON exports keep values
unchanged. The rule is stated in every export's codebook (:data:`CODEBOOK_NOTE`).
"""
from __future__ import annotations

import re

FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")

CODEBOOK_NOTE = ("In the CSV files, a text cell that begins with =, +, -, @, a tab or a carriage return is "
                 "written with a leading apostrophe (') so that spreadsheets show it as text instead of "
                 "running it as a formula; plain numbers are written as they are. The JSON files keep every "
                 "value unchanged.")


def safe_cell(text: str) -> str:
    """``text`` as a CSV cell that no spreadsheet runs as a formula."""
    if text.startswith(FORMULA_LEADS) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text
