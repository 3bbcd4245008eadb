"""The one registry of the 29 merchant tools.

Each tool is declared exactly once, here in the core: its name, family, whether it
reads or writes, its arguments model (whose JSON schema is the tool's input
schema), and a docstring written for the operator who will call it.  The MCP
server, the browser console and the Python API are thin adapters over
:data:`REGISTRY`; none of them declares a tool again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from inspect import cleandoc
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ..errors import StoreBenchError


class ToolKind(StrEnum):
    READ = "read"
    WRITE = "write"
    CONTROL = "control"


class Family(StrEnum):
    STATUS = "status and time"
    CATALOG = "catalog and listings"
    INVENTORY = "inventory"
    ORDERS = "orders"
    RETURNS = "returns"
    SOURCING = "sourcing"
    FINANCE = "finance and market"


class ToolError(StoreBenchError):
    """A refusal the operator can act on: a bad argument, an unknown id, a rule."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.code = code


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class PageArgs(Args):
    page: int = Field(1, ge=1, le=100_000, description="Page number, starting at 1.")
    page_size: int = Field(50, ge=1, le=100, description="Rows per page, at most 100.")


def _money(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise ValueError("must be an amount in dollars, such as 49.50")
    try:
        amount = Decimal(str(value).strip().lstrip("$"))
    except InvalidOperation:
        raise ValueError(f"{value!r} is not an amount in dollars") from None
    if not amount.is_finite() or abs(amount) >= Decimal("1e12"):
        raise ValueError("must be a finite amount below a trillion dollars")
    if amount != amount.quantize(Decimal("0.01")):
        raise ValueError("must have at most two decimal places (whole cents)")
    return amount


Money = Annotated[Decimal, BeforeValidator(_money)]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    family: Family
    kind: ToolKind
    args: type[Args]
    handler: Callable[[Any, Any], dict]
    description: str
    free: bool = False
    destructive: bool = False
    idempotent: bool = False

    @property
    def read_only(self) -> bool:
        return self.kind == ToolKind.READ

    def input_schema(self) -> dict:
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        return schema


REGISTRY: dict[str, ToolSpec] = {}


def tool(name: str, *, title: str, family: Family, kind: ToolKind, args: type[Args] = Args,
         free: bool = False, destructive: bool = False, idempotent: bool = False):
    def register(fn: Callable[[Any, Any], dict]) -> Callable[[Any, Any], dict]:
        if name in REGISTRY:
            raise RuntimeError(f"tool {name!r} is declared twice")
        REGISTRY[name] = ToolSpec(name=name, title=title, family=family, kind=kind, args=args, handler=fn,
                                  description=cleandoc(fn.__doc__ or ""), free=free,
                                  destructive=destructive, idempotent=idempotent)
        return fn

    return register


def page_of(rows: list, args: PageArgs) -> dict:
    total = len(rows)
    pages = max(1, -(-total // args.page_size))
    if args.page > pages:
        raise ToolError("page_out_of_range", f"page {args.page} is past the last page ({pages}) of {total} rows",
                        page=args.page, pages=pages)
    start = (args.page - 1) * args.page_size
    return {"page": args.page, "pages": pages, "total": total, "rows": rows[start:start + args.page_size]}
