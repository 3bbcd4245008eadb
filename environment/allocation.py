"""Splitting a whole number of units over weighted buckets.

Largest-remainder (Hamilton) apportionment: the shares sum exactly to the total,
each share is within one unit of its exact quota, and ties break by position, so
the split is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence


def apportion(total: int, weights: Sequence[float]) -> list[int]:
    if total <= 0 or not weights:
        return [0] * len(weights)
    weight_sum = float(sum(weights))
    if weight_sum <= 0:
        weights = [1.0] * len(weights)
        weight_sum = float(len(weights))
    quotas = [total * w / weight_sum for w in weights]
    shares = [int(q) for q in quotas]
    left = total - sum(shares)
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - shares[i]), i))
    for i in order[:left]:
        shares[i] += 1
    return shares
