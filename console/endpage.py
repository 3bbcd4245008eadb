"""The end page's score rows, each with what it means in words and, where it has one,
in dollars or counts.

A participant sees the graded components of their own shift and what each one measures;
never the business zero and scale the calibration found for the cell or any anchor
policy's figures (those would tell them the task and where the scripted stores landed),
and the cell's pass threshold only when the study that assigned the shift allows it
(:func:`shifts.affiliation.affiliation_of`).
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from shifts.grading import COMPONENT_NAMES


@dataclass(frozen=True)
class ScoreRow:
    key: str
    label: str
    kind: str  # "score" | "rate" | "money" | "plain"
    value: object
    words: str


def _dec(value) -> Decimal | None:
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


def usd(value) -> str:
    """Dollars as the end page writes them: "$53,491.95", "-$12.00"; "—" if not a number."""
    amount = _dec(value)
    return "—" if amount is None else f"{'-' if amount < 0 else ''}${abs(amount):,.2f}"


def _business_words(c: dict) -> str:
    """What the business figure measures, from the store's own opening and end: the grade
    scores the rise in net assets from the opening capital (``net_assets - business_raw``:
    the opening cash and deposit), so a rise a store left alone also makes scores 0."""
    net, rise = _dec(c.get("net_assets")), _dec(c.get("business_raw"))
    if net is None or rise is None:
        return (f"How much the store was worth after settlement ({usd(c.get('net_assets'))} in net assets), "
                "placed on the scale calibrated for this shift's store: 0 is what a store left alone ends with, "
                "1 what the best scripted reference store reaches. Counts 70% of the composite.")
    moved = "rose" if rise > 0 else "fell" if rise < 0 else "stayed"
    change = f"{moved} from {usd(net - rise)} at the opening (cash and deposit) to {usd(net)} after settlement"
    if rise == 0:
        change = f"stayed at {usd(net)} from the opening (cash and deposit) to settlement"
    return (f"Net assets {change}. The opening counts cash and deposit only; the header's net assets also "
            "counted money owed to the store and purchase orders paid for and on their way (receivables and in "
            "transit), so they started higher. Business does not score that change as it is: it places it on the scale "
            "calibrated for this shift's store, where 0 is the change the same store makes when nobody runs it "
            "(stock on hand keeps selling, money owed keeps coming in) and 1 the change the best scripted "
            "reference store makes. A rise no larger than a store left alone makes scores 0. "
            "Counts 70% of the composite.")


def score_rows(components: dict) -> list[ScoreRow]:
    c = components
    rows = [
        ScoreRow("business", COMPONENT_NAMES["business"], "score", c.get("business"), _business_words(c)),
        ScoreRow("reliability", COMPONENT_NAMES["reliability"], "score", c.get("reliability"),
                 "How well customers were served: orders shipped on time and returns answered before they "
                 "escalated. Counts 20% of the composite."),
        ScoreRow("on_time_rate", COMPONENT_NAMES["on_time_rate"], "rate", c.get("on_time_rate"),
                 f"{c.get('orders_on_time', '—')} of the {c.get('orders_due', '—')} orders due were shipped by you "
                 "before their deadline (orders the platform shipped for a fee, or cancelled, do not count)."),
        ScoreRow("return_handled_rate", COMPONENT_NAMES["return_handled_rate"], "rate", c.get("return_handled_rate"),
                 f"Credit for the {c.get('returns_due', '—')} returns that fell due: a return refunded before it "
                 "escalated counts in full."),
        ScoreRow("continuity", COMPONENT_NAMES["continuity"], "score", c.get("continuity"),
                 f"You attended {c.get('windows_attended', '—')} of {c.get('windows_total', '—')} windows "
                 "(made at least one call in them). Counts 10% of the composite."),
        ScoreRow("reward_composite", COMPONENT_NAMES["reward_composite"], "score", c.get("reward_composite"),
                 "0.7 × business + 0.2 × reliability + 0.1 × continuity."),
        ScoreRow("net_assets", COMPONENT_NAMES["net_assets"], "money", c.get("net_assets"),
                 "Cash, plus money owed to the store, plus stock sold off at the salvage rate, after every "
                 "obligation due was enforced."),
    ]
    return [r for r in rows if r.value is not None]
