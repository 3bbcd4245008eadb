"""The layer contract, read from the source with ``ast`` (imports inside functions too).

    benchmarks                               (5: measurement; may import all)
    config                                   (4: settings, URLs, ASGI, Celery wiring)
    console | studies | explorer | jobs      (3: side by side; none imports another)
    shifts                                   (2: the shift domain)
    mcp_client                               (1: the MCP adapter)
    environment                              (0: pure Python, imports nothing of ours)

A module may import its own package and any package of a lower layer, never one of
its own layer or above.  Dynamic imports with a literal name
(``importlib.import_module("x")``, ``__import__("x")``) count as imports.
"""
from __future__ import annotations

import ast
from pathlib import Path

LAYERS = {
    "environment": 0,
    "mcp_client": 1,
    "shifts": 2,
    "console": 3, "studies": 3, "explorer": 3, "jobs": 3,
    "config": 4, "benchmarks": 5,
}
DYNAMIC_IMPORTERS = {"__import__", "import_module"}


def imported_names(tree: ast.AST, package: str, module_parts: tuple[str, ...]):
    """(line, absolute module name) for every import in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module_parts[:len(module_parts) - node.level]
                yield node.lineno, ".".join((*base, node.module) if node.module else base)
            elif node.module:
                yield node.lineno, node.module
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in DYNAMIC_IMPORTERS and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                yield node.lineno, node.args[0].value


def violations(root: Path, layers: dict[str, int] = LAYERS) -> list[str]:
    """``path:line: package -> imported`` for every import that points sideways or up."""
    found = []
    for package, rank in sorted(layers.items()):
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts or "migrations" in path.parts:
                continue
            rel = path.relative_to(root)
            parts = rel.with_suffix("").parts
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for line, name in imported_names(tree, package, parts):
                top = name.split(".")[0]
                if top == package or top not in layers:
                    continue
                if layers[top] >= rank:
                    found.append(f"{rel}:{line}: {package} (layer {rank}) -> {name} (layer {layers[top]})")
    return found
