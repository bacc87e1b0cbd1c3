"""The inputs of a race: each one's value and its stable id."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._base.redact import has_surrogates
from .keys import short_hash

__all__ = ["RaceInput"]


@dataclass(frozen=True, kw_only=True)
class RaceInput:
    """One input of a race: its id and its value."""

    id: str
    """Its ``id`` field when it has one, else a `short_hash` of its content."""
    value: Any
    """What the job is given."""

    @staticmethod
    def parse(values: Sequence[Any]) -> list[RaceInput]:
        """Inputs from their values: an input's id is its ``id`` field when it has one, else a hash of its content.

        Every value must be JSON (one that is not would hash a memory address and miss the cache on every rerun) and
        ids must be unique; a bad one raises a `ValueError` naming it.
        """
        if not values:
            raise ValueError("inputs must not be empty")
        inputs = []
        for i, value in enumerate(values):
            ident = value.get("id") if isinstance(value, Mapping) else None
            name = f"input {i}" + (f" (id {ident!r})" if ident is not None else "")
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{name} is not JSON: {exc}; give plain dicts, lists, strings and numbers") from None
            if has_surrogates(value):
                raise ValueError(f"{name} holds text that is not UTF-8 (a lone surrogate such as \\ud800)")
            inputs.append(RaceInput(id=str(ident) if ident is not None else short_hash(value), value=value))
        ids = [x.id for x in inputs]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"input ids must be unique; repeated: {dupes}")
        return inputs
