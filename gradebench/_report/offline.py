"""Charts without a network: saved as SVG, PNG or self-contained HTML through vl-convert, and shown in Jupyter as an
anywidget `JupyterChart` whose Vega bundle is inlined (Altair 6 otherwise loads Vega from a CDN)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import altair as alt

from .._base.canonical import canonical_json
from .._base.html import script_json
from .._calls.cache import default_cache_dir

__all__ = [
    "built_once",
    "charts_drawn_once",
    "enable_offline",
    "offline_widget",
    "rendered_charts_kept_in",
    "save_chart",
]

log = logging.getLogger("gradebench")

_RENDERED: ContextVar[Path | None] = ContextVar("gradebench_rendered_charts", default=None)
"""The folder `save_chart` keeps what vl-convert rendered in, by the digest of what it was asked (None: keep none)."""

_BUILT: ContextVar[dict[tuple[str, int], tuple[Any, Any]] | None] = ContextVar("gradebench_built_charts", default=None)
"""The charts made within `rendered_charts_kept_in`, by maker and report (kept with the report, so its id stays its
own); None outside the block."""

Maker = TypeVar("Maker", bound=Callable[[Any], Any])


def built_once(make: Maker) -> Maker:
    """``make(report)``, made once for a report within `rendered_charts_kept_in` — a command writes each chart as a
    file and again in its page — and at each call outside it (a chart is a mutable Altair object)."""

    @functools.wraps(make)
    def once(report: Any) -> Any:
        built = _BUILT.get()
        if built is None:
            return make(report)
        key = (make.__qualname__, id(report))
        kept = built.get(key)
        if kept is None or kept[0] is not report:
            kept = built[key] = (report, make(report))
        return kept[1]

    return once  # type: ignore[return-value]


@contextlib.contextmanager
def rendered_charts_kept_in(folder: str | Path, *, validate: bool = True) -> Iterator[Path]:
    """Within the block, each chart of a report is made once (`built_once`) and `save_chart` renders it once:
    what vl-convert made of a spec is kept in ``folder`` under the digest of the spec, the format and the versions of
    Vega-Lite and vl-convert, and the same chart asked again is read back (rendering is most of what a report costs to
    write again: seconds a chart).

    ``validate=False``: charts made and saved within the block are not checked against the Vega-Lite schema as they
    are built and saved (Altair's debug mode; most of what building one costs). For gradebench's own charts, whose
    every kind the tests check against the schema, a command writing a report has no need to check them again.
    """
    token, built = _RENDERED.set(Path(folder)), _BUILT.set({})
    try:
        with alt.utils.schemapi.debug_mode(validate):
            yield Path(folder)
    finally:
        _RENDERED.reset(token)
        _BUILT.reset(built)


def charts_drawn_once(cache: str | Path | None) -> contextlib.AbstractContextManager[Path]:
    """What a command writing a report draws its charts within: each rendered once and kept in the ``charts`` folder
    of the call cache ``cache`` (None: `default_cache_dir`), built and saved unvalidated (the tests check every chart
    kind against the Vega-Lite schema): see `rendered_charts_kept_in`."""
    return rendered_charts_kept_in(Path(cache or default_cache_dir()) / "charts", validate=False)


def _rendered(vlc: Any, spec: dict[str, Any], form: str, render: Callable[[], bytes]) -> bytes:
    """``render()``, or what it gave for the same spec and form before (see `rendered_charts_kept_in`)."""
    folder = _RENDERED.get()
    if folder is None:
        return render()
    asked = canonical_json([spec, form, vlc.__version__])
    kept = folder / f"{hashlib.sha256(asked.encode()).hexdigest()}{Path(form).suffix}"
    if kept.exists():
        return kept.read_bytes()
    made = render()
    part = kept.with_name(f"{kept.name}.{os.getpid()}.part")  # two processes writing the same chart: each whole
    try:
        folder.mkdir(parents=True, exist_ok=True)
        part.write_bytes(made)
        part.replace(kept)
    except OSError as exc:  # a cache on a full disk or a read-only folder: the chart is made, only not kept
        log.warning(
            "gradebench: a rendered chart was not kept in %s (%s): the next report renders it again", folder, exc
        )
    return made


def save_chart(chart: alt.TopLevelSpec | alt.JupyterChart, path: str | Path) -> Path:
    """Write ``chart`` to ``.svg``, ``.png`` (scale 2) or ``.html`` (the Vega JavaScript inlined), all offline.

    The parent directory is created if needed; another suffix raises `ValueError` naming the path.
    """
    import vl_convert as vlc

    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in (".svg", ".png", ".html"):
        raise ValueError(f"cannot save a chart to {str(out)!r}: the suffix must be .svg, .png or .html")
    drawn = chart.chart if isinstance(chart, alt.JupyterChart) else chart
    spec = drawn.to_dict(validate=alt.utils.schemapi.DEBUG_MODE)  # type: ignore[union-attr]
    version = "_".join(alt.SCHEMA_VERSION.split(".")[:2])  # "v6.4.1" -> "v6_4", as vl-convert names it
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".svg":
        made = _rendered(vlc, spec, f"{version}.svg", lambda: vlc.vegalite_to_svg(spec, vl_version=version).encode())
    elif suffix == ".png":
        made = _rendered(vlc, spec, f"{version}@2.png", lambda: vlc.vegalite_to_png(spec, vl_version=version, scale=2))
    else:
        made = _rendered(vlc, spec, f"{version}.html", lambda: _html_page(vlc, spec, version).encode())
    out.write_bytes(made)
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
