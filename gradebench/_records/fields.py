"""What the records of a race do alike with their fields: a text field taken as the member of its vocabulary, and
a total that stays unknown while a part of it is.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

__all__ = ["as_member", "total"]


def total(values: Iterable[Any]) -> Any:
    """The sum, or None when any value is unknown."""
    result: Any = 0
    for v in values:
        if v is None:
            return None
        result += v
    return result


def as_member(record: Any, name: str, kind: type[enum.StrEnum]) -> None:
    """A record's text field as the member of ``kind`` it names (a bad value raises, naming the field)."""
    value = getattr(record, name)
    if value is None or type(value) is kind:
        return
    try:
        object.__setattr__(record, name, kind(value))
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        raise ValueError(f"{type(record).__name__}.{name} must be one of {allowed}, got {value!r}") from None
