"""An endpoint that reports each call's cost itself (a LiteLLM proxy's header) needs no price table to race: the
catalog takes it with ``reports_cost = true``, the estimate says its cost is unknown until the proxy reports it, the
race costs what the proxy reported, and a budget, which must reserve a run's cost before it starts, refuses it.

Through the real openai client over loopback HTTP (`tests.providers`) and a catalog TOML read from disk.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import gradebench as gb
from gradebench._catalog.writing import catalog_toml as write_catalog

from ..loopback import ANSWER, answering, answers, bench_of, model_row
from ..providers import JudgeEndpoint, LiteLLMEndpoint, OpenAIEndpoint, serve

PROXY_COST = 0.0031
"""What the proxy reports for each call (USD)."""


def catalog_toml(base_url: str, folder: Path) -> Path:
    path = folder / "catalog.toml"
    path.write_text(
        f"""grades = ["standard", "large"]
ceiling = "judge/oracle"
[picks]
standard = "openai/ref"

[[entries]]
name = "openai/ref"
model = "gpt-ref"
grade = "standard"
base_url = "{base_url}"
price_in = 1.0
price_out = 2.0
max_retries = 0

[[entries]]
name = "proxy/llama"
model = "proxied"
grade = "standard"
base_url = "{base_url}"
reports_cost = true
max_retries = 0

[[entries]]
name = "judge/oracle"
model = "judge-1"
grade = "large"
base_url = "{base_url}"
price_in = 5.0
price_out = 20.0
max_retries = 0
""",
        encoding="utf-8",
    )
    return path


async def test_a_proxy_that_reports_its_cost_races_without_prices(tmp_path: Path) -> None:
    endpoints = {
        "gpt-ref": OpenAIEndpoint(answers()),
        "proxied": LiteLLMEndpoint(answers(ANSWER), cost=PROXY_COST),
        "judge-1": JudgeEndpoint(),
    }
    async with serve(endpoints) as base_url:
        cat = gb.Catalog.load(catalog_toml(base_url, tmp_path))  # refused before: "no prices: set price_in ..."
        proxy = cat["proxy/llama"]
        assert proxy.reports_cost and not proxy.priced and proxy.price_source == "provider"
        bench = bench_of(answering(), cat, tmp_path, candidates=["proxy/llama"], runs=2)
        estimate = await bench.estimate()
        said = str(estimate)
        assert math.isnan(estimate.cost) and "unknown USD" in estimate.line()
        assert "cost unknown until the endpoint reports it (reports_cost, no prices): proxy/llama" in said
        row = next(line for line in said.splitlines() if line.startswith("proxy/llama"))
        assert "unknown" in row.split()  # its runs' cost; the judge's is priced
        assert estimate.frame()["cost"].null_count() == 1  # unknown is null in the frame, never NaN or 0
        await bench.run()
        report = bench.report()
    llama = model_row(report, "proxy/llama")
    assert llama["ok_rate"] == 1.0 and llama["cost_per_run"] == pytest.approx(PROXY_COST)
    assert report.meta.entries["proxy/llama"]["price_source"] == "provider"


async def test_a_budget_refuses_an_entry_without_prices(tmp_path: Path) -> None:
    endpoints = {"gpt-ref": OpenAIEndpoint(answers()), "proxied": LiteLLMEndpoint(answers(), cost=PROXY_COST)}
    endpoints["judge-1"] = JudgeEndpoint()
    async with serve(endpoints) as base_url:
        cat = gb.Catalog.load(catalog_toml(base_url, tmp_path))
        bench = bench_of(answering(), cat, tmp_path, candidates=["proxy/llama"], budget=1.0)
        with pytest.raises(ValueError, match=r"a budget needs a price for every entry; proxy/llama has none"):
            await bench.run()
    assert all(not e.bodies for name, e in endpoints.items() if name != "gpt-ref")  # no candidate was called


def test_an_entry_without_prices_or_reports_cost_is_still_refused(tmp_path: Path) -> None:
    path = catalog_toml("http://127.0.0.1:9/v1", tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace("reports_cost = true\n", ""), encoding="utf-8")
    with pytest.raises(gb.CatalogError, match="or set reports_cost = true when the endpoint reports"):
        gb.Catalog.load(path)


def test_a_catalog_written_back_keeps_reports_cost(tmp_path: Path) -> None:
    loaded = gb.Catalog.load(catalog_toml("http://127.0.0.1:9/v1", tmp_path))
    again = tmp_path / "again.toml"
    again.write_text(write_catalog(loaded), encoding="utf-8")
    assert gb.Catalog.load(again)["proxy/llama"].reports_cost
