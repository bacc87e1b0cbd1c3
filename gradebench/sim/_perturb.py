"""How a simulated model departs from the ideal message: misread data, wrong answers, padded or terse explanations.

Every function takes its own ``random.Random`` (seeded by the caller from the request), never the global one, so the
fleet stays deterministic.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from typing import Any

from .._base.canonical import canonical_json
from ._policy import IdealMessage, Policy, ToolRequest
from ._profiles import Profile

__all__ = [
    "EXPLANATION_KEYS",
    "adjust_verbosity",
    "corrupt_value",
    "generic_answer",
    "misread",
    "opening",
    "perturb_answer",
    "prompt_choices",
    "prompt_letters",
    "resolve",
    "rng_for",
    "sign",
    "stable_hex",
]

log = logging.getLogger("gradebench")

_MAX_POLICY_STEPS = 8  # hypothetical (skipped) tool calls answered before giving up on a policy

# Quoted alternatives joined by | / , or "or"; a quoted word followed by ":" is a JSON key, not an alternative.
_QUOTED = r'"[^"\n]{1,40}"(?!\s*:)'
_CHOICE_RUN = re.compile(rf"{_QUOTED}(?:\s*(?:\||/|,|\bor\b)\s*{_QUOTED})+")

EXPLANATION_KEYS = frozenset({"reason", "explanation", "rationale", "notes"})
"""Fields that carry shown work rather than the answer itself."""

# Plausible opposites, so a misread or a wrong answer looks like a model's mistake rather than noise.
_OPPOSITES = {
    "yes": "no",
    "true": "false",
    "approve": "deny",
    "approved": "denied",
    "accept": "reject",
    "accepted": "rejected",
    "refund": "deny",
    "delivered": "in_transit",
    "shipped": "pending",
    "active": "inactive",
    "open": "closed",
    "paid": "unpaid",
    "valid": "invalid",
    "eligible": "ineligible",
    "allowed": "forbidden",
    "in_stock": "out_of_stock",
    "high": "low",
    "positive": "negative",
    "urgent": "routine",
    "escalate": "resolve",
}
_OPPOSITES.update({v: k for k, v in list(_OPPOSITES.items()) if v not in _OPPOSITES})

_PADDING = (
    "This follows directly from the information available at this step.",
    "Each relevant detail was weighed before reaching this conclusion.",
    "It is worth noting that the decision is consistent with the stated policy.",
    "Other readings of the request were considered and set aside as less likely.",
    "The same conclusion would hold under a slightly stricter reading of the rules.",
    "In short, the evidence points one way and the answer reflects that.",
    "No further information would change the outcome in this case.",
    "The reasoning above can be checked step by step against the inputs.",
)


def stable_hex(*parts: Any, n: int = 24) -> str:
    """A random-looking hex string derived only from ``parts``."""
    return hashlib.sha256(canonical_json(list(parts)).encode()).hexdigest()[:n]


def rng_for(*parts: Any) -> random.Random:
    """A private generator seeded from ``parts`` (one per decision, so decisions do not shift each other)."""
    digest = hashlib.sha256(canonical_json(list(parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Paths to the scalar leaves (bool, number, string) of a JSON value."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*path, i))]
    if isinstance(value, bool | int | float | str):
        return [(path, value)]
    return []


def _set(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _set(value[head], rest, new)}
    copy = list(value)
    copy[head] = _set(copy[head], rest, new)
    return copy


def prompt_choices(prompt: str, value: str) -> list[str] | None:
    """The alternatives a prompt offers for ``value``, as in ``"refund" | "deny" | "escalate"`` on one line."""
    quoted = f'"{value}"'
    for line in prompt.splitlines():
        if quoted not in line:
            continue
        for run in _CHOICE_RUN.finditer(line):
            words = re.findall(r'"([^"\n]{1,40})"', run.group())
            if value in words:
                return words
    return None


def prompt_letters(prompt: str) -> str:
    """The option letters a prompt lists (``A) ...`` lines), or ``ABCD``."""
    found = sorted(set(re.findall(r"(?m)^\s*\(?([A-J])[).:]\s", prompt)))
    return "".join(found) if len(found) >= 2 else "ABCD"


def _alter_string(text: str, rng: random.Random, choices: list[Any] | None = None, letters: str = "ABCD") -> str:
    """A different but plausible string: another enum value, an opposite, another letter, a shifted date or number."""
    if choices:
        others = [c for c in choices if c != text]
        if others:
            return str(rng.choice(others))
    low = text.strip().lower()
    if low in _OPPOSITES:
        new = _OPPOSITES[low]
        return new.upper() if text.isupper() and len(text) > 1 else new.capitalize() if text[:1].isupper() else new
    if re.fullmatch(r"[A-J]", text.strip()):
        return rng.choice([c for c in letters if c != text.strip()] or ["A"])
    if m := re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(.*)", text):
        day = int(m.group(3))
        return f"{m.group(1)}-{m.group(2)}-{(day + 10) % 28 + 1:02d}{m.group(4)}"
    if m := re.search(r"\d+", text):
        n = int(m.group())
        return text[: m.start()] + str(n + rng.randint(1, 9)) + text[m.end() :]
    return _alter_word(text, rng, letters) if text.strip() else "unknown"


def _alter_word(text: str, rng: random.Random, letters: str = "ABCD") -> str:
    """Change one word of free text: an answer letter first (on the first line), an opposite, a number, else a word."""
    words = list(re.finditer(r"[A-Za-z_]+|\d+(?:\.\d+)?", text))
    if not words:
        return text + " (unsure)"
    known = [m for m in words if m.group().lower() in _OPPOSITES]
    first_line = len(text.split("\n", 1)[0])
    capitals = [m for m in words if re.fullmatch(r"[A-J]", m.group())]
    letter_words = [m for m in capitals if m.start() < first_line] or capitals
    numbers = [m for m in words if m.group()[0].isdigit()]
    pool = letter_words or known or numbers or [m for m in words if len(m.group()) >= 4] or words
    m = rng.choice(pool)
    word = m.group()
    if word[0].isdigit():
        new = str(float(word) + rng.randint(1, 9)) if "." in word else str(int(word) + rng.randint(1, 9))
    elif re.fullmatch(r"[A-J]", word):
        new = rng.choice([c for c in letters if c != word] or ["A"])
    elif word.lower() in _OPPOSITES:
        new = _alter_string(word, rng)
    else:
        new = "not " + word
    return text[: m.start()] + new + text[m.end() :]


def corrupt_value(value: Any, rng: random.Random) -> Any:
    """One misread of a JSON value: flip a boolean, change a number or alter a string (booleans and numbers first)."""
    leaves = _leaves(value)
    if not leaves:
        return value
    weights = [1.0 if isinstance(v, str) else 3.0 for _, v in leaves]
    # An id is copied rather than read; misreading it is less telling than misreading a fact.
    weights = [w * (0.2 if p and _is_id(p[-1]) else 1.0) for w, (p, _) in zip(weights, leaves, strict=True)]
    path, old = rng.choices(leaves, weights=weights)[0]
    return _set(value, path, _changed(old, rng))


def _is_id(key: Any) -> bool:
    return str(key).lower() == "id" or str(key).lower().endswith("_id")


def _changed(old: Any, rng: random.Random, choices: list[Any] | None = None) -> Any:
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        delta = rng.randint(1, max(1, abs(old) // 2 + 1))
        # Quantities that cannot be negative stay non-negative: a misread 3 is a 2 or a 5, not a -1.
        new = old + rng.choice([-1, 1]) * delta
        return old + delta if old >= 0 > new else new
    if isinstance(old, float):
        if old == 0:
            return round(rng.uniform(5, 50), 2)
        return round(old * rng.choice([0.5, 1.5, 2.0]), 2)
    if isinstance(old, str):
        return _alter_string(old, rng, choices)
    if isinstance(old, list):
        return old[:-1] if old else ["unknown"]
    if old is None:
        return "unknown"
    if isinstance(old, dict):
        return corrupt_value(old, rng)
    return old


def perturb_answer(content: str, rng: random.Random, schema: dict[str, Any] | None = None, prompt: str = "") -> str:
    """A wrong version of a final answer: one field of a JSON object (not an explanation), else one word.

    A wrong value is one the request allows where it says (a schema enum, quoted alternatives or option letters in the
    prompt), so the mistake looks like a model's rather than like noise.
    """
    letters = prompt_letters(prompt)
    try:
        value = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return _alter_word(content, rng, letters)
    if isinstance(value, dict) and value:
        keys = [k for k in value if k not in EXPLANATION_KEYS] or list(value)
        # An id is echoed from the input; a wrong decision, amount or label is the telling mistake.
        key = rng.choices(keys, weights=[0.2 if _is_id(k) else 1.0 for k in keys])[0]
        old = value[key]
        props = (schema or {}).get("properties") or {}
        enum = (props.get(key) or {}).get("enum") if isinstance(props.get(key), dict) else None
        if not enum and isinstance(old, str):
            enum = prompt_choices(prompt, old)
        if isinstance(old, str):
            return json.dumps({**value, key: _alter_string(old, rng, enum, letters)}, ensure_ascii=False)
        return json.dumps({**value, key: _changed(old, rng, enum)}, ensure_ascii=False)
    if isinstance(value, list | bool | int | float | str) and _leaves(value):
        return json.dumps(corrupt_value(value, rng), ensure_ascii=False)
    return _alter_word(content, rng, letters)


def _resize(text: str, factor: float, rng: random.Random) -> str:
    """Cut text to about ``factor`` of its words, or pad it with sentences up to about ``factor`` of its length."""
    if factor < 1:
        words = list(re.finditer(r"\S+", text))
        keep = max(3, round(len(words) * factor))
        if keep >= len(words):
            return text
        # Cut in place (not re-joined), so line structure such as "Answer: B" on its own line survives.
        return text[: words[keep - 1].end()].rstrip(",;:—-– ") + "."
    target = len(text) * factor
    out = text.rstrip()
    pads = list(_PADDING)
    rng.shuffle(pads)
    while len(out) < target:
        if not pads:
            pads = list(_PADDING)
        out = f"{out} {pads.pop()}" if out else pads.pop()
    return out


def adjust_verbosity(content: str, factor: float, rng: random.Random) -> str:
    """Resize the explanation-like fields of a JSON answer, or the whole of a plain-text answer."""
    if abs(factor - 1.0) < 1e-9 or not content:
        return content
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        # A bare letter or number is the answer itself; only padding can be added to it, never cut.
        if len(content.split()) <= 3:
            return content if factor < 1 else _resize(content, factor, rng)
        return _resize(content, factor, rng)
    if not isinstance(value, dict):
        return content

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {
                k: _resize(x, factor, rng) if k in EXPLANATION_KEYS and isinstance(x, str) else walk(x)
                for k, x in v.items()
            }
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return json.dumps(walk(value), ensure_ascii=False)


def sign(content: str, signature: str) -> str:
    """An answer in a family's house style: ``signature`` closes its first explanation-like field (a JSON answer) or
    the text (a plain answer). A JSON answer with no such field is left as it is: the answer itself is never changed.
    """
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return f"{content.rstrip()} {signature}" if content.strip() else content
    if not isinstance(value, dict):
        return content
    key = next((k for k in value if k in EXPLANATION_KEYS and isinstance(value[k], str)), None)
    if key is None:
        return content
    return json.dumps({**value, key: f"{value[key].rstrip()} {signature}".lstrip()}, ensure_ascii=False)


def _from_schema(schema: dict[str, Any], summary: str, depth: int = 0) -> Any:
    """A value that fits a JSON schema, filled with plain defaults."""
    if depth > 6 or not isinstance(schema, dict):
        return None
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for alt in ("anyOf", "oneOf"):
        if schema.get(alt):
            return _from_schema(schema[alt][0], summary, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: _from_schema(v, summary, depth + 1) for k, v in props.items()}
    return {
        "string": summary,
        "integer": 0,
        "number": 0,
        "boolean": False,
        "array": [],
        "null": None,
    }.get(str(kind), summary)


_OPENERS = (
    "Simulated answer:",
    "Simulated answer, in short:",
    "Simulated answer, put simply:",
    "Simulated answer, briefly:",
    "Simulated answer, as asked:",
    "Simulated answer, to the point:",
)
_LINKS = ("", "Regarding", "On", "As for", "About")
_CLOSERS = ("", "That covers it.", "Hope this helps.", "Nothing more to add.", "Done.")


def strip_wording(text: str) -> str:
    """A generic answer without its sampled opener, link and closer: what the sim judge compares (paraphrases)."""
    text = text.strip()
    for opener in sorted(_OPENERS, key=len, reverse=True):
        if text.startswith(opener):
            text = text[len(opener) :].strip()
            break
    for link in _LINKS:
        if link and text.startswith(link + " "):
            text = text[len(link) + 1 :]
            break
    for closer in _CLOSERS:
        if closer and text.endswith(" " + closer):
            text = text[: -len(closer) - 1]
            break
    return text


def generic_answer(last_user: str, response_format: dict[str, Any] | None, rng: random.Random) -> str:
    """The answer to a request no policy recognises: a summary of the last user message, in sampled wording.

    The wording is drawn from ``rng`` (seeded by the request and its run labels) the way a sampled model's wording
    varies, so repeats of one request differ while a rerun with the same labels gives the same text.
    It does not name the model: answers reach the blind judge.
    """
    words = last_user.split()
    gist = " ".join(words[:24]) + (" ..." if len(words) > 24 else "")
    opener, link, closer = rng.choice(_OPENERS), rng.choice(_LINKS), rng.choice(_CLOSERS)
    summary = " ".join(part for part in (opener, link, gist, closer) if part) if gist else "Simulated answer."
    kind = (response_format or {}).get("type")
    if kind == "json_schema":
        schema = ((response_format or {}).get("json_schema") or {}).get("schema") or {}
        value = _from_schema(schema, summary)
        return json.dumps(value if isinstance(value, dict) else {"answer": value}, ensure_ascii=False)
    if kind == "json_object":
        return json.dumps({"answer": summary}, ensure_ascii=False)
    return summary


# ------------------------------------------------------------------------------------- tool discipline


def misread(profile: Profile, messages: list[dict[str, Any]], run_key: list[Any]) -> list[dict[str, Any]]:
    """The messages as the model reads them: in a misreading run, the earliest JSON tool result is corrupted."""
    if profile.misread_rate <= 0 or rng_for(*run_key, "misread").random() >= profile.misread_rate:
        return messages
    for i, m in enumerate(messages):
        if m.get("role") != "tool" or not isinstance(m.get("content"), str):
            continue
        try:
            value = json.loads(m["content"])
        except json.JSONDecodeError:
            continue
        if value is None:
            continue
        wrong = corrupt_value(value, rng_for(*run_key, "misread-how", m["content"]))
        if wrong == value:
            continue
        seen = list(messages)
        seen[i] = {**m, "content": json.dumps(wrong, ensure_ascii=False)}
        return seen
    return messages


def resolve(
    policy: Policy,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    profile: Profile,
    run_key: list[Any],
    allow_tools: bool,
) -> IdealMessage | None:
    """Ask the policy, answering skipped tool calls with ``null`` results until it says something to send.

    None when the policy never stops asking for tools it cannot have (the caller answers generically).
    """
    work = list(messages)
    for step in range(_MAX_POLICY_STEPS):
        ideal = policy.next_message(work, tools)
        if not ideal.tool_calls:
            return ideal
        if allow_tools:
            skipped = [c for c in ideal.tool_calls if skips(profile, run_key, c)]
        else:
            skipped = list(ideal.tool_calls)
        kept = [c for c in ideal.tool_calls if c not in skipped]
        if not skipped:
            return ideal
        if kept:
            return IdealMessage(content=ideal.content, tool_calls=tuple(kept))
        ids = [f"call_skipped_{step}_{i}" for i in range(len(skipped))]
        work.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": c.name, "arguments": canonical_json(c.arguments)},
                    }
                    for cid, c in zip(ids, skipped, strict=True)
                ],
            }
        )
        work.extend({"role": "tool", "tool_call_id": cid, "content": None} for cid in ids)
    log.warning("gradebench sim: policy %s kept asking for skipped tools; answering generically", policy.name)
    return None


def skips(profile: Profile, run_key: list[Any], call: ToolRequest) -> bool:
    """Whether this run skips this tool call (the same answer every time the policy asks for it)."""
    if profile.skip_rate <= 0:
        return False
    return rng_for(*run_key, "skip", call.name, canonical_json(call.arguments)).random() < profile.skip_rate


def opening(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages before the model's first reply: what identifies a conversation across its turns."""
    out = []
    for m in messages:
        if m.get("role") == "assistant":
            break
        out.append({"role": m.get("role"), "content": m.get("content")})
    return out
