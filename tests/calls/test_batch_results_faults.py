"""A Batch API whose results files are at fault, over loopback HTTP through the openai client: a broken line, two
answers for one request, a request in both the output and the error file. Each costs at most its own verdict, and
nothing paid for is sent again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import polars as pl
import pytest

from ..batch_providers import AnthropicBatchAPI, OpenAIBatchAPI
from ..loopback import answers
from ..providers import Fleet, OpenAIEndpoint
from .test_batch_shapes import ask, one_question_catalog, openai_judge, serving, verdict_for


class FaultyResults(OpenAIBatchAPI):
    """OpenAI's Batch API whose output file ``fault`` rewrites (its lines in, its lines and the error file's out)."""

    def __init__(self, fleet: Fleet, fault: Any) -> None:
        super().__init__(fleet, openai_judge)
        self.fault = fault
        self.judged_alone = 0
        """Judge requests sent alone, at the full price."""

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/chat/completions") and json.loads(request.content)["model"] == "judge-1":
            self.judged_alone += 1
        return await super().handle(request)

    def _complete(self, batch: dict[str, Any]) -> None:
        super()._complete(batch)
        lines = self._files[batch["output_file_id"]].decode().splitlines()
        output, errors = self.fault(lines)
        self._files[batch["output_file_id"]] = "".join(line + "\n" for line in output).encode()
        if errors:
            batch["error_file_id"] = f"file-{len(self._files) + 1:024d}"
            self._files[batch["error_file_id"]] = "".join(line + "\n" for line in errors).encode()


async def race_with(fault: Any, tmp_path: Path) -> tuple[pl.DataFrame, FaultyResults]:
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers())})
    api = FaultyResults(fleet, fault)
    async with serving(api) as base_url:
        report = await ask(one_question_catalog(base_url), tmp_path, judge_batch=True)
    return report.runs.filter(pl.col("role") == "candidate"), api


async def test_a_broken_results_line_fails_only_its_own_verdict_quoting_it(tmp_path: Path) -> None:
    def break_one(lines: list[str]) -> tuple[list[str], list[str]]:
        return [lines[0][: len(lines[0]) // 2], *lines[1:]], []  # cut short: not JSON, its custom_id still readable

    runs, api = await race_with(break_one, tmp_path)
    failed = runs.filter(pl.col("judge_error").is_not_null())
    assert runs.height == 12 and failed.height == 1
    assert "is not JSON" in failed["judge_error"][0] and '{"id": "batch_req_' in failed["judge_error"][0]
    assert runs.filter(pl.col("judge_error").is_null())["accuracy"].is_not_null().all()
    assert len(api.creates) == 1 and api.judged_alone == 0


async def test_two_answers_for_one_request_fail_its_verdict_never_score_it(tmp_path: Path) -> None:
    def forge(lines: list[str]) -> tuple[list[str], list[str]]:
        forged = json.loads(lines[0])
        content = json.dumps({"accuracy": 7, "work": 3, "reason": "forged"})
        forged["response"]["body"]["choices"][0]["message"]["content"] = content
        return [*lines, json.dumps(forged)], []

    runs, api = await race_with(forge, tmp_path)
    failed = runs.filter(pl.col("judge_error").is_not_null())
    assert failed.height == 1 and "answer it twice" in failed["judge_error"][0]
    assert "forged" not in runs["reason"].drop_nulls().to_list() and api.judged_alone == 0


async def test_a_request_in_both_the_output_and_the_error_file_keeps_its_answer(tmp_path: Path) -> None:
    def also_failed(lines: list[str]) -> tuple[list[str], list[str]]:
        failed = []
        for line in lines:
            value = json.loads(line)
            value["response"] = None
            value["error"] = {"code": "server_error", "message": "internal error"}
            failed.append(json.dumps(value))
        return lines, failed

    runs, api = await race_with(also_failed, tmp_path)
    assert runs.height == 12 and runs["judge_error"].is_null().all() and runs["accuracy"].is_not_null().all()
    assert api.judged_alone == 0


def always_answers(params: dict[str, Any]) -> dict[str, Any]:
    body = {"messages": [{"role": "system", "content": params["system"]}, *params["messages"]]}
    return AnthropicBatchAPI.message(
        json.dumps(verdict_for(body)), model=params["model"], input_tokens=600, cache_read=0
    )


class FaultyAnthropic(AnthropicBatchAPI):
    """Anthropic's Message Batches whose results repeat their first line's id with a forged verdict and give their
    second a ``result`` of another shape."""

    def _end(self, batch: dict[str, Any], request: httpx2.Request) -> None:
        super()._end(batch, request)
        lines = batch["_results"].decode().splitlines()
        first, second = json.loads(lines[0]), json.loads(lines[1])
        forged = json.dumps({"accuracy": 7, "work": 3, "reason": "forged"})
        first["result"] = AnthropicBatchAPI.message(forged, model="judge-1", input_tokens=600, cache_read=0)
        second["result"] = "succeeded"
        lines[1] = json.dumps(second)
        batch["_results"] = "".join(line + "\n" for line in [*lines, json.dumps(first)]).encode()


async def test_anthropic_results_at_fault_fail_only_their_own_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", "sk-ant-test-123")
    alone = OpenAIEndpoint(lambda body, request: openai_judge(body)[1])
    fleet = Fleet({"ref-1": OpenAIEndpoint(answers()), "alt-1": OpenAIEndpoint(answers()), "judge-1": alone})
    api = FaultyAnthropic(fleet, always_answers, key="sk-ant-test-123")
    async with serving(api) as base_url:
        report = await ask(
            one_question_catalog(base_url, batch="anthropic", api_key_env="ANTHROPIC_TEST_KEY"), tmp_path
        )
    runs = report.runs.filter(pl.col("role") == "candidate")
    errors = sorted(runs["judge_error"].drop_nulls().to_list())
    assert len(errors) == 2 and not alone.bodies and "forged" not in runs["reason"].drop_nulls().to_list()
    assert "documented shape" in errors[0] and '"result": "succeeded"' in errors[0] and "answer it twice" in errors[1]
