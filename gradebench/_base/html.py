"""HTML built by construction: every text and attribute value escaped unless it is already `Markup` made here.

Entry names, model ids, outputs, judges' reasons, input ids, labels and job names are untrusted text, and every HTML
surface (the notebook views, the HTML report, the panel) shows them. Rather than remember an escape at each use, the
surfaces build with `tag` and `concat`: a plain ``str`` (or any other value) given as a child or an attribute is
escaped, and only `Markup` — what `tag`, `concat`, `esc` and `script_json` return, or a constant written in the source
as ``Markup("<style>…</style>")`` — goes in as markup. A ``str`` method or ``+`` on `Markup` gives a plain ``str``
again, so a fragment mixed with untrusted text by hand is escaped the next time it is used, never trusted.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["Markup", "concat", "esc", "join", "script_json", "tag"]


class Markup(str):
    """Text that is HTML already: built by this module (or a constant of the source), so never escaped again."""

    __slots__ = ()

    def __html__(self) -> Markup:  # the convention Jinja and MarkupSafe read
        return self


def esc(value: Any) -> Markup:
    """``value`` as HTML text: `Markup` as it is, anything else as ``str(value)`` escaped (quotes too)."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def concat(*children: Any) -> Markup:
    """The children one after another, each escaped unless `Markup`; ``None`` is left out."""
    return Markup("".join(esc(c) for c in children if c is not None))


def join(children: Iterable[Any], separator: Any = "") -> Markup:
    """``children`` with ``separator`` between them, both escaped unless `Markup`; ``None`` children are left out."""
    return Markup(esc(separator).join(esc(c) for c in children if c is not None))


_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9-]*\Z")
_VOID = frozenset({"br", "wbr", "hr", "img", "meta", "input", "link"})
_URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "xlink:href"})
_SAFE_URL = re.compile(r"(https?:|mailto:|#|/|\./|[^:/?#]*([/?#]|\Z))", re.IGNORECASE)
_CONTROLS = re.compile(r"[\x00-\x20\x7f]+")


def _attribute(name: str, value: Any) -> str:
    attr = name.rstrip("_").replace("_", "-")  # class_ -> class, data_run -> data-run
    if not _NAME.match(attr):
        raise ValueError(f"not an HTML attribute name: {name!r}")
    if value is True:
        return f" {attr}"
    if attr in _URL_ATTRIBUTES and not _SAFE_URL.match(_CONTROLS.sub("", str(value))):
        # escaping does not stop javascript: or data: from running when followed: only plain links go in
        raise ValueError(f"refusing a {attr} that is not an http(s), mailto or relative URL: {str(value)[:80]!r}")
    return f' {attr}="{esc(value)}"'


def tag(name: str, /, *children: Any, **attributes: Any) -> Markup:
    """``<name attributes>children</name>``: every child and attribute value escaped unless `Markup`.

    An attribute whose value is ``None`` or ``False`` is left out, ``True`` writes its name alone; a trailing or inner
    underscore in a keyword stands for nothing or a hyphen (``class_``, ``data_run``, ``aria_label``). A URL attribute
    (``href``, ``src``) takes only http(s), mailto or relative URLs. ``br``, ``wbr``, ``meta`` and the other void
    elements take no children.
    """
    if not _NAME.match(name):
        raise ValueError(f"not an HTML tag name: {name!r}")
    attrs = "".join(_attribute(k, v) for k, v in attributes.items() if v is not None and v is not False)
    if name in _VOID:
        if children:
            raise ValueError(f"<{name}> takes no children")
        return Markup(f"<{name}{attrs}>")
    return Markup(f"<{name}{attrs}>{concat(*children)}</{name}>")


def script_json(value: Any) -> Markup:
    """``value`` as JSON that is safe inside a ``<script>``: ``<``, ``>`` and ``&`` written as ``\\u`` escapes, so
    ``</script>`` or ``<!--`` in a string cannot end or change the script (and every non-ASCII character, so a line
    separator or a lone surrogate is an escape too)."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=str)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))
