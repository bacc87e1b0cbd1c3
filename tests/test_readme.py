"""The Python examples of the README and of every docs page run, and the docs' list of public names matches the
package's public surface."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import gradebench as gb

REPO = Path(__file__).parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
"""Every page whose examples run: the README, then the docs site's pages."""
NAMES_PAGE = REPO / "docs" / "reference" / "index.md"
"""The page that lists the public names, module by module."""


def examples() -> list[tuple[str, str]]:
    """Each ```python block that imports gradebench, with where it is: ``page.md:line``."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for block in re.finditer(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            if "import gradebench" in block.group(1):
                line = text.count("\n", 0, block.start()) + 1
                found.append((f"{page.relative_to(REPO)}:{line}", block.group(1)))
    return found


EXAMPLES = examples()

PUBLIC = [
    "gradebench",
    "gradebench.vocab",
    "gradebench.results",
    "gradebench.scorers",
    "gradebench.charts",
    "gradebench.widgets",
    "gradebench.sim",
    "gradebench.replay",
    "gradebench.jobs",
    "gradebench.testing",
]


def listed_names() -> dict[str, list[str]]:
    """The names page's list: module -> the names it lists."""
    section = NAMES_PAGE.read_text().split("## Module by module", 1)[1].split("\n## ", 1)[0]
    listed = {}
    for line in section.splitlines():
        found = re.match(r"- \[`(gradebench[\w.]*)`\]\([\w.]+\)[^:]*: (.*)\.$", line)
        if found:
            listed[found.group(1)] = re.findall(r"`(\w+)`", found.group(2))
    return listed


@pytest.mark.parametrize("module", PUBLIC)
def test_public_surface_is_sorted_and_listed_on_the_names_page(module: str) -> None:
    imported = importlib.import_module(module)
    names = imported.__all__
    assert names == sorted(names), f"{module}.__all__ is not sorted"
    assert all(getattr(imported, n) is not None for n in names)
    assert listed_names().get(module) == names, f"the names page's list for {module} differs from its __all__"


def test_every_public_module_is_listed_and_every_other_module_is_private() -> None:
    assert sorted(listed_names()) == sorted(PUBLIC)
    package = Path(gb.__file__).parent
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        dotted = ".".join(["gradebench", *[p for p in parts if p != "__init__"]])
        assert dotted in PUBLIC or any(p.startswith("_") and p != "__init__" for p in parts), dotted


@pytest.mark.parametrize("where,source", EXAMPLES, ids=[where for where, _ in EXAMPLES])
async def test_example_runs(where: str, source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = compile(source, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, object] = {}
    result = eval(code, namespace)
    if result is not None:
        await result
    if "report" in namespace:  # the ten-line API: a report of runs, written out
        report = namespace["report"]
        assert isinstance(report, gb.BenchmarkReport) and report.runs.height > 0
    if 'report.to_parquet("out/orders")' in source:
        assert (tmp_path / "out" / "orders" / "runs.parquet").exists()


def test_there_are_examples_in_the_readme_and_on_the_pages() -> None:
    readme = [where for where, _ in EXAMPLES if where.startswith("README.md")]
    assert len(readme) >= 2
    assert len(EXAMPLES) - len(readme) >= 15  # the pages' examples, the moved README's among them
