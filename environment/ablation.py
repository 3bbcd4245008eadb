"""Lens ablation: does each lens's defining ingredient matter?

A lens is the shared world plus a few ingredients: its scripted events, its rivals,
its economics overrides (cash, fines, salvage...), a trimmed or empty opening shelf.
:func:`ablate` removes one ingredient at a time, replays the honest anchors on the
same seed, and reports each anchor's change, measured with the *unablated* cell's
business zero and scale so the figures are comparable.

Criterion (stated in the report): an ingredient *bites* when removing it moves some
honest trading anchor's composite by at least ``BITE`` (0.02, twice the release's
flap margin and about one tenth of the gap between volume play and judgment); an
ingredient that moves nobody is inert scenery and the lens should be rebalanced.

A thin cash balance is a hazard for an operator who over-commits, and the honest anchors
are frugal buyers (smart-triage keeps a cash reserve and buys only what will sell before
the end), so for a *cash* ingredient the criterion also reads a probe, the
:class:`OverBuyer`: it bites as well when removing it moves the over-buyer by ``BITE``, or
changes whether the over-buyer is suspended.  The over-buyer's business is clipped to the
shaped range ([-2, 1], as in the shaped training reward) rather than [0, 1]: an over-buyer
ends below the business zero, where the [0, 1] clip would hide any difference.

Each lens also answers whether restocking pays inside its horizon (:func:`buying`): the
two judgment anchors are replayed with their purchasing switched off (every review still
runs and costs its operations; only the purchase orders are not placed).  Restocking
pays when the better of them loses ``BITE`` or more that way; where it does not, buying
is not part of what the lens rewards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from .anchors.policies import Policy, SmartTriage, get_anchor
from .engine import Episode
from .engine.settlement import SHAPED_FLOOR, Score, business_normalized, compose, score
from .tasks import Task
from .world.model import World

ANCHORS = ("blast-list", "rule-based", "smart-triage")
JUDGMENT = ("rule-based", "smart-triage")
BITE = Decimal("0.02")
MONEY = frozenset({"starting_cash", "deposit"})
PROBE = "over-buyer"


class OverBuyer(SmartTriage):
    """The cash probe (not an anchor): smart-triage's operator without its cash reserve, who
    orders four times what its forecast calls for, with a month of cover, as if the shop
    traded on for a month past the shift.  It commits cash the way an over-confident buyer
    does, so a thin balance binds on it: orders are refused for want of cash, or fees and
    refunds push the balance below zero."""

    name = PROBE
    cash_reserve = 0
    cover_days = 30
    overbuy = 4
    extra_days = 30

    def _restock(self, ep: Episode, status: dict[str, Any]) -> None:
        extra = self.extra_days * 24 // status["window_hours"]
        super()._restock(ep, {**status, "windows_total": status["windows_total"] + extra})

    def _lines(self, ep: Episode, pid: str, quantity: int) -> dict[str, int]:
        return super()._lines(ep, pid, quantity * self.overbuy)


@dataclass(frozen=True, slots=True)
class Ingredient:
    name: str
    task: Task  # the lens with this one ingredient removed


def ingredients(task: Task) -> list[Ingredient]:
    """Each defining ingredient of a lens, as the lens without it."""
    out = []
    for i, event in enumerate(task.events):
        rest = task.events[:i] + task.events[i + 1:]
        out.append(Ingredient(f"event {i + 1}: {event.kind} at day {event.at_days:g}", replace(task, events=rest)))
    if task.competitors:
        out.append(Ingredient(f"rivals ({len(task.competitors)})", replace(task, competitors=())))
    money = MONEY
    if money & set(task.economics):
        kept = {k: v for k, v in task.economics.items() if k not in money}
        out.append(Ingredient("cash: " + ", ".join(f"{k} {task.economics[k]}" for k in sorted(money & set(task.economics))),
                              replace(task, economics=kept)))
    others = sorted(set(task.economics) - money)
    if others:
        kept = {k: v for k, v in task.economics.items() if k in money}
        out.append(Ingredient("terms: " + ", ".join(f"{k} {task.economics[k]}" for k in others),
                              replace(task, economics=kept)))
    if task.trim_stock_days is not None:
        out.append(Ingredient(f"shelf trimmed to {task.trim_stock_days:g} days", replace(task, trim_stock_days=None)))
    if task.empty_shelf:
        out.append(Ingredient("empty opening shelf", replace(task, empty_shelf=False)))
    return out


def _played(task: Task, seed: int, world: World | None, policy: Policy) -> Episode:
    """``policy`` played through a fresh episode of the lens, the store closed at the end."""
    ep = Episode(task, seed, world)
    policy.run(ep)
    if not ep.over:
        ep.stop()
    return ep


def _play(task: Task, seed: int, name: str, world: World | None) -> Score:
    return score(_played(task, seed, world, get_anchor(name)))


def _probe(task: Task, seed: int, world: World | None, zero: Decimal, scale: Decimal) -> tuple[Decimal, bool]:
    """The over-buyer's composite (business clipped to the shaped range) and whether it was suspended."""
    ep = _played(task, seed, world, OverBuyer())
    s = score(ep)
    business = business_normalized(s.business_raw, zero, scale, floor=SHAPED_FLOOR)
    return compose(business, s.reliability, s.continuity), ep.bankrupt


def _never_buying(name: str) -> Policy:
    policy = get_anchor(name)
    policy.buys = False
    return policy


def grader(cell: dict[str, Any]) -> Callable[[Score], Decimal]:
    """A score's composite under a calibrated cell's business zero and scale."""
    zero, scale = Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"]))

    def composite(s: Score) -> Decimal:
        return compose(business_normalized(s.business_raw, zero, scale), s.reliability, s.continuity)

    return composite


def buying(task: Task, seed: int, world: World | None, base: dict[str, Decimal],
           composite: Callable[[Score], Decimal]) -> dict[str, Any]:
    """The judgment anchors replayed without placing a purchase order, graded by
    ``composite``; ``base`` holds their composites as they are.  Whether restocking pays
    is read on the better of the two, with buying and without."""
    played = {a: composite(score(_played(task, seed, world, _never_buying(a)))) for a in JUDGMENT}
    best, best_without = max(base[a] for a in JUDGMENT), max(played.values())
    return {"composite": {a: float(played[a]) for a in JUDGMENT},
            "change": {a: float(played[a] - base[a]) for a in JUDGMENT},
            "best": float(best), "best_without": float(best_without), "pays": best - best_without >= BITE}


def ablate(task: Task, seed: int, world: World | None = None) -> dict[str, Any]:
    """The lens's cell, then each ingredient removed: anchors' composites under the lens's constants."""
    from .calibration import calibrate_cell

    cell = calibrate_cell(task, seed, world)
    zero, scale = Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"]))
    composite = grader(cell)
    base = {a: Decimal(str(cell["anchors"][a]["reward_composite"])) for a in ANCHORS}
    probe_base: tuple[Decimal, bool] | None = None
    rows = []
    for ing in ingredients(task):
        played = {a: composite(_play(ing.task, seed, a, world)) for a in ANCHORS}
        delta = {a: played[a] - base[a] for a in ANCHORS}
        row: dict[str, Any] = {"ingredient": ing.name, "composite": {a: float(played[a]) for a in ANCHORS},
                               "change": {a: float(delta[a]) for a in ANCHORS},
                               "bites": any(abs(d) >= BITE for d in delta.values())}
        if ing.name.startswith("cash:"):
            if probe_base is None:
                probe_base = _probe(task, seed, world, zero, scale)
            without, suspended = _probe(ing.task, seed, world, zero, scale)
            change = without - probe_base[0]
            row["probe"] = {"name": PROBE, "base": float(probe_base[0]), "composite": float(without),
                            "change": float(change), "suspended": [probe_base[1], suspended]}
            row["bites"] = row["bites"] or abs(change) >= BITE or probe_base[1] != suspended
        rows.append(row)
    return {"task": task.id, "seed": seed, "criterion": CRITERION,
            "base": {a: float(base[a]) for a in ANCHORS}, "threshold": cell["threshold"], "ingredients": rows,
            "buying": buying(task, seed, world, base, composite)}


CRITERION = (f"removing it moves an honest anchor by >= {BITE} (a cash ingredient also bites when removing it "
             f"moves the {PROBE} probe by >= {BITE} or changes whether it is suspended)")


def render(result: dict[str, Any]) -> str:
    head = " | ".join(ANCHORS)
    lines = [f"{result['task']} seed {result['seed']}: with every ingredient "
             + ", ".join(f"{a} {result['base'][a]:.3f}" for a in ANCHORS) + f" (threshold {result['threshold']})",
             f"criterion: an ingredient bites when {result['criterion']}", "",
             f"| removed | {head} | bites |", "| --- |" + " --- |" * (len(ANCHORS) + 1)]
    for row in result["ingredients"]:
        cells = " | ".join(f"{row['composite'][a]:.3f} ({row['change'][a]:+.3f})" for a in ANCHORS)
        lines.append(f"| {row['ingredient']} | {cells} | {'yes' if row['bites'] else 'NO'} |")
    if not result["ingredients"]:
        lines.append("| (no ingredients: the plain world) | | | | |")
    buys = result.get("buying")
    if buys:
        played = ", ".join(f"{a} {buys['composite'][a]:.3f} ({buys['change'][a]:+.3f})" for a in JUDGMENT)
        lines.append(f"\nBuying: never placing a purchase order, {played}; the better judgment anchor scores "
                     f"{buys['best']:.3f} buying and {buys['best_without']:.3f} never buying: restocking "
                     f"{'pays' if buys['pays'] else 'does NOT pay'} (it pays when not buying costs {BITE} or more).")
    for row in result["ingredients"]:
        probe = row.get("probe")
        if probe:
            suspended = ["suspended" if s else "not suspended" for s in probe["suspended"]]
            lines.append(f"\nProbe for {row['ingredient']}: the {probe['name']} (smart-triage without its cash "
                         f"reserve, ordering four times its forecast for a month past the shift; business clipped "
                         f"to [-2, 1]) scores {probe['base']:.3f} with the squeeze ({suspended[0]}) and "
                         f"{probe['composite']:.3f} without it ({suspended[1]}): {probe['change']:+.3f}.")
    return "\n".join(lines)


def document(results: list[dict[str, Any]]) -> str:
    """The lens ablation table of the calibration report (``calibration/ablation.md``): the
    criterion and the inert ingredients first, then one section per lens."""
    inert = [f"{r['task']}: {row['ingredient']}" for r in results for row in r["ingredients"] if not row["bites"]]
    bought = [r for r in results if "buying" in r]
    unpaid = [r["task"] for r in bought if not r["buying"]["pays"]]
    restocking = ("" if not bought else
                  " Each lens also replays the judgment anchors without their purchase orders (every stock review "
                  f"still runs): restocking pays when the better of them loses {BITE} or more. "
                  + (f"Restocking does not pay on: {', '.join(unpaid)}." if unpaid else "Restocking pays on every lens."))
    plain = [r["task"] for r in results if not r["ingredients"]]
    seeds = sorted({r["seed"] for r in results})
    head = (f"Each lens on seed {', '.join(map(str, seeds))} with one defining ingredient removed (`storebench "
            "tasks ablate TASK`), graded with the lens's own zero and scale; the figure in brackets is the change. "
            f"Criterion: an ingredient bites when removing it moves an honest trading anchor's composite by {BITE} "
            "or more (twice the flap margin, about a tenth of the gap between volume play and judgment). "
            "The honest anchors are frugal buyers, so a cash squeeze is also read on a probe that over-buys "
            f"(the {PROBE}: smart-triage without its cash reserve, ordering four times its forecast as if the shop "
            "traded on a month past the shift, its business clipped to the shaped range [-2, 1]): a cash "
            f"ingredient bites as well when removing it moves the {PROBE} by {BITE} or more, or changes whether "
            "it is suspended. "
            + (f"Inert today (NO): {'; '.join(inert)}." if inert else "Every ingredient bites.")
            + (f" {', '.join(plain)} {'has' if len(plain) == 1 else 'have'} no ingredient to remove." if plain else "")
            + restocking)
    sections = []
    for r in results:
        body = [line for line in render(r).splitlines() if not line.startswith("criterion:")]
        sections.append(f"#### {r['task']}\n\n" + "\n".join(body).strip())
    return head + "\n\n" + "\n\n".join(sections) + "\n"
