"""Prices from genai-prices: an entry that names its provider and no prices is priced by the database.

Races run over loopback HTTP through the real openai client, the catalog read from a TOML file as a user writes it.
The figures each call should cost are worked out here from the database's published per-1M prices (input, output,
cache read) and the tokens the server reported — the mapping gradebench makes (cached tokens are part of the input,
priced at the cache-read price) is what is checked, not the database's arithmetic.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from genai_prices import Usage, calc_price

import gradebench as gb

from ..loopback import answering, bench_of, diagnostics, rows
from ..providers import OpenAIEndpoint, OpenRouterEndpoint, serve

DATABASE = f"genai-prices {importlib.metadata.version('genai-prices')}"
VERDICT = json.dumps({"accuracy": 7, "work": 3, "reason": "as the reference"})

# (entry, provider, model) of three providers, as genai-prices names them
PRICED = [
    ("openai/mini", "openai", "gpt-4o-mini"),
    ("anthropic/haiku", "anthropic", "claude-3-5-haiku-latest"),
    ("groq/llama", "groq", "llama-3.1-8b-instant"),
]


def published(provider: str, model: str) -> tuple[float, float, float | None]:
    """The database's (input, output, cache read) USD per 1M tokens for a model."""
    price = calc_price(Usage(input_tokens=1, output_tokens=1), model_ref=model, provider_id=provider).model_price
    cache_read = None if price.cache_read_mtok is None else float(price.cache_read_mtok)
    return float(price.input_mtok or 0), float(price.output_mtok or 0), cache_read


def expected(provider: str, model: str, prompt: int, completion: int, cached: int = 0) -> float:
    price_in, price_out, price_cached = published(provider, model)
    cached_price = price_in if price_cached is None else price_cached
    return ((prompt - cached) * price_in + cached * cached_price + completion * price_out) / 1_000_000


def write_catalog(path: Path, base_url: str, entries: str) -> Path:
    path.write_text(
        f"""grades = ["standard", "large"]
ceiling = "judge/oracle"
picks = {{ standard = "openai/mini" }}

{entries}
[[entries]]
name = "judge/oracle"
model = "judge-1"
grade = "large"
base_url = "{base_url}"
price_in = 5.0
price_out = 20.0
"""
    )
    return path


def provider_entry(name: str, provider: str, model: str, base_url: str) -> str:
    return f"""[[entries]]
name = "{name}"
model = "{model}"
grade = "standard"
base_url = "{base_url}"
provider = "{provider}"
max_retries = 0
"""


def judge() -> OpenAIEndpoint:
    return OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion(VERDICT))


async def test_three_providers_are_priced_by_the_database_cache_reads_included(tmp_path: Path) -> None:
    tokens = {
        "gpt-4o-mini": (2000, 40, 1024),
        "claude-3-5-haiku-latest": (1500, 60, 0),
        "llama-3.1-8b-instant": (900, 30, 0),
    }

    def server(model: str) -> OpenAIEndpoint:
        prompt, completion, cached = tokens[model]
        return OpenAIEndpoint(
            lambda body, request: OpenAIEndpoint.completion(
                "refundable", prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached
            )
        )

    endpoints: dict[str, Any] = {model: server(model) for _, _, model in PRICED}
    async with serve({**endpoints, "judge-1": judge()}) as base_url:
        entries = "".join(provider_entry(name, provider, model, base_url) for name, provider, model in PRICED)
        cat = gb.Catalog.load(write_catalog(tmp_path / "catalog.toml", base_url, entries))
        bench = bench_of(answering(), cat, tmp_path, candidates=["anthropic/haiku", "groq/llama"])
        estimate = await bench.estimate()
        await bench.run()
    report = bench.report()
    for name, provider, model in PRICED:
        role = "reference" if name == "openai/mini" else "candidate"
        call = report.calls.filter((pl.col("entry") == name) & (pl.col("role") == role)).row(0, named=True)
        assert call["price_source"] == DATABASE and call["cost_source"] == "price_table"
        assert call["cost"] == pytest.approx(expected(provider, model, *tokens[model]), rel=1e-9)
    judged = report.calls.filter(pl.col("role") == "judge")
    assert judged["price_source"].unique().to_list() == ["catalog"]
    # the cache read is priced at the cache-read price: half of gpt-4o-mini's input price, per the database
    price_in, _, price_cached = published("openai", "gpt-4o-mini")
    assert price_cached is not None and price_cached < price_in
    mini = rows(report, "openai/mini", "reference")[0]
    assert mini["cost"] < expected("openai", "gpt-4o-mini", 2000, 40, cached=0)
    # the estimate prices the database's entries too (no unknown, no zero)
    assert {e.entry for e in estimate.entries} == {"anthropic/haiku", "groq/llama"}
    assert all(e.cost > 0 for e in estimate.entries)


async def test_a_providers_own_cost_wins_and_is_compared_with_the_database(tmp_path: Path) -> None:
    # OpenRouter reports the cost; here ten times what the database says, so the mismatch shows
    table = expected("openrouter", "openai/gpt-4o-mini", 194, 2)
    router = OpenRouterEndpoint(
        lambda body, request: OpenRouterEndpoint.completion("refundable", model="openai/gpt-4o-mini", cost=table * 10)
    )
    mini = OpenAIEndpoint(lambda body, request: OpenAIEndpoint.completion("refundable"))
    async with serve({"gpt-4o-mini": mini, "openai/gpt-4o-mini": router, "judge-1": judge()}) as base_url:
        entries = provider_entry("openai/mini", "openai", "gpt-4o-mini", base_url) + provider_entry(
            "openrouter/mini", "openrouter", "openai/gpt-4o-mini", base_url
        )
        cat = gb.Catalog.load(write_catalog(tmp_path / "catalog.toml", base_url, entries))
        bench = bench_of(answering(), cat, tmp_path, candidates=["openrouter/mini"])
        await bench.run()
    report = bench.report()
    call = report.calls.filter(pl.col("entry") == "openrouter/mini").row(0, named=True)
    assert call["price_source"] == "provider" and call["cost"] == pytest.approx(table * 10)
    assert call["price_table_cost"] == pytest.approx(table, rel=1e-9)
    [mismatch] = diagnostics(report, "price_mismatch", "openrouter/mini")
    assert "genai-prices" in mismatch["detail"] and "+0%" not in mismatch["detail"]


def test_a_model_the_database_does_not_know_is_one_load_error_naming_the_entry(tmp_path: Path) -> None:
    entries = provider_entry("openai/mini", "openai", "gpt-4o-mini", "http://127.0.0.1:9/v1") + provider_entry(
        "acme/house", "openai", "acme-house-model-7", "http://127.0.0.1:9/v1"
    )
    path = write_catalog(tmp_path / "catalog.toml", "http://127.0.0.1:9/v1", entries)
    with pytest.raises(gb.CatalogError) as raised:
        gb.Catalog.load(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: entry 'acme/house': ") and "set price_in and price_out" in message
    assert "acme-house-model-7" in message and raised.value.entry == "acme/house" and raised.value.field == "model"


@pytest.mark.parametrize(
    ("fields", "says", "field"),
    [
        ('provider = "opnai"\n', "knows no provider 'opnai' (did you mean 'openai'?)", "provider"),
        ("", "no prices: set price_in and price_out", "price_in"),
        ("price_in = 0.1\n", "field 'price_out' is missing", "price_out"),
        ('provider = "openai"\ncurrency = "EUR"\n', "genai-prices prices in USD", "currency"),
        ('provider = "openai"\nprce_out = 1\n', "unknown field 'prce_out' (did you mean 'price_out'?)", "prce_out"),
    ],
)
def test_an_entry_priced_neither_way_says_what_to_set(tmp_path: Path, fields: str, says: str, field: str) -> None:
    entry = f"""[[entries]]
name = "openai/mini"
model = "gpt-4o-mini"
grade = "standard"
base_url = "http://127.0.0.1:9/v1"
{fields}"""
    with pytest.raises(gb.CatalogError) as raised:
        gb.Catalog.load(write_catalog(tmp_path / "catalog.toml", "http://127.0.0.1:9/v1", entry))
    assert says in str(raised.value) and raised.value.field == field and raised.value.entry == "openai/mini"


def test_a_proxys_alias_is_priced_by_the_id_the_database_knows() -> None:
    alias = gb.Entry(
        name="proxy/mini",
        model="team-classifier",
        grade="standard",
        base_url="http://127.0.0.1:9/v1",
        price_in=None,
        price_out=None,
        provider="openai",
        price_model="gpt-4o-mini",
    )
    cat = gb.Catalog([alias], grades=["standard"], picks={"standard": "proxy/mini"}, ceiling="proxy/mini")
    assert cat["proxy/mini"].price_source == DATABASE
    assert cat["proxy/mini"].cost(1000, 100, 0) == pytest.approx(expected("openai", "gpt-4o-mini", 1000, 100))
