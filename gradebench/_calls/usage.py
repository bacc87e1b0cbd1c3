"""What a provider's answer says about itself: tokens, cost and where the cost came from, read from the body as sent.

Tokens are ``usage.prompt_tokens`` and ``completion_tokens``, with ``prompt_tokens_details.cached_tokens`` (part of the
input) and ``completion_tokens_details.reasoning_tokens`` (part of the output). A cost the provider reports in USD
(OpenRouter's ``usage.cost``, a LiteLLM proxy's `LITELLM_COST_HEADER`) is the call's cost; otherwise the entry's price
table gives it (the catalog's prices, or genai-prices' for an entry that names its provider), and ``price_source``
says which. An answer that came in a batch is priced at the entry's batch price (`Entry.batch_price_source`).
A number the answer does not give stays None: unknown is never 0. A usage holding NaN or Infinity anywhere (Python's
json reads both) is unknown as a whole, its tokens and its cost: the answer is kept, and the report's
``usage_not_finite`` diagnostic names the fields.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._base.vocab import CostSource, PriceSource
from .._catalog.catalog import Entry
from .._records.call import non_finite_usage

__all__ = ["LITELLM_COST_HEADER", "Usage", "number", "read_usage"]

LITELLM_COST_HEADER = "x-litellm-response-cost"
"""A LiteLLM proxy reports the call's cost (USD) in this response header."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """What an answered call reported of itself (the `Call` fields of the same names)."""

    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None
    reasoning_tokens: int | None
    cost: float | None
    cost_source: CostSource | None
    price_table_cost: float | None
    price_source: str | None
    generation_id: str | None
    finish_reason: str | None

    def fields(self) -> dict[str, Any]:
        """The record's fields by name."""
        return {name: getattr(self, name) for name in _USAGE_FIELDS}


_USAGE_FIELDS = tuple(f.name for f in dataclasses.fields(Usage))
"""Read once: `Usage.fields` is asked for on every call."""


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


def _detail(usage: Mapping[str, Any], group: str, name: str) -> int | None:
    details = usage.get(group)
    return _count(details.get(name)) if isinstance(details, dict) else None


def number(value: Any) -> float | None:
    """A finite non-negative number from a JSON value or a header string, else None."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def read_usage(entry: Entry, body: Mapping[str, Any], header_cost: float | None, *, batch: bool = False) -> Usage:
    """The tokens and cost an answer reports (``body`` parsed; ``header_cost`` from a response header, or None;
    ``batch``: the answer came in a batch)."""
    usage = body.get("usage")
    # one figure that is not a number makes the others doubtful too: none of them is taken
    usage = usage if isinstance(usage, dict) and not non_finite_usage(body) else {}
    tin, tout = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    cached = _detail(usage, "prompt_tokens_details", "cached_tokens")
    reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens")
    if tin is not None:
        cached = min(cached or 0, tin)
    if tout is not None:
        reasoning = min(reasoning or 0, tout)
    # an entry without a price table (reports_cost) is priced by what its endpoint reports alone
    priced = entry.priced and tin is not None and tout is not None
    table = entry.cost(tin or 0, tout or 0, cached or 0, batch=batch) if priced else None
    # Providers report cost in USD (OpenRouter's usage.cost, LiteLLM's header); another currency keeps the table's.
    reported = number(usage.get("cost")) if "cost" in usage else header_cost
    cost: float | None = table
    source = CostSource.PRICE_TABLE if table is not None else None
    priced_by = (entry.batch_price_source if batch else entry.price_source) if table is not None else None
    if reported is not None and entry.currency.upper() == "USD":
        cost, source, priced_by = reported, CostSource.PROVIDER, str(PriceSource.PROVIDER)
    return Usage(
        input_tokens=tin,
        output_tokens=tout,
        cached_input_tokens=cached,
        reasoning_tokens=reasoning,
        cost=cost,
        cost_source=source,
        price_table_cost=table,
        price_source=priced_by,
        generation_id=body.get("id"),
        finish_reason=(body.get("choices") or [{}])[0].get("finish_reason"),
    )
