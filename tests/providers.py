"""Loopback OpenAI-compatible endpoints that answer in the documented shapes of real providers.

Each class is one provider flavour: it answers in order (a list) or by a function of ``(body, request)``, records
every request body and header, enforces the request rules its provider documents (a 400 in the provider's own error
shape), and has builders for its response bodies, each beside the page that documents the shape. `Fleet` routes
requests to the endpoints by model id; `serve` puts a fleet on 127.0.0.1 with gradebench's own loopback server, so
the real ``openai`` client talks real HTTP to it.

Where a shape comes from an issue thread rather than the provider's own reference, the comment says so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx2

from gradebench.sim._server import start_server

__all__ = [
    "DeepSeekEndpoint",
    "Endpoint",
    "Fleet",
    "JudgeEndpoint",
    "LiteLLMEndpoint",
    "OllamaEndpoint",
    "OpenAIEndpoint",
    "OpenRouterEndpoint",
    "OpenRouterModels",
    "VLLMEndpoint",
    "serve",
]

Answer = dict[str, Any] | httpx2.Response
Script = list[Answer] | Callable[[dict[str, Any], httpx2.Request], Answer]


class Endpoint:
    """A scripted OpenAI-compatible endpoint: answers in order, or by ``answers(body, request)``; records requests."""

    def __init__(self, answers: Script = (), *, delay_s: float = 0.0):
        self.answers = answers if callable(answers) else list(answers)
        self.delay_s = delay_s
        """Seconds to wait before answering (a slow model; keep it under 50 ms in tests)."""
        self.bodies: list[dict[str, Any]] = []
        """Every request body received, in order."""
        self.headers: list[dict[str, str]] = []
        """Every request's headers (lower-case names), in order."""

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else {}
        self.bodies.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        rejected = self.check(body, request)
        if rejected is not None:
            return rejected
        if callable(self.answers):
            answer = self.answers(body, request)
        else:
            if not self.answers:
                raise AssertionError(f"{type(self).__name__}: no scripted answer left for {body.get('model')!r}")
            answer = self.answers.pop(0)
        return self.respond(answer)

    def check(self, body: dict[str, Any], request: httpx2.Request) -> httpx2.Response | None:
        """The provider's documented rejection of this request, or None when it is accepted."""
        return None

    def respond(self, answer: Answer) -> httpx2.Response:
        return answer if isinstance(answer, httpx2.Response) else httpx2.Response(200, json=answer)

    def runs(self) -> list[str | None]:
        """The ``x-gradebench-run`` label of each request, in order."""
        return [h.get("x-gradebench-run") for h in self.headers]


# --------------------------------------------------------------------------------------------------------- OpenAI


class OpenAIEndpoint(Endpoint):
    """OpenAI's chat completions. ``reasoning_family=True``: a model family that rejects ``max_tokens`` and any
    ``temperature`` but the default, as the newer OpenAI families do (o-series, GPT-5)."""

    def __init__(self, answers: Script = (), *, reasoning_family: bool = False, **kw: Any):
        super().__init__(answers, **kw)
        self.reasoning_family = reasoning_family

    def check(self, body: dict[str, Any], request: httpx2.Request) -> httpx2.Response | None:
        if not self.reasoning_family:
            return None
        # The message, type, param and code as OpenAI returns them (quoted in issue threads, e.g.
        # https://github.com/griptape-ai/ComfyUI-Griptape/issues/312 and https://github.com/gabrii/Cursor-Azure-GPT-5/issues/33)
        if "max_tokens" in body:
            return self.error(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                param="max_tokens",
                code="unsupported_parameter",
            )
        if "temperature" in body and body["temperature"] != 1:
            return self.error(
                400,
                f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                "this model. Only the default (1) value is supported.",
                param="temperature",
                code="unsupported_value",
            )
        return None

    @staticmethod
    def completion(
        content: str | list[dict[str, Any]] | None = "ok",
        *,
        model: str = "gpt-5-mini-2025-08-07",
        id: str = "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        prompt_tokens: int = 19,
        completion_tokens: int = 10,
        cached_tokens: int = 0,
        reasoning_tokens: int = 0,
        refusal: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        finish_reason: str | None = None,
    ) -> dict[str, Any]:
        """A chat completion object. Shape: https://platform.openai.com/docs/api-reference/chat/object
        (``usage.prompt_tokens_details.cached_tokens`` is part of ``prompt_tokens``:
        https://platform.openai.com/docs/guides/prompt-caching ; ``completion_tokens_details.reasoning_tokens`` is part
        of ``completion_tokens``: https://platform.openai.com/docs/guides/reasoning ; a refusal comes as
        ``content: null, refusal: "..."``: https://platform.openai.com/docs/guides/structured-outputs#refusals)."""
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal, "annotations": []}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            "id": id,
            "object": "chat.completion",
            "created": 1741570283,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": reasoning_tokens,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            "service_tier": "default",
            "system_fingerprint": "fp_fc9f1d7035",
        }

    @staticmethod
    def tool_call(name: str, arguments: Mapping[str, Any], id: str = "call_12345xyz") -> dict[str, Any]:
        """One item of ``message.tool_calls``: https://platform.openai.com/docs/api-reference/chat/object"""
        return {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}

    @staticmethod
    def error(
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx2.Response:
        """OpenAI's error body: https://platform.openai.com/docs/guides/error-codes (``{"error": {message, type, param,
        code}}``)."""
        body = {"error": {"message": message, "type": type, "param": param, "code": code}}
        return httpx2.Response(status, json=body, headers=dict(headers or {}))

    @classmethod
    def rate_limited(cls, retry_after_ms: int = 10) -> httpx2.Response:
        """A 429 as OpenAI sends it (https://platform.openai.com/docs/guides/rate-limits), with a short
        ``retry-after-ms`` so the test stays fast (the openai SDK honours it)."""
        return cls.error(
            429,
            "Rate limit reached for gpt-5-mini in organization org-abc on requests per min (RPM): "
            "Limit 3, Used 3, Requested 1. Please try again in 20ms.",
            type="requests",
            code="rate_limit_exceeded",
            headers={"retry-after-ms": str(retry_after_ms)},
        )


def content_parts(text: str, thinking: str | None = None) -> list[dict[str, Any]]:
    """``message.content`` as a list of chunks, as Mistral's reasoning models return it: a ``thinking`` chunk (itself a
    list of text chunks), then the answer's ``text`` chunk. https://docs.mistral.ai/capabilities/reasoning/"""
    parts: list[dict[str, Any]] = []
    if thinking is not None:
        parts.append({"type": "thinking", "thinking": [{"type": "text", "text": thinking}]})
    parts.append({"type": "text", "text": text})
    return parts


# ----------------------------------------------------------------------------------------------------- OpenRouter

_OPENROUTER_NAMES = {"deepinfra": "DeepInfra", "together": "Together", "groq": "Groq", "fireworks": "Fireworks"}


class OpenRouterEndpoint(Endpoint):
    """OpenRouter: ``usage.cost`` in credits (USD), ``reasoning`` and ``reasoning_details`` on the message, errors
    mid-generation as an HTTP 200 with an ``error`` body, the provider that served the request named in ``provider``.
    A provider pin in the request body (``provider.only`` or ``provider.order``) is echoed as that provider's name."""

    def respond(self, answer: Answer) -> httpx2.Response:
        if isinstance(answer, dict) and "choices" in answer and answer.get("provider") is None:
            pin = (self.bodies[-1].get("provider") or {}) if self.bodies else {}
            slugs = pin.get("only") or pin.get("order") or ["openai"]
            answer = {**answer, "provider": _OPENROUTER_NAMES.get(slugs[0], slugs[0])}
        return super().respond(answer)

    @staticmethod
    def completion(
        content: str | None = "ok",
        *,
        model: str = "qwen/qwen3-235b-a22b",
        id: str = "gen-1747000000-AbCdEfGhIjKlMnOpQrSt",
        prompt_tokens: int = 194,
        completion_tokens: int = 2,
        cost: float | None = 0.00095,
        cached_tokens: int = 0,
        reasoning_tokens: int = 0,
        reasoning: str | None = None,
        reasoning_details: list[dict[str, Any]] | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        finish_reason: str | None = None,
        provider: str | None = None,
    ) -> dict[str, Any]:
        """A chat completion as OpenRouter returns it: https://openrouter.ai/docs/api-reference/overview (the
        response: ``provider``, ``native_finish_reason``); usage with ``cost`` (credits, USD) beside the tokens:
        https://openrouter.ai/docs/use-cases/usage-accounting ; ``reasoning`` and ``reasoning_details``:
        https://openrouter.ai/docs/use-cases/reasoning-tokens"""
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "reasoning": reasoning}
        if reasoning_details is not None:
            message["reasoning_details"] = reasoning_details
        if tool_calls:
            message["tool_calls"] = tool_calls
        finish = finish_reason or ("tool_calls" if tool_calls else "stop")
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "cost": cost,
            "is_byok": False,
            "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
            "cost_details": {"upstream_inference_cost": None},
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens, "image_tokens": 0},
        }
        if cost is None:
            del usage["cost"], usage["cost_details"]
        return {
            "id": id,
            "provider": provider,
            "model": model,
            "object": "chat.completion",
            "created": 1747000000,
            "choices": [
                {
                    "logprobs": None,
                    "finish_reason": finish,
                    "native_finish_reason": finish,
                    "index": 0,
                    "message": message,
                }
            ],
            "usage": usage,
        }

    @staticmethod
    def reasoning_details(text: str) -> list[dict[str, Any]]:
        """Reasoning blocks as OpenRouter returns them, which must be passed back unchanged on the next turn (tool
        calling): https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks"""
        return [
            {
                "type": "reasoning.text",
                "text": text,
                "signature": "EvcBCkgIChABGAIqQKkSDbRuVEQUk9qN1odC098l9SEj",
                "id": "rs_0a1b2c",
                "format": "anthropic-claude-v1",
                "index": 0,
            },
            {
                "type": "reasoning.encrypted",
                "data": "gAAAAABo-opaque-blob==",
                "id": "rs_0a1b2d",
                "format": "anthropic-claude-v1",
                "index": 1,
            },
        ]

    @staticmethod
    def error_200(code: int, message: str, *, provider_name: str = "DeepInfra") -> httpx2.Response:
        """An error while the model was producing the output: HTTP 200 and ``{"error": {code, message, metadata}}``
        in the body. https://openrouter.ai/docs/api-reference/errors"""
        body = {"error": {"code": code, "message": message, "metadata": {"provider_name": provider_name}}}
        return httpx2.Response(200, json=body)


class OpenRouterModels:
    """OpenRouter's model list, ``GET /api/v1/models`` (no key needed), as a fleet for `start_server`: a GET whose path
    ends in ``/models`` gets ``{"data": models}``; every other request goes to ``chat`` (a `Fleet`), or is a 404.
    Shape: https://openrouter.ai/docs/api-reference/list-available-models (prices are strings, USD per token)."""

    def __init__(self, models: list[dict[str, Any]], *, chat: Fleet | None = None, status: int = 200):
        self.models = models
        self.chat = chat
        self.status = status
        """The list's HTTP status (not 200: an OpenAI-shaped error body)."""
        self.requests: list[httpx2.Request] = []
        """Every model-list request received, in order."""

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET" and request.url.path.endswith("/models"):
            self.requests.append(request)
            if self.status != 200:
                return OpenAIEndpoint.error(self.status, "Service temporarily unavailable", type="server_error")
            return httpx2.Response(200, json={"data": self.models})
        if self.chat is None:
            return OpenAIEndpoint.error(404, f"no route {request.method} {request.url.path}", code="not_found")
        return await self.chat.handle(request)

    @staticmethod
    def model(
        id: str,
        *,
        prompt: str = "0.0000001",
        completion: str = "0.0000003",
        input_cache_read: str | None = None,
        input_cache_write: str | None = None,
        internal_reasoning: str = "0",
        request: str = "0",
        context_length: int | None = 131072,
        name: str | None = None,
    ) -> dict[str, Any]:
        """One item of the list's ``data``, every documented field present (``input_cache_read`` and
        ``input_cache_write`` only when given: models without prompt caching leave them out)."""
        pricing = {
            "prompt": prompt,
            "completion": completion,
            "request": request,
            "image": "0",
            "web_search": "0",
            "internal_reasoning": internal_reasoning,
        }
        if input_cache_read is not None:
            pricing["input_cache_read"] = input_cache_read
        if input_cache_write is not None:
            pricing["input_cache_write"] = input_cache_write
        return {
            "id": id,
            "canonical_slug": id,
            "hugging_face_id": "",
            "name": name or id,
            "created": 1745000000,
            "description": f"{id}, as OpenRouter describes it.",
            "context_length": context_length,
            "architecture": {
                "modality": "text->text",
                "input_modalities": ["text"],
                "output_modalities": ["text"],
                "tokenizer": "Other",
                "instruct_type": None,
            },
            "pricing": pricing,
            "top_provider": {"context_length": context_length, "max_completion_tokens": 16384, "is_moderated": False},
            "per_request_limits": None,
            "supported_parameters": ["max_tokens", "temperature", "tools", "response_format"],
            "default_parameters": {"temperature": None, "top_p": None, "frequency_penalty": None},
        }


# ------------------------------------------------------------------------------------------------------- DeepSeek

DEEPSEEK_TOOL_TURN_MESSAGE = "The reasoning_content in the thinking mode must be passed back to the API."


def deepseek_error(message: str) -> httpx2.Response:
    """DeepSeek's 400 body, as its users quote it (the issue threads cited below)."""
    body = {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}
    }
    return httpx2.Response(400, json=body)


class DeepSeekEndpoint(Endpoint):
    """DeepSeek in thinking mode: ``reasoning_content`` beside ``content``; a later request whose assistant tool-call
    turn lacks its ``reasoning_content`` is refused with a 400. ``json_schema_rejected``: a ``response_format`` of type
    ``json_schema`` is refused with a 400 (DeepSeek's JSON mode is ``json_object`` only)."""

    def __init__(self, answers: Script = (), *, json_schema_rejected: bool = True, **kw: Any):
        super().__init__(answers, **kw)
        self.json_schema_rejected = json_schema_rejected
        self.rejected: list[str] = []
        """The message of every 400 this endpoint answered."""

    def check(self, body: dict[str, Any], request: httpx2.Request) -> httpx2.Response | None:
        # The rule: "if the model performed a tool call, the intermediate assistant's reasoning_content must
        # participate in the context concatenation and must be passed back to the API in all subsequent requests ...
        # the API will return a 400 error" (https://api-docs.deepseek.com/guides/thinking_mode#tool-calls). The docs
        # do not quote the message; it is the one users report, e.g. https://github.com/anomalyco/opencode/issues/24083
        for message in body.get("messages", []):
            if message.get("role") == "assistant" and message.get("tool_calls") and "reasoning_content" not in message:
                return self.error(DEEPSEEK_TOOL_TURN_MESSAGE)
        fmt = body.get("response_format") or {}
        if self.json_schema_rejected and fmt.get("type") == "json_schema":
            # JSON mode is {"type": "json_object"} only: https://api-docs.deepseek.com/guides/json_mode ; the message
            # as reported in https://github.com/UKGovernmentBEIS/inspect_ai/issues/4916
            return self.error("This response_format type is unavailable now")
        return None

    def error(self, message: str) -> httpx2.Response:
        self.rejected.append(message)
        return deepseek_error(message)

    @staticmethod
    def completion(
        content: str | None = "ok",
        *,
        reasoning_content: str | None = "Let me think.",
        model: str = "deepseek-v4-pro",
        id: str = "184b2dc7-08b5-4849-836d-e278efcfc85b",
        prompt_tokens: int = 10,
        completion_tokens: int = 48,
        reasoning_tokens: int = 38,
        cached_tokens: int = 0,
        tool_calls: list[dict[str, Any]] | None = None,
        finish_reason: str | None = None,
    ) -> dict[str, Any]:
        """A thinking-mode completion: ``reasoning_content`` at the level of ``content``
        (https://api-docs.deepseek.com/guides/thinking_mode); usage with ``prompt_cache_hit_tokens`` /
        ``prompt_cache_miss_tokens`` and ``completion_tokens_details.reasoning_tokens``
        (https://api-docs.deepseek.com/api/create-chat-completion)."""
        message: dict[str, Any] = {"role": "assistant", "content": content, "reasoning_content": reasoning_content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            "id": id,
            "object": "chat.completion",
            "created": 1778576747,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached_tokens},
                "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
                "prompt_cache_hit_tokens": cached_tokens,
                "prompt_cache_miss_tokens": prompt_tokens - cached_tokens,
            },
            "system_fingerprint": "fp_9954b31ca7_prod0820_fp8_kvcache_20260402",
        }


# ------------------------------------------------------------------------------------------------ vLLM and Ollama


class _LocalServer(Endpoint):
    """An OpenAI-compatible server running a local model."""

    model = "local"
    id_prefix = "chatcmpl-"

    @classmethod
    def completion(
        cls,
        content: str | None = "ok",
        *,
        usage: dict[str, Any] | None = None,
        n: int = 0,
        tool_calls: list[dict[str, Any]] | None = None,
        finish_reason: str | None = None,
        reasoning_content: str | None = None,
    ) -> dict[str, Any]:
        """A completion; ``usage=None`` leaves ``usage`` out of the body altogether."""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning_content is not None:
            message["reasoning_content"] = reasoning_content
        if tool_calls:
            message["tool_calls"] = tool_calls
        body: dict[str, Any] = {
            "id": f"{cls.id_prefix}{n:032x}",
            "object": "chat.completion",
            "created": 1739261756,
            "model": cls.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                }
            ],
        }
        if usage is not None:
            body["usage"] = usage
        return body

    @staticmethod
    def tool_call_without_id(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A tool call with no ``id``, as some OpenAI-compatible servers send one (issue threads, not docs:
        https://github.com/ggml-org/llama.cpp/issues/11992 , https://github.com/ollama/ollama/issues/6462 ,
        https://github.com/vllm-project/vllm/issues/18412)."""
        return {"type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


class VLLMEndpoint(_LocalServer):
    """vLLM's OpenAI-compatible server (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html).
    ``usage`` is optional in OpenAI's own spec (https://github.com/Azure/azure-rest-api-specs/pull/33315 links
    openai-openapi's ChatCompletion, where ``usage`` is not required); reasoning parsers put the thinking in
    ``reasoning_content`` (https://docs.vllm.ai/en/v0.8.3/features/reasoning_outputs.html)."""

    model = "Qwen/Qwen2.5-14B-Instruct"


class OllamaEndpoint(_LocalServer):
    """Ollama's OpenAI compatibility (https://docs.ollama.com/api/openai-compatibility). A cached prompt has come
    back with ``prompt_tokens`` missing or 0 (https://github.com/ollama/ollama/issues/3427 ,
    https://github.com/ollama/ollama/issues/5370)."""

    model = "llama3.1:8b"


# -------------------------------------------------------------------------------------------------------- LiteLLM


class LiteLLMEndpoint(Endpoint):
    """A LiteLLM proxy: the cost it computed in the ``x-litellm-response-cost`` response header
    (https://docs.litellm.ai/docs/proxy/response_headers). ``expected_key``: a bearer key other than this one is
    refused with a 401 whose message echoes the key it received."""

    def __init__(self, answers: Script = (), *, cost: float | None = None, expected_key: str | None = None, **kw: Any):
        super().__init__(answers, **kw)
        self.cost = cost
        self.expected_key = expected_key

    def check(self, body: dict[str, Any], request: httpx2.Request) -> httpx2.Response | None:
        if self.expected_key is None:
            return None
        received = request.headers.get("authorization", "").removeprefix("Bearer ")
        if received == self.expected_key:
            return None
        # LiteLLM's proxy answered a bad key with "Authentication Error, Invalid proxy server token passed. Received
        # API Key = ..." (https://github.com/BerriAI/litellm/pull/39787); this one echoes the key in full, as servers
        # that format the key into the message do (https://github.com/Unstructured-IO/unstructured-api/pull/578).
        message = (
            f"Authentication Error, Invalid proxy server token passed. Received API Key = {received}, "
            "Unable to find token in cache or `LiteLLM_VerificationTokenTable`"
        )
        body = {"error": {"message": message, "type": "auth_error", "param": "None", "code": "401"}}
        return httpx2.Response(401, json=body)

    def respond(self, answer: Answer) -> httpx2.Response:
        response = super().respond(answer)
        if self.cost is not None and response.status_code == 200:
            response.headers["x-litellm-response-cost"] = repr(self.cost)
        return response

    @staticmethod
    def mock(
        content: str, *, id: str = "chatcmpl-mock", prompt_tokens: int | None = 12, completion_tokens: int | None = 8
    ) -> dict[str, Any]:
        """A ``mock_response`` completion: https://docs.litellm.ai/docs/completion/mock_requests (its documented mock
        object has ``usage`` counts of null). The mocks reuse one response id for every answer (FACTS.md; no
        documentation page shows the id)."""
        total = None if prompt_tokens is None or completion_tokens is None else prompt_tokens + completion_tokens
        return {
            "id": id,
            "object": "chat.completion",
            "created": 1694459929,
            "model": "MockResponse",
            "choices": [
                {
                    "finish_reason": "stop",
                    "index": 0,
                    "message": {"content": content, "role": "assistant", "tool_calls": None, "function_call": None},
                }
            ],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": total},
        }


# ---------------------------------------------------------------------------------------------------------- judge

VERDICT = {"accuracy": 7, "work": 3, "reason": "Same outcome as the reference, by the same steps."}


class JudgeEndpoint(Endpoint):
    """A judge endpoint. ``mode``:

    - ``schema``: honours ``response_format`` and answers the verdict as pure JSON;
    - ``prose``: ignores ``response_format`` and answers prose around a fenced JSON verdict;
    - ``rejects_schema``: refuses ``response_format`` of type ``json_schema`` with DeepSeek's 400, answers prose
      without it;
    - ``length``: ``content: null`` and ``finish_reason: "length"``, the thinking cut off in ``reasoning_content``
      (reasoning counts against ``max_tokens``: https://api-docs.deepseek.com/guides/thinking_mode);
    - ``reasoning_only``: ``content: null``, the verdict only in ``reasoning_content`` (a reasoning parser that never
      saw the end of the thinking: https://docs.vllm.ai/en/v0.8.3/features/reasoning_outputs.html).
    """

    MODES = ("schema", "prose", "rejects_schema", "length", "reasoning_only")

    def __init__(self, mode: str = "schema", *, verdict: Mapping[str, Any] = VERDICT, **kw: Any):
        if mode not in self.MODES:
            raise ValueError(f"mode must be one of {self.MODES}, got {mode!r}")
        super().__init__(self._answer, **kw)
        self.mode = mode
        self.verdict = dict(verdict)

    def check(self, body: dict[str, Any], request: httpx2.Request) -> httpx2.Response | None:
        if self.mode == "rejects_schema" and (body.get("response_format") or {}).get("type") == "json_schema":
            return deepseek_error("This response_format type is unavailable now")
        return None

    def schema_asks(self) -> int:
        """How many requests asked for the verdict with ``response_format``."""
        return sum(1 for b in self.bodies if b.get("response_format"))

    def _answer(self, body: dict[str, Any], request: httpx2.Request) -> Answer:
        verdict = json.dumps(self.verdict)
        if self.mode == "schema":
            return OpenAIEndpoint.completion(verdict, model="judge-1", prompt_tokens=900, completion_tokens=40)
        if self.mode in ("prose", "rejects_schema"):
            prose = f"Having compared both transcripts, my verdict:\n```json\n{verdict}\n```"
            return DeepSeekEndpoint.completion(prose, model="judge-1", reasoning_content=None, reasoning_tokens=0)
        if self.mode == "length":
            return DeepSeekEndpoint.completion(
                None,
                model="judge-1",
                finish_reason="length",
                reasoning_content="Transcript K looks up the order first; transcript",
            )
        return DeepSeekEndpoint.completion(None, model="judge-1", reasoning_content=f"My verdict: {verdict}")


# ---------------------------------------------------------------------------------------------------------- fleet


class Fleet:
    """Routes each request to the endpoint of its body's ``model``."""

    def __init__(self, endpoints: Mapping[str, Endpoint]):
        self.endpoints = dict(endpoints)

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else {}
        endpoint = self.endpoints.get(body.get("model", ""))
        if endpoint is None:
            message = f"The model `{body.get('model')}` does not exist"
            return OpenAIEndpoint.error(404, message, code="model_not_found")
        return await endpoint.handle(request)


@asynccontextmanager
async def serve(endpoints: Mapping[str, Endpoint]) -> AsyncIterator[str]:
    """Serve the endpoints (by model id) on 127.0.0.1; yields the base URL (``http://127.0.0.1:PORT/v1``)."""
    server = await start_server(host="127.0.0.1", port=0, fleet=Fleet(endpoints))
    try:
        yield server.base_url
    finally:
        await server.close()
        # let the connection handlers see their sockets close, so none is left for the loop's teardown to cancel
        for _ in range(200):
            if not server._writers:
                break
            await asyncio.sleep(0.001)
