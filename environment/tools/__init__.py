"""The 29 merchant tools, registered once in :data:`.registry.REGISTRY`.

Importing this package imports every family module, which registers its tools.
"""

from . import catalog, finance, inventory, orders, returns, sourcing, status  # noqa: F401  (registration)
from .registry import REGISTRY, Family, ToolError, ToolKind, ToolSpec

__all__ = ["REGISTRY", "Family", "ToolError", "ToolKind", "ToolSpec"]
