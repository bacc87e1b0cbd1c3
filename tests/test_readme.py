"""The README's Python examples run, and its list of names matches the package's public surface."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import gradebench as gb

README = (Path(__file__).parent.parent / "README.md").read_text()
EXAMPLES = [b for b in re.findall(r"```python\n(.*?)```", README, re.DOTALL) if "import gradebench" in b]


PUBLIC = [
    "gradebench",
    "gradebench.scorers",
    "gradebench.charts",
    "gradebench.widgets",
    "gradebench.sim",
    "gradebench.jobs",
    "gradebench.testing",
    "gradebench.vocab",
    "gradebench.results",
]


def readme_api() -> dict[str, list[str]]:
    """The README's "API at a glance": module -> the names it lists."""
    section = README.split("## API at a glance", 1)[1].split("\n## ", 1)[0]
    listed = {}
    for line in section.splitlines():
        found = re.match(r"- `(gradebench[\w.]*)`[^:]*: (.*)\.$", line)
        if found:
            listed[found.group(1)] = re.findall(r"`(\w+)`", found.group(2))
    return listed


@pytest.mark.parametrize("module", PUBLIC)
def test_public_surface_is_sorted_and_listed_in_the_readme(module: str) -> None:
    imported = importlib.import_module(module)
    names = imported.__all__
    assert names == sorted(names), f"{module}.__all__ is not sorted"
    assert all(getattr(imported, n) is not None for n in names)
    assert readme_api().get(module) == names, f"the README's API list for {module} differs from its __all__"


def test_every_public_module_is_listed_and_every_other_module_is_private() -> None:
    assert sorted(readme_api()) == sorted(PUBLIC)
    package = Path(gb.__file__).parent
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        dotted = ".".join(["gradebench", *[p for p in parts if p != "__init__"]])
        assert dotted in PUBLIC or any(p.startswith("_") and p != "__init__" for p in parts), dotted


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
