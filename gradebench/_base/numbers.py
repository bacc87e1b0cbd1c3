"""Figures as people read them: plain digits, never ``5e-05``, never broken across lines.

`money` is a cost (2 decimals from 1 up, 3 significant digits below); `plain` any other number, to a number of
significant digits; `figure` and `signed` a figure that may be negative (an agreement, a difference) to fixed
decimals with a true minus sign (U+2212, as an interval beside it has); `fit_line` wraps a sentence to a terminal's
width between words, so no figure is split.
"""

from __future__ import annotations

import math
import textwrap

__all__ = ["MINUS", "figure", "fit_line", "money", "plain", "signed", "span"]

MINUS = "\u2212"
"""The minus sign of every signed figure shown: an ASCII hyphen beside it would read as a dash."""

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


def figure(value: float, decimals: int = 2) -> str:
    """``value`` to ``decimals`` places, a negative one with `MINUS`, never a negative zero.

    >>> [figure(x) for x in (0.4213, -0.12, -0.001)]
    ['0.42', '\u22120.12', '0.00']
    """
    text = f"{value:.{decimals}f}"
    return text.lstrip("-") if float(text) == 0 else text.replace("-", MINUS)


def signed(value: float, decimals: int = 2) -> str:
    """``value`` to ``decimals`` places with its sign always shown (`MINUS` for a negative), a zero as ``+0.00``.

    >>> [signed(x) for x in (0.4213, -0.12, -0.001)]
    ['+0.42', '\u22120.12', '+0.00']
    """
    text = f"{value:+.{decimals}f}"
    return "+" + text[1:] if float(text) == 0 else text.replace("-", MINUS)


def span(lo: float | None, hi: float | None, decimals: int = 2) -> str:
    """An interval: ``[0.61–0.90]``, or ``[−0.20, 0.40]`` when a bound is negative (a dash would read as a minus);
    ``[no interval]`` without one.

    >>> [span(0.61, 0.9), span(-0.2, 0.4), span(None, None)]
    ['[0.61–0.90]', '[\u22120.20, 0.40]', '[no interval]']
    """
    if lo is None or hi is None:
        return "[no interval]"
    if float(f"{lo:.{decimals}f}") >= 0:
        return f"[{figure(lo, decimals)}–{figure(hi, decimals)}]"
    return f"[{figure(lo, decimals)}, {figure(hi, decimals)}]"


def fit_line(line: str, width: int) -> str:
    """A line wrapped between words to ``width``, its continuation indented under its own indent: never mid-figure."""
    if len(line) <= width:
        return line
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    return textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
