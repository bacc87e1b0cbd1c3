"""Canonical JSON: one text for one value, whatever its key order, so equal values hash and compare equal.

The one encoder of gradebench for text that is hashed or compared: the cache key and every id
(`gradebench._records.keys`, whose contract pins these bytes: ``tests/records/test_keys.py``), the simulated fleet's
seeds
(`gradebench.sim`), the judge prompt's quoted values and the planted answers of the controls. Its bytes never change:
a change would empty every user's cache.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["canonical_json"]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces, UTF-8 kept (no ``\\u`` escapes), and any value JSON cannot hold written
    as its ``str``: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
