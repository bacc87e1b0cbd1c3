"""``seat.openai``: an ``openai.AsyncOpenAI`` whose ``chat.completions.create`` goes down the seat's call path.

A job already written against the openai SDK runs unchanged: it is handed a client built on an ``httpx2`` transport of
the seat's own (`SeatTransport`). The transport reads each chat request the SDK builds and sends it as one call of the
seat (`Seat.send`): the entry's model id replaces the one the code names (which is kept on the call as
``asked_model``), the entry's parameters are merged in as ``seat.chat`` merges them, and the cache, admission control,
retries and key redaction apply. The tool calls a response asks for are recorded on its call, and the results the code
sends back in its next request are joined to them, so the judge reads the whole tool loop.

``stream=True`` is sent to the endpoint as a whole request and the completion replayed to the code as a stream of
chunks (`completion_stream`): the call is recorded, cached and priced whole.

A call that fails for good raises `gradebench.CallError` out of ``create(...)`` — not an openai error, so a fallback
in the code (``except openai.APIError: return "unknown"``) does not turn an endpoint's failure into an answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import httpx2
import openai

__all__ = ["SEAT_BASE_URL", "SeatTransport", "completion_stream", "seat_client"]

SEAT_BASE_URL = "http://seat.gradebench.invalid/v1"
"""Where ``seat.openai`` points: nothing listens there; its transport answers in-process."""


class Seat(Protocol):
    """What the transport needs of a seat (`gradebench._calls.seat.Seat`): one call sent as a job's code made it."""

    async def send(
        self, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any], *, asked_model: str | None = None
    ) -> dict[str, Any]: ...


_STREAM_ONLY = ("stream", "stream_options")
"""Request fields that ask for a stream: the endpoint is asked for the whole completion instead."""


class SeatTransport(httpx2.AsyncBaseTransport):
    """Answers the chat requests of a seat's openai client by sending each as one call of the seat."""

    def __init__(self, seat: Seat):
        self.seat = seat

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return _refused(
                404,
                f"seat.openai sends chat.completions.create(...) only; {request.method} {request.url.path} goes "
                f"nowhere (a race measures chat calls: use the openai client of your own for anything else)",
            )
        try:
            body = json.loads(await request.aread())
        except ValueError as exc:
            return _refused(400, f"seat.openai: the request body is not JSON: {exc}")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _refused(400, "seat.openai: a chat request needs a list of messages")
        stream = bool(body.get("stream"))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        asked_model = body.pop("model", None)
        messages = body.pop("messages")
        params = {k: v for k, v in body.items() if k not in _STREAM_ONLY}
        answered = await self.seat.send(messages, params, asked_model=None if asked_model is None else str(asked_model))
        if stream:
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=completion_stream(answered, include_usage)
            )
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=_json_bytes(answered))


def seat_client(seat: Seat) -> openai.AsyncOpenAI:
    """The openai client a job's own code is handed as ``seat.openai``.

    No retries and no timeout of its own: the seat's call path retries, waits out 429s and keeps the entry's
    ``timeout_s``. The key is a placeholder: the entry's own key is sent by the path, never seen by the job.
    """
    return openai.AsyncOpenAI(
        base_url=SEAT_BASE_URL,
        api_key="gradebench-seat",
        max_retries=0,
        timeout=None,
        http_client=httpx2.AsyncClient(transport=SeatTransport(seat)),
    )


def completion_stream(completion: Mapping[str, Any], include_usage: bool) -> bytes:
    """A whole chat completion as the server-sent events a streamed one arrives as.

    Each choice's message comes as one delta (tool calls indexed), then its finish reason; the usage comes last in a
    chunk of no choices when the code asked for it (``stream_options={"include_usage": True}``), then ``[DONE]``.
    """
    kept = ("id", "created", "model", "system_fingerprint")
    head: dict[str, Any] = {k: completion[k] for k in kept if k in completion}
    head["object"] = "chat.completion.chunk"
    events: list[dict[str, Any]] = []
    for position, choice in enumerate(completion.get("choices") or []):
        index = choice.get("index", position)
        delta = {k: v for k, v in (choice.get("message") or {}).items() if v is not None}
        if delta.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **tc} for i, tc in enumerate(delta["tool_calls"])]
        events.append({**head, "choices": [{"index": index, "delta": delta, "finish_reason": None}]})
        end: dict[str, Any] = {"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")}
        if choice.get("logprobs") is not None:
            end["logprobs"] = choice["logprobs"]
        events.append({**head, "choices": [end]})
    if include_usage and completion.get("usage") is not None:
        events.append({**head, "choices": [], "usage": completion["usage"]})
    return b"".join(b"data: " + _json_bytes(event) + b"\n\n" for event in events) + b"data: [DONE]\n\n"


def _refused(status: int, message: str) -> httpx2.Response:
    """An error the SDK raises as its own status error, with gradebench's message."""
    error = {"error": {"message": message, "type": "gradebench_seat", "code": status}}
    return httpx2.Response(status, headers={"content-type": "application/json"}, content=_json_bytes(error))


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")
