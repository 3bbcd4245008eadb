"""Listing copy quality: a bounded merchandising factor.

Shoppers convert a little better on a listing that says what the garment is made
of, how it fits, how to care for it and what colours it comes in.  The factor is
bounded to [0.92, 1.08] of demand, so copy matters at the margin and can never be
farmed: padding, repetition and very long copy score lower, not higher.
"""

from __future__ import annotations

import re

from .state import ProductRec

_WORD = re.compile(r"[a-z]+")
FIT_WORDS = {"fit", "cut", "size", "sizing", "length", "waist", "relaxed", "slim", "oversized", "tailored"}
CARE_WORDS = {"wash", "dry", "care", "iron", "clean"}
USE_WORDS = {"warm", "cold", "summer", "winter", "year", "layer", "layering", "everyday", "weekend", "days"}
FACTOR_LOW, FACTOR_HIGH = 0.92, 1.08


def copy_quality(product: ProductRec) -> float:
    words = _WORD.findall(product.description.lower())
    if not words:
        return 0.0
    unique = set(words)
    score = 0.0
    score += 0.2 * min(1.0, len(words) / 40.0)
    score += 0.2 * (product.material.split()[0].lower() in unique)
    score += 0.15 * bool(unique & FIT_WORDS)
    score += 0.15 * bool(unique & CARE_WORDS)
    score += 0.15 * bool(unique & USE_WORDS)
    colours = {v.colour.split()[-1].lower() for v in product.variants}
    score += 0.15 * min(1.0, len(unique & colours) / max(1, min(3, len(colours))))
    if len(words) > 160:
        score *= 0.8  # walls of text do not sell
    if len(unique) / len(words) < 0.45:
        score *= 0.6  # keyword stuffing
    return round(min(1.0, score), 4)


def copy_factor(quality: float) -> float:
    return FACTOR_LOW + (FACTOR_HIGH - FACTOR_LOW) * quality
