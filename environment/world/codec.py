"""Canonical JSON for the world, and its content hash.

The canonical form is the one thing hashed: keys sorted, no whitespace, ASCII,
integers for money and time.  Floats (popularity, mix, rates) are written by
``repr``, which round-trips exactly on every platform.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from enum import StrEnum
from functools import cache
from typing import Any, get_args, get_origin, get_type_hints

from . import model
from .model import World

_TABLES = {
    "vendors": model.Vendor,
    "supply_products": model.SupplyProduct,
    "supply_skus": model.SupplySku,
    "products": model.Product,
    "variants": model.Variant,
    "customers": model.Customer,
    "orders": model.Order,
    "returns": model.Return,
    "purchase_orders": model.PurchaseOrder,
}
_SCALARS = ("world_seed", "history_start", "shift_start", "settlement_days")


def _row(rec: Any, names: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for name in names:
        value = getattr(rec, name)
        if value.__class__ is tuple and value and dataclasses.is_dataclass(value[0]):
            value = [dataclasses.asdict(v) for v in value]
        out[name] = value
    return out


def to_document(world: World) -> dict[str, Any]:
    """Plain JSON-able form.  StrEnums are ``str`` and tuples encode as arrays."""
    doc: dict[str, Any] = {name: getattr(world, name) for name in _SCALARS}
    for name, cls in _TABLES.items():
        names = tuple(f.name for f in dataclasses.fields(cls))
        doc[name] = [_row(rec, names) for rec in getattr(world, name)]
    return doc


def canonical_bytes(world: World) -> bytes:
    return json.dumps(to_document(world), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode()


def content_hash(world: World) -> str:
    return "sha256:" + hashlib.sha256(canonical_bytes(world)).hexdigest()


@cache
def _fields(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = get_type_hints(cls, vars(model))
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls) if not f.name.startswith("_"))


def _build(cls: type, data: dict[str, Any]) -> Any:
    return cls(**{name: _coerce(hint, data[name]) for name, hint in _fields(cls)})


def _coerce(hint: Any, value: Any) -> Any:
    if value is None or hint in (int, str, float, bool):
        return value
    origin = get_origin(hint)
    args = get_args(hint)
    if origin is tuple:
        return tuple(_coerce(args[0], v) for v in value)
    if args and type(None) in args:  # Optional[X]
        inner = next(a for a in args if a is not type(None))
        return _coerce(inner, value)
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build(hint, value)
    return value


def from_document(doc: dict[str, Any]) -> World:
    kwargs: dict[str, Any] = {name: doc[name] for name in _SCALARS}
    for name, cls in _TABLES.items():
        kwargs[name] = tuple(_build(cls, rec) for rec in doc[name])
    return World(**kwargs)
