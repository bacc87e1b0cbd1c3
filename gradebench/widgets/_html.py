"""Escaped HTML for the panel and for notebooks: frames as tables, transcripts as coloured events.

Everything rendered is escaped: outputs and transcripts are untrusted text.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

__all__ = ["CSS", "FLEX", "esc", "events_html", "html_table", "marker", "pre", "scroll", "td", "text"]

CSS = (
    "<style>.gb-t{border-collapse:collapse;font-size:12px}.gb-t th,.gb-t td{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left;vertical-align:top}.gb-t th{background:#f4f4f4}.gb-t td.n{text-align:right}"
    ".gb-t.gb-line td{white-space:nowrap;line-height:18px}.gb-t.gb-line th{white-space:nowrap}"
    ".gb-t.gb-fit td{white-space:nowrap}.gb-t.gb-fit th{vertical-align:bottom}"
    ".gb-pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12px}"
    ".gb-ev{border-left:3px solid #ccc;padding:2px 6px;margin:4px 0}.gb-bad{color:#b00020}"
    ".gb-stop{color:#b45309;font-weight:bold}</style>"
)
"""The styles every fragment carries (``gb-line``: one line per row; ``gb-fit``: cells never wrap, headers may)."""
_COLOURS = {
    "user": "#4a7ebb",
    "tool_call": "#d08000",
    "tool_result": "#2a8a4a",
    "tool_error": "#b00020",
    "error": "#b00020",
    "answer": "#6a3fb5",
}
FLEX = "<div style='flex:1;min-width:0'>"


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def text(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"  # 0.0009663 stays fixed-point; only below 1e-4 does it turn to 1.2e-05
    return str(value)


def td(value: Any, cut: int | None = None) -> str:
    """A cell; with ``cut``, text longer than that many characters is cut to one line, whole in its tooltip."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    shown = " ".join(text(value).split()) if cut else text(value)
    if cut and len(shown) > cut:
        return f'<td title="{esc(text(value))}">{esc(shown[: cut - 1])}…</td>'
    return f"<td{' class=n' if number else ''}>{esc(shown)}</td>"


def _head(name: str) -> str:
    """A header that may break after an underscore (so a long column name does not widen its column)."""
    return "_<wbr>".join(esc(part) for part in name.split("_"))


def html_table(
    df: pl.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    empty: str = "(no rows)",
    cut: int | None = None,
    fit: bool = False,
) -> str:
    """An escaped HTML table of ``df`` (all columns, or ``columns`` in that order).

    ``cut``: one line per row, text longer than ``cut`` characters cut (the whole text in the cell's tooltip).
    ``fit``: cells never wrap (ids stay whole), headers break after underscores.
    """
    columns = list(columns or df.columns)
    if not df.height:
        return f"<p><i>{esc(empty)}</i></p>"
    kind = " gb-line" if cut else " gb-fit" if fit else ""
    heads = "".join(f"<th>{_head(c) if fit else esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(td(v, cut) for v in row) + "</tr>" for row in df.select(columns).iter_rows())
    return f'{CSS}<table class="gb-t{kind}"><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table>'


def pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return f'<pre class="gb-pre">{esc(text)}</pre>'


def scroll(inner: str) -> str:
    return f'<div style="max-height:460px;overflow:auto">{inner}</div>'


def marker(value: str | None) -> str:
    """The stop marker as a line of its own ('' when the race ran to the end)."""
    return f'<p class="gb-stop">{esc(value)}</p>' if value else ""


def events_html(events: Sequence[Mapping[str, Any]]) -> str:
    """A transcript (`transcript_events`) as escaped HTML: messages, tool calls with arguments and results, answer.

    It carries its own styles, so it reads the same in a notebook cell as in the panel.
    """
    parts = [CSS]
    for e in events:
        kind, name = str(e.get("kind")), f"<code>{esc(e.get('name'))}</code>"
        if kind == "system":
            parts.append(f'<details class="gb-ev"><summary>system prompt</summary>{pre(e.get("content"))}</details>')
            continue
        title, body = {
            "tool_call": (f"tool call {name}", e.get("arguments")),
            "tool_result": (f"result of {name}", e.get("result")),
            "tool_error": (f"tool error of {name}", e.get("error")),
            "answer": ("answer", e.get("output")),
            "error": ("error", e.get("error")),
        }.get(kind, (esc(kind), e.get("content", {k: v for k, v in e.items() if k != "kind"})))
        colour = _COLOURS.get(kind, "#999")
        parts.append(f'<div class="gb-ev" style="border-left-color:{colour}"><b>{title}</b>{pre(body)}</div>')
    return "".join(parts)
