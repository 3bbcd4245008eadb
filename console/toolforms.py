"""Forms for the 29 tools, generated from the core's pydantic argument models.

Nothing here declares a tool: the registry is walked once.  Each argument field
becomes a :class:`FieldSpec` (an input kind, bounds, choices, default, hint), and
:func:`arguments_from_form` turns a submitted form back into the ``arguments`` object
sent over MCP.  A value that does not parse (a word in a number box, bad JSON) is
forwarded as typed, so the store answers it exactly as it would answer an agent (a
refusal, which spends its operation like any other); for JSON text, :func:`json_problems`
gives the page the parser's reason and the form the text should take, which the store's
"not a valid dictionary" does not.
"""
from __future__ import annotations

import json
import math
import types
import typing
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any, Literal, cast

from annotated_types import Ge, Le, MaxLen, MinLen
from django.core.exceptions import BadRequest

from environment.tools import REGISTRY
from environment.tools.registry import Family, ToolSpec
from mcp_client.server import oversized

ARG_PREFIX = "arg_"


@dataclass(frozen=True)
class FieldSpec:
    name: str
    label: str
    kind: str  # "int" | "money" | "choice" | "json" | "text" | "textarea"
    required: bool
    default: Any
    choices: tuple[str, ...]
    hint: str
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None

    @property
    def input_name(self) -> str:
        return ARG_PREFIX + self.name


@dataclass(frozen=True)
class ToolForm:
    name: str
    title: str
    family: str
    description: str
    free: bool
    destructive: bool
    ends_window: bool
    fields: tuple[FieldSpec, ...]

    @property
    def summary(self) -> str:
        return self.description.split("\n\n", 1)[0]


def _unwrap(annotation: Any) -> tuple[Any, bool, list]:
    """(base type, optional?, extra metadata) of a field annotation."""
    optional = False
    metadata: list = []
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        annotation = args[0] if len(args) == 1 else annotation
    if typing.get_origin(annotation) is typing.Annotated:
        metadata = list(annotation.__metadata__)
        annotation = annotation.__origin__
    return annotation, optional, metadata


# Below this a limit goes unsaid: ids and filters are far shorter than their limits.
SAY_MAX_LENGTH_FROM = 100


def _length_hint(min_length: int | None, max_length: int | None) -> str:
    """The length a text takes, said in its field's hint. The form sets no ``maxlength``,
    which would cut a pasted text short without a word and send what the person never saw:
    the page holds a text too long back, naming its length (console.js), where the store
    would refuse it and charge the operation."""
    if max_length is not None and max_length < SAY_MAX_LENGTH_FROM:
        max_length = None
    if min_length and max_length:
        return f" {min_length:,} to {max_length:,} characters."
    if min_length:
        return f" At least {min_length:,} characters."
    if max_length:
        return f" At most {max_length:,} characters."
    return ""


def _field_spec(name: str, info) -> FieldSpec:
    base, _optional, extra = _unwrap(info.annotation)
    metadata = [*info.metadata, *extra]
    minimum = next((cast(int, m.ge) for m in metadata if isinstance(m, Ge)), None)
    maximum = next((cast(int, m.le) for m in metadata if isinstance(m, Le)), None)
    max_length = next((m.max_length for m in metadata if isinstance(m, MaxLen)), None)
    min_length = next((m.min_length for m in metadata if isinstance(m, MinLen)), None)
    choices: tuple[str, ...] = ()
    if typing.get_origin(base) is Literal:
        kind, choices = "choice", tuple(str(c) for c in typing.get_args(base))
    elif base is int:
        kind = "int"
    elif base is Decimal:
        kind = "money"
    elif typing.get_origin(base) is dict or base is dict:
        kind = "json"
    elif max_length is not None and max_length > 200:
        kind = "textarea"
    else:
        kind = "text"
    required = info.is_required()
    default = None if required else info.default
    if kind == "json":  # a mapping's limit counts its entries, not characters
        hint = ((info.description or "") + (f" At most {max_length:,} lines." if max_length else "")).strip()
        max_length = None
    else:
        hint = ((info.description or "") + _length_hint(min_length, max_length)).strip()
    return FieldSpec(name=name, label=name.replace("_", " "), kind=kind, required=required,
                     default=default, choices=choices, hint=hint, minimum=minimum,
                     maximum=maximum, max_length=max_length)


def _tool_form(spec: ToolSpec) -> ToolForm:
    return ToolForm(
        name=spec.name, title=spec.title, family=spec.family.value,
        description=spec.description, free=spec.free, destructive=spec.destructive,
        ends_window=spec.name == "end_window",
        fields=tuple(_field_spec(n, f) for n, f in spec.args.model_fields.items()),
    )


@cache
def tool_forms() -> dict[str, ToolForm]:
    return {name: _tool_form(spec) for name, spec in REGISTRY.items()}


# The workspace's order: the day's work first (orders, returns), status and time last.
WORKSPACE_ORDER = (Family.ORDERS, Family.RETURNS, Family.CATALOG, Family.INVENTORY, Family.SOURCING,
                   Family.FINANCE, Family.STATUS)


@cache
def tool_families() -> list[tuple[str, list[ToolForm]]]:
    """The tools grouped by family, in :data:`WORKSPACE_ORDER`."""
    forms = tool_forms()
    order = [*WORKSPACE_ORDER, *(f for f in Family if f not in WORKSPACE_ORDER)]
    return [(family.value, [f for f in forms.values() if f.family == family.value])
            for family in order
            if any(f.family == family.value for f in forms.values())]


# Deeper than any tool's arguments need; a bound keeps a hostile form from reaching
# recursion limits in serialisers further down.
MAX_JSON_DEPTH = 16


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, iteratively (no recursion on hostile input)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, level)
            if level > MAX_JSON_DEPTH:
                return level
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _strict_json(raw: str) -> Any:
    """Standard JSON only: no NaN or Infinity, no number that overflows to infinity, and
    at most ``MAX_JSON_DEPTH`` levels of nesting; anything else raises ValueError."""
    try:
        value = json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    if _depth(value) > MAX_JSON_DEPTH:
        raise ValueError("nested too deeply")
    return value


def _example(annotation: Any) -> str:
    """The form a JSON argument takes, from its type: ``{"SKU": quantity, ...}`` for units per SKU."""
    base, _optional, _extra = _unwrap(annotation)
    key, value = (typing.get_args(base) or (str, Any))[:2]
    if key is str and value is int:
        return '{"SKU": quantity, ...}'
    return '{"name": value, ...}'


def _plain_json_reason(error: json.JSONDecodeError) -> str:
    reason = f"{error.msg} at line {error.lineno} column {error.colno}"
    if error.msg.startswith("Expecting property name enclosed in double quotes"):
        reason += ": keys need double quotes"
    elif error.msg == "Extra data":
        reason += ": give one object, not several (no JSON lines)"
    return reason


def json_problems(tool: str, arguments: typing.Mapping[str, Any]) -> dict[str, str]:
    """Field name -> why its text is not JSON the tool can take, for the JSON arguments of
    ``tool`` that went out as the text typed (:func:`_convert` forwards text that does not
    parse, so the store refuses the call).  Says what the text should look like."""
    form = tool_forms().get(tool)
    if form is None:
        return {}
    spec = REGISTRY[tool]
    out = {}
    for field in form.fields:
        raw = arguments.get(field.name)
        if field.kind != "json" or not isinstance(raw, str):
            continue
        try:
            _strict_json(raw)
        except json.JSONDecodeError as error:
            why = _plain_json_reason(error)
        except ValueError as error:
            why = str(error)
        else:
            continue
        out[field.name] = (f"the text is not valid JSON ({why}). "
                           f"Write it as {_example(spec.args.model_fields[field.name].annotation)}")
    return out


def _convert(field: FieldSpec, raw: str) -> Any:
    if field.kind == "int":
        try:
            return int(raw)
        except ValueError:
            return raw
    if field.kind == "json":
        try:
            return _strict_json(raw)
        except ValueError:
            return raw  # not JSON a tool can take: sent as text, the tool's validation names the field
    return raw  # money stays a string of dollars ("49.50"): exact, never a float


def arguments_from_form(form: ToolForm, data: typing.Mapping[str, str]) -> dict[str, Any]:
    """The MCP ``arguments`` object for a submitted tool form; blank fields (spaces only
    included) are omitted, so the store refuses a call missing a required one.

    Text holding a NUL character (U+0000) raises :class:`~django.core.exceptions.BadRequest`
    (a 400, nothing sent or spent): PostgreSQL cannot store it in the call's row, so the
    call would reach the store and then fail to be recorded (a 500).  So does a field the
    tool's form does not have (a scripted client's typo): it was dropped and the call sent
    without it, spending an operation, where an agent's MCP call is refused.  So do
    arguments over the MCP server's size limit (:func:`mcp_client.server.oversized`)."""
    known = {field.input_name for field in form.fields}
    unknown = sorted(k[len(ARG_PREFIX):] for k in data if k.startswith(ARG_PREFIX) and k not in known)
    if unknown:
        has = ", ".join(field.name for field in form.fields) or "none"
        raise BadRequest(f"{form.name} takes no argument {', '.join(unknown)} (its arguments: {has}); "
                         "nothing was sent.")
    arguments: dict[str, Any] = {}
    for field in form.fields:
        raw = data.get(field.input_name, "")
        if "\x00" in raw:
            raise BadRequest(f"The {field.label} field holds a NUL character, which cannot be sent.")
        if field.kind not in ("text", "textarea"):
            raw = raw.strip()
        if raw.strip() == "":
            continue
        arguments[field.name] = _convert(field, raw)
    too_large = oversized(form.name, arguments)
    if too_large:  # the MCP server refuses it before the store: said here as the form's refusal
        raise BadRequest(too_large[0].upper() + too_large[1:] + ".")
    return arguments


def form_values(form: ToolForm, arguments: dict[str, Any]) -> dict[str, str]:
    """What to refill a tool form with after a call, by input name."""
    out = {}
    for field in form.fields:
        if field.name in arguments:
            value = arguments[field.name]
            out[field.input_name] = json.dumps(value) if field.kind == "json" and not isinstance(value, str) else str(value)
    return out
