"""A batch create that fails after the provider made the batch (a 500, a dropped connection), over loopback HTTP through
the real clients, for OpenAI's Batch API and Anthropic's Message Batches: exactly one batch is made and billed, the
verdicts are the batch's, and nothing is sent alone. And Anthropic's batch requests wait what a 429 or 529 asks."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx2
import polars as pl
import pytest

from gradebench._base.vocab import Role

from ..batch_providers import AnthropicBatchAPI, OpenAIBatchAPI
from ..loopback import answers
from ..providers import Fleet, OpenAIEndpoint
from .test_batch_results_faults import always_answers
from .test_batch_shapes import ask, one_question_catalog, openai_judge, serving, verdicts_of

KEY = "sk-ant-create-0123456789"


def after_create(made: httpx2.Response, fault: str) -> httpx2.Response:
    """What the client gets of a create the provider carried out: ``500`` an error in the provider's shape, ``drop``
    the connection closed with no answer."""
    if fault == "drop":
        raise ConnectionResetError("the connection dropped after the batch was made")
    return httpx2.Response(500, json={"error": {"message": "internal error", "type": "server_error"}})


class OpenAIMadeThenFailed(OpenAIBatchAPI):
    """OpenAI's Batch API whose creates make the batch, then fail with ``fault``; ``unmade`` first creates fail with
    a 500 without making one."""

    def __init__(self, fleet: Fleet, fault: str, *, unmade: int = 0) -> None:
        super().__init__(fleet, openai_judge)
        self.fault, self.unmade = fault, unmade
        self.judged_alone = 0

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/chat/completions") and json.loads(request.content)["model"] == "judge-1":
            self.judged_alone += 1
        return await super().handle(request)

    def _create(self, body: dict[str, Any]) -> httpx2.Response:
        if len(self.creates) < self.unmade:
            self.creates.append(body)
            return after_create(httpx2.Response(200), "500")
        made = super()._create(body)
        return made if self.fault == "none" else after_create(made, self.fault)


class AnthropicMadeThenFailed(AnthropicBatchAPI):
    """Anthropic's Message Batches whose creates make the batch, then fail with ``fault``."""

    def __init__(self, fleet: Fleet, fault: str) -> None:
        super().__init__(fleet, always_answers, key=KEY)
        self.fault = fault

    def _create(self, body: dict[str, Any], request: httpx2.Request) -> httpx2.Response:
        return after_create(super()._create(body, request), self.fault)


async def direct_verdicts(tmp_path: Path) -> list[tuple[Any, ...]]:
    judge = OpenAIEndpoint(lambda body, request: openai_judge(body)[1])
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers()), "judge-1": judge})
    async with serving(fleet) as url:
        return verdicts_of(await ask(one_question_catalog(url), tmp_path / "direct"))


def billed_once(report: Any) -> None:
    calls = report.calls.filter(pl.col("role") == Role.JUDGE)
    assert calls.height == 12 and set(calls["price_source"]) == {"catalog batch -50%"}
    runs = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    assert runs["judge_error"].is_null().all()


@pytest.mark.parametrize("fault", ["500", "drop"])
async def test_an_openai_create_that_fails_after_making_the_batch_makes_one_batch(tmp_path: Path, fault: str) -> None:
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = OpenAIMadeThenFailed(fleet, fault)
    async with serving(api) as base_url:
        report = await ask(one_question_catalog(base_url, max_retries=2), tmp_path / "batch", judge_batch=True)
    assert len(api.creates) == 1 and len(api._batches) == 1  # one create sent, one batch billed
    assert api.judged_alone == 0
    assert verdicts_of(report) == await direct_verdicts(tmp_path)
    billed_once(report)


async def test_an_openai_create_that_failed_and_made_nothing_is_sent_again(tmp_path: Path) -> None:
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = OpenAIMadeThenFailed(fleet, "none", unmade=1)
    async with serving(api) as base_url:
        report = await ask(one_question_catalog(base_url, max_retries=2), tmp_path / "batch", judge_batch=True)
    assert len(api.creates) == 2 and len(api._batches) == 1 and api.judged_alone == 0
    billed_once(report)


async def test_an_openai_create_that_fails_and_cannot_be_told_fails_its_verdicts_keeping_its_note(
    tmp_path: Path,
) -> None:
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = OpenAIMadeThenFailed(fleet, "500")
    base = api.handle

    async def no_listing(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/batches" and request.method == "GET":
            return httpx2.Response(503, json={"error": {"message": "listing is down"}})
        return await base(request)

    api.handle = no_listing  # type: ignore[method-assign]
    async with serving(api) as base_url:
        report = await ask(one_question_catalog(base_url), tmp_path / "batch", judge_batch=True)
    assert len(api.creates) == 1 and api.judged_alone == 0
    runs = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    assert runs["judge_error"].is_not_null().all()
    assert "it may have been made" in runs["judge_error"][0]
    assert list((tmp_path / "batch" / "cache" / "batches").glob("*.json")), "the note stays for the next run to look"


@pytest.mark.parametrize("fault", ["500", "drop"])
async def test_an_anthropic_create_that_fails_after_making_the_batch_makes_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", KEY)
    alone = OpenAIEndpoint(lambda body, request: openai_judge(body)[1])
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers()), "judge-1": alone})
    api = AnthropicMadeThenFailed(fleet, fault)
    async with serving(api) as base_url:
        cat = one_question_catalog(base_url, batch="anthropic", api_key_env="ANTHROPIC_TEST_KEY", max_retries=2)
        report = await ask(cat, tmp_path / "batch")
    assert len(api.creates) == 1 and len(api._batches) == 1 and not alone.bodies
    runs = report.runs.filter(pl.col("role") == Role.CANDIDATE)
    assert runs["judge_error"].is_null().all() and runs["accuracy"].is_not_null().all()
    assert len(set(runs["reason"])) > 1  # each verdict its own request's
    billed_once(report)


class AnthropicTellsToWait(AnthropicBatchAPI):
    """Anthropic's Message Batches whose first two looks at a batch are refused with ``status``, asking ``headers``;
    records when each look arrived and when each refusal left."""

    def __init__(self, fleet: Fleet, status: int, headers: dict[str, str]) -> None:
        super().__init__(fleet, always_answers, key=KEY)
        self.status, self.asked = status, headers
        self.arrived: list[float] = []
        self.refused_at: list[float] = []

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        looks = request.method == "GET" and request.url.path.startswith("/v1/messages/batches/")
        if not looks or request.url.path.endswith("/results"):
            return await super().handle(request)
        self.arrived.append(time.monotonic())
        if len(self.arrived) <= 2:
            self.refused_at.append(time.monotonic())
            kind = "rate_limit_error" if self.status == 429 else "overloaded_error"
            body = {"type": "error", "error": {"type": kind, "message": "slow down"}}
            return httpx2.Response(self.status, json=body, headers=self.asked)
        return await super().handle(request)


@pytest.mark.parametrize(
    ("status", "headers", "asked_s"),
    [(429, {"retry-after": "1"}, 1.0), (529, {"retry-after": "1", "retry-after-ms": "1300"}, 1.3)],
)
async def test_anthropic_batch_requests_wait_what_a_refusal_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, headers: dict[str, str], asked_s: float
) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", KEY)
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = AnthropicTellsToWait(fleet, status, headers)
    async with serving(api) as base_url:
        cat = one_question_catalog(base_url, batch="anthropic", api_key_env="ANTHROPIC_TEST_KEY", max_retries=2)
        report = await ask(cat, tmp_path)
    assert len(api.arrived) >= 3
    waited = [api.arrived[i + 1] - api.refused_at[i] for i in range(2)]
    assert min(waited) >= asked_s, waited
    assert report.runs.filter(pl.col("role") == Role.CANDIDATE)["judge_error"].is_null().all()


class OpenAICreateTold(OpenAIBatchAPI):
    """OpenAI's Batch API whose first create is refused with a 429 asking ``headers`` (nothing made)."""

    def __init__(self, fleet: Fleet, headers: dict[str, str]) -> None:
        super().__init__(fleet, openai_judge)
        self.asked = headers
        self.arrived: list[float] = []
        self.refused_at: list[float] = []

    def _create(self, body: dict[str, Any]) -> httpx2.Response:
        self.arrived.append(time.monotonic())
        if len(self.arrived) == 1:
            self.refused_at.append(time.monotonic())
            return OpenAIEndpoint.error(429, "slow down", code="rate_limit_exceeded", headers=self.asked)
        return super()._create(body)


async def test_an_openai_create_refused_with_429_is_sent_again_after_the_wait_asked(tmp_path: Path) -> None:
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = OpenAICreateTold(fleet, {"retry-after": "1", "retry-after-ms": "1200"})
    async with serving(api) as base_url:
        report = await ask(one_question_catalog(base_url, max_retries=2), tmp_path, judge_batch=True)
    assert len(api.arrived) == 2 and len(api._batches) == 1
    assert api.arrived[1] - api.refused_at[0] >= 1.2
    billed_once(report)


class AnthropicListingDown(AnthropicMadeThenFailed):
    """Anthropic's Message Batches whose creates make the batch then answer 500, while its listing answers 503 until
    ``listing`` is set."""

    def __init__(self, fleet: Fleet) -> None:
        super().__init__(fleet, "500")
        self.listing = False

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/messages/batches" and request.method == "GET" and not self.listing:
            return httpx2.Response(503, json={"type": "error", "error": {"type": "api_error", "message": "down"}})
        return await super().handle(request)


async def test_a_rerun_after_an_unsettled_anthropic_create_collects_the_batch_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", KEY)
    alone = OpenAIEndpoint(lambda body, request: openai_judge(body)[1])
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers()), "judge-1": alone})
    api = AnthropicListingDown(fleet)
    async with serving(api) as base_url:
        cat = one_question_catalog(base_url, batch="anthropic", api_key_env="ANTHROPIC_TEST_KEY")
        first = await ask(cat, tmp_path)
        api.listing = True
        second = await ask(cat, tmp_path)
    assert len(api.creates) == 1 and len(api._batches) == 1 and not alone.bodies
    failed = first.runs.filter(pl.col("role") == Role.CANDIDATE)["judge_error"]
    assert failed.is_not_null().all() and "it may have been made" in failed[0]
    runs = second.runs.filter(pl.col("role") == Role.CANDIDATE)
    assert runs.height == 12 and runs["judge_error"].is_null().all() and runs["accuracy"].is_not_null().all()


class OpenAIFailsWhole(OpenAIMadeThenFailed):
    """OpenAI's Batch API whose batches fail as a whole (their input refused), as ``status: failed`` with errors."""

    def __init__(self, fleet: Fleet) -> None:
        super().__init__(fleet, "none")

    def _complete(self, batch: dict[str, Any]) -> None:
        error = {"code": "invalid_request", "message": "the input file is too large", "param": None, "line": None}
        batch.update(status="failed", errors={"object": "list", "data": [error]})


async def test_a_batch_that_fails_whole_fails_each_verdict_with_its_reason_sending_nothing_alone(
    tmp_path: Path,
) -> None:
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = OpenAIFailsWhole(fleet)
    async with serving(api) as base_url:
        report = await ask(one_question_catalog(base_url), tmp_path, judge_batch=True)
    errors = report.runs.filter(pl.col("role") == Role.CANDIDATE)["judge_error"]
    assert errors.is_not_null().all() and all("failed: the input file is too large" in e for e in errors)
    assert len(api.creates) == 1 and api.judged_alone == 0
    assert not list((tmp_path / "cache" / "batches").glob("*.json"))  # known dead: a rerun asks in a new batch


class AnthropicResultsRefused(AnthropicBatchAPI):
    """Anthropic's Message Batches whose results are on another origin that refuses a request without a key."""

    def __init__(self, fleet: Fleet, elsewhere_url: str) -> None:
        super().__init__(fleet, always_answers, key=KEY)
        self.elsewhere_url = elsewhere_url

    def _end(self, batch: dict[str, Any], request: httpx2.Request) -> None:
        super()._end(batch, request)
        batch["results_url"] = f"{self.elsewhere_url}/results/{batch['id']}"


async def test_results_another_origin_refuses_fail_the_verdicts_naming_it_and_keep_the_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", KEY)
    alone = OpenAIEndpoint(lambda body, request: openai_judge(body)[1])  # the judge sent alone: never asked

    class Refuses:
        async def handle(self, request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(
                401, json={"type": "error", "error": {"type": "authentication_error", "message": "no"}}
            )

    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers()), "judge-1": alone})
    async with serving(Refuses()) as elsewhere_url:
        api = AnthropicResultsRefused(fleet, elsewhere_url)
        async with serving(api) as base_url:
            cat = one_question_catalog(base_url, batch="anthropic", api_key_env="ANTHROPIC_TEST_KEY")
            report = await ask(cat, tmp_path)
    errors = report.runs.filter(pl.col("role") == Role.CANDIDATE)["judge_error"]
    assert errors.is_not_null().all() and f"{elsewhere_url}/results/" in errors[0] and "HTTP 401" in errors[0]
    assert len(api.creates) == 1 and not alone.bodies
    assert list((tmp_path / "cache" / "batches").glob("*.json")), "the note stays: the next run reads it again"


class OpenAISlowCreate(OpenAIMadeThenFailed):
    """OpenAI's Batch API whose creates make the batch, then answer only after ``hold_s`` (past the client's
    timeout)."""

    def __init__(self, fleet: Fleet, hold_s: float) -> None:
        super().__init__(fleet, "none")
        self.hold_s = hold_s

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        answer = await super().handle(request)
        if request.url.path == "/v1/batches" and request.method == "POST":
            await asyncio.sleep(self.hold_s)
        return answer


async def test_an_openai_create_that_times_out_after_making_the_batch_makes_one_batch(tmp_path: Path) -> None:
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = OpenAISlowCreate(fleet, hold_s=1.5)
    async with serving(api) as base_url:
        cat = one_question_catalog(base_url, max_retries=2, timeout_s=0.5)
        report = await ask(cat, tmp_path, judge_batch=True)
    assert len(api.creates) == 1 and len(api._batches) == 1 and api.judged_alone == 0
    billed_once(report)
