"""The call path's layers, each alone: the cache (lookup and store), admission (pacing, 429 waits, the one-line
error), the transport (send and parse) and the end of a cache-only path."""

from __future__ import annotations

import json

import httpx2
import openai
import pytest

import gradebench as gb
from gradebench._base.vocab import Role
from gradebench._calls.admission import Admission
from gradebench._calls.cache import CallCache
from gradebench._calls.path import AdmissionLayer, CacheLayer, CallAnswer, CallRequest, NotCached, Refuse, Transport
from gradebench._calls.session import Session, client_for
from gradebench._records.keys import CallKey, RunKey

ENTRY = gb.Entry(
    name="acme/mid", model="mid-1", grade="standard", base_url="http://callpath.gradebench.invalid/v1", rpm=60_000
)  # paced, but far from any wait a test would notice
KEY = RunKey(benchmark_id="b", user_salt="", input_id="i", role=Role.CANDIDATE, entry=ENTRY.name, repeat=0)


def request(seq: int = 0, content: str = "hi") -> CallRequest:
    body = {"model": ENTRY.model, "messages": [{"role": "user", "content": content}]}
    return CallRequest(entry=ENTRY, body=body, key=CallKey(seat=KEY, seq=seq))


class Inner:
    """A layer behind the one under test: answers from a list (an exception is raised), counting its calls."""

    def __init__(self, *outcomes: object):
        self.outcomes, self.asked = list(outcomes), 0

    async def __call__(self, req: CallRequest) -> CallAnswer:
        self.asked += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return CallAnswer(response=str(outcome), latency_s=0.25, header_cost=0.5)


def status_error(status: int, **headers: str) -> openai.APIStatusError:
    response = httpx2.Response(
        status,
        json={"error": {"message": f"status {status}"}},
        headers=headers,
        request=httpx2.Request("POST", "http://x"),
    )
    kind = openai.RateLimitError if status == 429 else openai.BadRequestError
    return kind(f"status {status}", response=response, body={"message": f"status {status}"})


async def test_the_cache_layer_stores_an_answer_and_serves_it_again(tmp_path) -> None:
    inner = Inner('{"a": 1}')
    layer = CacheLayer(CallCache(tmp_path), inner)
    first = await layer(request())
    again = await layer(request())
    assert inner.asked == 1 and not first.cache_hit and again.cache_hit
    assert (again.response, again.latency_s, again.header_cost) == ('{"a": 1}', 0.25, 0.5)  # as measured the first time
    other = Inner('{"b": 2}')
    assert (await CacheLayer(CallCache(tmp_path), other)(request(seq=1))).response == '{"b": 2}'  # its own key
    assert other.asked == 1


async def test_the_cache_layer_never_stores_an_error(tmp_path) -> None:
    inner = Inner(gb.CallError("acme/mid: HTTP 500", entry="acme/mid", status=500), '{"ok": true}')
    layer = CacheLayer(CallCache(tmp_path), inner)
    with pytest.raises(gb.CallError):
        await layer(request())
    assert (await layer(request())).response == '{"ok": true}' and inner.asked == 2


async def test_admission_waits_out_a_429_and_names_a_hard_error() -> None:
    admission = Admission([ENTRY], concurrency=4)
    inner = Inner(status_error(429, **{"retry-after-ms": "5"}), '{"ok": 1}')
    answer = await AdmissionLayer(admission, inner)(request())
    assert answer.response == '{"ok": 1}' and inner.asked == 2
    with pytest.raises(gb.CallError, match="acme/mid: HTTP 400 after 1 attempt: status 400") as failed:
        await AdmissionLayer(admission, Inner(status_error(400)))(request())
    assert failed.value.status == 400 and failed.value.entry == "acme/mid"


async def test_the_transport_sends_labels_and_reads_a_completion() -> None:
    seen: list[httpx2.Request] = []

    def handler(req: httpx2.Request) -> httpx2.Response:
        seen.append(req)
        body = {"id": "c1", "choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}
        return httpx2.Response(200, json=body, headers={"x-litellm-response-cost": "0.002"})

    transport = Transport(client_for(ENTRY, httpx2.AsyncClient(transport=httpx2.MockTransport(handler))))
    sent = request(seq=3)
    answer = await transport(sent)
    assert answer.body()["id"] == "c1" and answer.header_cost == 0.002 and not answer.cache_hit
    assert len(sent.sent_at) == 1 and answer.latency_s >= 0
    assert seen[0].headers["x-gradebench-seq"] == "3" and seen[0].headers["x-gradebench-role"] == "candidate"
    assert json.loads(seen[0].content) == sent.body


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (httpx2.Response(200, text="<html>busy</html>"), "a body that is not JSON"),
        (httpx2.Response(200, json={"id": "c1", "choices": []}), "answered 200 without choices"),
    ],
)
async def test_the_transport_refuses_a_200_that_is_no_completion(reply: httpx2.Response, message: str) -> None:
    transport = Transport(client_for(ENTRY, httpx2.AsyncClient(transport=httpx2.MockTransport(lambda r: reply))))
    with pytest.raises(gb.CallError, match=message):
        await transport(request())


async def test_a_cache_only_path_answers_what_the_cache_holds_and_refuses_the_rest(tmp_path) -> None:
    cache = CallCache(tmp_path)
    await CacheLayer(cache, Inner('{"held": 1}'))(request())
    held_only = CacheLayer(cache, Refuse())
    assert (await held_only(request())).cache_hit
    with pytest.raises(NotCached):
        await held_only(request(seq=1))
    catalog = gb.Catalog([ENTRY], grades=["standard"], picks={"standard": ENTRY.name}, ceiling=ENTRY.name)
    async with Session(catalog, cache, 4, {}, cache_only=True) as session:
        path = session.path(ENTRY)
        assert isinstance(path, CacheLayer) and isinstance(path.inner, Refuse)
    async with Session(catalog, cache, 4, {}) as session:
        path = session.path(ENTRY)
        assert isinstance(path, CacheLayer) and isinstance(path.inner, AdmissionLayer)
        assert isinstance(path.inner.inner, Transport) and session.path(ENTRY) is path  # one path per entry
