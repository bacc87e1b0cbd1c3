"""Figures as people read them: plain digits, never ``5e-05``, never broken across lines.

`money` is a cost (2 decimals from 1 up, 3 significant digits below); `plain` any other number, to a number of
significant digits; `fit_line` wraps a sentence to a terminal's width between words, so no figure is split.
"""

from __future__ import annotations

import math
import textwrap

__all__ = ["fit_line", "money", "plain"]

MONEY_DIGITS = 3
"""Significant digits of a cost below 1 (``0.0000497``); a cost of 1 or more has two decimals (``12.35``)."""
MAX_DECIMALS = 12
"""Past this many decimals a number is shown as 0 (a millionth of a millionth is nothing anyone pays or waits)."""


def plain(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits in plain notation, trailing zeros dropped: 0.00001234, 8.95, 1235.

    >>> [plain(x) for x in (0.0000123449, 8.95, 1234.5678, 0.0)]
    ['0.00001234', '8.95', '1235', '0']
    """
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    decimals = max(0, min(MAX_DECIMALS, digits - 1 - math.floor(math.log10(abs(value)))))
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("0", "-0") else text


def money(value: float | None, *, unknown: str = "unknown") -> str:
    """A cost as text: 2 decimals from 1 up, 3 significant digits below (trailing zeros dropped), plain digits always.

    >>> [money(x) for x in (0.00004968, 0.45475, 12.345, 0.0, None)]
    ['0.0000497', '0.455', '12.35', '0', 'unknown']
    """
    if value is None or not math.isfinite(value):
        return unknown
    if abs(value) >= 1:
        return f"{value:.2f}"
    return plain(value, MONEY_DIGITS)


def fit_line(line: str, width: int) -> str:
    """A line wrapped between words to ``width``, its continuation indented under its own indent: never mid-figure."""
    if len(line) <= width:
        return line
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    return textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
