"""A catalog from OpenRouter's model list: its ids and per-token prices read once, written as our entries.

OpenRouter's ``GET {base_url}/models`` (https://openrouter.ai/docs/api-reference/list-available-models; no key needed)
lists ``data[]`` with ``id``, ``name``, ``context_length`` and ``pricing``, whose values are strings in USD per token
(``prompt``, ``completion``, ``input_cache_read``, ``input_cache_write``, ``internal_reasoning``, ``request``, ...).
`from_openrouter` reads it and builds one `Entry` per model asked for — ``openrouter/<id>``, priced per 1M tokens;
`gradebench._catalog.writing` writes the same catalog as a TOML file to edit, which `Catalog.load` reads back to the
same entries.

Only the models asked for are read from the list: a router elsewhere in it with a variable price (``"-1"``) or a shape
of its own does not stop a catalog that does not name it. A model id the list lacks, or a price of a model asked for
that is not a number, raises one `CatalogError` naming the model and the field. An item that is not a model with an id
is skipped, and a model listed twice keeps its first listing: a warning says how many were skipped and names the ids.
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import httpx2
import pydantic

from .._base.errors import CatalogError
from .._base.redact import scrub
from .._base.tomlfile import first_problem
from .catalog import Catalog, Entry

__all__ = [
    "catalog_from_openrouter",
    "DEFAULT_BASE_URL",
    "DEFAULT_KEY_ENV",
    "NAME_PREFIX",
    "OpenRouterModel",
    "arrange",
    "build_catalog",
    "fetch_models",
    "from_openrouter",
    "models_file",
    "read_model",
    "read_models",
]

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
"""OpenRouter's API base: chat completions at ``/chat/completions``, the model list at ``/models``."""
DEFAULT_KEY_ENV = "OPENROUTER_API_KEY"
"""The variable the entries read their key from (the model list itself needs none)."""
NAME_PREFIX = "openrouter/"
"""Entry names are this prefix and the OpenRouter id: ``openrouter/qwen/qwen3-32b``."""
FETCH_TIMEOUT_S = 30.0
"""How long reading the model list may take."""

_PER_MILLION = Decimal(1_000_000)


@dataclass(frozen=True, kw_only=True)
class OpenRouterModel:
    """One model of OpenRouter's list, its prices per 1M tokens (OpenRouter lists them per token)."""

    id: str
    """The OpenRouter model id, e.g. ``qwen/qwen3-32b``: what an entry sends as ``model``."""
    name: str | None = None
    """The display name, e.g. ``Qwen: Qwen3 32B``."""
    context_length: int | None = None
    """The context window in tokens, when listed."""
    price_in: float
    """USD per 1M prompt tokens (``pricing.prompt``)."""
    price_out: float
    """USD per 1M completion tokens (``pricing.completion``)."""
    price_cached_in: float | None = None
    """USD per 1M prompt tokens read from the provider's cache (``pricing.input_cache_read``); None when unlisted."""
    price_cache_write: float | None = None
    """USD per 1M prompt tokens written to the cache (``pricing.input_cache_write``): no catalog field holds it."""
    price_reasoning: float | None = None
    """USD per 1M reasoning tokens (``pricing.internal_reasoning``): the catalog prices them at ``price_out``."""
    price_request: float | None = None
    """USD per request (``pricing.request``): no catalog field holds it."""

    def notes(self) -> list[str]:
        """What the list says that an entry cannot hold, for a comment beside it in the TOML file."""
        said = [self.name or self.id]
        if self.context_length:
            said.append(f"context {self.context_length} tokens")
        if self.price_request:
            said.append(f"{self.price_request / 1_000_000:g} USD per request on top (not in the catalog's prices)")
        if self.price_cache_write and self.price_cache_write != self.price_in:
            said.append(f"cache writes {self.price_cache_write:g} per 1M")
        if self.price_reasoning and self.price_reasoning != self.price_out:
            said.append(f"reasoning {self.price_reasoning:g} per 1M (priced at price_out here)")
        return said


class _ModelList(pydantic.BaseModel):
    # OpenRouter's response, not ours: every field but data is ignored, and each model is read only when asked for
    model_config = pydantic.ConfigDict(extra="ignore")

    data: list[Any]  # an item that is not a model is skipped and counted, not a reason to refuse the list


class _ListedModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore")

    id: str
    name: str | None = None
    context_length: int | None = None
    pricing: dict[str, Any]


def fetch_models(base_url: str = DEFAULT_BASE_URL, *, timeout_s: float = FETCH_TIMEOUT_S) -> dict[str, dict[str, Any]]:
    """The models OpenRouter lists at ``GET {base_url}/models``, by id, as listed (no key is sent: none is needed)."""
    url = base_url.rstrip("/") + "/models"
    try:
        with httpx2.Client(timeout=timeout_s, follow_redirects=True) as client:
            response = client.get(url, headers={"accept": "application/json"})
    except httpx2.HTTPError as exc:
        raise CatalogError(f"{url}: the model list could not be read: {type(exc).__name__}: {exc}", path=url) from None
    if response.status_code != 200:
        said = " ".join(scrub(response.text).split())[:200]
        raise CatalogError(f"{url}: the model list answered HTTP {response.status_code}: {said}", path=url)
    return read_models(response.content, source=url)


def models_file(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The models of a saved ``GET /models`` answer (``curl https://openrouter.ai/api/v1/models -o models.json``),
    by id, read as `fetch_models` reads the live one: a catalog made offline."""
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise CatalogError(f"{path}: the model list cannot be read: {exc.strerror or exc}", path=str(path)) from None
    return read_models(content, source=str(path))


def read_models(content: bytes | str, *, source: str) -> dict[str, dict[str, Any]]:
    """The models of a model list's JSON (``{"data": [...]}``), by id, as listed; ``source`` names it in what is
    said."""
    try:
        listed = _ModelList.model_validate_json(content)
    except pydantic.ValidationError as exc:
        loc, msg = first_problem(exc)
        where = ".".join(str(x) for x in loc) or "body"
        raise CatalogError(
            f'{source}: not a model list ({{"data": [{{"id": ..., "pricing": {{...}}}}]}}): {where}: {msg}',
            path=source,
        ) from None
    models: dict[str, dict[str, Any]] = {}
    odd = 0
    twice: list[str] = []
    for item in listed.data:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            odd += 1
        elif item["id"] in models:  # the first listing holds: a later one with other prices must not re-price it
            twice.append(item["id"])
        else:
            models[item["id"]] = item
    if odd:
        warnings.warn(
            f"{source}: skipped {odd} item(s) of the model list that are not a model with an id", stacklevel=2
        )
    if twice:
        warnings.warn(
            f"{source}: model(s) listed more than once, the first listing kept: {sorted(set(twice))}", stacklevel=2
        )
    return models


def read_model(listed: Mapping[str, Any], *, source: str) -> OpenRouterModel:
    """One listed model as a record, its prices per 1M tokens; a price it needs that is not a number raises."""
    model_id = str(listed.get("id"))
    try:
        parsed = _ListedModel.model_validate(listed)
    except pydantic.ValidationError as exc:
        loc, msg = first_problem(exc)
        field = ".".join(str(x) for x in loc)
        raise CatalogError(
            f"{source}: model {model_id!r}: field {field!r}: {msg}",
            path=source,
            entry=NAME_PREFIX + model_id,
            field=field,
        ) from None

    def price(field: str, *, required: bool = False) -> float | None:
        return _per_million(parsed.pricing, field, model_id=model_id, source=source, required=required)

    def optional(field: str) -> float | None:
        try:
            return price(field)
        except CatalogError:  # a price no entry field holds is only a note: a bad one is left out, not fatal
            return None

    return OpenRouterModel(
        id=parsed.id,
        name=parsed.name,
        context_length=parsed.context_length,
        price_in=_given(price("prompt", required=True)),
        price_out=_given(price("completion", required=True)),
        price_cached_in=price("input_cache_read"),
        price_cache_write=optional("input_cache_write"),
        price_reasoning=optional("internal_reasoning"),
        price_request=optional("request"),
    )


def _given(value: float | None) -> float:
    assert value is not None  # required prices raise when missing
    return value


def _per_million(pricing: Mapping[str, Any], field: str, *, model_id: str, source: str, required: bool) -> float | None:
    """``pricing[field]`` (USD per token, a string) per 1M tokens, exactly: Decimal keeps ``"0.0000003"`` 0.3."""
    raw = pricing.get(field)
    name = NAME_PREFIX + model_id
    if raw is None or raw == "":
        if not required:
            return None
        raise CatalogError(
            f"{source}: model {model_id!r}: pricing.{field} is missing: no price to put in the catalog",
            path=source,
            entry=name,
            field=f"pricing.{field}",
        )
    try:
        value = Decimal(raw) if isinstance(raw, str) else Decimal(repr(raw)) if type(raw) in (int, float) else None
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite() or value < 0:
        why = (
            " (OpenRouter lists -1 for a router whose price depends on the model it picks: name a fixed model)"
            if str(raw).strip() == "-1"
            else ""
        )
        raise CatalogError(
            f"{source}: model {model_id!r}: pricing.{field} is {raw!r}, not a price per token{why}",
            path=source,
            entry=name,
            field=f"pricing.{field}",
        )
    return float(value * _PER_MILLION)


def build_catalog(
    listed: Mapping[str, Mapping[str, Any]],
    *,
    grades: Mapping[str, Iterable[str] | str],
    pick: Mapping[str, str],
    ceiling: str | None = None,
    base_url: str = DEFAULT_BASE_URL,
    api_key_env: str | None = DEFAULT_KEY_ENV,
    source: str = "openrouter",
) -> tuple[Catalog, dict[str, OpenRouterModel]]:
    """The catalog of the models ``grades`` names (grade → OpenRouter ids, weakest grade first), priced from
    ``listed`` (`fetch_models`), and the records read. ``pick`` (grade → model id or entry name) pins every grade;
    ``ceiling`` (a model id or entry name; default: the strongest grade's pick) judges."""
    if isinstance(grades, str) or not isinstance(grades, Mapping) or not grades:
        raise ValueError(f"grades maps each grade to its OpenRouter model ids, weakest first, got {grades!r}")
    members: dict[str, str] = {}  # model id -> grade
    for grade, ids in grades.items():
        ids = [ids] if isinstance(ids, str) else list(ids)
        if not ids:
            raise CatalogError(f"{source}: grade {grade!r} names no model", path=source, field=f"grades.{grade}")
        for model_id in ids:
            if model_id in members:
                raise CatalogError(
                    f"{source}: model {model_id!r} is named twice (in grade {members[model_id]!r} and {grade!r})",
                    path=source,
                    entry=NAME_PREFIX + model_id,
                    field="grades",
                )
            members[model_id] = grade
    for model_id in members:
        if model_id not in listed:
            close = difflib.get_close_matches(model_id, list(listed), n=3)
            hint = f"; close: {close}" if close else ""
            raise CatalogError(
                f"{source}: lists no model {model_id!r}{hint}", path=source, entry=NAME_PREFIX + model_id, field="id"
            )
    models = {model_id: read_model(listed[model_id], source=source) for model_id in members}

    def entry_name(ref: str, field: str) -> str:
        if ref in members:
            return NAME_PREFIX + ref
        if ref.startswith(NAME_PREFIX) and ref.removeprefix(NAME_PREFIX) in members:
            return ref
        raise CatalogError(
            f"{source}: {field} names {ref!r}, not one of the models asked for: {sorted(members)}",
            path=source,
            field=field,
        )

    picks: dict[str, str] = {}
    for grade, ref in pick.items():
        if grade not in grades:
            raise CatalogError(
                f"{source}: pick names grade {grade!r}, not one of {list(grades)}", path=source, field=f"pick.{grade}"
            )
        name = entry_name(ref, f"pick.{grade}")
        if members[name.removeprefix(NAME_PREFIX)] != grade:
            raise CatalogError(
                f"{source}: pick.{grade} is {ref!r}, a model of grade {members[name.removeprefix(NAME_PREFIX)]!r}",
                path=source,
                field=f"pick.{grade}",
            )
        picks[grade] = name
    for grade in grades:
        if grade not in picks:
            ids = [m for m, g in members.items() if g == grade]
            raise CatalogError(
                f"{source}: grade {grade!r} has no pick (the reference of its races): pick one of {ids}",
                path=source,
                field=f"pick.{grade}",
            )
    judge = entry_name(ceiling, "ceiling") if ceiling is not None else picks[list(grades)[-1]]
    entries = [
        Entry(
            name=NAME_PREFIX + model_id,
            model=model_id,
            grade=members[model_id],
            base_url=base_url,
            api_key_env=api_key_env,
            price_in=record.price_in,
            price_out=record.price_out,
            price_cached_in=record.price_cached_in,
            currency="USD",
        )
        for model_id, record in models.items()
    ]
    catalog = Catalog(entries, grades=list(grades), picks=picks, ceiling=judge, source=source)
    return catalog, models


def arrange(
    models: Iterable[str] | None,
    grades: Mapping[str, Any],
    pick: Mapping[str, str] | str,
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Grades as grade -> model ids (weakest first) and picks as grade -> model, from the forms a caller may write.

    ``grades`` maps each grade to its model ids (one id, or a list); with ``models`` given it may instead map each
    model to its grade, the grades then weakest first in the order ``models`` first names them, and every model must
    have one. ``pick`` is grade -> model, or one model id (its grade's pick); a grade of one model is that model's pick
    unless told otherwise.
    """
    if isinstance(grades, str) or not isinstance(grades, Mapping) or not grades:
        raise ValueError(f"grades maps each grade to its OpenRouter model ids, weakest first, got {grades!r}")
    wanted = None if models is None else list(models)
    if wanted is not None and all(k in wanted for k in grades) and all(isinstance(v, str) for v in grades.values()):
        by_grade: dict[str, list[str]] = {}
        for model_id in wanted:
            if model_id not in grades:
                raise ValueError(f"model {model_id!r} has no grade in grades= (give every model its grade)")
            by_grade.setdefault(grades[model_id], []).append(model_id)
    else:
        by_grade = {g: [ids] if isinstance(ids, str) else list(ids) for g, ids in grades.items()}
        if wanted is not None:
            placed = {m for ids in by_grade.values() for m in ids}
            missing = [m for m in wanted if m not in placed]
            if missing:
                raise ValueError(f"models {missing} are in no grade of grades=")
    if isinstance(pick, str):
        owner = [g for g, ids in by_grade.items() if pick in ids or pick.removeprefix(NAME_PREFIX) in ids]
        picks = {owner[0]: pick} if owner else {"?": pick}  # an unknown pick is refused, named, by build_catalog
    else:
        picks = dict(pick)
    for grade, ids in by_grade.items():
        if grade not in picks and len(ids) == 1:
            picks[grade] = ids[0]
    return by_grade, picks


def from_openrouter(
    grades: Mapping[str, Any],
    *,
    pick: Mapping[str, str] | str,
    models: Iterable[str] | None = None,
    ceiling: str | None = None,
    base_url: str = DEFAULT_BASE_URL,
    api_key_env: str | None = DEFAULT_KEY_ENV,
    timeout_s: float = FETCH_TIMEOUT_S,
    saved_list: str | os.PathLike[str] | None = None,
) -> tuple[Catalog, dict[str, OpenRouterModel]]:
    """`build_catalog` from the list `fetch_models` reads at ``base_url`` — or, ``saved_list`` given, from that saved
    list (`models_file`), nothing fetched, the entries still at ``base_url`` (the catalog's source is where the list
    was read); ``models``, ``grades`` and ``pick`` in any form `arrange` takes."""
    grades, pick = arrange(models, grades, pick)
    if saved_list is not None:
        listed, source = models_file(saved_list), str(saved_list)
    else:
        listed, source = fetch_models(base_url, timeout_s=timeout_s), base_url.rstrip("/") + "/models"
    return build_catalog(
        listed, grades=grades, pick=pick, ceiling=ceiling, base_url=base_url, api_key_env=api_key_env, source=source
    )


def catalog_from_openrouter(
    grades: Mapping[str, Any],
    *,
    pick: Mapping[str, str] | str,
    models: Iterable[str] | None = None,
    ceiling: str | None = None,
    base_url: str = DEFAULT_BASE_URL,
    api_key_env: str | None = DEFAULT_KEY_ENV,
    timeout_s: float = FETCH_TIMEOUT_S,
    saved_list: str | os.PathLike[str] | None = None,
) -> Catalog:
    """A catalog of OpenRouter models priced from its model list (``GET {base_url}/models``, no key needed).

    ``grades`` maps each grade, weakest first, to its OpenRouter model ids — or, with ``models`` (the ids to
    read), each model to its grade, the grades weakest first in the order ``models`` names them. ``pick`` maps
    every grade to its reference (a model id or entry name), or is one model id; a grade of one model picks it.
    ``ceiling`` judges (default: the strongest grade's pick). Entries are named ``openrouter/<id>``, their base
    URL ``base_url`` (where a test serves the list and the chat completions both). ``saved_list``: a saved
    ``GET /models`` answer to read instead of fetching it (offline); the entries are still at ``base_url``.
    """
    made, _ = from_openrouter(
        grades,
        pick=pick,
        models=models,
        ceiling=ceiling,
        base_url=base_url,
        api_key_env=api_key_env,
        timeout_s=timeout_s,
        saved_list=saved_list,
    )
    return made
