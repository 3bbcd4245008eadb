"""Scripted rival stores.

A rival active on a line (it carries an overlapping design) captures a share of
the shoppers who are not loyal to Ostrelle.  Its pull grows with how dear our
shelf is against its own price level, which wobbles window to window by its
volatility.  With no rivals in the task every shopper stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..simtime import DAY

if TYPE_CHECKING:
    from ..tasks.model import Competitor
    from .episode import Episode
    from .state import ProductRec


def competition_factor(ep: Episode, product: ProductRec, shelf: int, at: int) -> float:
    rivals = ep.task.competitors
    if not rivals:
        return 1.0
    keep = 1.0
    ours = shelf / product.ref_price
    for rival in rivals:
        if at < ep.start + int(rival.entry_at_days * DAY):
            continue
        overlap = product.competitor_overlap.get(rival.id)
        if overlap is None:
            overlap = ep.stream("overlap", rival.id, product.id).random() < rival.overlap
            product.competitor_overlap[rival.id] = overlap
        if not overlap:
            continue
        theirs = rival_price_index(ep, rival, ep.window)
        capture = rival.base_pressure * min(1.0, 0.5 * (ours / theirs) ** 4)
        keep *= 1.0 - capture
    loyal = ep.task.loyal_share
    return loyal + (1.0 - loyal) * keep


def rival_price_index(ep: Episode, rival: Competitor, window: int) -> float:
    wobble = ep.stream("rival-price", rival.id, window).gauss(0.0, rival.volatility)
    return max(0.2, rival.price_index * (1.0 + wobble))
