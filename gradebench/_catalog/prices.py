"""Prices from a maintained database: an entry that names its ``provider`` and no prices is priced by genai-prices.

genai-prices (pydantic's price database, shipped with the package, read offline) knows each provider's models with
their input, output and cache-read prices, tiers included. An entry is looked up once, when its catalog is made: a
model the database does not know is a load error naming the entry. Every call it prices says so in its
``price_source`` (`DATABASE`): the database's figures are approximate by its own account, so the source stays beside
the number. Where the database has a batch rate for a model (``price_context={"processing": "batch"}``: OpenAI's,
Anthropic's, Google's, ...), a call answered in a batch is priced at it (`batch_rate`).
"""

from __future__ import annotations

import difflib
import functools
import importlib.metadata
from decimal import Decimal

from .._base.vocab import PriceSource

__all__ = [
    "DATABASE",
    "PriceLookupError",
    "batch_rate",
    "check_known",
    "database_cost",
    "known_providers",
]

_BATCH = {"processing": "batch"}
"""genai-prices' price context of a request answered in a batch."""

DATABASE = f"{PriceSource.DATABASE} {importlib.metadata.version('genai-prices')}"
"""``price_source`` of a call priced by genai-prices: the database and its version."""


class PriceLookupError(LookupError):
    """genai-prices has no price for a model: the message says which and what to do; ``field`` is the entry's field
    at fault (``provider`` or ``model``)."""

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.field = field


@functools.cache
def known_providers() -> tuple[str, ...]:
    """The provider ids genai-prices knows (``openai``, ``anthropic``, ``openrouter``, ``groq``, ...)."""
    from genai_prices.data_snapshot import get_snapshot  # loaded by the first entry priced from it, not at import

    return tuple(sorted(p.id for p in get_snapshot().providers))


def check_known(model: str, provider: str) -> None:
    """Raise `PriceLookupError` unless genai-prices prices ``model`` at ``provider``."""
    if provider not in known_providers():
        near = difflib.get_close_matches(provider, known_providers(), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else f"; it knows {', '.join(known_providers())}"
        raise PriceLookupError(f"{DATABASE} knows no provider {provider!r}{hint}", field="provider")
    try:
        database_cost(model, provider, 0, 0, 0)
    except LookupError:
        from genai_prices.data_snapshot import get_snapshot

        models = [m.id for p in get_snapshot().providers if p.id == provider for m in p.models]
        near = difflib.get_close_matches(model, models, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise PriceLookupError(
            f"{DATABASE} has no price for model {model!r} at provider {provider!r}{hint}: set price_in and price_out "
            f"(per 1M tokens), or price_model to the id the database knows it by",
            field="model",
        ) from None


def database_cost(
    model: str, provider: str, input_tokens: int, output_tokens: int, cached_input_tokens: int, *, batch: bool = False
) -> float:
    """What genai-prices gives for one call, in USD (``cached_input_tokens`` are part of ``input_tokens``); ``batch``:
    at the model's batch rate (see `batch_rate`)."""
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=input_tokens, cache_read_tokens=cached_input_tokens, output_tokens=output_tokens)
    context = _BATCH if batch else None
    total: Decimal = calc_price(usage, model_ref=model, provider_id=provider, price_context=context).total_price
    return float(total)


@functools.cache
def batch_rate(model: str, provider: str) -> bool:
    """Whether genai-prices has a batch rate of its own for ``model`` at ``provider`` (a price variant for batch
    processing); without one a batch is priced by the entry's ``batch_discount``."""
    from genai_prices import Usage, calc_price

    try:
        found = calc_price(Usage(input_tokens=0, output_tokens=0), model_ref=model, provider_id=provider).model
    except LookupError:
        return False
    return any(v.when.get("processing") == "batch" for v in found.price_variants or ())
