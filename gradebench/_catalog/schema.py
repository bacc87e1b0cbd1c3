"""The catalog file's schema: what a catalog TOML may say, field by field (`CatalogFile`), checked by pydantic with
every unknown key refused; `gradebench._catalog.catalog.Catalog.from_dict` turns it into entries and names what is
wrong."""

from __future__ import annotations

from typing import Any, Literal

import pydantic

__all__ = ["CatalogFile", "EntryFile"]


class EntryFile(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    name: str = pydantic.Field(min_length=1)
    model: str = pydantic.Field(min_length=1)
    grade: str
    base_url: str = pydantic.Field(min_length=1)
    api_key_env: str | None = None
    price_in: float | None = pydantic.Field(default=None, ge=0, allow_inf_nan=False)
    price_out: float | None = pydantic.Field(default=None, ge=0, allow_inf_nan=False)
    price_cached_in: float | None = pydantic.Field(default=None, ge=0, allow_inf_nan=False)
    currency: str = "USD"
    provider: str | None = pydantic.Field(default=None, min_length=1)
    price_model: str | None = pydantic.Field(default=None, min_length=1)
    reports_cost: pydantic.StrictBool = False
    routing: dict[str, Any] = {}
    params: dict[str, Any] = {}
    rename_params: dict[str, str] = {}
    drop_params: tuple[str, ...] = ()
    prompt_cache_key: pydantic.StrictBool = False
    max_concurrency: int | None = pydantic.Field(default=None, ge=1)
    rpm: int | None = pydantic.Field(default=None, ge=1)
    max_retries: int = pydantic.Field(default=4, ge=0, le=20)
    rate_limit_wait_s: float = pydantic.Field(default=300.0, ge=0)
    timeout_s: float = pydantic.Field(default=120.0, gt=0)
    latency_s: float | None = pydantic.Field(default=None, ge=0, allow_inf_nan=False)
    family: str | None = pydantic.Field(default=None, min_length=1, pattern=r"\S")
    batch: Literal["openai", "anthropic", "openrouter"] | None = None
    batch_discount: float | None = pydantic.Field(default=None, ge=0, le=1, allow_inf_nan=False)
    batch_poll_s: float = pydantic.Field(default=30.0, ge=0, allow_inf_nan=False)


class CatalogFile(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    grades: list[str] = pydantic.Field(min_length=1)
    ceiling: str
    picks: dict[str, str] = {}
    concurrency: int = pydantic.Field(default=64, ge=1)
    judge_params: dict[str, Any] | None = None
    entries: list[EntryFile] = pydantic.Field(min_length=1)
