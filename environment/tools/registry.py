"""The one registry of the 29 merchant tools.

Each tool is declared exactly once, here in the core: its name, family, whether it
reads or writes, its arguments model (whose JSON schema is the tool's input
schema), and a docstring written for the operator who will call it.  The MCP
server, the browser console and the Python API are thin adapters over
:data:`REGISTRY`; none of them declares a tool again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from inspect import cleandoc
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from ..errors import StoreBenchError

if TYPE_CHECKING:
    from ..engine.episode import Episode


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


# A dollar amount written as text: an optional "-", an optional "$", ASCII digits, and an
# optional "." with one or two decimals (more are refused below with the message a number
# with fractions of a cent gets).  The minus sign is read so that a negative amount reaches
# the tool, whose own refusal says what is wrong with it (a price out of range, a refund that
# must be more than zero).  Nothing else: no spaces, no "+", no "_" separators, no exponent,
# no second "$", no digits other than ASCII 0-9.  JSON numbers (int, float) and a Python
# Decimal are read as they are.
_AMOUNT = re.compile(r"-?\$?[0-9]+(?:\.[0-9]+)?", re.ASCII)
AMOUNT_FORM = 'digits with at most two decimals and an optional leading "$", such as 49.50 or $49.50'
WHOLE_CENTS = "must have at most two decimal places (whole cents)"


def _not_money(message: str) -> PydanticCustomError:
    """A refused amount.  A custom error, not a ValueError, so the message reads as written,
    without pydantic's "Value error, " in front."""
    return PydanticCustomError("money", message)


def _money(value: Any) -> Decimal:
    """A dollar amount from a JSON number, a Python ``Decimal``, or text of the form above."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise _not_money(f"must be an amount in dollars: a number or a string of {AMOUNT_FORM}")
    if isinstance(value, str):
        if _AMOUNT.fullmatch(value) is None:
            raise _not_money(f"{value!r} is not an amount in dollars; write {AMOUNT_FORM}")
        if len(value.partition(".")[2]) > 2:
            raise _not_money(WHOLE_CENTS)
        amount = Decimal(value.replace("$", "", 1))
    elif isinstance(value, float):
        amount = Decimal(repr(value))  # the shortest repr: 49.1 is 49.1, not the binary fraction
    else:
        amount = Decimal(value)  # an int or a Decimal, exactly (an int of any length)
    if not amount.is_finite() or abs(amount) >= Decimal("1e12"):
        raise _not_money("must be a finite amount below a trillion dollars")
    if amount != amount.quantize(Decimal("0.01")):
        raise _not_money(WHOLE_CENTS)
    return amount


Money = Annotated[Decimal, BeforeValidator(_money)]

# The shelf-price range the store accepts (catalog.MIN_PRICE and MAX_PRICE, in cents).  It is
# published in the schema so an agent knows it, and enforced by the store, not by the schema:
# a price outside it reaches the store, which refuses it and, as for any refusal, charges the
# operation (an MCP client's own validation may refuse it first).
PRICE_RANGE = (Decimal("1.00"), Decimal("1000.00"))
Price = Annotated[Decimal, BeforeValidator(_money),
                  Field(json_schema_extra={"minimum": float(PRICE_RANGE[0]), "maximum": float(PRICE_RANGE[1])})]
RefundAmount = Annotated[Decimal, BeforeValidator(_money), Field(json_schema_extra={"minimum": 0.01})]

def _canonical_id(value: Any) -> Any:
    """An id as the store writes it: every id is upper case with no spaces around it
    (ORD-103400, PRD-001-M-BLK, SP-0042), so " ord-103400 " names the same order.  Anything
    but a string is left to the field's own type check."""
    return value.strip().upper() if isinstance(value, str) else value


# The id of an order, product, variant, return, supply product, vendor or purchase order.
# Read as the store writes it (see _canonical_id); the schema is a plain string.
EntityId = Annotated[str, BeforeValidator(_canonical_id)]

# A tool's handler: the live episode and the tool's own validated arguments model in, the
# result out (the arguments type is each tool's subclass of Args, hence Any here).
Handler = Callable[["Episode", Any], dict[str, Any]]
H = TypeVar("H", bound=Callable[..., dict[str, Any]])

COSTS_ONE = ("Costs one operation, as every call but store_status does (a refused call too); the window's last "
             "operation ends the window and moves the world on.")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    family: Family
    kind: ToolKind
    args: type[Args]
    handler: Handler
    description: str
    free: bool = False
    destructive: bool = False
    idempotent: bool = False  # as declared: repeating it changes nothing more in the store itself

    @property
    def read_only(self) -> bool:
        """True only for a free read: a metered read spends an operation and may end the window."""
        return self.kind == ToolKind.READ and self.free

    @property
    def idempotent_hint(self) -> bool:
        """What MCP's ``idempotentHint`` may honestly say: a second identical call has no further
        effect.  Only a free call qualifies; every other call spends another operation."""
        return self.idempotent and self.free

    def input_schema(self) -> dict[str, Any]:
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        return schema


REGISTRY: dict[str, ToolSpec] = {}


def tool(name: str, *, title: str, family: Family, kind: ToolKind, args: type[Args] = Args,
         free: bool = False, destructive: bool = False, idempotent: bool = False) -> Callable[[H], H]:
    def register(fn: H) -> H:
        if name in REGISTRY:
            raise RuntimeError(f"tool {name!r} is declared twice")
        description = cleandoc(fn.__doc__ or "")
        if not free:
            description += "\n\n" + COSTS_ONE
        REGISTRY[name] = ToolSpec(name=name, title=title, family=family, kind=kind, args=args, handler=fn,
                                  description=description, free=free,
                                  destructive=destructive, idempotent=idempotent)
        return fn

    return register


def page_of(rows: list[Any], args: PageArgs, row: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """The page ``args`` asks for of ``rows``, with the page count and total.  With ``row``,
    ``rows`` are records and only the page's records are turned into rows (a list of a
    shift's orders is mostly not on the page asked for)."""
    total = len(rows)
    pages = max(1, -(-total // args.page_size))
    if args.page > pages:
        raise ToolError("page_out_of_range", f"page {args.page} is past the last page ({pages}) of {total} rows",
                        page=args.page, pages=pages)
    start = (args.page - 1) * args.page_size
    shown = rows[start:start + args.page_size]
    return {"page": args.page, "pages": pages, "total": total,
            "rows": shown if row is None else [row(r) for r in shown]}
