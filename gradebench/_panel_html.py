"""Escaped HTML for the panel and for notebooks: frames as tables, transcripts as coloured events.

Everything rendered is escaped: outputs and transcripts are untrusted text.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

__all__ = ["CSS", "FLEX", "esc", "events_html", "html_table", "pre", "scroll", "td", "text"]

CSS = (
    "<style>.gb-t{border-collapse:collapse;font-size:12px}.gb-t th,.gb-t td{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left;vertical-align:top}.gb-t th{background:#f4f4f4}.gb-t td.n{text-align:right}"
    ".gb-pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12px}"
    ".gb-ev{border-left:3px solid #ccc;padding:2px 6px;margin:4px 0}.gb-bad{color:#b00020}</style>"
)
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


def td(value: Any) -> str:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return f"<td{' class=n' if number else ''}>{esc(text(value))}</td>"


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    heads = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(td(v) for v in row) + "</tr>" for row in rows)
    return f'{CSS}<table class="gb-t"><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table>'


def html_table(df: pl.DataFrame, columns: Sequence[str] | None = None, *, empty: str = "(no rows)") -> str:
    """An escaped HTML table of ``df`` (all columns, or ``columns`` in that order)."""
    columns = list(columns or df.columns)
    return _table(columns, list(df.select(columns).iter_rows())) if df.height else f"<p><i>{esc(empty)}</i></p>"


def pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return f'<pre class="gb-pre">{esc(text)}</pre>'


def scroll(inner: str) -> str:
    return f'<div style="max-height:460px;overflow:auto">{inner}</div>'


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
