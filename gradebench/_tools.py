"""Tools: plain Python functions a model may call, declared with `tool`: the JSON schema comes from the type hints,
the descriptions from the docstring's ``Args:`` section, and the model's arguments are validated before the call."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic

__all__ = ["Tool", "tool"]


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
