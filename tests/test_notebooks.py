"""The example notebooks are well-formed and stored clean. (Executing them is nbval's job: `make test` runs
`pytest --nbval-lax notebooks/`.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = [
    "01_race_a_grade.ipynb",
    "02_selecting_agent_with_scorer.ipynb",
    "03_rejudge_and_export.ipynb",
    "04_bring_your_own_job.ipynb",
    "05_judge_trust.ipynb",
    "06_trust_the_judge.ipynb",
]
SECRET = re.compile(r"\bsk-[A-Za-z0-9_-]{16,}|\bBearer\s+[A-Za-z0-9._-]{16,}")  # something that looks like a key


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def test_the_five_notebooks_exist() -> None:
    names = [p.name for p in notebooks()]
    assert [n for n in EXPECTED if n not in names] == [], f"missing notebooks; found {names}"


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.name)
def test_notebook_is_valid_and_stored_clean(path: Path) -> None:
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    assert nb.nbformat == 4, f"{path.name}: nbformat {nb.nbformat}, expected 4"
    nbformat.validate(nb)  # raises ValidationError naming the problem

    first = nb.cells[0] if nb.cells else None
    assert first is not None and first.cell_type == "markdown", f"{path.name}: the first cell must be markdown"
    assert re.match(r"# \S", first.source), f"{path.name}: the first cell must open with a '# Title' line"

    for i, cell in enumerate(code_cells(nb)):
        assert cell.outputs == [], f"{path.name}: code cell {i} has stored outputs (clear them)"
        assert cell.execution_count is None, f"{path.name}: code cell {i} has an execution count (clear it)"
    assert "widgets" not in nb.metadata, f"{path.name}: saved widget state in the metadata (clear it)"

    ids = [c.get("id") for c in nb.cells]
    assert len(set(ids)) == len(ids), f"{path.name}: duplicate cell ids"


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.name)
def test_notebook_starts_offline_on_the_sim(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    first = code_cells(nb)[0].source
    assert "import gradebench as gb" in first and "gb.charts.enable_offline()" in first, (
        f"{path.name}: the first code cell must import gradebench as gb and call gb.charts.enable_offline()"
    )
    source = "\n".join(c.source for c in code_cells(nb))
    if "gb.sim.catalog(" in source:  # the sim's latencies are scaled down so the notebook runs in seconds
        assert re.search(r"gb\.sim\.catalog\(latency_scale=", source), f"{path.name}: scale the sim's latencies"
    assert not SECRET.search(json.dumps(nb)), f"{path.name}: something that looks like an API key"


def test_live_cells_are_guarded() -> None:
    """A cell that can call a real endpoint (it reads a key variable) does so only behind that variable and the
    GRADEBENCH_LIVE opt-in, says why it skipped, and never prints an environment value."""
    live_cells = 0
    for path in notebooks():
        for cell in code_cells(nbformat.read(path, as_version=4)):
            source = cell.source
            assert not re.search(r"print\([^)]*os\.environ(\[|\.get)", source), f"{path.name}: prints an env value"
            for key in sorted(set(re.findall(r"\b([A-Z][A-Z0-9]*_API_KEY)\b", source))):
                live_cells += 1
                assert f'if not os.environ.get("{key}"):' in source, f"{path.name}: not guarded by {key}"
                assert f"{key} is not set: skipping the live race" in source, f"{path.name}: no skip message"
                assert 'os.environ.get("GRADEBENCH_LIVE") != "1"' in source, f"{path.name}: no GRADEBENCH_LIVE opt-in"
    assert live_cells, "no notebook shows a live race"
