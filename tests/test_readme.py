"""The README's Python examples run, and its list of names matches the package's public surface."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import gradebench as gb

README = (Path(__file__).parent.parent / "README.md").read_text()
EXAMPLES = [b for b in re.findall(r"```python\n(.*?)```", README, re.DOTALL) if "import gradebench" in b]


def test_public_surface_is_sorted_and_in_the_readme() -> None:
    assert gb.__all__ == sorted(gb.__all__)
    for name in gb.__all__:
        assert getattr(gb, name) is not None
        if not name.startswith("_"):
            assert f"gb.{name}" in README, f"README does not mention gb.{name}"


@pytest.mark.parametrize("source", EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
async def test_readme_example_runs(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = compile(source, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, object] = {}
    result = eval(code, namespace)
    if result is not None:
        await result
    if "report" in namespace:
        report = namespace["report"]
        assert isinstance(report, gb.BenchmarkReport) and report.runs.height > 0
        assert (tmp_path / "out" / "orders" / "runs.parquet").exists()


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 2
