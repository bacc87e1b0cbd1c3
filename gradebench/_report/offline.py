"""Charts without a network: saved as SVG, PNG or self-contained HTML through vl-convert, and shown in Jupyter as an
anywidget `JupyterChart` whose Vega bundle is inlined (Altair 6 otherwise loads Vega from a CDN)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import altair as alt

from .._base.html import script_json

__all__ = ["enable_offline", "offline_widget", "save_chart"]


def save_chart(chart: alt.TopLevelSpec | alt.JupyterChart, path: str | Path) -> Path:
    """Write ``chart`` to ``.svg``, ``.png`` (scale 2) or ``.html`` (the Vega JavaScript inlined), all offline.

    The parent directory is created if needed; another suffix raises `ValueError` naming the path.
    """
    import vl_convert as vlc

    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in (".svg", ".png", ".html"):
        raise ValueError(f"cannot save a chart to {str(out)!r}: the suffix must be .svg, .png or .html")
    spec = (chart.chart if isinstance(chart, alt.JupyterChart) else chart).to_dict()  # type: ignore[union-attr]
    version = "_".join(alt.SCHEMA_VERSION.split(".")[:2])  # "v6.4.1" -> "v6_4", as vl-convert names it
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".svg":
        out.write_text(vlc.vegalite_to_svg(spec, vl_version=version), encoding="utf-8")
    elif suffix == ".png":
        out.write_bytes(vlc.vegalite_to_png(spec, vl_version=version, scale=2))
    else:
        out.write_text(_html_page(vlc, spec, version), encoding="utf-8")
    return out


_PLACEHOLDER = {"description": "gradebench-spec-placeholder"}


def _html_page(vlc: Any, spec: dict[str, Any], version: str) -> str:
    """vl-convert's self-contained page with the spec written as `script_json`. vl-convert embeds a spec as plain
    JSON, where ``</script>`` or ``<!--`` in a value (an entry name, a title) would end the script and run what
    follows: so it is given a placeholder, and the placeholder is replaced by the escaped spec."""
    page = vlc.vegalite_to_html(_PLACEHOLDER, vl_version=version, bundle=True)
    written = json.dumps(_PLACEHOLDER, separators=(",", ":"))
    if page.count(written) != 1:
        raise RuntimeError(f"vl-convert's HTML page does not hold its spec as {written}: cannot write the chart safely")
    return page.replace(written, script_json(spec))


def enable_offline() -> None:
    """Make charts shown in Jupyter render with no network: Altair's ``jupyter`` renderer in offline mode.

    Charts then display as an anywidget `alt.JupyterChart` whose JavaScript is the Vega, Vega-Lite and vega-embed
    bundle that vl-convert builds locally (instead of imports from esm.sh). Needs anywidget and vl-convert-python.
    """
    alt.JupyterChart.enable_offline(True)  # widgets made from now on, e.g. by offline_widget, carry the bundle
    alt.renderers.enable("jupyter", offline=True)  # and so does every chart displayed from now on


def offline_widget(chart: alt.TopLevelSpec, **kwargs: Any) -> alt.JupyterChart:
    """``chart`` as an `alt.JupyterChart` ipywidget that renders with no network (fits in any ipywidgets container)."""
    alt.JupyterChart.enable_offline(True)
    return alt.JupyterChart(chart, **kwargs)
