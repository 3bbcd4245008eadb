"""Statuses and kinds are compared through their enums (``Shift.Status``, ``AttemptKind``,
...), never against a bare string literal: a renamed value then fails at import, not by
silently never matching.  Read from the source with ``ast``, like ``tests/layers.py``.

Every ``.status`` is a model's TextChoices; a ``.kind`` is one only where its value is
an attempt's, a job's or a notice's kind (a tool form's field kind, say, has no enum)."""
from __future__ import annotations

import ast
from pathlib import Path

from jobs.models import Job
from studies.models import AttemptKind, NoticeKind

ROOT = Path(__file__).resolve().parent.parent
# The Django apps, whose models have TextChoices for these fields.
PACKAGES = ("shifts", "console", "studies", "jobs", "explorer")
KINDS = {str(v) for enum in (AttemptKind, Job.Kind, NoticeKind) for v in enum.values}


def _strings(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {s for e in node.elts for s in _strings(e)}
    return set()


def _against_enum(field: str, literals: set[str]) -> bool:
    return bool(literals) if field == "status" else field == "kind" and bool(literals & KINDS)


def literal_comparisons(root: Path, packages=PACKAGES) -> list[str]:
    """``path:line: source`` for every ``x.status``/``x.kind`` compared with a string literal."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts or "__pycache__" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left, *node.comparators]
                literals = {s for side in sides for s in _strings(side)}
                if any(isinstance(s, ast.Attribute) and _against_enum(s.attr, literals) for s in sides):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_status_or_kind_is_compared_with_a_bare_string():
    found = literal_comparisons(ROOT)
    assert found == [], "compare with the enum instead:\n" + "\n".join(found)


def test_the_scan_sees_a_planted_literal_comparison(tmp_path):
    (tmp_path / "shifts").mkdir()
    (tmp_path / "shifts" / "planted.py").write_text("def f(shift, a, field):\n    return shift.status == 'active'\n"
                                                    "def g(a, field):\n    return a.kind == 'reassignment', "
                                                    "field.kind == 'int'\n")
    assert literal_comparisons(tmp_path, ("shifts",)) == ["shifts/planted.py:2: shift.status == 'active'",
                                                          "shifts/planted.py:4: a.kind == 'reassignment'"]
