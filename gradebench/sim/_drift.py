"""A simulated provider that changes a model behind the same name: what `gradebench.compare` is there to catch.

``SimFleet(drift={"sim/squint": "sim/swift"})`` answers every request for ``sim/squint``'s model id as ``sim/swift``
would — its accuracy, tool discipline, misreads, verbosity, latency and failures — while the catalog, the model id,
the prices and the response's ``model`` field stay ``sim/squint``'s, as when a provider swaps the weights behind a
name. A mapping of behaviour fields degrades an entry in place instead: ``{"sim/steady": {"skip_rate": 0.3}}``. A fleet
without drift answers exactly as before (same answers, same cache keys: nothing in a request changes).

Only the behaviour moves; the per-run draws stay keyed by the served model id, so a drifted entry's runs differ from
the undrifted ones only where the new rates make them differ.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from ._profiles import Profile

__all__ = ["BEHAVIOUR_FIELDS", "Drift", "drifted"]

BEHAVIOUR_FIELDS = (
    "accuracy",
    "skip_rate",
    "misread_rate",
    "verbosity",
    "latency_ms",
    "jitter_ms",
    "ms_per_token",
    "failure_rate",
    "server_rpm",
    "burst",
    "ignores_schema",
    "judge_noise",
    "position_bias",
    "reasoning",
)
"""What a drift changes: how the model answers. The catalog's terms (name, model id, grade, prices, limits) stay."""

_PROBABILITIES = {"accuracy", "skip_rate", "misread_rate", "failure_rate", "judge_noise", "position_bias"}

Drift = Mapping[str, str | Profile | Mapping[str, Any]]
"""What ``SimFleet(drift=...)`` takes: an entry name (or model id) mapped to the profile it now behaves like (its
name, model id or a `Profile`), or to the behaviour fields that change (`BEHAVIOUR_FIELDS`)."""


def drifted(profiles: Mapping[str, Profile], drift: Drift | None) -> dict[str, Profile]:
    """Per served model id, the profile its requests are answered with (only the drifted ones): the behaviour of
    the target, the identity of the served entry. A name that is no entry, or a field that is no behaviour, raises a
    ValueError naming it."""
    if not drift:
        return {}
    by_name = {p.name: p for p in profiles.values()}

    def find(name: str, where: str) -> Profile:
        found = profiles.get(name) or by_name.get(name)
        if found is None:
            known = ", ".join(sorted(by_name))
            raise ValueError(f"{where}: no simulated entry {name!r} in this fleet (entries: {known})")
        return found

    served: dict[str, Profile] = {}
    for name, target in drift.items():
        original = find(name, "drift")
        where = f"drift[{name!r}]"
        if isinstance(target, Profile):
            changes = {f: getattr(target, f) for f in BEHAVIOUR_FIELDS}
        elif isinstance(target, str):
            like = find(target, where)
            changes = {f: getattr(like, f) for f in BEHAVIOUR_FIELDS}
        elif isinstance(target, Mapping):
            changes = _checked(dict(target), where)
        else:
            raise ValueError(
                f"{where} must be an entry name, a Profile or a mapping of behaviour fields, got {target!r}"
            )
        served[original.model] = dataclasses.replace(original, **changes)
    return served


def _checked(changes: dict[str, Any], where: str) -> dict[str, Any]:
    for field, value in changes.items():
        if field not in BEHAVIOUR_FIELDS:
            raise ValueError(
                f"{where}: {field!r} is not a behaviour field (one of {', '.join(BEHAVIOUR_FIELDS)}): a drifted "
                "entry keeps its catalog terms"
            )
        if field in ("ignores_schema", "reasoning", "server_rpm"):
            continue  # checked by Profile itself (reasoning) or free (a flag, a limit or None)
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not number or value < 0 or (field in _PROBABILITIES and value > 1):
            bound = "a probability in [0, 1]" if field in _PROBABILITIES else "a number >= 0"
            raise ValueError(f"{where}: {field} must be {bound}, got {value!r}")
    return changes
