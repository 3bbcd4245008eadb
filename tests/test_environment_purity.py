"""The environment package must stay pure Python: no Django, Channels, Celery
or MCP. Those belong to the console and the MCP adapter, which wrap it.

Nothing here skips. If environment/ has no Python files, that is a failure.
"""
import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ENVIRONMENT_DIR = REPO_ROOT / "environment"
FORBIDDEN = frozenset({"django", "channels", "celery", "mcp"})
DYNAMIC_IMPORTERS = {"__import__", "import_module"}


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def forbidden_imports(root: Path, forbidden=FORBIDDEN) -> list[str]:
    """Return ``file:line: module`` for every forbidden import under ``root``.

    Catches ``import x``, ``from x import y`` and calls such as
    ``importlib.import_module("x")`` or ``__import__("x")`` with a literal
    name. Relative imports stay inside the package and are ignored.
    """
    problems = []
    for path in python_files(root):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0 and node.module:
                    names = [node.module]
            elif isinstance(node, ast.Call):
                func = node.func
                func_name = getattr(func, "id", None) or getattr(func, "attr", None)
                if (
                    func_name in DYNAMIC_IMPORTERS
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    names = [node.args[0].value]
            for name in names:
                if name.split(".")[0] in forbidden:
                    rel = path.relative_to(root.parent)
                    problems.append(f"{rel}:{node.lineno}: {name}")
    return problems


_IMPORT_ALL = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    errors = []
    import environment
    modules = ["environment"]
    def onerror(name):
        message = f"{name}: {sys.exc_info()[1]!r}"
        if message not in errors:
            errors.append(message)
    for info in pkgutil.walk_packages(environment.__path__, "environment.", onerror=onerror):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # importing __main__ would run the CLI
        try:
            importlib.import_module(info.name)
            modules.append(info.name)
        except Exception as exc:
            message = f"{info.name}: {exc!r}"
            if message not in errors:  # walk_packages may have reported it
                errors.append(message)
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(FORBIDDEN))
    print(json.dumps({"modules": modules, "errors": errors, "loaded": loaded}))
    """
)


def import_everything(root: Path) -> dict:
    """Import ``environment`` (found in ``root``) and all its submodules in a
    fresh interpreter; report what was imported, what failed and which
    forbidden top-level modules ended up in ``sys.modules``."""
    code = f"FORBIDDEN = {sorted(FORBIDDEN)!r}\n" + _IMPORT_ALL
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the package
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (
        f"importing environment failed:\n{result.stdout}\n{result.stderr}"
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- the real package --------------------------------------------------------


def test_environment_has_python_files():
    assert ENVIRONMENT_DIR.is_dir(), f"{ENVIRONMENT_DIR} does not exist"
    assert python_files(ENVIRONMENT_DIR), f"no .py files under {ENVIRONMENT_DIR}"


def test_environment_source_has_no_forbidden_imports():
    assert python_files(ENVIRONMENT_DIR), f"no .py files under {ENVIRONMENT_DIR}"
    problems = forbidden_imports(ENVIRONMENT_DIR)
    assert not problems, "forbidden imports in environment/:\n" + "\n".join(problems)


def test_importing_environment_loads_no_forbidden_modules():
    assert (ENVIRONMENT_DIR / "__init__.py").is_file(), "environment/__init__.py missing"
    report = import_everything(REPO_ROOT)
    assert not report["errors"], "submodules failed to import:\n" + "\n".join(
        report["errors"]
    )
    assert not report["loaded"], (
        f"importing {len(report['modules'])} environment modules loaded "
        f"{report['loaded']}"
    )


# --- the checks themselves, on packages made for the purpose -------------------


def _make_package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "environment" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root / "environment"


def test_checker_reports_bad_imports(tmp_path):
    pkg = _make_package(
        tmp_path,
        {
            "__init__.py": "from .clean import x\n",
            "clean.py": "import json\nfrom . import sibling\nx = 1\n",
            "sibling.py": "",
            "bad.py": "import os\nfrom django.db import models\n",
            "sub/__init__.py": "",
            "sub/worse.py": "import celery.app, json\n\ndef f():\n    import mcp\n",
            "sub/sneaky.py": "import importlib\nimportlib.import_module('channels.layers')\n",
            "sub/fine.py": "import djangofoo  # a different name\nimport mcpx\n",
        },
    )
    problems = forbidden_imports(pkg)
    assert set(problems) == {
        "environment/bad.py:2: django.db",
        "environment/sub/worse.py:1: celery.app",
        "environment/sub/worse.py:4: mcp",
        "environment/sub/sneaky.py:2: channels.layers",
    }


def test_checker_passes_clean_package(tmp_path):
    pkg = _make_package(tmp_path, {"__init__.py": "import json\n", "a/__init__.py": ""})
    assert forbidden_imports(pkg) == []


def test_import_check_catches_transitive_import(tmp_path):
    # No forbidden name appears in the package's source, but a helper module
    # outside it pulls in django: only the runtime check can see that.
    (tmp_path / "helper_outside.py").write_text("import django\n", encoding="utf-8")
    pkg = _make_package(
        tmp_path,
        {
            "__init__.py": "",
            "core.py": "X = 1\n",
            "deep/__init__.py": "",
            "deep/uses_helper.py": "import helper_outside\n",
        },
    )
    assert forbidden_imports(pkg) == []
    report = import_everything(tmp_path)
    assert "environment.deep.uses_helper" in report["modules"]
    assert report["loaded"] == ["django"]


def test_import_check_reports_broken_submodule(tmp_path):
    _make_package(tmp_path, {"__init__.py": "", "broken.py": "raise RuntimeError('boom')\n"})
    report = import_everything(tmp_path)
    assert any("environment.broken" in e and "boom" in e for e in report["errors"])
