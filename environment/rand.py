"""Deterministic, purpose-keyed randomness.

Every random draw in the core comes from a :class:`Stream` built from a key.  A key
is a 64-bit integer mixed from parts such as ``(seed, "demand", window, product)``,
so a draw depends on *what it is for* and never on how many draws came before it.
That is what lets an operator insert extra read calls without moving any later
order, return or price draw.

The generator is SplitMix64 (Steele, Lea and Flood 2014) in counter mode: the
``i``-th output of a stream is ``mix(key + i * GAMMA)``.  It needs only integer
arithmetic, so its output is identical on every Python version and platform,
unlike the helpers of :mod:`random` whose algorithms may change between releases.
"""

from __future__ import annotations

import hashlib
import math
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeVar

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
_INV53 = 1.0 / (1 << 53)
T = TypeVar("T")


def mix64(z: int) -> int:
    """SplitMix64's finaliser: a bijective avalanche of a 64-bit integer."""
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & MASK64
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & MASK64
    return z ^ (z >> 31)


@lru_cache(maxsize=4096)
def _text_key(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def make_key(*parts: int | str) -> int:
    """Fold ints and strings into one 64-bit stream key, order-sensitively."""
    k = 0x6A09E667F3BCC909
    for part in parts:
        value = _text_key(part) if isinstance(part, str) else part & MASK64
        k = mix64((k ^ value) + GAMMA & MASK64)
    return k


class Stream:
    """A counter-mode stream of uniform draws and the few distributions we need."""

    __slots__ = ("_key", "_i")

    def __init__(self, key: int) -> None:
        self._key = key
        self._i = 0

    @classmethod
    def of(cls, *parts: int | str) -> Stream:
        return cls(make_key(*parts))

    def next64(self) -> int:
        self._i += 1
        return mix64((self._key + self._i * GAMMA) & MASK64)

    def random(self) -> float:
        """Uniform in [0, 1)."""
        return (self.next64() >> 11) * _INV53

    def uniform(self, low: float, high: float) -> float:
        return low + (high - low) * self.random()

    def randint(self, low: int, high: int) -> int:
        """Uniform integer in [low, high], both ends included."""
        return low + self.next64() % (high - low + 1)

    def chance(self, p: float) -> bool:
        return self.random() < p

    def choice(self, items: Sequence[T]) -> T:
        return items[self.next64() % len(items)]

    def weighted_index(self, cumulative: Sequence[float]) -> int:
        """Index drawn from a cumulative weight table (last entry is the total)."""
        return bisect_right(cumulative, self.random() * cumulative[-1])

    def weighted_choice(self, items: Sequence[T], weights: Sequence[float]) -> T:
        total = 0.0
        cumulative: list[float] = []
        for w in weights:
            total += w
            cumulative.append(total)
        return items[min(self.weighted_index(cumulative), len(items) - 1)]

    def shuffle(self, items: list[Any]) -> None:
        """Fisher-Yates, in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.next64() % (i + 1)
            items[i], items[j] = items[j], items[i]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        pool = list(items)
        self.shuffle(pool)
        return pool[:k]

    def gauss(self, mu: float = 0.0, sigma: float = 1.0) -> float:
        """Normal draw by Box-Muller (one of the pair, so each call is independent)."""
        u1 = 1.0 - self.random()
        u2 = self.random()
        return mu + sigma * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def lognormal(self, mu: float, sigma: float) -> float:
        return math.exp(self.gauss(mu, sigma))

    def poisson(self, lam: float) -> int:
        """Poisson draw by inversion from one uniform.

        One uniform per draw keeps the count a monotone function of ``lam`` for a
        fixed key: a small change in expected demand never reshuffles the stream.
        """
        if lam <= 0.0:
            return 0
        if lam > 60.0:
            return max(0, round(self.gauss(lam, math.sqrt(lam))))
        u = self.random()
        p = math.exp(-lam)
        cdf = p
        k = 0
        while u > cdf and k < 400:
            k += 1
            p *= lam / k
            cdf += p
        return k
