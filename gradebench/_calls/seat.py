"""The seat a job sits at: one entry, the conversation and the tool loop, every model call down the entry's call path.

A seat sends each call of a conversation down the call path its session built (`gradebench._calls.path`: the cache in
front of admission control in front of the transport) under a `CallKey` of its own, and keeps every call as a `Call`
record; a `Reply` carries the calls one ``chat`` made. The job's limits (`JobLimits`) say which parameters it sends
and how long its tool loop may run.

A job written against the openai SDK uses ``seat.openai`` instead (`gradebench._calls.seat_openai`): its requests come
to
`Seat.send`, one call each, its own code running the tool loop.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import openai
import pydantic

from .._base.errors import CallError, ToolLoopError
from .._base.protocol import content_text, reasoning_text
from .._base.redact import scrub, scrub_value, utf8_safe
from .._catalog.catalog import Entry
from .._records.codec import pack
from .._records.keys import CallKey, SeatKey
from .._records.records import Call
from .path import CallLayer, CallRequest
from .seat_openai import seat_client
from .tools import Tool, invalid_arguments, tool
from .usage import read_usage

__all__ = ["JobLimits", "Reply", "Seat"]

log = logging.getLogger("gradebench")


@dataclass(frozen=True, kw_only=True)
class Reply:
    """What ``seat.chat`` returns: the final answer and the calls that led to it."""

    text: str
    """The final assistant message's text (content parts joined; empty when there is none, e.g. a refusal)."""
    message: dict[str, Any]
    """The final assistant message as received."""
    calls: list[Call]
    """The calls this chat made, tool loop included."""

    @property
    def refusal(self) -> str | None:
        """The model's refusal, when it declined to answer (OpenAI's ``refusal`` field)."""
        value = self.message.get("refusal")
        return value if isinstance(value, str) and value else None

    @property
    def reasoning(self) -> str | None:
        """The model's reasoning in the final message, when the provider returned it."""
        return reasoning_text(self.message)


@dataclass(frozen=True, kw_only=True)
class JobLimits:
    """What a job allows its seat: the parameters it sends and how many model calls its tool loop may make."""

    params: Mapping[str, Any] = field(default_factory=dict)
    """The job's inference parameters (over the entry's defaults, under a call's own)."""
    fixed_params: Mapping[str, Any] = field(default_factory=dict)
    """Parameters no call may override."""
    max_steps: int = 8
    """Model calls one ``chat`` may make before its tool loop gives up."""


class Seat:
    """The model a job sits at for one run. ``await seat.chat(messages, tools=[...], **params)``."""

    def __init__(self, entry: Entry, path: CallLayer, key: SeatKey, limits: JobLimits | None = None):
        self.entry = entry
        self.key = key
        """The run (or verdict) this seat's calls belong to."""
        self.limits = limits or JobLimits()
        """What the job allows: parameters and the tool loop's steps."""
        self._path = path
        self._seq = 0
        self.calls: list[Call] = []
        """Every call this run made, in order."""
        self._openai: openai.AsyncOpenAI | None = None
        self._unanswered: dict[str, tuple[int, int]] = {}  # tool call id -> (call, tool call) awaiting its result

    @property
    def openai(self) -> openai.AsyncOpenAI:
        """An ``openai.AsyncOpenAI`` for a job's own openai code: ``chat.completions.create(...)`` (streamed or not)
        goes down this seat's call path, each request one recorded call (see `gradebench._calls.seat_openai`)."""
        if self._openai is None:
            self._openai = seat_client(self)
        return self._openai

    def __repr__(self) -> str:
        return f"Seat({self.entry.name}, role={self.key.role}, calls={len(self.calls)})"

    def params_for(self, call_params: Mapping[str, Any]) -> dict[str, Any]:
        """Entry defaults, then the job's, then the call's; the job's fixed params last. Unset stays absent.

        Then the entry's ``drop_params`` are left out and its ``rename_params`` applied: what this endpoint accepts.
        """
        fixed = self.limits.fixed_params
        for k, v in call_params.items():
            if k in fixed and fixed[k] != v:
                raise ValueError(f"parameter {k!r} is fixed by the job at {fixed[k]!r}; the call asked for {v!r}")
        merged = {**self.entry.params, **self.limits.params, **call_params, **fixed}
        entry = self.entry
        if entry.drop_params or entry.rename_params:
            merged = {entry.rename_params.get(k, k): v for k, v in merged.items() if k not in entry.drop_params}
        return merged

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Tool | Callable[..., Any]] | None = None,
        *,
        attempt: int = 0,
        **params: Any,
    ) -> Reply:
        """Call the model; run the tools it asks for and call again until it answers without tools.

        ``attempt`` is the semantic-retry number: bump it to ask again after an unusable answer (a fresh sample).
        """
        by_name = {t.name: t for t in (tool(fn) for fn in tools or [])}
        conversation = [dict(m) for m in messages]
        body_params = self.params_for(params)
        if by_name:
            body_params["tools"] = [t.spec() for t in by_name.values()]
        made: list[Call] = []
        for _ in range(self.limits.max_steps):
            call, response = await self._call(conversation, body_params, attempt)
            made.append(call)
            message = _message(response)
            if not message.get("tool_calls"):
                self.calls.append(call)
                return Reply(text=content_text(message.get("content")), message=message, calls=made)
            turn = _assistant_turn(message, call.seq)
            conversation.append(turn)
            requested = turn["tool_calls"]
            results = [await self._run_tool(by_name, tc) for tc in requested]
            for tc, result in zip(requested, results, strict=True):
                content = result.get("result") if "error" not in result else {"error": result["error"]}
                conversation.append({"role": "tool", "tool_call_id": tc["id"], "content": _to_json(content)})
            call = replace(call, tool_results=results)
            made[-1] = call
            self.calls.append(call)
        raise ToolLoopError(
            f"{self.entry.name}: the tool loop made {self.limits.max_steps} model calls without a final answer "
            f"(raise the job's max_steps if the job needs more)",
            entry=self.entry.name,
            steps=self.limits.max_steps,
        )

    async def send(
        self, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any], *, asked_model: str | None = None
    ) -> dict[str, Any]:
        """One call as a job's own code made it: its messages and parameters (merged as `params_for` merges them), the
        entry's model for the one it asked for. The completion comes back with every tool call given an id; the tool
        calls are recorded on the call, and the results this conversation carries are joined to the calls that asked.
        """
        conversation = [dict(m) for m in messages]
        self._join_tool_results(conversation)
        call, response = await self._call(conversation, self.params_for(params), 0, asked_model=asked_model)
        message = _message(response)
        requested = message.get("tool_calls")
        if requested:
            turn = _assistant_turn(message, call.seq)
            response["choices"][0]["message"] = turn
            records = []
            for position, tc in enumerate(turn["tool_calls"]):
                fn = tc.get("function") or {}
                records.append({"id": tc["id"], "name": fn.get("name", ""), "arguments": _parsed(fn.get("arguments"))})
                self._unanswered[tc["id"]] = (len(self.calls), position)
            call = replace(call, tool_results=records)
        self.calls.append(call)
        return response

    def _join_tool_results(self, conversation: Sequence[Mapping[str, Any]]) -> None:
        """The results a job's code sends back, joined to the tool calls that asked for them."""
        for message in conversation:
            if message.get("role") != "tool":
                continue
            where = self._unanswered.pop(str(message.get("tool_call_id")), None)
            if where is None:
                continue
            index, position = where
            asked = self.calls[index]
            records = [dict(r) for r in asked.tool_results]
            records[position]["result"] = _parsed(content_text(message.get("content")))
            self.calls[index] = replace(asked, tool_results=records)

    async def _run_tool(self, by_name: dict[str, Tool], tc: Mapping[str, Any]) -> dict[str, Any]:
        fn = tc.get("function") or {}
        name = fn.get("name", "")
        record: dict[str, Any] = {"id": tc.get("id"), "name": name, "arguments": fn.get("arguments")}
        try:
            arguments = json.loads(fn.get("arguments") or "{}")
        except json.JSONDecodeError as exc:
            return {**record, "error": f"invalid arguments for tool {name!r}: not valid JSON ({exc})"}
        record["arguments"] = arguments
        if name not in by_name:
            return {**record, "error": f"no tool named {name!r}; tools: {sorted(by_name)}"}
        if not isinstance(arguments, dict):
            return {**record, "error": f"invalid arguments for tool {name!r}: not a JSON object"}
        try:
            result = await by_name[name].invoke(arguments)
        except pydantic.ValidationError as exc:
            return {**record, "error": invalid_arguments(name, exc)}
        except Exception as exc:  # a tool that raises is the model's problem to handle, and a fact for the judge
            return {**record, "error": utf8_safe(scrub(f"{type(exc).__name__}: {exc}"))}
        return {**record, "result": utf8_safe(scrub_value(result))}

    async def _call(
        self,
        conversation: list[dict[str, Any]],
        params: dict[str, Any],
        attempt: int,
        *,
        asked_model: str | None = None,
    ) -> tuple[Call, dict[str, Any]]:
        """One model call down the path: its record, and the response body parsed (the call's own copy, parsed once
        here rather than again from the record's packed text)."""
        entry = self.entry
        seq = self._seq
        self._seq += 1
        body = {"model": entry.model, "messages": conversation, **params, **entry.routing}
        try:  # the text is the record: later turns of the loop must not change what this call sent
            text, plain = _request_json(body)
            raw = text.encode()
        except UnicodeEncodeError:  # a job's own text with a lone surrogate: sent, hashed and kept as U+FFFD
            body = utf8_safe(body)
            text, plain = _request_json(body)
            raw = text.encode()
        packed = pack(raw)
        key = CallKey(seat=self.key, seq=seq, attempt=attempt)
        request = CallRequest(entry=entry, body=body, key=key, wire=raw if plain else None)
        base: dict[str, Any] = {
            "run_id": self.key.run_id,
            "seq": seq,
            "role": self.key.role,
            "entry": entry.name,
            "request_packed": packed,
            "asked_model": asked_model,
        }
        try:
            answer = await self._path(request)
        except CallError as error:
            failed = Call(**base, error=str(error), latency_s=request.latency_s())
            self.calls.append(failed)  # a failed call is part of the run's record too
            _log_call(failed)
            raise
        response = answer.body()
        usage = read_usage(entry, response, answer.header_cost, batch=answer.batch is not None)
        call = Call(
            **base,
            response_packed=pack(answer.response),
            latency_s=answer.latency_s,
            cache_hit=answer.cache_hit,
            **usage.fields(),
        )
        _log_call(call)
        return call, response


def _message(response: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant message of a response body (empty when it has none), as `Call.message` reads it."""
    choices = response.get("choices")
    return (choices[0].get("message") or {}) if choices else {}


def _assistant_turn(message: Mapping[str, Any], seq: int) -> dict[str, Any]:
    """The assistant message as it goes back into the conversation: every field the provider returned.

    Reasoning fields (``reasoning_content``, ``reasoning``, ``reasoning_details``) must come back unchanged: a thinking
    model rejects a tool turn without them. Null fields are left out; a tool call without an id gets a stable one
    (``call_<seq>_<index>``), used by its tool message too.
    """
    turn: dict[str, Any] = {k: v for k, v in message.items() if v is not None}
    turn["role"] = "assistant"
    turn.setdefault("content", None)
    turn["tool_calls"] = [
        {**tc, "id": tc.get("id") or f"call_{seq}_{i}", "type": tc.get("type") or "function"}
        for i, tc in enumerate(message["tool_calls"])
    ]
    return turn


def _parsed(text: Any) -> Any:
    """A tool call's arguments or result as sent: an object or array written as JSON is read back, other text kept."""
    if isinstance(text, str) and text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    return text


def _to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _request_json(body: Mapping[str, Any]) -> tuple[str, bool]:
    """A request body as its record's text (`_to_json`), and whether that text may go on the wire as it is (the
    SDK need not encode the body again): only when it is plain JSON — no value written as its ``str`` and no NaN or
    Infinity — else the SDK encodes the body, and refuses what it refuses, as it always did."""
    plain = True

    def written_as_text(value: Any) -> str:
        nonlocal plain
        plain = False
        return str(value)

    try:
        return json.dumps(body, ensure_ascii=False, default=written_as_text, allow_nan=False), plain
    except ValueError:  # NaN or Infinity: the record keeps JSON's words for them
        return _to_json(body), False


def _log_call(call: Call) -> None:
    log.info(
        "call entry=%s role=%s run=%s seq=%d %s tokens=%s/%s latency=%.3fs%s",
        call.entry,
        call.role,
        call.run_id,
        call.seq,
        "error" if call.error else (call.finish_reason or "ok"),
        "?" if call.input_tokens is None else call.input_tokens,
        "?" if call.output_tokens is None else call.output_tokens,
        call.latency_s,
        " cache=hit" if call.cache_hit else "",
    )
