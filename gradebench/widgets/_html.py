"""Escaped HTML for the panel and for notebooks: frames as tables, transcripts as coloured events.

Everything rendered is escaped by construction (`gradebench._base.html`'s builder, re-exported here for the panel's
pieces): outputs and transcripts are untrusted text. The fragments live in
`gradebench._report.page`, which the HTML report (`BenchmarkReport.to_html`) draws with too, so a transcript reads the
same in the panel, in a notebook cell and in the file; only the panel's own pieces are here.
"""

from __future__ import annotations

from .._base.html import Markup, concat, join, tag
from .._report.page import CSS, esc, events_html, flex, html_table, pre, run_pair, td, text

__all__ = [
    "CSS",
    "Markup",
    "concat",
    "esc",
    "events_html",
    "flex",
    "html_table",
    "join",
    "marker",
    "pre",
    "run_pair",
    "scroll",
    "tag",
    "td",
    "text",
]


def scroll(*children: object) -> Markup:
    return tag("div", *children, style="max-height:460px;overflow:auto")


def marker(value: str | None) -> Markup:
    """The stop marker as a line of its own ('' when the race ran to the end)."""
    return tag("p", value, class_="gb-stop") if value else Markup()
