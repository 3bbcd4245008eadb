"""The one error tree of the core.

Every refusal the core makes is a :class:`StoreBenchError` with a stable ``code``.
Front ends translate these and only these: the MCP server into tool errors, the
console into form errors, the CLI into a message and a non-zero exit.  Anything
else that escapes the core is a bug and is left to surface as one.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Every code the core refuses with, in one place (a ``StrEnum``: it is its string)."""

    # the error tree itself and the files the core loads
    STOREBENCH_ERROR = "storebench_error"
    ARTIFACT_ERROR = "artifact_error"
    CALIBRATION_INVALID = "calibration_invalid"
    HELD_OUT_INVALID = "held_out_invalid"
    INVALID_CONFIG = "invalid_config"
    INVALID_SEED = "invalid_seed"
    TASK_FILE_INVALID = "task_file_invalid"
    UNKNOWN_POLICY = "unknown_policy"
    WORLD_HASH_MISMATCH = "world_hash_mismatch"
    # tool calls: the call itself
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENT = "invalid_argument"
    STORE_CLOSED = "store_closed"
    PAGE_OUT_OF_RANGE = "page_out_of_range"
    # tool calls: unknown ids
    UNKNOWN_BATCH = "unknown_batch"
    UNKNOWN_ORDER = "unknown_order"
    UNKNOWN_PRODUCT = "unknown_product"
    UNKNOWN_PURCHASE_ORDER = "unknown_purchase_order"
    UNKNOWN_RETURN = "unknown_return"
    UNKNOWN_SKU = "unknown_sku"
    UNKNOWN_SUPPLY_PRODUCT = "unknown_supply_product"
    UNKNOWN_VARIANT = "unknown_variant"
    UNKNOWN_VENDOR = "unknown_vendor"
    # tool calls: the store's rules
    ALREADY_LISTED = "already_listed"
    ALREADY_SHIPPED = "already_shipped"
    BELOW_MOQ = "below_moq"
    EXCEEDS_REFUNDABLE = "exceeds_refundable"
    INSUFFICIENT_CASH = "insufficient_cash"
    INVALID_AMOUNT = "invalid_amount"
    LISTING_CAP_REACHED = "listing_cap_reached"
    NOT_AWAITING_SHIPMENT = "not_awaiting_shipment"
    NOT_CANCELLABLE = "not_cancellable"
    NOT_ENOUGH_STOCK = "not_enough_stock"
    NOT_IN_SHOP = "not_in_shop"
    OUT_OF_STOCK = "out_of_stock"
    PRICE_OUT_OF_RANGE = "price_out_of_range"
    RETURN_CLOSED = "return_closed"
    SUPPLY_UNAVAILABLE = "supply_unavailable"
    TOO_MANY_UNITS = "too_many_units"


class StoreBenchError(Exception):
    code: str = ErrorCode.STOREBENCH_ERROR

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            out["details"] = self.details
        return out


SEED_MAX = 2**31 - 1  # what a console shift stores (a 32-bit column); the random keys mix 64 bits


class InvalidSeed(StoreBenchError):
    code = ErrorCode.INVALID_SEED


def check_seed(seed: object) -> int:
    """``seed`` as a task seed: a whole number from 0 to :data:`SEED_MAX`, else :class:`InvalidSeed`."""
    index = getattr(seed, "__index__", None)  # an int or a NumPy integer; not a float or text
    value: int | None = index() if index is not None else None
    if isinstance(seed, bool) or value is None or not 0 <= value <= SEED_MAX:
        raise InvalidSeed(f"{seed!r} is not a task seed: give a whole number from 0 to {SEED_MAX:,}, "
                          "e.g. 7, 11 or 13 (the public seeds)", seed=repr(seed))
    return value
