"""A cell's money text and sort key, read off the digits, against the ``Decimal`` arithmetic
that wrote them before.

``console.present`` writes a money string's text and every number's sort key without
``Decimal`` where it can (a result has some fifty cells); these tests hold those figures
to what the ``Decimal`` formulas below (the presentation's own until 2026-12-05) give for
the same value, byte for byte, and the keys to the numbers' own order.
"""
import random
from decimal import Decimal

import pytest

from console.present import _money, _num_sort, cell

MONEY = ["0.00", "-0.00", "-0.50", "0.05", "5.00", "-5.00", "12.50", "0123.45", "-0123.45", "999.99",
         "1000.00", "-1000.00", "1234567.89", "-1234567.89", "100000000000000000000.01", "12.50\n",
         "12.\u0663\u0664", "-\uff11\uff12.\uff15\uff10",  # digits of other scripts, as \d and Decimal read them
         "99999999999999999999999999.99", "-999999999999999999999999999.99", "1" * 40 + ".99"]  # past 28 digits


def decimal_text(value: str) -> str:
    amount = Decimal(value)
    return f"{'-' if amount < 0 else ''}${abs(amount):,.2f}"


def decimal_key(value) -> str:
    number = Decimal(str(value))
    magnitude = f"{abs(number):022.4f}"
    return ("0" + "".join(chr(ord("9") - int(c) + ord("0")) if c.isdigit() else c for c in magnitude)
            if number < 0 else "1" + magnitude)


@pytest.mark.parametrize("value", MONEY)
def test_a_money_string_reads_as_decimal_writes_it(value):
    assert _money(value) == (decimal_text(value), decimal_key(Decimal(value)))


def test_money_strings_of_every_size_and_sign_read_as_decimal_writes_them():
    rng = random.Random(7)
    for _ in range(2000):
        value = f"{rng.choice(['', '-'])}{rng.randrange(10 ** rng.randrange(1, 32))}.{rng.randrange(100):02d}"
        assert _money(value) == (decimal_text(value), decimal_key(Decimal(value))), value


@pytest.mark.parametrize("value", [0, 1, -1, 7, -7, 1234, -1234, 10 ** 16, -(10 ** 16), 10 ** 25, -(10 ** 25),
                                   10 ** 28 - 1, -(10 ** 28 - 1), 10 ** 28 + 1, -(10 ** 30 + 7),
                                   0.5, -0.5, 6.2, -6.25, 1e-5, 3.14159])
def test_a_number_sorts_by_the_key_decimal_gives(value):
    assert _num_sort(value) == decimal_key(value)


def test_keys_sort_as_the_numbers_do_whatever_their_kind():
    rng = random.Random(11)
    ints = [rng.randrange(-10 ** 9, 10 ** 9) for _ in range(300)]
    money = [f"{rng.choice(['', '-'])}{rng.randrange(10 ** 7)}.{rng.randrange(100):02d}" for _ in range(300)]
    keyed = [(_num_sort(i), Decimal(i)) for i in ints] + [(_money(m)[1], Decimal(m)) for m in money]
    assert [number for _key, number in sorted(keyed)] == sorted(number for _key, number in keyed)


def test_cells_of_money_and_whole_numbers_carry_those_texts_and_keys():
    assert cell("refundable", "-1234.50") == ("-$1,234.50", decimal_key("-1234.50"), "money", False)
    assert cell("units", -12) == ("-12", decimal_key(-12), "number", False)
    assert cell("rating", "4.60").kind == "number"  # not money, though it has two decimals


@pytest.mark.parametrize(("key", "value", "dated", "text", "kind"), [
    ("paid", "115.20", False, "$115.20", "money"),
    ("rating", "4.60", False, "4.60", "number"),  # two decimals, but not money
    ("rate", "0.8125", False, "0.8125", "number"),
    ("units", "12", False, "12", "number"),
    ("amount", "12.345", False, "12.345", "number"),  # money's two decimals and no more
    ("placed_at", "2026-08-01T06:10Z", False, "08-01 06:10", "time"),
    ("placed_at", "2026-08-01T06:10Z", True, "2026-08-01 06:10", "time"),
    ("placed_at", "2026-08-01 06:10", False, "2026-08-01 06:10", "text"),  # not the store's time format
    ("order_id", "ORD-103315", False, "ORD-103315", "id"),
    ("order_id", "XYZ-103315", False, "XYZ-103315", "text"),  # not a prefix the store uses
    ("title", "Linen shirt", False, "Linen shirt", "text"),
    ("note", "12.50 and more", False, "12.50 and more", "text"),  # a number only as a whole
])
def test_a_text_value_is_read_as_money_a_number_a_time_an_id_or_words(key, value, dated, text, kind):
    got = cell(key, value, dated=dated)
    assert (got.text, got.kind, got.copy) == (text, kind, kind == "id")
    assert got.sort == (decimal_key(value) if kind in ("money", "number") else
                        value.lower() if kind == "text" else value)
