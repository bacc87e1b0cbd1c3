"""Reading a scorer's values: the value at a dotted path of an output or an input (a JSON text read as the value it
holds), the paths' and gold labels' checks, an equality that keeps booleans apart from numbers, and an input without
its gold label (what the judge is shown).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["MISSING", "check_gold", "check_path", "is_number", "same", "value_at", "without_gold"]

MISSING = object()
"""What `value_at` gives where a path leads nowhere (None is a value an output may hold)."""


def value_at(value: Any, path: str | None) -> Any:
    """The value at a dotted path (``"a.b"``; a numeric part indexes a list), or `MISSING`.

    A JSON text holding an object or array is read as that value, so outputs stored as text score like live ones.
    """
    value = _decoded(value)
    if not path:
        return value
    for part in path.split("."):
        value = _decoded(value)
        if isinstance(value, dict):
            if part not in value:
                return MISSING
            value = value[part]
        elif isinstance(value, list | tuple) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            if not -len(value) <= index < len(value):
                return MISSING
            value = value[index]
        else:
            return MISSING
    return value


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def check_path(path: Any, what: str = "path") -> str:
    if not isinstance(path, str) or not path or any(not p for p in path.split(".")):
        raise ValueError(f"{what} must be a dotted path like 'decision' or 'a.b', got {path!r}")
    return path


def check_gold(gold: Any) -> str | None:
    return None if gold is None else check_path(gold, "gold")


def is_number(value: Any) -> bool:
    # bool is an int subclass, but True is not the number 1 in an answer.
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def same(a: Any, b: Any) -> bool:
    """Equality that keeps booleans apart from numbers and never raises."""
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    try:
        return bool(a == b)
    except Exception:  # e.g. an array whose truth value is ambiguous: not equal, as far as a score goes
        return False


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
