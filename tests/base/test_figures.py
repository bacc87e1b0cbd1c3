"""Figures as shown: a cost in significant digits, never in exponent notation, never with a space to break at."""

from __future__ import annotations

import pytest

from gradebench._base.numbers import money, plain


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.00004968, "0.0000497"),
        (5e-05, "0.00005"),
        (0.45475, "0.455"),
        (0.999999, "1"),
        (12.345, "12.35"),
        (1234.5, "1234.50"),
        (0.0, "0"),
        (1e-15, "0"),
        (None, "unknown"),
    ],
)
def test_a_cost_in_significant_digits(value: float | None, shown: str) -> None:
    assert money(value) == shown


def test_no_figure_is_in_exponent_notation_or_breakable() -> None:
    values = [m * 10.0**e for e in range(-11, 6) for m in (1, 1.5, 4.968, 9.999)]
    for value in values:
        for text in (money(value), plain(value), money(-value)):
            assert "e" not in text and " " not in text and "\n" not in text, (value, text)
    assert plain(0.0000123449) == "0.00001234" and plain(8.95) == "8.95" and plain(1234.5678) == "1235"
