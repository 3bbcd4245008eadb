"""Cheap search over action sequences: can blind optimisation game the composite?

A genome is a fixed-length list of genes per window; each gene names an action
kind and two numbers in [0, 1) that pick its target and magnitude among what the
store currently shows.  The gene set is the fair one a diligent searcher would
choose: ship an order that has stock, refund a return in full, restock one of
the best sellers (1 to 3 minimum orders), reprice a line (half to one and a half
times its price), end the window.
Random search samples genomes; hill climbing mutates the best one found.  Both
play through :meth:`Episode.call` and are graded with the cell's calibration.
The claim to check is the paper's: cheap search stays far below the threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .api import arm
from .engine import Episode
from .engine.settlement import Score, score
from .engine.state import OrderState, ReturnState
from .rand import Stream

KINDS = ("ship", "refund", "restock", "price", "end")
BEST_SELLERS = 15  # restock genes pick among this many lines, best-selling over the history first
Gene = tuple[int, float, float]


@dataclass
class SearchResult:
    method: str
    episodes: int
    best: float
    best_business: float
    best_reliability: float
    history: list[float]

    def as_json(self) -> dict[str, Any]:
        return {"method": self.method, "episodes": self.episodes, "best_composite": self.best,
                "best_business": self.best_business, "best_reliability": self.best_reliability,
                "best_so_far": self.history}


def random_genome(r: Stream, windows: int, per_window: int) -> list[list[Gene]]:
    return [[(r.randint(0, len(KINDS) - 1), r.random(), r.random()) for _ in range(per_window)]
            for _ in range(windows)]


def _pick(items: list[Any], u: float) -> Any:
    return items[min(int(u * len(items)), len(items) - 1)] if items else None


def play(ep: Episode, genome: list[list[Gene]]) -> None:
    best = sorted((p for p in ep.products if p.active), key=lambda p: (-p.popularity, p.id))[:BEST_SELLERS]
    for genes in genome:
        if ep.over:
            return
        start = ep.window
        for kind_i, u, v in genes:
            if ep.over or ep.window != start:
                break
            kind = KINDS[kind_i]
            if kind == "ship":
                o = _pick(sorted((o for o in ep.orders.values()
                                  if o.status == OrderState.OPEN and o.variant.on_hand >= o.quantity),
                                 key=lambda o: o.id), u)
                if o:
                    ep.call("fulfill_order", {"order_id": o.id})
            elif kind == "refund":
                r = _pick(sorted((r for r in ep.returns.values() if r.status == ReturnState.OPEN),
                                 key=lambda r: r.id), u)
                if r and r.capacity > 0:
                    ep.call("refund_return", {"return_id": r.id})
            elif kind == "restock":
                p = _pick(best, u)
                sp = ep.supply_products[p.supply_product_ids[0]]
                ep.call("place_purchase_order", {"supply_product_id": sp.id,
                                                 "quantity": int(ep.moq(sp.vendor_id) * (1 + 2 * v))})
            elif kind == "price":
                p = _pick(ep.products, u)
                new = max(100, int(p.variants[0].price * (0.5 + v)))
                ep.call("set_price", {"product_id": p.id, "price": f"{new / 100:.2f}"})
            elif kind == "end":
                ep.call("end_window")
        if not ep.over and ep.window == start:
            ep.call("end_window")


def evaluate(task: str, seed: int, cell: dict[str, Any], genome: list[list[Gene]]) -> tuple[Decimal, Score]:
    ep = arm(task, seed)
    play(ep, genome)
    if not ep.over:
        ep.stop()
    s = score(ep, Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"])))
    return s.reward_composite, s


def search(method: str, task: str, seed: int, cell: dict[str, Any], episodes: int, *, rng_seed: int = 0,
           progress: Callable[[int, float], None] | None = None) -> SearchResult:
    ep = arm(task, seed)
    windows, per_window = ep.n_windows, ep.task.ops_per_window
    r = Stream.of("search", method, rng_seed)
    best_genome = random_genome(r, windows, per_window)
    best, best_score = evaluate(task, seed, cell, best_genome)
    history = [float(best)]
    if progress:
        progress(1, float(best))
    for i in range(1, episodes):
        if method == "random":
            genome = random_genome(r, windows, per_window)
        else:
            genome = [list(genes) for genes in best_genome]
            for _ in range(max(1, windows * per_window // 20)):
                w = r.randint(0, windows - 1)
                g = r.randint(0, per_window - 1)
                genome[w][g] = (r.randint(0, len(KINDS) - 1), r.random(), r.random())
        value, s = evaluate(task, seed, cell, genome)
        if value > best:
            best, best_score, best_genome = value, s, genome
        history.append(float(best))
        if progress:
            progress(i + 1, float(best))
    return SearchResult(method, episodes, float(best), float(best_score.business),
                        float(best_score.reliability), history)
