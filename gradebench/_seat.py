"""The seat a job sits at: one entry, called through the cache, admission control and retries, with the tool loop.

Every model call becomes a `Call` record; a `Reply` carries the calls one ``chat`` made.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
import pydantic

from ._admission import Admission, call_error
from ._cache import Cached, CallCache
from ._catalog import Entry
from ._codec import pack
from ._errors import CallError, ToolLoopError
from ._protocol import content_text, label_headers, reasoning_text
from ._records import Call
from ._redact import scrub, scrub_bytes, scrub_value

__all__ = ["NotCached", "Reply", "Seat", "SeatContext", "Tool", "tool"]

log = logging.getLogger("gradebench")

# ---------------------------------------------------------------------------------------------------------------- tools


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A plain Python function the model may call, with the JSON schema derived from its signature."""

    name: str
    """The function name the model calls."""
    description: str
    """The docstring's summary, shown to the model."""
    parameters: dict[str, Any]
    """JSON schema of the arguments."""
    fn: Callable[..., Any]
    """The function itself (sync or async)."""
    arguments_model: type[pydantic.BaseModel]
    """Validates and converts the model's arguments before the call."""

    def spec(self) -> dict[str, Any]:
        """The OpenAI ``tools`` item for this tool."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    async def invoke(self, arguments: Mapping[str, Any]) -> Any:
        """Validate the arguments and run the function."""
        values = self.arguments_model.model_validate(dict(arguments))
        kwargs = {k: getattr(values, k) for k in type(values).model_fields}
        result = self.fn(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


_ARG_LINE = re.compile(r"^(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


def _doc_parts(doc: str) -> tuple[str, dict[str, str]]:
    """The summary of a docstring and the parameter descriptions of its ``Args:`` section (Google style)."""
    lines = inspect.cleandoc(doc or "").splitlines()
    if "Args:" not in (line.strip() for line in lines):
        return "\n".join(lines).strip(), {}
    at = [line.strip() for line in lines].index("Args:")
    summary = "\n".join(lines[:at]).strip()
    described: dict[str, str] = {}
    indent, current = None, None
    for line in lines[at + 1 :]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:  # the next section (Returns:, Raises:, ...)
            break
        indent = indent or depth
        m = _ARG_LINE.match(line.strip())
        if depth == indent and m:
            current = m.group(1)
            described[current] = m.group(2).strip()
        elif current:
            described[current] = (described[current] + " " + line.strip()).strip()
    return summary, described


def tool(fn: Callable[..., Any]) -> Tool:
    """Declare a function as a tool: schema from its type hints, descriptions from its docstring's ``Args:``."""
    if isinstance(fn, Tool):
        return fn
    summary, described = _doc_parts(fn.__doc__ or "")
    hints = inspect.get_annotations(fn, eval_str=True)
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {fn.__name__}: *{pname} parameters cannot be described to a model")
        annotation = hints.get(pname, Any)
        default = ... if param.default is param.empty else param.default
        fields[pname] = (annotation, pydantic.Field(default, description=described.get(pname)))
    model = pydantic.create_model(f"{fn.__name__}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return Tool(name=fn.__name__, description=summary or fn.__name__, parameters=schema, fn=fn, arguments_model=model)


# -------------------------------------------------------------------------------------------------------------- records


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


# ----------------------------------------------------------------------------------------------------------------- seat


@dataclass(kw_only=True)
class SeatContext:
    """What the benchmark hands a seat for one run: where to call, how to cache and label, what the job allows."""

    client: openai.AsyncOpenAI
    cache: CallCache
    admission: Admission
    run_id: str
    role: str
    benchmark_id: str
    salt: dict[str, Any]
    job_params: Mapping[str, Any] = field(default_factory=dict)
    fixed_params: Mapping[str, Any] = field(default_factory=dict)
    max_steps: int = 8
    sample: int = 0
    """Which independent draw this is (judge-noise replicas); part of the salt and of the labels."""
    cache_only: bool = False
    """Answer from the cache or raise `NotCached`: how an estimate learns which runs are already paid for."""


class NotCached(BaseException):
    """A cache-only seat met a call the cache does not hold (see `SeatContext.cache_only`). A BaseException, like
    a cancellation: a job's own ``except Exception`` must not swallow it and go on as if the call had answered."""


class Seat:
    """The model a job sits at for one run. ``await seat.chat(messages, tools=[...], **params)``."""

    def __init__(self, entry: Entry, context: SeatContext):
        self.entry = entry
        self._ctx = context
        self._seq = 0
        self.calls: list[Call] = []
        """Every call this run made, in order."""

    def __repr__(self) -> str:
        return f"Seat({self.entry.name}, role={self._ctx.role}, calls={len(self.calls)})"

    def params_for(self, call_params: Mapping[str, Any]) -> dict[str, Any]:
        """Entry defaults, then the job's, then the call's; the job's fixed params last. Unset stays absent.

        Then the entry's ``drop_params`` are left out and its ``rename_params`` applied: what this endpoint accepts.
        """
        fixed = self._ctx.fixed_params
        for k, v in call_params.items():
            if k in fixed and fixed[k] != v:
                raise ValueError(f"parameter {k!r} is fixed by the job at {fixed[k]!r}; the call asked for {v!r}")
        merged = {**self.entry.params, **self._ctx.job_params, **call_params, **fixed}
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
        for _ in range(self._ctx.max_steps):
            call = await self._call(conversation, body_params, attempt)
            made.append(call)
            message = call.message
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
            call = _with_tool_results(call, results)
            made[-1] = call
            self.calls.append(call)
        raise ToolLoopError(
            f"{self.entry.name}: the tool loop made {self._ctx.max_steps} model calls without a final answer "
            f"(raise the job's max_steps if the job needs more)",
            entry=self.entry.name,
            steps=self._ctx.max_steps,
        )

    async def _run_tool(self, by_name: dict[str, Tool], tc: Mapping[str, Any]) -> dict[str, Any]:
        fn = tc.get("function") or {}
        name = fn.get("name", "")
        record: dict[str, Any] = {"id": tc.get("id"), "name": name, "arguments": fn.get("arguments")}
        try:
            arguments = json.loads(fn.get("arguments") or "{}")
        except json.JSONDecodeError as exc:
            return {**record, "error": f"arguments are not valid JSON: {exc}"}
        record["arguments"] = arguments
        if name not in by_name:
            return {**record, "error": f"no tool named {name!r}; tools: {sorted(by_name)}"}
        try:
            result = await by_name[name].invoke(arguments if isinstance(arguments, dict) else {})
        except pydantic.ValidationError as exc:
            return {**record, "error": f"invalid arguments: {exc.errors(include_url=False)}"}
        except Exception as exc:  # a tool that raises is the model's problem to handle, and a fact for the judge
            return {**record, "error": scrub(f"{type(exc).__name__}: {exc}")}
        return {**record, "result": scrub_value(result)}

    async def _call(self, conversation: list[dict[str, Any]], params: dict[str, Any], attempt: int) -> Call:
        ctx, entry = self._ctx, self.entry
        seq = self._seq
        self._seq += 1
        body = {"model": entry.model, "messages": conversation, **params, **entry.routing}
        # the text is the record (later turns of the loop must not change what this call sent) and the cache key
        text = _to_json(body)
        key = ctx.cache.key(entry.identity(), body, {**ctx.salt, "seq": seq, "attempt": attempt, "sample": ctx.sample})
        base: dict[str, Any] = {
            "run_id": ctx.run_id,
            "seq": seq,
            "role": ctx.role,
            "entry": entry.name,
            "request_json": text,
        }
        cached = ctx.cache.get(key)
        if cached is not None:
            call = _call_from_response(
                entry, base, cached.response, cached.latency_s, cached.header_cost, cache_hit=True
            )
            _log_call(call)
            return call
        if ctx.cache_only:
            raise NotCached(entry.name)
        headers = label_headers(
            benchmark=ctx.benchmark_id, run=ctx.run_id, role=ctx.role, seq=seq, attempt=attempt, sample=ctx.sample
        )
        sent: list[float] = []  # when the request that answered was sent: queueing and 429 waits are not latency

        async def send() -> httpx2.Response:
            sent.append(time.perf_counter())
            # The SDK's own post: its retries, backoff and auth, without re-validating a body built here already.
            return await ctx.client.post(
                "/chat/completions",
                body=body,
                cast_to=httpx2.Response,
                options={"headers": headers, "security": {"bearer_auth": True}},
            )

        try:
            raw = await ctx.admission.request(entry, send)
            response = scrub_bytes(raw.content).decode("utf-8")
            parsed = json.loads(response)
        except (openai.OpenAIError, json.JSONDecodeError, CallError) as exc:
            error = call_error(entry, exc)
            latency = time.perf_counter() - sent[-1] if sent else 0.0
            failed = Call(**base, error=str(error), latency_s=latency)
            self.calls.append(failed)  # a failed call is part of the run's record too
            _log_call(failed)
            raise error from None
        latency = time.perf_counter() - sent[-1]
        if not isinstance(parsed, dict) or not parsed.get("choices"):
            error = CallError(f"{entry.name}: the endpoint answered 200 without choices", entry=entry.name, status=200)
            self.calls.append(Call(**base, error=str(error), latency_s=latency))
            raise error
        header_cost = _number(raw.headers.get(LITELLM_COST_HEADER))
        ctx.cache.set(key, Cached(response=response, latency_s=latency, header_cost=header_cost))
        call = _call_from_response(entry, base, response, latency, header_cost, cache_hit=False, parsed=parsed)
        _log_call(call)
        return call


LITELLM_COST_HEADER = "x-litellm-response-cost"
"""A LiteLLM proxy reports the call's cost (USD) in this response header."""


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


def _detail(usage: Mapping[str, Any], group: str, name: str) -> int | None:
    details = usage.get(group)
    return _count(details.get(name)) if isinstance(details, dict) else None


def _number(value: Any) -> float | None:
    """A finite non-negative number from a JSON value or a header string, else None."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _call_from_response(
    entry: Entry,
    base: dict[str, Any],
    response: str,
    latency: float,
    header_cost: float | None,
    *,
    cache_hit: bool,
    parsed: dict[str, Any] | None = None,
) -> Call:
    """The record of an answered call: ``response`` is the body's text (``parsed``, when the caller has it)."""
    body: dict[str, Any] = parsed if parsed is not None else json.loads(response)
    usage = body.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    tin, tout = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    cached = _detail(usage, "prompt_tokens_details", "cached_tokens")
    reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens")
    if tin is not None:
        cached = min(cached or 0, tin)
    if tout is not None:
        reasoning = min(reasoning or 0, tout)
    table = entry.cost(tin, tout, cached or 0) if tin is not None and tout is not None else None
    # Providers report cost in USD (OpenRouter's usage.cost, LiteLLM's header); another currency keeps the table's.
    reported = _number(usage.get("cost")) if "cost" in usage else header_cost
    cost: float | None = table
    source: str | None = "price_table" if table is not None else None
    if reported is not None and entry.currency.upper() == "USD":
        cost, source = reported, "provider"
    return Call(
        **base,
        response_packed=pack(response),
        input_tokens=tin,
        output_tokens=tout,
        cached_input_tokens=cached,
        reasoning_tokens=reasoning,
        latency_s=latency,
        cost=cost,
        cost_source=source,
        price_table_cost=table,
        cache_hit=cache_hit,
        generation_id=body.get("id"),
        finish_reason=(body.get("choices") or [{}])[0].get("finish_reason"),
    )


def _with_tool_results(call: Call, results: list[dict[str, Any]]) -> Call:
    return Call(**{**{f: getattr(call, f) for f in call.__dataclass_fields__}, "tool_results": results})


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


def _to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


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
