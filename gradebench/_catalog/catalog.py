"""The catalog: which models a deployment can call, at what price, in which grade, and which one it pins."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from .._base.errors import CatalogError
from .._base.redact import remember
from .._base.tomlfile import first_problem, problem_text, read_toml
from .._base.vocab import PriceSource
from .family import family_of, normal_family
from .prices import DATABASE, PriceLookupError, batch_rate, check_known, database_cost
from .schema import CatalogFile

__all__ = ["BATCH_APIS", "DEFAULT_BATCH_DISCOUNT", "Catalog", "Entry", "Grade"]

BATCH_APIS = ("openai", "anthropic", "openrouter")
"""The batch APIs an entry's verdicts can go through (its ``batch``)."""
DEFAULT_BATCH_DISCOUNT = 0.5
"""What a batch takes off the price when neither the entry nor the price database says (OpenAI's, Anthropic's)."""


class Grade:
    """Grade names with a meaning of their own."""

    CEILING = "ceiling"
    """The strongest entry the catalog serves: the judge sits here."""


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One callable model: an endpoint, a model id, its price and its limits."""

    name: str
    """Unique label used everywhere (rows, charts, ``candidates``)."""
    model: str
    """Model id sent to the endpoint."""
    grade: str
    """The grade this entry belongs to."""
    base_url: str
    """OpenAI-compatible base URL, e.g. ``https://api.example.com/v1``."""
    api_key_env: str | None = None
    """Name of the environment variable holding the key; the key itself is never stored. None: no key needed."""
    price_in: float | None = 0.0
    """Price per 1M input tokens; None (with ``price_out``): genai-prices' price for the ``provider``'s model."""
    price_out: float | None = 0.0
    """Price per 1M output tokens (reasoning tokens are output tokens); None: genai-prices' (see ``price_in``)."""
    price_cached_in: float | None = None
    """Price per 1M input tokens served from the provider's prompt cache; None: the same as ``price_in`` (genai-prices'
    own cache-read price for an entry priced by it)."""
    currency: str = "USD"
    """Currency of the prices."""
    provider: str | None = None
    """The provider as genai-prices names it (``openai``, ``anthropic``, ``openrouter``, ``groq``, ...): an entry with
    no ``price_in``/``price_out`` is priced by the database under this provider."""
    price_model: str | None = None
    """The model id genai-prices knows this model by, when the endpoint's differs (a proxy's alias); None: ``model``."""
    reports_cost: bool = False
    """The endpoint reports each call's cost itself, in USD (a LiteLLM proxy's ``x-litellm-response-cost`` header,
    OpenRouter's ``usage.cost``): such an entry may give no prices and no provider. It starts; its calls cost what the
    endpoint reports, and until it has, what it will cost is unknown (the estimate says so, and a budget refuses it)."""
    routing: Mapping[str, Any] = field(default_factory=dict)
    """Extra request body that pins the provider, e.g. ``{"provider": {"only": ["acme"]}}``."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Default inference parameters, overridden by the job's and the call's."""
    max_concurrency: int | None = None
    """Most requests in flight to this entry at once; None: only the global limit applies."""
    rpm: int | None = None
    """Most requests started per minute; None: no rate limit."""
    rename_params: Mapping[str, str] = field(default_factory=dict)
    """Parameters sent under another name, e.g. ``{"max_tokens": "max_completion_tokens"}``."""
    drop_params: tuple[str, ...] = ()
    """Parameters never sent to this entry, e.g. ``("temperature",)`` for a model that accepts only its default."""
    prompt_cache_key: bool = False
    """Send an opaque per-input ``prompt_cache_key`` on this entry's judge requests (OpenAI's routing hint: the
    verdicts on one input share a long prompt prefix, and the key keeps them on machines that have it cached)."""
    max_retries: int = 4
    """Retries of 408/409/5xx and connection errors, with backoff (the openai SDK's)."""
    rate_limit_wait_s: float = 300.0
    """How long one call may wait out 429 rate limits (honouring ``Retry-After``) before it fails."""
    timeout_s: float = 120.0
    """The deadline of one call, its retries included."""
    latency_s: float | None = None
    """Typical seconds of one call: what the estimate's wall time takes for this entry (None: the reference's, a
    guess it says it makes)."""
    simulated: bool = False
    """True for the built-in simulated fleet: labelled as such in rows and charts."""
    family: str | None = None
    """Who made the model (``openai``, ``anthropic``, ``meta``, ...): a judge of a candidate's family may favour it
    (the ``judge_family`` diagnostic). Unset: told from the model id, else from a ``provider`` that makes models (see
    `gradebench._catalog.family.family_of`); None when neither tells. Kept in lower case."""
    batch: str | None = None
    """The Batch API this entry's verdicts go through, as a judge: ``openai`` (a JSONL file uploaded to ``/files``,
    then ``/batches``, at ``base_url``), ``anthropic`` (``/messages/batches`` at ``base_url``) or ``openrouter``
    (OpenAI's shape at ``base_url``). None: one request at a time, unless the race asks for ``judge_batch`` (then
    OpenAI's shape). See `gradebench._calls.batch.layer`."""
    batch_discount: float | None = None
    """The share of the price a batch takes off (0.5: a batched call costs half); None: the price database's batch
    rate for an entry it prices and has one for, else `DEFAULT_BATCH_DISCOUNT`."""
    batch_poll_s: float = 30.0
    """Seconds between two looks at a batch this entry is working on."""

    def __post_init__(self) -> None:
        told = family_of(self.model, self.provider) if self.family is None else normal_family(self.family)
        object.__setattr__(self, "family", told or None)

    def callable_reason(self) -> str | None:
        """Why this entry cannot be called now, or None when it can."""
        if self.api_key_env and not os.environ.get(self.api_key_env):
            return f"environment variable {self.api_key_env} is not set"
        return None

    def api_key(self) -> str:
        """The key from the environment (never stored, never logged)."""
        if not self.api_key_env:
            return "no-key"
        key = os.environ.get(self.api_key_env)
        if key:
            remember(key)  # from now on, scrubbed from anything gradebench stores, shows or sends
        if not key:
            raise CatalogError(
                f"entry {self.name!r}: environment variable {self.api_key_env} is not set",
                entry=self.name,
                field="api_key_env",
            )
        return key

    def identity(self) -> dict[str, Any]:
        """What makes two entries the same model for caching: endpoint, model id, routing pin and, for an entry that
        sends a key, which key (its variable's name, never the key): two keys on one URL may reach two accounts,
        deployments or models, so one entry must never be served another's answers."""
        made: dict[str, Any] = {
            "base_url": self.base_url.rstrip("/"),
            "model": self.model,
            "routing": dict(self.routing),
        }
        if self.api_key_env:
            made["credential"] = self.api_key_env
        return made

    @property
    def priced_by_database(self) -> bool:
        """True when genai-prices prices this entry (it gives no ``price_in``/``price_out`` of its own)."""
        return (self.price_in is None or self.price_out is None) and self.provider is not None

    @property
    def priced(self) -> bool:
        """True when the entry has a price table (its own prices, or genai-prices' under its provider); False for an
        endpoint that reports its own cost and was given none (`reports_cost`): what it costs is known only once it
        has answered."""
        return (self.price_in is not None and self.price_out is not None) or self.provider is not None

    @property
    def price_source(self) -> str:
        """Which price table prices this entry's calls: ``catalog`` or ``genai-prices <version>``; ``provider`` for an
        entry without one, whose endpoint reports the cost (`reports_cost`)."""
        if not self.priced:
            return str(PriceSource.PROVIDER)
        return DATABASE if self.priced_by_database else str(PriceSource.CATALOG)

    def prices_used(self) -> tuple[float | None, float | None, float | None]:
        """The prices per 1M tokens this entry's calls are priced at: input, output and cached input — its own, or
        genai-prices' for an entry the database prices (a short prompt's: below any long-context tier); None for an
        entry with no price table (its endpoint reports each call's cost)."""
        if not self.priced:
            return None, None, None
        if self.priced_by_database:
            return self.cost(1000, 0) * 1000, self.cost(0, 1000) * 1000, self.cost(1000, 0, 1000) * 1000
        assert self.price_in is not None and self.price_out is not None  # not priced by the database: both are set
        return self.price_in, self.price_out, self.price_in if self.price_cached_in is None else self.price_cached_in

    def prices_text(self) -> str:
        """The entry's prices per 1M tokens in words: ``0.15 in / 0.6 out USD per 1M`` (genai-prices' for an entry it
        prices, named as such)."""
        price_in, price_out, _ = self.prices_used()
        if price_in is None or price_out is None:
            return "no prices: the endpoint reports each call's cost"
        if self.priced_by_database:
            return f"{price_in:g} in / {price_out:g} out USD per 1M ({DATABASE})"
        return f"{price_in:g} in / {price_out:g} out {self.currency} per 1M"

    def cost(
        self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0, *, batch: bool = False
    ) -> float:
        """Cost of a call with these token counts by the entry's price table (`price_source`), in its currency;
        ``batch``: of a call answered in a batch (`batch_price_source` says how it is priced).

        ``cached_input_tokens`` are part of ``input_tokens``, priced at ``price_cached_in`` (genai-prices' cache-read
        price for an entry it prices).
        """
        rated = batch and self._database_batch_rate  # the database's own batch rate, else the discount off the price
        if self.price_in is None or self.price_out is None:
            if self.provider is None:  # no price table (the endpoint reports the cost): callers ask `priced` first
                raise ValueError(f"entry {self.name!r} has no prices and no provider to look them up by")
            model = self.price_model or self.model
            full = database_cost(model, self.provider, input_tokens, output_tokens, cached_input_tokens, batch=rated)
        else:
            cached_price = self.price_in if self.price_cached_in is None else self.price_cached_in
            fresh = input_tokens - cached_input_tokens
            full = (fresh * self.price_in + cached_input_tokens * cached_price + output_tokens * self.price_out) / 1e6
        return full * (1 - self._batch_discount) if batch and not rated else full

    @property
    def _database_batch_rate(self) -> bool:
        """Whether the price database's own batch rate prices this entry's batched calls."""
        if self.batch_discount is not None or not self.priced_by_database or self.provider is None:
            return False
        return batch_rate(self.price_model or self.model, self.provider)

    @property
    def _batch_discount(self) -> float:
        return DEFAULT_BATCH_DISCOUNT if self.batch_discount is None else self.batch_discount

    @property
    def batch_price_source(self) -> str:
        """How a batched call of this entry is priced: ``genai-prices <version> batch`` (the database's batch rate), or
        the price table's source with the discount taken off, e.g. ``catalog batch -50%``."""
        if self._database_batch_rate:
            return f"{DATABASE} batch"
        return f"{self.price_source} batch -{self._batch_discount * 100:g}%"


class Catalog:
    """The entries a deployment serves, their grades (weakest first), the pick of each grade and the ceiling."""

    def __init__(
        self,
        entries: Iterable[Entry],
        *,
        grades: Iterable[str],
        picks: Mapping[str, str],
        ceiling: str,
        concurrency: int = 64,
        judge_params: Mapping[str, Any] | None = None,
        source: str = "<code>",
        reference: str | None = None,
    ):
        self.entries: tuple[Entry, ...] = tuple(entries)
        self.grades: tuple[str, ...] = tuple(grades)
        self.picks: dict[str, str] = dict(picks)
        self.ceiling_name = ceiling
        self.concurrency = concurrency
        self.judge_params: dict[str, Any] = dict({"temperature": 0} if judge_params is None else judge_params)
        """Inference params of the judge: temperature 0 unless the catalog says otherwise (``{}`` sends none)."""
        self.source = source
        self.reference = reference
        """Where this catalog can be loaded from again (its TOML file, or ``module:function`` that makes it; see
        `load`), None for one built in code: what a race spec records."""
        self._by_name = {e.name: e for e in self.entries}
        self._validate()

    def _validate(self) -> None:
        seen: set[str] = set()
        for e in self.entries:
            if e.name in seen:
                raise CatalogError(
                    f"{self.source}: entry {e.name!r}: field 'name' is a duplicate",
                    path=self.source,
                    entry=e.name,
                    field="name",
                )
            seen.add(e.name)
            for price in ("price_in", "price_out", "price_cached_in"):
                value = getattr(e, price)
                if value is not None and not (math.isfinite(value) and value >= 0):
                    raise CatalogError(
                        f"{self.source}: entry {e.name!r}: field {price!r} must be a finite number >= 0, got {value!r}",
                        path=self.source,
                        entry=e.name,
                        field=price,
                    )
            self._check_prices(e)
            self._check_batch(e)
            if e.grade not in self.grades:
                raise CatalogError(
                    f"{self.source}: entry {e.name!r}: field 'grade' is {e.grade!r}, not one of {list(self.grades)}",
                    path=self.source,
                    entry=e.name,
                    field="grade",
                )
        for grade, name in self.picks.items():
            if grade not in self.grades:
                raise CatalogError(
                    f"{self.source}: picks: {grade!r} is not a declared grade", path=self.source, field=f"picks.{grade}"
                )
            if name not in self._by_name:
                raise CatalogError(
                    f"{self.source}: picks.{grade} names no entry: {name!r}", path=self.source, field=f"picks.{grade}"
                )
        if self.ceiling_name not in self._by_name:
            raise CatalogError(
                f"{self.source}: field 'ceiling' names no entry: {self.ceiling_name!r}",
                path=self.source,
                field="ceiling",
            )

    def _check_batch(self, e: Entry) -> None:
        """An entry built in code is held to what the catalog file allows of its batch fields."""
        problems = {
            "batch": None if e.batch in (None, *BATCH_APIS) else f"must be one of {', '.join(BATCH_APIS)} (or unset)",
            "batch_discount": None
            if e.batch_discount is None or (math.isfinite(e.batch_discount) and 0 <= e.batch_discount <= 1)
            else "must be a number in 0..1 (the share a batch takes off)",
            "batch_poll_s": None if math.isfinite(e.batch_poll_s) and e.batch_poll_s >= 0 else "must be >= 0 seconds",
        }
        for fld, what in problems.items():
            if what is not None:
                raise CatalogError(
                    f"{self.source}: entry {e.name!r}: field {fld!r} {what}, got {getattr(e, fld)!r}",
                    path=self.source,
                    entry=e.name,
                    field=fld,
                )

    def _check_prices(self, e: Entry) -> None:
        """An entry is priced by its own prices, both of them, or by genai-prices under a provider it knows, or says
        its endpoint reports the cost (`Entry.reports_cost`)."""
        if e.price_in is not None and e.price_out is not None:
            return

        def refuse(message: str, fld: str) -> CatalogError:
            return CatalogError(
                f"{self.source}: entry {e.name!r}: {message}", path=self.source, entry=e.name, field=fld
            )

        if e.price_in is not None or e.price_out is not None:
            missing = "price_out" if e.price_in is not None else "price_in"
            raise refuse(f"field {missing!r} is missing: set both prices, or neither and name the provider", missing)
        if e.provider is None:
            if e.reports_cost:
                return  # priced by what the endpoint reports of each call
            raise refuse(
                "no prices: set price_in and price_out (per 1M tokens), or name its provider (e.g. provider = "
                '"openai") to take them from genai-prices, or set reports_cost = true when the endpoint reports each '
                "call's cost (a LiteLLM proxy, OpenRouter)",
                "price_in",
            )
        if e.currency.upper() != "USD":
            raise refuse(f"genai-prices prices in USD, but field 'currency' is {e.currency!r}", "currency")
        try:
            check_known(e.price_model or e.model, e.provider)
        except PriceLookupError as exc:
            raise refuse(str(exc), exc.field) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Catalog:
        """Read and validate a catalog TOML file; any problem raises one `CatalogError` naming file, entry and field."""
        p = Path(path)
        made = cls.from_dict(read_toml(p, what="catalog", error=CatalogError), source=str(p))
        made.reference = str(p.resolve())
        return made

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, source: str = "<dict>") -> Catalog:
        """Validate a catalog given as a mapping (the parsed TOML)."""
        try:
            parsed = CatalogFile.model_validate(raw)
        except pydantic.ValidationError as exc:
            loc, msg = first_problem(exc, CatalogFile)
            entry = None
            if len(loc) >= 2 and loc[0] == "entries" and isinstance(loc[1], int):
                items = raw.get("entries") or []
                item = items[loc[1]] if loc[1] < len(items) else {}
                entry = item.get("name") if isinstance(item, Mapping) else None
                where = f"entry {entry!r}" if entry else f"entries[{loc[1]}]"
                fld = ".".join(str(x) for x in loc[2:]) or "entries"
            else:
                where, fld = "catalog", ".".join(str(x) for x in loc)
            raise CatalogError(
                f"{source}: {where}: {problem_text(fld, msg)}", path=source, entry=entry, field=fld
            ) from None
        entries = [Entry(**e.model_dump()) for e in parsed.entries]
        return cls(
            entries,
            grades=parsed.grades,
            picks=parsed.picks,
            ceiling=parsed.ceiling,
            concurrency=parsed.concurrency,
            judge_params=parsed.judge_params if "judge_params" in raw else None,
            source=source,
        )

    def __getitem__(self, name: str) -> Entry:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no entry named {name!r} in {self.source}; entries: {sorted(self._by_name)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def resolve(self, items: Iterable[str | Entry]) -> list[Entry]:
        """This catalog's entries for names or `Entry` objects (e.g. ``catalog.candidates(grade)``); an unknown name
        raises `KeyError`, an Entry that differs from this catalog's entry of its name a `ValueError`."""
        items = list(items)
        for item in items:
            if not isinstance(item, str | Entry):
                raise TypeError(f"a candidate is an entry name or an Entry, got {item!r}")
        entries = [self[item if isinstance(item, str) else item.name] for item in items]
        foreign = [e.name for e, item in zip(entries, items, strict=True) if isinstance(item, Entry) and item != e]
        if foreign:
            raise ValueError(f"candidates {foreign} differ from the catalog's entries of the same name")
        return entries

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"Catalog({self.source}, {len(self.entries)} entries, grades={list(self.grades)})"

    def _check_grade(self, grade: str) -> None:
        if grade not in self.grades:
            raise ValueError(f"grade must be one of {list(self.grades)}, got {grade!r}")

    def of_grade(self, grade: str) -> list[Entry]:
        """Every entry of a grade, callable or not, in catalog order."""
        self._check_grade(grade)
        return [e for e in self.entries if e.grade == grade]

    def candidates(self, grade: str) -> list[Entry]:
        """The callable entries of a grade (those whose key variable is set), in catalog order."""
        return [e for e in self.of_grade(grade) if e.callable_reason() is None]

    def skipped(self, grade: str) -> dict[str, str]:
        """Entries of a grade that cannot be called now, with the reason."""
        return {e.name: r for e in self.of_grade(grade) if (r := e.callable_reason()) is not None}

    def pick(self, grade: str) -> Entry:
        """The pinned entry of a grade (the reference); ``Grade.CEILING`` gives the ceiling."""
        if grade == Grade.CEILING:
            return self.ceiling()
        self._check_grade(grade)
        name = self.picks.get(grade)
        if name is None:
            raise ValueError(f"{self.source} pins no entry for grade {grade!r} (add it under [picks])")
        return self._by_name[name]

    def ceiling(self) -> Entry:
        """The strongest entry the catalog serves: the judge."""
        return self._by_name[self.ceiling_name]
