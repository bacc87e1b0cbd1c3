"""Escaped HTML for the panel and for notebooks: frames as tables, transcripts as coloured events.

Everything rendered is escaped: outputs and transcripts are untrusted text. The fragments live in
`gradebench._report.page`, which the HTML report (`BenchmarkReport.to_html`) draws with too, so a transcript reads the
same in the panel, in a notebook cell and in the file; only the panel's own pieces are here.
"""

from __future__ import annotations

from .._report.page import CSS, FLEX, esc, events_html, html_table, pre, run_pair, td, text

__all__ = ["CSS", "FLEX", "esc", "events_html", "html_table", "marker", "pre", "run_pair", "scroll", "td", "text"]


def scroll(inner: str) -> str:
    return f'<div style="max-height:460px;overflow:auto">{inner}</div>'


def marker(value: str | None) -> str:
    """The stop marker as a line of its own ('' when the race ran to the end)."""
    return f'<p class="gb-stop">{esc(value)}</p>' if value else ""
