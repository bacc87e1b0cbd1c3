"""What a scorer is (`Scorer`), the ready ones (`field_equals`, `numeric_close`, `set_f1`, `choice_letter`), each held
to the reference's output or to a gold value of the input, and the specs that name them (`SPECS`, `from_spec`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._choice import DEFAULT_LETTERS, check_letters, extract_choice
from ._paths import MISSING, check_gold, check_path, is_number, same, value_at

__all__ = [
    "SPECS",
    "ChoiceLetter",
    "FieldEquals",
    "NumericClose",
    "Scorer",
    "SetF1",
    "choice_letter",
    "field_equals",
    "from_spec",
    "gold_path",
    "numeric_close",
    "set_f1",
]


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


# ---------------------------------------------------------------------------------------------------------- scorers


def _expected(reference_output: Any, input: Any, path: str | None, gold: str | None) -> Any:
    """What a run's value is held to: the input's value at ``gold`` (a gold label), else the reference's at ``path``."""
    return value_at(input, gold) if gold is not None else value_at(reference_output, path)


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
        if expected is MISSING:
            return None
        got = value_at(output, self.path)
        return 1.0 if got is not MISSING and same(got, expected) else 0.0


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
        if not is_number(expected):
            return None
        got = value_at(output, self.path)
        if not is_number(got):
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
        got = _as_set(value_at(output, self.path))
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
            gold = value_at(input, self.gold)
            expected = extract_choice(gold, self.letters) if isinstance(gold, str) else None
        else:
            expected = self._letter(reference_output)
        if expected is None:
            return None
        return 1.0 if self._letter(output) == expected else 0.0

    def _letter(self, value: Any) -> str | None:
        text = value_at(value, self.path) if self.path else value
        return extract_choice(text, self.letters) if isinstance(text, str) else None


def field_equals(path: str, *, gold: str | None = None) -> FieldEquals:
    """Scorer: the value at a dotted path equals the reference's (1.0) or not (0.0); with ``gold`` (a dotted path into
    the input), the input's value there instead."""
    return FieldEquals(path=check_path(path), gold=check_gold(gold))


def numeric_close(path: str, rel: float = 0.01, abs: float = 0.0, *, gold: str | None = None) -> NumericClose:
    """Scorer: the number at a dotted path is within ``rel``/``abs`` of the reference's (or the input's at ``gold``)."""
    for label, tol in (("rel", rel), ("abs", abs)):
        if not is_number(tol) or tol < 0:
            raise ValueError(f"{label} must be a finite number >= 0, got {tol!r}")
    return NumericClose(path=check_path(path), rel=float(rel), abs=float(abs), gold=check_gold(gold))


def set_f1(path: str, *, gold: str | None = None) -> SetF1:
    """Scorer: F1 of the two collections at a dotted path, as sets (the input's at ``gold`` for the reference's)."""
    return SetF1(path=check_path(path), gold=check_gold(gold))


def choice_letter(letters: str = DEFAULT_LETTERS, path: str | None = None, *, gold: str | None = None) -> ChoiceLetter:
    """Scorer: output and reference (or the input's answer at ``gold``) pick the same multiple-choice letter."""
    return ChoiceLetter(
        letters=check_letters(letters), path=None if path is None else check_path(path), gold=check_gold(gold)
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
    gold = check_path(gold_path, "gold") if at else None
    kind, colon, path = body.partition(":")
    if kind in _BY_KIND and colon:
        return _BY_KIND[kind](path, gold=gold)
    if kind == "choice_letter":
        return choice_letter(path=path or None, gold=gold)
    raise ValueError(f"scorer {spec!r} is not one of {', '.join(SPECS)}")


def gold_path(scorer: Any) -> str | None:
    """The dotted path of the gold label a scorer (or a scorer spec such as ``field_equals:label@expected_label``)
    holds outputs to; None when it compares with the reference's output or does not say. A scorer of your own says
    so with a ``gold`` attribute."""
    if isinstance(scorer, str):
        body, at, path = scorer.partition("@")
        return path if at and body.partition(":")[0] in (*_BY_KIND, "choice_letter") else None
    found = getattr(scorer, "gold", None)
    return found if isinstance(found, str) and found else None
