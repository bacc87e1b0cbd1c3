"""Test your own jobs offline: a scripted OpenAI-compatible endpoint and a catalog around it.

The endpoint answers in-process, under the real openai client (it is mounted at a base URL of its own, see
`ScriptedEndpoint`), so a job is tested exactly as it runs: tool loop, cache, admission, the blind judge and the
report. Answers come from a list (in order) or from a function of the request body; judge requests are answered
with a fixed verdict unless the script answers them itself::

    endpoint = ScriptedEndpoint([completion('{"decision": "refund"}')] * 3, verdict=(7, 3, "as the reference"))
    bench = gb.Benchmark(RefundDesk, runs=1, catalog=endpoint.catalog(), grade="standard", cache=tmp_path)
    bench.set_input({"message": "Refund order A-1?"})
    assert bench.run_sync() == {"decision": "refund"}

The endpoint also serves OpenAI's Files and Batch APIs (the simulated fleet's, `BatchOptions` says how they behave:
delay, expiry, requests failing inside a batch), each batched request answered as the same request sent alone, so a
race with ``judge_batch=True`` is tested offline too; ``endpoint.batch.batches`` holds every batch it was sent.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import httpx2

from ._base.protocol import ROLE_HEADER
from ._base.vocab import Role
from ._calls.session import mount
from ._catalog.catalog import Catalog, Entry
from .sim._batches import BatchOptions, BatchService

__all__ = ["Answer", "BatchOptions", "ScriptedEndpoint", "completion", "verdict"]

Answer = Mapping[str, Any] | httpx2.Response
"""What a script answers with: a chat completion body (see `completion`) or a whole ``httpx2.Response``."""

_numbers = itertools.count(1)


def completion(
    content: str | None = None,
    *,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    model: str = "scripted-1",
    finish_reason: str | None = None,
    tokens: tuple[int, int] | None = (10, 5),
    id: str = "chatcmpl-scripted",
) -> dict[str, Any]:
    """An OpenAI chat completion body: a final answer, or tool calls (``{"name": ..., "arguments": {...}}`` each).

    ``tokens`` is (prompt, completion) for ``usage``; None leaves ``usage`` out, as some servers do.
    """
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))},
            }
            for i, call in enumerate(tool_calls)
        ]
    body: dict[str, Any] = {
        "id": id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}
        ],
    }
    if tokens is not None:
        body["usage"] = {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)}
    return body


def verdict(accuracy: int, work: int, reason: str = "scripted verdict") -> dict[str, Any]:
    """A judge's answer: the verdict JSON the blind judge asks for, as a chat completion body."""
    return completion(json.dumps({"accuracy": accuracy, "work": work, "reason": reason}))


class ScriptedEndpoint:
    """A scripted OpenAI-compatible endpoint, served in-process; it records every request it answers.

    ``answers``: a list of `Answer` given in order, or a function ``(body, request) -> Answer``. ``verdict``:
    ``(accuracy, work, reason)`` answers every judge request (those labelled ``x-gradebench-role: judge``) without
    using the script; None sends judge requests to the script too. ``batch``: how its Batch API behaves.
    """

    def __init__(
        self,
        answers: Iterable[Answer] | Callable[[dict[str, Any], httpx2.Request], Answer],
        *,
        verdict: tuple[int, int, str] | None = (7, 3, "matches the reference"),
        base_url: str | None = None,
        batch: BatchOptions | None = None,
    ):
        self._script = answers if callable(answers) else list(answers)
        self._verdict = verdict
        self.base_url = base_url or f"http://scripted-{next(_numbers)}.gradebench.invalid/v1"
        """Where the endpoint answers (``.invalid``: never a real host)."""
        self.requests: list[httpx2.Request] = []
        """Every request answered, in order."""
        self.bodies: list[dict[str, Any]] = []
        """Their JSON bodies (a batched request's too: its request has the labels its ``custom_id`` carries)."""
        self.batch = BatchService(self._batched, batch)
        """The Files and Batch APIs it serves: ``batch.batches`` holds every batch."""
        mount(self.base_url, httpx2.MockTransport(self))

    def __call__(self, request: httpx2.Request) -> Any:
        if BatchService.serves(request.url.path):
            return self.batch.handle(request)  # a coroutine: the transport awaits it
        return self._answer(request)

    async def _batched(self, body: dict[str, Any], labels: dict[str, str]) -> tuple[int, dict[str, Any]]:
        request = httpx2.Request("POST", f"{self.base_url}/chat/completions", headers=labels, json=body)
        response = self._answer(request)
        return response.status_code, json.loads(response.content)

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else {}
        self.requests.append(request)
        self.bodies.append(body)
        if self._verdict is not None and request.headers.get(ROLE_HEADER) == Role.JUDGE:
            answer: Answer = verdict(*self._verdict)
        elif callable(self._script):
            answer = self._script(body, request)
        elif self._script:
            answer = self._script.pop(0)
        else:
            raise AssertionError(f"the script has no answer left for request {len(self.requests)}: {body}")
        return answer if isinstance(answer, httpx2.Response) else httpx2.Response(200, json=dict(answer))

    def catalog(self, **entry_fields: Any) -> Catalog:
        """A catalog of three entries answered by this endpoint: ``test/reference`` (the ``standard`` pick),
        ``test/candidate`` (also ``standard``) and ``test/judge`` (``large``, the ceiling). ``entry_fields`` apply to
        all three (prices, ``params``, ``max_retries``, ``batch``, ...); a batch is looked at without waiting."""
        fields: dict[str, Any] = {"base_url": self.base_url, "price_in": 1.0, "price_out": 2.0, "max_retries": 0}
        fields["batch_poll_s"] = 0.0
        fields.update(entry_fields)
        entries = [
            Entry(name="test/reference", model="reference-1", grade="standard", **fields),
            Entry(name="test/candidate", model="candidate-1", grade="standard", **fields),
            Entry(name="test/judge", model="judge-1", grade="large", **fields),
        ]
        picks = {"standard": "test/reference", "large": "test/judge"}
        return Catalog(entries, grades=["standard", "large"], picks=picks, ceiling="test/judge", source="scripted")
