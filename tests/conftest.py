"""Tests are offline: real network is refused, the cache lives in a tmp dir, simulated latencies are zero."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

import gradebench as gb

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else address
    if (
        isinstance(host, str)
        and (host.startswith("127.") or host in ("::1", "localhost"))
        or self.family == socket.AF_UNIX
    ):
        return _real_connect(self, address)
    raise RuntimeError(f"tests must not reach the network (tried {address!r})")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    monkeypatch.setenv("GRADEBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GRADEBENCH_SIM_LATENCY_SCALE", "0")


def completion(content: str | None = None, *, tool_calls: list[dict[str, Any]] | None = None,
               model: str = "scripted-1", finish_reason: str | None = None, tokens: tuple[int, int] = (10, 5),
               id: str = "chatcmpl-scripted") -> dict[str, Any]:  # fmt: skip
    """An OpenAI chat completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate((tc["name"], tc["arguments"]) for tc in tool_calls)
        ]
    return {
        "id": id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)},
    }  # fmt: skip


class Scripted:
    """A scripted OpenAI-compatible endpoint: answers in order, or by a function of the request; records requests."""

    def __init__(self, answers: list[Any] | Callable[[dict[str, Any], httpx2.Request], Any]):
        self.answers = answers
        self.requests: list[httpx2.Request] = []
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else {}
        self.requests.append(request)
        self.bodies.append(body)
        if callable(self.answers):
            answer = self.answers(body, request)
        else:
            answer = self.answers.pop(0)
        if isinstance(answer, httpx2.Response):
            return answer
        return httpx2.Response(200, json=answer)


def scripted_catalog(handler: Scripted, **entry_overrides: Any) -> gb.Catalog:
    """A one-grade catalog whose every entry is served by ``handler``."""
    fields = {"base_url": "http://scripted.invalid/v1", "price_in": 1.0, "price_out": 2.0, "max_retries": 0}
    entries = [
        gb.Entry(name="acme/pick", model="pick-1", grade="standard", **{**fields, **entry_overrides}),
        gb.Entry(name="acme/other", model="other-1", grade="standard", **{**fields, **entry_overrides}),
        gb.Entry(name="acme/judge", model="judge-1", grade="large", **{**fields, **entry_overrides}),
    ]
    return gb.Catalog(entries, grades=["standard", "large"], picks={"standard": "acme/pick", "large": "acme/judge"},
                      ceiling="acme/judge", transport=httpx2.MockTransport(handler), source="scripted")  # fmt: skip


def make_seat(catalog: gb.Catalog, entry: str, *, run_id: str = "run-1", salt: dict[str, Any] | None = None,
              cache: gb.CallCache | None = None, **context: Any) -> gb.Seat:  # fmt: skip
    """A seat outside any benchmark, for testing the seat itself."""
    from gradebench._admission import Admission
    from gradebench._seat import SeatContext
    from gradebench._session import client_for

    e = catalog[entry]
    client = client_for(e, httpx2.AsyncClient(transport=catalog.transport))  # the client a race uses
    ctx = SeatContext(
        client=client,
        cache=cache if cache is not None else gb.CallCache(),
        admission=Admission(catalog.entries, concurrency=8),
        run_id=run_id,
        role="candidate",
        benchmark_id="bench-1",
        salt=salt or {"user": "", "input": "i", "role": "candidate", "repeat": 0},
        **context,
    )
    return gb.Seat(e, ctx)
