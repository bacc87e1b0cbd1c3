"""Charts of a report, each an Altair chart that carries its data inline and renders with no network.

Take a `gradebench.BenchmarkReport` and return a chart; `save_chart` writes SVG, PNG or self-contained HTML through
vl-convert, and `enable_offline` shows them in Jupyter without a CDN. The charts themselves live with the report
(`gradebench._report.charts`); this is their public face.
"""

from ._report.charts import FAILED_X as FAILED_X  # where a failed run is drawn, for tests of a chart
from ._report.charts import POINTS_PER_ENTRY as POINTS_PER_ENTRY  # read there: patch it there
from ._report.charts import (
    cost_quality,
    enable_offline,
    latency_quality,
    offline_widget,
    pareto_front,
    save_chart,
    score_distribution,
    scorer_agreement,
)

__all__ = [
    "cost_quality",
    "enable_offline",
    "latency_quality",
    "offline_widget",
    "pareto_front",
    "save_chart",
    "score_distribution",
    "scorer_agreement",
]
