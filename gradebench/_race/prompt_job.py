"""A job without code: one prompt (a template or messages), maybe JSON out, maybe tools, as a value (`PromptJob`).

`gradebench.Benchmark` takes a `PromptJob` as it takes a job class: every run formats the prompt from its input, sends
it down the seat (which runs the tool loop) and returns the reply's text, or its JSON. A field the prompt reads that an
input lacks fails at ``set_inputs`` (`PromptJob.check_input`), before anything is sent. A prompt job is recorded in a
race spec as a reference string, ``prompt:`` and its fields as JSON (its tools as ``module:function``), so a report made
from one reruns with no code (`PromptJob.from_reference`); a ``[prompt]`` table of a run config is the same fields.
"""

from __future__ import annotations

import dataclasses
import json
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic

from .._base.importing import imported
from .._calls.seat import Reply, Seat
from .._calls.tools import Tool, tool

__all__ = ["OUTPUTS", "PROMPT_PREFIX", "PromptFields", "PromptJob"]

PROMPT_PREFIX = "prompt:"
"""How a race spec's ``job`` reference to a prompt job starts (the rest is its fields as JSON)."""
OUTPUTS = ("text", "json")
"""What a prompt job's ``output`` may be: the reply's text, or that text parsed as JSON."""
_EXCERPT = 200
"""Characters of a reply quoted when it is not the JSON asked for."""


class _FieldError(ValueError):
    """A bad field of a prompt job: which one, and what is wrong with it."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"PromptJob field {name!r}: {problem}")
        self.field, self.problem = name, problem


@dataclass(frozen=True, kw_only=True)
class PromptJob:
    """A job that is one prompt: ``template`` (a user message made from the input's fields, after a system message
    holding ``instructions``) or ``messages`` (sent as written, their text formatted from the input the same way),
    answered as ``text`` or as ``json``, with ``tools`` the seat runs. ``gb.Benchmark(PromptJob(...), ...)`` races it
    like a `Job` class; each field is checked when it is made, and a bad one raises naming it."""

    name: str
    """Labels the rows (as a `Job`'s ``name``)."""
    instructions: str
    """The task: what the judge reads, and with a ``template`` the system message the model gets first."""
    template: str | None = None
    """The user message, ``str.format_map`` over the input's fields (``{question}``; ``{{`` is a brace); an input that
    is not a dict is the one field ``{input}``. Give ``template`` or ``messages``, not both."""
    messages: Sequence[Mapping[str, Any]] | None = None
    """The chat messages, sent as written (no system message added): each a ``role`` and a ``content`` (text, or a
    list of parts), the text formatted from the input as a ``template`` is."""
    output: Literal["text", "json"] = "text"
    """``text``: the run's output is the reply's text; ``json``: that text (a surrounding code fence removed) parsed
    as JSON, and a reply that is not JSON fails the run, saying so with an excerpt."""
    response_format: Mapping[str, Any] | None = None
    """Sent with every call as the request's ``response_format`` (e.g. ``{"type": "json_object"}``); None: not sent."""
    tools: Sequence[Tool | Callable[..., Any]] = ()
    """Functions the model may call (`gradebench.tool` ones, or plain functions made tools): the seat runs the loop."""
    grade: str = ""
    """The grade the job is declared to need (its benchmarks' default grade)."""
    rubric: str = ""
    """What a good answer does, for the judge."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Inference parameters of every call (over the entry's defaults)."""
    fixed_params: Mapping[str, Any] = field(default_factory=dict)
    """Parameters no call may override."""
    max_steps: int = 8
    """Model calls the tool loop may make."""
    timeout_s: float = 300.0
    """Limit of one run, in seconds."""

    def __post_init__(self) -> None:
        for name in ("name", "instructions"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise _FieldError(name, f"must be a non-empty string (the judge reads it), got {getattr(self, name)!r}")
        if (self.template is None) == (self.messages is None):
            raise _FieldError("template", "give a template or messages: exactly one of the two")
        if self.template is not None:
            if not isinstance(self.template, str) or not self.template.strip():
                raise _FieldError("template", f"must be a non-empty string, got {self.template!r}")
            _fields(self.template, "template")
        else:
            object.__setattr__(self, "messages", _messages(self.messages))
        if self.output not in OUTPUTS:
            raise _FieldError("output", f"must be one of {', '.join(OUTPUTS)}, got {self.output!r}")
        for name in ("response_format", "params", "fixed_params"):
            value = getattr(self, name)
            if value is None and name == "response_format":
                continue
            if not isinstance(value, Mapping) or not _is_json(value):
                raise _FieldError(name, f"must be a mapping of JSON values, got {value!r}")
            object.__setattr__(self, name, dict(value))
        if isinstance(self.tools, str | bytes) or not isinstance(self.tools, Sequence):
            raise _FieldError("tools", f"must be a list of functions, got {self.tools!r}")
        made = tuple(_tool(t) for t in self.tools)
        names = [t.name for t in made]
        if len(set(names)) < len(names):
            raise _FieldError("tools", f"tool names must be unique, got {names}")
        object.__setattr__(self, "tools", made)
        for name in ("grade", "rubric"):
            if not isinstance(getattr(self, name), str):
                raise _FieldError(name, f"must be a string, got {getattr(self, name)!r}")
        if isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int) or self.max_steps < 1:
            raise _FieldError("max_steps", f"must be an integer >= 1, got {self.max_steps!r}")
        timeout = self.timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < float("inf"):
            raise _FieldError("timeout_s", f"must be a number of seconds > 0, got {timeout!r}")
        object.__setattr__(self, "timeout_s", float(timeout))

    # ---------------------------------------------------------------------------------------------------- running

    def conversation(self, input: Any) -> list[dict[str, Any]]:
        """The messages a run on ``input`` sends; a field the input lacks raises a `ValueError` naming it."""
        fields = input if isinstance(input, Mapping) else {"input": input}
        if self.template is not None:
            user = _format(self.template, fields, "the template", input)
            return [{"role": "system", "content": self.instructions}, {"role": "user", "content": user}]
        assert self.messages is not None
        return [_format_message(m, fields, i, input) for i, m in enumerate(self.messages)]

    def check_input(self, input: Any) -> None:
        """Raise a `ValueError` naming the field when the prompt cannot be made from ``input`` (`Benchmark.set_inputs`
        calls it for every input, before anything is sent)."""
        self.conversation(input)

    async def run(self, input: Any, seat: Seat) -> Any:
        """One run: the prompt made from ``input``, the tool loop, and the reply's text or JSON."""
        params: dict[str, Any] = {} if self.response_format is None else {"response_format": self.response_format}
        reply = await seat.chat(self.conversation(input), tools=list(self.tools) or None, **params)
        return self._parsed(reply) if self.output == "json" else reply.text

    def _parsed(self, reply: Reply) -> Any:
        """The reply's text as JSON; a `ValueError` that says what came instead when it is not."""
        try:
            return json.loads(_unfenced(reply.text))
        except json.JSONDecodeError as exc:
            if reply.refusal:
                said = f"the model refused: {reply.refusal[:_EXCERPT]!r}"
            elif reply.text.strip():
                said = f"it began: {reply.text[:_EXCERPT]!r}"
            else:
                said = "it was empty"
            raise ValueError(
                f"{self.name}: the reply is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); {said}"
            ) from None

    # -------------------------------------------------------------------------------------------------- recording

    @property
    def reference(self) -> str | None:
        """How a race spec records this job (``prompt:`` and its fields as JSON), so `from_reference` rebuilds it;
        None when a tool cannot be imported by name (one defined inside a function): then a rerun passes ``job=``."""
        made = self.to_dict()
        if None in made.get("tools", []):
            return None
        return PROMPT_PREFIX + json.dumps(made, ensure_ascii=False, separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain JSON values, those left at their defaults out, each tool as ``module:function`` (None
        for one that cannot be imported by name)."""
        made: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            if value != default or f.name in ("name", "instructions"):
                made[f.name] = value
        if "messages" in made:
            made["messages"] = [dict(m) for m in made["messages"]]
        if self.tools:
            made["tools"] = [_tool_reference(tool(t)) for t in self.tools]
        return made

    @classmethod
    def from_dict(
        cls, raw: Mapping[str, Any], *, base: Path | None = None, source: str = "prompt", table: str = ""
    ) -> PromptJob:
        """A prompt job from plain values (a run config's ``[prompt]`` table, a recorded reference), its tools imported
        from ``module:function`` (a module in ``base`` too). A bad field raises a `ValueError`:
        ``{source}: field '{table}{name}': ...``."""
        try:
            fields = PromptFields.model_validate(dict(raw)).model_dump(exclude_unset=True)
        except pydantic.ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(x) for x in problem["loc"])
            what = "unknown field" if problem["type"] == "extra_forbidden" else problem["msg"]
            raise ValueError(f"{source}: field {table + where!r}: {what}") from None
        try:
            tools = tuple(_imported_tool(ref, base) for ref in fields.pop("tools", []))
            return cls(**fields, tools=tools)
        except _FieldError as exc:
            raise ValueError(f"{source}: field {table + exc.field!r}: {exc.problem}") from None

    @classmethod
    def from_reference(cls, reference: str, *, base: Path | None = None) -> PromptJob:
        """The prompt job a race spec's ``job`` reference records (see `reference`)."""
        text = reference.removeprefix(PROMPT_PREFIX)
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"job {reference[:80]!r} is not a prompt job's JSON: {exc.msg}") from None
        if not reference.startswith(PROMPT_PREFIX) or not isinstance(raw, dict):
            raise ValueError(
                f"job {reference[:80]!r} is not {PROMPT_PREFIX} and a JSON object of a prompt job's fields"
            )
        return cls.from_dict(raw, base=base, source="job")


class PromptFields(pydantic.BaseModel):
    """A prompt job's fields as plain values, checked at the edge: a run config's ``[prompt]`` table, a recorded
    reference (each field as `PromptJob`'s, ``tools`` as ``module:function`` strings)."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True)

    name: str
    instructions: str
    template: str | None = None
    messages: list[dict[str, Any]] | None = None
    output: Literal["text", "json"] = "text"
    response_format: dict[str, Any] | None = None
    tools: list[str] = []
    grade: str = ""
    rubric: str = ""
    params: dict[str, Any] = {}
    fixed_params: dict[str, Any] = {}
    max_steps: int = 8
    timeout_s: float = 300.0


# --------------------------------------------------------------------------------------------------------- helpers


def _fields(text: str, where: str) -> list[str]:
    """The fields a template text reads; a malformed one (an unclosed brace, a positional ``{}``) raises."""
    if not isinstance(text, str):
        raise _FieldError(where, f"must be a string, got {text!r}")
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        raise _FieldError(where, f"{exc} in {text[:_EXCERPT]!r} (write {{{{ and }}}} for a literal brace)") from None
    positional = [n for n in names if not n or n.split(".")[0].split("[")[0].isdigit()]
    if positional:
        raise _FieldError(where, f"{{{positional[0]}}} is positional: name an input field, e.g. {{question}}")
    return names


def _messages(messages: Any) -> tuple[dict[str, Any], ...]:
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence) or not messages:
        raise _FieldError("messages", f"must be a non-empty list of chat messages, got {messages!r}")
    made = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(role, str) or not role or not isinstance(content, str | list):
            raise _FieldError(
                "messages", f"message {i} must have a role and a content (text or parts), got {message!r}"
            )
        if not _is_json(message):
            raise _FieldError("messages", f"message {i} is not JSON: {message!r}")
        for text in _texts(content):
            _fields(text, "messages")
        made.append(dict(message))
    return tuple(made)


def _texts(content: str | list[Any]) -> list[str]:
    """The formatted texts of a content: itself, or the ``text`` of each part (an image part is left as it is)."""
    if isinstance(content, str):
        return [content]
    return [p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]


def _format(text: str, fields: Mapping[str, Any], where: str, input: Any) -> str:
    """``text.format_map(fields)``; a field the input lacks (or cannot give) raises a `ValueError` naming it."""
    try:
        return text.format_map(fields)
    except KeyError as exc:
        has = (
            f"its fields: {', '.join(map(str, input)) or 'none'}"
            if isinstance(input, Mapping)
            else f"it is a {type(input).__name__}, which a prompt reads as {{input}}"
        )
        raise ValueError(f"{where} reads the field {{{exc.args[0]}}}, which the input lacks ({has})") from None
    except (IndexError, AttributeError, ValueError, TypeError) as exc:
        raise ValueError(f"{where} cannot be made from the input: {type(exc).__name__}: {exc}") from None


def _format_message(message: Mapping[str, Any], fields: Mapping[str, Any], i: int, input: Any) -> dict[str, Any]:
    where = f"message {i}"
    content = message["content"]
    if isinstance(content, str):
        return {**message, "content": _format(content, fields, where, input)}
    parts = [
        {**p, "text": _format(p["text"], fields, where, input)}
        if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        else p
        for p in content
    ]
    return {**message, "content": parts}


def _unfenced(text: str) -> str:
    """The text inside one surrounding Markdown code fence (```json ... ```), or the text as it is."""
    inner = text.strip()
    if inner.startswith("```") and inner.endswith("```") and len(inner) >= 6:
        inner = inner[3:-3]
        first, newline, rest = inner.partition("\n")
        return rest if newline and first.strip().isidentifier() else inner
    return text


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _tool(fn: Any) -> Tool:
    if not callable(fn):
        raise _FieldError("tools", f"{fn!r} is not a function")
    return tool(fn)


def _tool_reference(made: Tool) -> str | None:
    """Where a tool's function can be imported from again (``module:function``), or None."""
    module, name = getattr(made.fn, "__module__", None), getattr(made.fn, "__qualname__", "")
    return None if not module or not name or "<" in name else f"{module}:{name}"


def _imported_tool(reference: str, base: Path | None) -> Tool:

    try:
        found = imported(reference, "tool", base)
    except ValueError as exc:
        raise _FieldError("tools", str(exc)) from None
    return _tool(found)
