"""Scorers: compare a run's output in code with the reference output (or a gold value the input carries), 0..1.

A scorer is any callable ``(output, reference_output) -> float | None`` (None: cannot be compared) with a ``name`` used
in reports. One that compares with a gold label takes the input too, as a keyword ``input``: gradebench passes it to a
scorer whose signature names ``input`` (or whose ``reads_input`` is True), and such a scorer scores the reference run
as well: was the pinned model right in the first place? The ready ones here are pure and never raise on odd input: a
reference (or gold value) that lacks what the scorer reads gives None, a run that lacks it 0.0. Each takes ``gold=``,
a dotted path into the input: then it holds the output to the input's value there, not to the reference's.

Multiple-choice helpers: `extract_choice` finds the answer letter in free text, `seeded_shuffle` permutes options
reproducibly (sha256 of a key, so the same input shows the same order in every process and Python version).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

__all__ = [
    "ChoiceLetter",
    "FieldEquals",
    "NumericClose",
    "SPECS",
    "Scorer",
    "SetF1",
    "Shuffled",
    "choice_letter",
    "extract_choice",
    "field_equals",
    "from_spec",
    "gold_path",
    "numeric_close",
    "seeded_shuffle",
    "set_f1",
    "without_gold",
]

T = TypeVar("T")

DEFAULT_LETTERS = "ABCDEFGHIJ"


@runtime_checkable
class Scorer(Protocol):
    """Compares an output with the reference output: 0..1, or None when the pair cannot be compared.

    A scorer may also take ``input`` as a keyword (the run's input, e.g. to read a gold label); see the module's docs.
    """

    @property
    def name(self) -> str:
        """Label of the scorer in reports (an attribute or a property)."""
        ...

    def __call__(self, output: Any, reference_output: Any) -> float | None: ...


# ------------------------------------------------------------------------------------------------------------- paths

_MISSING = object()


def _get(value: Any, path: str | None) -> Any:
    """The value at a dotted path (``"a.b"``; a numeric part indexes a list), or ``_MISSING``.

    A JSON text holding an object or array is read as that value, so outputs stored as text score like live ones.
    """
    value = _decoded(value)
    if not path:
        return value
    for part in path.split("."):
        value = _decoded(value)
        if isinstance(value, dict):
            if part not in value:
                return _MISSING
            value = value[part]
        elif isinstance(value, list | tuple) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            if not -len(value) <= index < len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
    return value


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _check_path(path: Any, what: str = "path") -> str:
    if not isinstance(path, str) or not path or any(not p for p in path.split(".")):
        raise ValueError(f"{what} must be a dotted path like 'decision' or 'a.b', got {path!r}")
    return path


def _gold(gold: Any) -> str | None:
    return None if gold is None else _check_path(gold, "gold")


def _is_number(value: Any) -> bool:
    # bool is an int subclass, but True is not the number 1 in an answer.
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps booleans apart from numbers and never raises."""
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except Exception:  # e.g. an array whose truth value is ambiguous: not equal, as far as a score goes
        return False


def gold_path(scorer: Any) -> str | None:
    """The dotted path of the gold label a scorer (or a scorer spec such as ``field_equals:label@expected_label``)
    holds outputs to; None when it compares with the reference's output or does not say. A scorer of your own says
    so with a ``gold`` attribute."""
    if isinstance(scorer, str):
        body, at, path = scorer.partition("@")
        return path if at and body.partition(":")[0] in (*_BY_KIND, "choice_letter") else None
    found = getattr(scorer, "gold", None)
    return found if isinstance(found, str) and found else None


def without_gold(value: Any, path: str | None) -> Any:
    """``value`` with the gold label at the dotted ``path`` taken out (a copy; the value itself is left as it is):
    what the judge is shown of an input, so it scores against the reference as it would without labels."""
    if path is None or not isinstance(value, Mapping):
        return value
    head, _, rest = path.partition(".")
    if head not in value:
        return value
    if not rest:
        return {k: v for k, v in value.items() if k != head}
    return {**value, head: without_gold(value[head], rest)}


# ---------------------------------------------------------------------------------------------------------- scorers


def _expected(reference_output: Any, input: Any, path: str | None, gold: str | None) -> Any:
    """What a run's value is held to: the input's value at ``gold`` (a gold label), else the reference's at ``path``."""
    return _get(input, gold) if gold is not None else _get(reference_output, path)


def _label(kind: str, *parts: str | None, gold: str | None) -> str:
    """A scorer's name in reports: ``field_equals(label)``, ``field_equals(label, gold=expected)``."""
    inner = ", ".join([p for p in parts if p] + ([f"gold={gold}"] if gold else []))
    return f"{kind}({inner})" if inner else kind


def _spec(kind: str, path: str | None, gold: str | None) -> str | None:
    """``kind:path@gold`` as `from_spec` reads it; None when a path holds an ``@`` (the spec could not be read back)."""
    if "@" in (path or "") or "@" in (gold or ""):
        return None
    made = f"{kind}:{path}" if path else kind
    return f"{made}@{gold}" if gold else made


@dataclass(frozen=True, kw_only=True)
class _HeldToGold:
    """What every ready scorer shares: the gold value it may be held to instead of the reference's output."""

    gold: str | None = None
    """Dotted path into the input to the gold value the output is held to; None: the reference's output."""

    @property
    def reads_input(self) -> bool:
        """True when it compares with a gold value of the input (then it scores the reference run too)."""
        return self.gold is not None


@dataclass(frozen=True, kw_only=True)
class FieldEquals(_HeldToGold):
    """1.0 when the value at ``path`` equals the reference's (or the gold one), 0.0 if not; None when there is none."""

    path: str
    """Dotted path into the output dicts, e.g. ``"decision"`` or ``"a.b"``."""

    @property
    def name(self) -> str:
        """Label in reports."""
        return _label("field_equals", self.path, gold=self.gold)

    @property
    def spec(self) -> str | None:
        """What `from_spec` takes to make this scorer again."""
        return _spec("field_equals", self.path, self.gold)

    def __call__(self, output: Any, reference_output: Any, *, input: Any = None) -> float | None:
        expected = _expected(reference_output, input, self.path, self.gold)
        if expected is _MISSING:
            return None
        got = _get(output, self.path)
        return 1.0 if got is not _MISSING and _same(got, expected) else 0.0


@dataclass(frozen=True, kw_only=True)
class NumericClose(_HeldToGold):
    """1.0 when the number at ``path`` is within tolerance of the reference's (or the gold number); None when the
    reference (or the input) has no number."""

    path: str
    """Dotted path into the output dicts."""
    rel: float = 0.01
    """Relative tolerance (of the larger magnitude), as in `math.isclose`."""
    abs: float = 0.0
    """Absolute tolerance."""

    @property
    def name(self) -> str:
        """Label in reports."""
        return _label("numeric_close", self.path, f"rel={self.rel:g}", f"abs={self.abs:g}", gold=self.gold)

    @property
    def spec(self) -> str | None:
        """What `from_spec` takes to make this scorer again (None when its tolerances are not the spec's)."""
        return _spec("numeric_close", self.path, self.gold) if (self.rel, self.abs) == (0.01, 0.0) else None

    def __call__(self, output: Any, reference_output: Any, *, input: Any = None) -> float | None:
        expected = _expected(reference_output, input, self.path, self.gold)
        if not _is_number(expected):
            return None
        got = _get(output, self.path)
        if not _is_number(got):
            return 0.0
        return 1.0 if math.isclose(got, expected, rel_tol=self.rel, abs_tol=self.abs) else 0.0


@dataclass(frozen=True, kw_only=True)
class SetF1(_HeldToGold):
    """F1 of the collections at ``path`` taken as sets (both empty: 1.0); None when the one held to is no collection."""

    path: str
    """Dotted path into the output dicts."""

    @property
    def name(self) -> str:
        """Label in reports."""
        return _label("set_f1", self.path, gold=self.gold)

    @property
    def spec(self) -> str | None:
        """What `from_spec` takes to make this scorer again."""
        return _spec("set_f1", self.path, self.gold)

    def __call__(self, output: Any, reference_output: Any, *, input: Any = None) -> float | None:
        expected = _as_set(_expected(reference_output, input, self.path, self.gold))
        if expected is None:
            return None
        got = _as_set(_get(output, self.path))
        if got is None:
            return 0.0
        if not expected and not got:
            return 1.0
        return 2 * len(expected & got) / (len(expected) + len(got))


def _as_set(value: Any) -> set[Any] | None:
    # A string is one value, not a collection of characters.
    if not isinstance(value, list | tuple | set | frozenset):
        return None
    return {_item_key(v) for v in value}


def _item_key(value: Any) -> Any:
    """A hashable stand-in for a collection item: equal JSON values get equal keys, True and 1 do not."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("str", value)
    try:
        return ("json", json.dumps(value, sort_keys=True, default=repr))
    except (TypeError, ValueError):
        return ("repr", repr(value))


@dataclass(frozen=True, kw_only=True)
class ChoiceLetter(_HeldToGold):
    """1.0 when output and reference (or the gold value) name the same multiple-choice letter (see `extract_choice`)."""

    letters: str = DEFAULT_LETTERS
    """The letters the choices are labelled with."""
    path: str | None = None
    """Dotted path to the text holding the answer; None: the output itself is the text."""

    @property
    def name(self) -> str:
        """Label in reports."""
        return _label("choice_letter", self.path, gold=self.gold)

    @property
    def spec(self) -> str | None:
        """What `from_spec` takes to make this scorer again (None for letters other than the default)."""
        return _spec("choice_letter", self.path, self.gold) if self.letters == DEFAULT_LETTERS else None

    def __call__(self, output: Any, reference_output: Any, *, input: Any = None) -> float | None:
        if self.gold is not None:
            gold = _get(input, self.gold)
            expected = extract_choice(gold, self.letters) if isinstance(gold, str) else None
        else:
            expected = self._letter(reference_output)
        if expected is None:
            return None
        return 1.0 if self._letter(output) == expected else 0.0

    def _letter(self, value: Any) -> str | None:
        text = _get(value, self.path) if self.path else value
        return extract_choice(text, self.letters) if isinstance(text, str) else None


def field_equals(path: str, *, gold: str | None = None) -> FieldEquals:
    """Scorer: the value at a dotted path equals the reference's (1.0) or not (0.0); with ``gold`` (a dotted path into
    the input), the input's value there instead."""
    return FieldEquals(path=_check_path(path), gold=_gold(gold))


def numeric_close(path: str, rel: float = 0.01, abs: float = 0.0, *, gold: str | None = None) -> NumericClose:
    """Scorer: the number at a dotted path is within ``rel``/``abs`` of the reference's (or the input's at ``gold``)."""
    for label, tol in (("rel", rel), ("abs", abs)):
        if not _is_number(tol) or tol < 0:
            raise ValueError(f"{label} must be a finite number >= 0, got {tol!r}")
    return NumericClose(path=_check_path(path), rel=float(rel), abs=float(abs), gold=_gold(gold))


def set_f1(path: str, *, gold: str | None = None) -> SetF1:
    """Scorer: F1 of the two collections at a dotted path, as sets (the input's at ``gold`` for the reference's)."""
    return SetF1(path=_check_path(path), gold=_gold(gold))


def choice_letter(letters: str = DEFAULT_LETTERS, path: str | None = None, *, gold: str | None = None) -> ChoiceLetter:
    """Scorer: output and reference (or the input's answer at ``gold``) pick the same multiple-choice letter."""
    return ChoiceLetter(
        letters=_check_letters(letters), path=None if path is None else _check_path(path), gold=_gold(gold)
    )


SPECS: dict[str, str] = {
    "field_equals:PATH": "the value at PATH equals the reference's",
    "numeric_close:PATH": "the number at PATH is within 1% of the reference's",
    "set_f1:PATH": "F1 of the collections at PATH, as sets",
    "choice_letter[:PATH]": "the same multiple-choice letter (in the text, or at PATH)",
    "field_equals:PATH@GOLD": "the value at PATH equals the input's gold value at GOLD (a dotted path into the input)",
    "numeric_close:PATH@GOLD": "the number at PATH is within 1% of the input's at GOLD",
    "set_f1:PATH@GOLD": "F1 of the collection at PATH against the input's at GOLD",
    "choice_letter[:PATH]@GOLD": "the letter the output names is the input's gold answer at GOLD",
}
"""The scorers a spec can name (the CLI, a run config and the panel all read specs), with what each scores. A spec
with ``@GOLD`` compares with a gold label the input carries, and scores the reference run too."""

_BY_KIND: dict[str, Any] = {"field_equals": field_equals, "numeric_close": numeric_close, "set_f1": set_f1}


def from_spec(spec: str) -> Scorer:
    """A scorer from its spec: ``field_equals:decision``, ``numeric_close:total``, ``set_f1:items``,
    ``choice_letter`` or ``choice_letter:answer``, each with ``@GOLD`` to compare with the input's gold value at the
    dotted path GOLD (``field_equals:label@expected_label``, ``choice_letter@answer``); a bad spec raises a
    `ValueError` listing the valid ones, and a bad path after a known kind (``field_equals:`` with none, ``@`` with no
    gold path) one saying what a path is."""
    body, at, gold_path = spec.strip().partition("@")
    gold = _check_path(gold_path, "gold") if at else None
    kind, colon, path = body.partition(":")
    if kind in _BY_KIND and colon:
        return _BY_KIND[kind](path, gold=gold)
    if kind == "choice_letter":
        return choice_letter(path=path or None, gold=gold)
    raise ValueError(f"scorer {spec!r} is not one of {', '.join(SPECS)}")


# ----------------------------------------------------------------------------------------------- choice extraction


def _check_letters(letters: Any) -> str:
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
    allowed = _check_letters(letters)
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
    letters = _check_letters(letters)
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
