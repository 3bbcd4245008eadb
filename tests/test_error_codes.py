"""Every error code the core and its adapters use is a member of the one enum."""
import ast
import importlib
import pkgutil
from pathlib import Path

from environment.errors import ErrorCode, StoreBenchError
from mcp_client.codes import ServerErrorCode

ROOT = Path(__file__).resolve().parent.parent


def _codes_in(path: Path) -> set[tuple[str, int]]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ToolError":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.add((node.args[0].value, node.lineno))
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
                    stmt.target if isinstance(stmt, ast.AnnAssign) else None
                value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
                if getattr(target, "id", "") == "code" and isinstance(value, ast.Constant):
                    found.add((value.value, stmt.lineno))
    return found


def test_every_code_raised_is_in_the_enum():
    used = {}
    for path in sorted((ROOT / "environment").rglob("*.py")):
        for code, line in _codes_in(path):
            used.setdefault(code, f"{path.relative_to(ROOT)}:{line}")
    assert used, "the scan found no codes: the checker is broken"
    unknown = {code: where for code, where in used.items() if code not in ErrorCode.__members__.values()}
    assert unknown == {}, f"codes missing from environment.errors.ErrorCode: {unknown}"


def test_the_scan_sees_a_code_missing_from_the_enum(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('raise ToolError("made_up_code", "no")\n')
    assert {code for code, _ in _codes_in(planted)} == {"made_up_code"}
    assert "made_up_code" not in ErrorCode.__members__.values()


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_every_error_class_of_the_core_and_the_server_carries_an_enum_member():
    for package in ("environment", "mcp_client"):
        for module in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            if not module.name.endswith("__main__"):
                importlib.import_module(module.name)
    classes = _subclasses(StoreBenchError)
    assert len(classes) > 10, "the walk found few error classes: the checker is broken"
    bare = {f"{cls.__module__}.{cls.__qualname__}": cls.code for cls in classes
            if not isinstance(cls.code, (ErrorCode, ServerErrorCode))}
    assert bare == {}, f"error classes whose code is a bare string, not an ErrorCode or ServerErrorCode: {bare}"


def test_the_servers_codes_are_not_the_cores():
    assert set(ServerErrorCode) & set(ErrorCode) == set()
