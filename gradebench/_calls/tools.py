"""Tools: plain Python functions a model may call, declared with `tool`: the JSON schema comes from the type hints,
the descriptions from the docstring's ``Args:`` section, and the model's arguments are validated before the call."""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic

__all__ = ["Tool", "invalid_arguments", "tool"]


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
        """Validate the arguments and run the function: an async one on the race's loop, a plain one on a thread of
        its own, so a tool that blocks (or hangs) holds up only its own run, whose ``timeout_s`` still fires."""
        values = self.arguments_model.model_validate(dict(arguments))
        kwargs = {k: getattr(values, k) for k in type(values).model_fields}
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(**kwargs)
        result = await _on_a_thread(self.fn, kwargs)
        if inspect.isawaitable(result):  # a plain function that returned an awaitable
            result = await result
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


async def _on_a_thread(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``fn(**kwargs)`` on a daemon thread of its own: a tool that never returns cannot keep the process from exiting
    (an executor's threads are joined at exit), and the race's loop stays free meanwhile."""
    loop = asyncio.get_running_loop()
    landed: asyncio.Future[Any] = loop.create_future()

    def settle(outcome: Any, error: BaseException | None) -> None:
        if landed.cancelled():
            return  # the run gave up on it (its timeout): what it returns now is dropped
        if error is not None:
            landed.set_exception(error)
        else:
            landed.set_result(outcome)

    def call() -> None:
        outcome, error = None, None
        try:
            outcome = fn(**kwargs)
        except BaseException as exc:  # handed to the run, which turns it into the tool's error for the model
            error = exc
        try:
            loop.call_soon_threadsafe(settle, outcome, error)
        except RuntimeError:  # the race is over and its loop closed: nobody waits for this answer any more
            pass

    threading.Thread(target=call, name=f"gradebench-tool-{getattr(fn, '__name__', 'tool')}", daemon=True).start()
    return await landed


def invalid_arguments(name: str, exc: pydantic.ValidationError) -> str:
    """What a model's arguments got wrong, for the model and the record: the tool, then each field and its problem
    (``invalid arguments for tool 'lookup': order_id: Field required; days: Input should be a valid integer, got
    'three'``)."""
    problems = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or "(the arguments)"
        got = "" if error["type"] == "missing" else f", got {error['input']!r}"
        problems.append(f"{field}: {error['msg']}{got}")
    return f"invalid arguments for tool {name!r}: {'; '.join(problems)}"


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
