"""Which family a model belongs to: who made it, as far as its id or its provider tells.

Judges favour their own generations, and at the level of a model family too (Panickssery et al. 2024, "LLM
Evaluators Recognize and Favor Their Own Generations"): a judge of a candidate's family may score it higher than the
answer deserves. An entry's ``family`` (a catalog field) says who made its model; when the catalog leaves it unset,
`family_of` tells it from the model id, else from the genai-prices ``provider`` when that provider makes models
(``anthropic``) rather than serves other makers' (``groq``, ``openrouter``), else not at all: None, unknown, and
nothing is claimed about an entry whose family is unknown.

The id is read from its last path segment first (``accounts/fireworks/models/llama-v3p1-70b`` is a Llama whoever
serves it), by the prefixes of `PREFIXES`; then from its vendor segment (OpenRouter's ``vendor/model``, Hugging Face's
``org/model``), with the aliases of `VENDORS`.
"""

from __future__ import annotations

import re

__all__ = ["HOSTS", "MAKERS", "PREFIXES", "VENDORS", "family_of", "normal_family"]

PREFIXES: tuple[tuple[str, str], ...] = (
    (r"gpt-|gpt\d|chatgpt|o[134](-|$)|davinci|babbage|text-embedding", "openai"),
    (r"claude", "anthropic"),
    (r"gemini|gemma|palm|bison", "google"),
    (r"llama|meta-llama|codellama", "meta"),
    (r"qwen|qwq", "qwen"),
    (r"mistral|mixtral|codestral|ministral|magistral|devstral|pixtral", "mistral"),
    (r"deepseek", "deepseek"),
    (r"grok", "xai"),
    (r"phi-?\d", "microsoft"),
    (r"command|c4ai", "cohere"),
)
"""Model-id prefixes (regular expressions matched at the start of the id's last segment, case-insensitive) and the
family each names."""

VENDORS: dict[str, str] = {
    "meta-llama": "meta",
    "mistralai": "mistral",
    "x-ai": "xai",
    "deepseek-ai": "deepseek",
    "google-deepmind": "google",
    "cohereforai": "cohere",
    "z-ai": "zhipu",
    "zai": "zhipu",
    "zai-org": "zhipu",
    "zhipuai": "zhipu",
    "thudm": "zhipu",
}
"""Vendor segments (OpenRouter's, Hugging Face's) spelt otherwise than the family they name."""

MAKERS: frozenset[str] = frozenset(
    {"anthropic", "cohere", "deepseek", "google", "meta", "minimax", "mistral", "moonshotai", "openai", "x-ai", "zai"}
    | {"zhipuai", "perplexity", "arcee", "voyageai"}
)
"""genai-prices providers that make the models they serve: the provider is the family."""

HOSTS: frozenset[str] = frozenset(
    {"openrouter", "groq", "together", "fireworks", "azure", "aws", "bedrock", "baseten", "cerebras", "cloudflare"}
    | {"databricks", "deepinfra", "modal", "novita", "ovhcloud", "avian", "huggingface", "ollama", "vllm", "litellm"}
    | {"bartowski", "thebloke", "unsloth", "mlx-community", "lmstudio-community", "models", "accounts", "@cf"}
)
"""Providers and vendor segments that serve (or re-package) other makers' models: they say nothing of the family."""


def normal_family(name: str) -> str:
    """A family as gradebench compares it: lower case, trimmed, a vendor alias its family (``x-ai`` is ``xai``)."""
    name = name.strip().casefold()
    return VENDORS.get(name, name)


def family_of(model: str, provider: str | None = None) -> str | None:
    """The family of a model, from its id (``gpt-5-mini`` openai, ``claude-sonnet-4`` anthropic,
    ``meta-llama/llama-3.3-70b-instruct`` meta, ``x-ai/grok-4`` xai) or else its genai-prices ``provider`` when
    that provider makes models; None when neither tells (a host such as groq, an id of one's own)."""
    segments = [s for s in model.strip().casefold().split("/") if s]
    if segments:
        last = segments[-1].split(":", 1)[0]  # an Ollama tag (llama3.1:8b) is no part of the name
        for pattern, family in PREFIXES:
            if re.match(pattern, last):
                return family
        vendor = segments[-2] if len(segments) >= 2 else None  # vendor/model: the segment before the name
        if vendor is not None and vendor not in HOSTS:
            return normal_family(vendor)
    if provider is not None:
        maker = provider.strip().casefold()
        if maker in MAKERS:
            return normal_family(maker)
    return None
