"""Anthropic's batch key goes only to the entry's own origin: a ``results_url`` the batch names on another origin is
read without ``x-api-key``, over loopback HTTP through the real client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import polars as pl
import pytest

from gradebench._base.vocab import Role

from ..batch_providers import AnthropicBatchAPI
from ..loopback import answers
from ..providers import Fleet, OpenAIEndpoint
from .test_batch_shapes import anthropic_judge, ask, one_question_catalog, serving

KEY = "sk-ant-origin-0123456789"


class ResultsElsewhere:
    """A host of its own serving each ended batch's results (as a signed URL would), recording the headers it got."""

    def __init__(self) -> None:
        self.results: dict[str, bytes] = {}
        self.headers: list[dict[str, str]] = []

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        return httpx2.Response(200, content=self.results[request.url.path.split("/")[-1]])


class BatchesWithResultsElsewhere(AnthropicBatchAPI):
    def __init__(self, *args: Any, elsewhere: ResultsElsewhere, elsewhere_url: str, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.elsewhere, self.elsewhere_url = elsewhere, elsewhere_url

    def _end(self, batch: dict[str, Any], request: httpx2.Request) -> None:
        super()._end(batch, request)
        self.elsewhere.results[batch["id"]] = batch["_results"]
        batch["results_url"] = f"{self.elsewhere_url}/results/{batch['id']}"


async def test_a_results_url_on_another_origin_gets_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", KEY)
    elsewhere = ResultsElsewhere()
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    async with serving(elsewhere) as elsewhere_url:
        api = BatchesWithResultsElsewhere(
            fleet, anthropic_judge, key=KEY, elsewhere=elsewhere, elsewhere_url=elsewhere_url
        )
        async with serving(api) as base_url:
            assert base_url.split("/")[2] != elsewhere_url.split("/")[2]  # another port: another origin
            cat = one_question_catalog(base_url, batch="anthropic", api_key_env="ANTHROPIC_TEST_KEY")
            report = await ask(cat, tmp_path)
    assert elsewhere.headers, "the results were read from the other origin"
    assert all("x-api-key" not in h and KEY not in str(h) for h in elsewhere.headers)
    assert all(h["x-api-key"] == KEY for h in api.headers)  # the entry's own origin still gets its key
    calls = report.calls.filter(pl.col("role") == Role.JUDGE)
    assert calls.filter(pl.col("price_source") == "catalog batch -50%").height > 0  # the results were used
