"""Multiple choice: the answer letter a free-text reply gives (`extract_choice`), and options in an order of their
own, the same in every process and Python version (`seeded_shuffle`: sha256 of a key).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["DEFAULT_LETTERS", "Shuffled", "check_letters", "extract_choice", "seeded_shuffle"]

T = TypeVar("T")

DEFAULT_LETTERS = "ABCDEFGHIJ"
"""The letters options are labelled with, unless told otherwise."""


def check_letters(letters: Any) -> str:
    """``letters`` in upper case; anything but a non-empty string of letters A-Z raises."""
    if not isinstance(letters, str) or not letters or not all("A" <= c <= "Z" for c in letters.upper()):
        raise ValueError(f"letters must be a non-empty string of letters A-Z, got {letters!r}")
    return letters.upper()


# Decoration that may stand between a marker and its letter: bold, brackets, quotes, maths and LaTeX wrappers.
_DECOR = r"(?:[\s*_(\[{$\"'`]|\\(?:boxed|text|textbf|textrm|mathrm|mathbf)\s*\{)*"
_NAMED = r"(?:(?:option|letter|choice)\s*[:#]?\s*)?"
_ANSWER = r"\b(?:final\s+|correct\s+|best\s+)?answer\b(?:[\s*_:=\-\u2013\u2014]|\bis\b|\bwould\s+be\b|\bwill\s+be\b)*"
_DECISION = (
    r"(?:\b(?:choose|chose|pick|select|recommend|go\s+with)\b"
    r"|\b(?:choice|pick|recommendation|best\s+(?:option|fit|pick))\s*(?:is|would\s+be|:)\s*)"
)
_BOXED = r"\\boxed\s*\{" + _DECOR + _NAMED + r"(?P<letter>[A-Za-z])[\s)\]}]*\}"
_AFTER = r"(?![A-Za-z0-9_]|[-'\u2019]\w)"

_ANSWER_RE = re.compile(_ANSWER + _DECOR + _NAMED + _DECOR + r"(?P<letter>[A-Za-z])" + _AFTER, re.IGNORECASE)
_DECISION_RE = re.compile(_DECISION + r"\s*" + _DECOR + _NAMED + _DECOR + r"(?P<letter>[A-Za-z])" + _AFTER, re.I)
_BOXED_RE = re.compile(_BOXED)
_LONE_RE = re.compile(r"(?<![A-Za-z0-9_'\u2019\\-])(?P<letter>[A-Z])" + _AFTER)
_LINE_START_RE = re.compile(r"^[^A-Za-z0-9\n]*(?P<letter>[A-Z])" + _AFTER, re.MULTILINE)
_ONLY_RE = re.compile(r"^[^A-Za-z0-9]*(?P<letter>[A-Za-z])[^A-Za-z0-9]*$")

# Words that may follow an answer letter "A" or "I" (so "A is cheapest" is a letter, "A good choice" an article).
_LETTER_FOLLOWERS = frozenset(
    "is was because since as and or but so then fits meets wins offers has seems looks satisfies matches costs stays "
    "remains beats works gives provides covers alone instead here".split()
)
_NEXT_WORD = re.compile(r"\s+([a-z]+)")


def _is_word(text: str, match: re.Match[str]) -> bool:
    """True when the matched "A"/"I" reads as the article or pronoun rather than an answer letter."""
    if match.group("letter").upper() not in ("A", "I"):
        return False
    following = _NEXT_WORD.match(text, match.end("letter"))
    return following is not None and following.group(1) not in _LETTER_FOLLOWERS


def extract_choice(text: Any, letters: str = DEFAULT_LETTERS) -> str | None:
    """The multiple-choice letter a free-text answer gives (upper case), or None when it names none.

    Tries, in order: the last explicit answer marker (``Answer: B``, ``The final answer is **(B)**``), the last
    ``\\boxed{B}``, the last decision phrase (``I'd pick B``, ``A good choice is C``), the first letter opening a
    line (``B) ...``, ``**B**``), then the last lone capital letter. Full-width letters and lower case after a marker
    count; the article "A" and pronoun "I" inside a sentence do not.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    allowed = check_letters(letters)
    text = unicodedata.normalize("NFKC", text)  # full-width Ｂ and （Ｂ） become B and (B)

    def valid(matches: list[re.Match[str]]) -> list[str]:
        letters_found = [(m, m.group("letter").upper()) for m in matches]
        return [letter for m, letter in letters_found if letter in allowed and not _is_word(text, m)]

    for pattern in (_ANSWER_RE, _BOXED_RE, _DECISION_RE):
        found = valid(list(pattern.finditer(text)))
        if found:
            return found[-1]
    only = _ONLY_RE.match(text)
    if only and only.group("letter").upper() in allowed:
        return only.group("letter").upper()
    # A line that opens with a letter ("B) fits the budget") is the answer; the prompt asks for the letter first.
    openers = valid(list(_LINE_START_RE.finditer(text)))
    if openers:
        return openers[0]
    lone = valid(list(_LONE_RE.finditer(text)))
    return lone[-1] if lone else None


# ------------------------------------------------------------------------------------------------------ shuffling


@dataclass(frozen=True, kw_only=True)
class Shuffled(Generic[T]):
    """Options in a seeded order, with the permutation and the letter the target ended up under."""

    options: list[T]
    """The options in their shuffled order."""
    order: list[int]
    """The permutation: ``options[i] == original[order[i]]``."""
    target_letter: str | None
    """The letter of the original ``target`` index after shuffling; None when no target was given."""

    def original_index(self, letter: str, letters: str = DEFAULT_LETTERS) -> int | None:
        """The original index of the option shown under ``letter``, or None when no option has that letter."""
        position = letters.upper().find(letter.upper()) if isinstance(letter, str) and len(letter) == 1 else -1
        return self.order[position] if 0 <= position < len(self.order) else None


def seeded_shuffle(
    options: Sequence[T], key: Any, target: int | None = None, letters: str = DEFAULT_LETTERS
) -> Shuffled[T]:
    """Permute ``options`` reproducibly from ``key`` (sha256: the same key gives the same order everywhere)."""
    items = list(options)
    letters = check_letters(letters)
    if target is not None and (isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < len(items)):
        raise ValueError(f"target must be an index into the {len(items)} options, got {target!r}")
    seed = key if isinstance(key, bytes) else str(key).encode("utf-8")
    draws = _draws(seed)
    order = list(range(len(items)))
    # Fisher-Yates with our own unbiased draws: random.shuffle's algorithm is not promised across Python versions.
    for i in range(len(order) - 1, 0, -1):
        j = _below(draws, i + 1)
        order[i], order[j] = order[j], order[i]
    target_letter = None
    if target is not None:
        position = order.index(target)
        if position >= len(letters):
            raise ValueError(f"the target landed at position {position}, beyond the {len(letters)} letters {letters!r}")
        target_letter = letters[position]
    return Shuffled(options=[items[k] for k in order], order=order, target_letter=target_letter)


def _draws(seed: bytes) -> Iterator[int]:
    """An endless stream of 64-bit integers derived from ``seed`` (sha256 in counter mode)."""
    counter = 0
    while True:
        digest = hashlib.sha256(seed + b"\x00" + counter.to_bytes(8, "big")).digest()
        for k in range(0, 32, 8):
            yield int.from_bytes(digest[k : k + 8], "big")
        counter += 1


def _below(draws: Iterator[int], n: int) -> int:
    """An unbiased integer in ``[0, n)`` (rejection sampling over 64-bit draws)."""
    limit = (1 << 64) - (1 << 64) % n
    while True:
        x = next(draws)
        if x < limit:
            return x % n
