"""The layer contract (see ``tests/layers.py`` and the README's picture) holds, and the
checker does fail on an upward import."""
import shutil
from pathlib import Path

from layers import LAYERS, violations

ROOT = Path(__file__).resolve().parent.parent

def test_every_import_points_down():
    found = violations(ROOT)
    assert found == [], "imports against the layers:\n" + "\n".join(found)


def test_every_package_of_ours_has_a_layer():
    ours = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "calibration", "docs", "fixtures", "static"}
    assert ours - set(LAYERS) == set(), "a package without a layer: add it to tests/layers.py"


def _copy(tmp_path: Path, packages=("environment", "shifts", "console")) -> Path:
    for name in packages:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_the_checker_fails_on_an_upward_import_planted_inside_a_function(tmp_path):
    root = _copy(tmp_path)
    (root / "environment" / "planted.py").write_text("def helper():\n    from shifts.models import Shift\n"
                                                     "    return Shift\n")
    assert any("environment/planted.py:2" in v and "-> shifts.models" in v for v in violations(root))


def test_the_checker_fails_on_a_sideways_import_and_a_dynamic_one(tmp_path):
    root = _copy(tmp_path, ("shifts", "console", "studies"))
    (root / "studies" / "planted.py").write_text("from console.workspace import Overview\n")
    (root / "shifts" / "planted.py").write_text("import importlib\nimportlib.import_module('console.views')\n")
    found = violations(root)
    assert any(v.startswith("studies/planted.py:1: studies (layer 3) -> console.workspace") for v in found)
    assert any(v.startswith("shifts/planted.py:2: shifts (layer 2) -> console.views") for v in found)


def test_relative_imports_resolve_to_their_package(tmp_path):
    root = _copy(tmp_path, ("shifts",))
    (root / "shifts" / "planted.py").write_text("from . import cache\nfrom .models import Shift\n")
    assert [v for v in violations(root) if "planted" in v] == []
