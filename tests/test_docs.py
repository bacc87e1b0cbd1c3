"""The documentation site says what the code does: every column of the report's three frames is described, every
command and option of the command line is there, the public names agree across the package, the API reference and
the README, and a name that left the root still answers there for one release, with a warning."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

import gradebench as gb
from gradebench._cli.main import build_parser
from gradebench._deprecated import MOVED, RENAMED
from gradebench._records.records import CALLS_SCHEMA, RUNS_SCHEMA
from gradebench._report.models import MODELS_SCHEMA

from .scripts import load_file

REPO = Path(__file__).parent.parent
DOCS = REPO / "docs"


def hooks() -> ModuleType:
    """docs/hooks.py, the site's build hook, as a module."""
    return load_file(DOCS / "hooks.py", "gradebench_docs_hooks")


HOOKS = hooks()


def generated(page: str) -> str:
    """A docs page as the site shows it: its markers replaced by what the hook generates."""
    text = (DOCS / page).read_text()
    assert any(marker in text for marker in HOOKS.MARKERS), f"{page} asks for nothing to be generated"
    return HOOKS.on_page_markdown(text)


def described_columns(page: str, anchor: str) -> dict[str, str]:
    """The columns a frame's section of the page describes: name -> description."""
    section = page.split(f"{{#{anchor}}}", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| (.*) \|$", section, re.MULTILINE)
    return dict(rows)


@pytest.mark.parametrize(
    "anchor,schema",
    [("runs", RUNS_SCHEMA), ("models", MODELS_SCHEMA), ("calls", CALLS_SCHEMA)],
    ids=["runs", "models", "calls"],
)
def test_every_column_of_the_report_is_described_on_the_columns_page(anchor: str, schema: dict) -> None:
    described = described_columns(generated("columns.md"), anchor)
    assert list(described) == list(schema), f"report.{anchor}: the page's columns differ from the frame's"
    empty = [name for name, text in described.items() if len(text.strip()) < 10]
    assert not empty, f"report.{anchor}: columns without a description: {empty}"


def test_the_columns_page_describes_a_real_reports_frames() -> None:
    catalog = gb.sim.catalog()
    bench = gb.Benchmark(gb.jobs.OrderAgent, runs=1, catalog=catalog, progress=False)
    bench.set_spec(candidates=["sim/steady", "sim/swift"]).set_inputs(gb.jobs.load_inputs("orders")[:1])
    bench.run_sync()
    report = bench.report()
    page = generated("columns.md")
    for anchor, frame in (("runs", report.runs), ("models", report.models), ("calls", report.calls)):
        assert list(described_columns(page, anchor)) == frame.columns, anchor


def test_the_command_line_page_has_every_command_and_option() -> None:
    page = generated("cli.md")
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert sorted(commands) == ["catalog", "check", "compare", "demo", "rejudge", "run", "sim-serve"]
    for name, command in commands.items():
        section = page.split(f"### `gradebench {name}`", 1)[1].split("\n### ", 1)[0]
        for action in command._actions:
            if action.help == argparse.SUPPRESS:
                continue
            named = action.option_strings or list(action.choices or []) or [action.metavar or action.dest]
            for option in named:
                assert f"`{option}`" in section, f"gradebench {name}: {option} is not on the page"
        assert f"gradebench {name}" in page.split("## Every command and option", 1)[0], f"{name} is never explained"


def test_the_root_names_agree_in_the_package_the_reference_and_the_readme() -> None:
    assert gb.__all__ == sorted(gb.__all__)
    readme = (REPO / "README.md").read_text()
    listed = readme.split("The public names of the root", 1)[1].split("\n\n", 1)[0].split(":", 1)[1]
    assert re.findall(r"`(\w+)`", listed) == gb.__all__, "the README's list of the root's names differs from __all__"
    # the reference's list: tests/test_readme.py holds it to every public module's __all__


def test_every_public_module_has_an_api_page_in_the_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text()
    public = ("gradebench", "vocab", "results", "scorers", "charts", "widgets", "sim", "replay", "jobs", "testing")
    for module in public:
        page = "gradebench.md" if module == "gradebench" else f"{module}.md"
        assert f"reference/{page}" in nav, module
        name = module if module == "gradebench" else f"gradebench.{module}"
        assert f"::: {name}\n" in (DOCS / "reference" / page).read_text()
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages == set(re.findall(r": ([\w/.-]+\.md)$", nav, re.MULTILINE)), "a page is missing from the nav"


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_name_that_left_the_root_still_answers_there_with_a_warning(name: str) -> None:
    home, new = MOVED[name], RENAMED.get(name, name)
    assert name not in gb.__all__
    with pytest.warns(DeprecationWarning, match=rf"gradebench\.{name} is deprecated; use {re.escape(home)}\.{new}"):
        old = getattr(gb, name)
    assert old is getattr(importlib.import_module(home), new)


@pytest.mark.parametrize(
    ("module", "name"), [("results", "Verdict"), ("results", "ControlCheck"), ("vocab", "VerdictPath")]
)
def test_a_renamed_name_still_answers_in_its_module_with_a_warning(module: str, name: str) -> None:
    face = importlib.import_module(f"gradebench.{module}")
    new = RENAMED[name]
    assert name not in face.__all__ and new in face.__all__
    with pytest.warns(
        DeprecationWarning, match=rf"gradebench\.{module}\.{name} is deprecated; use gradebench\.{module}\.{new}"
    ):
        assert getattr(face, name) is getattr(face, new)


def test_the_docs_and_the_notebooks_use_no_name_that_moved() -> None:
    texts = {p: p.read_text() for p in [REPO / "README.md", *DOCS.rglob("*.md"), *(REPO / "notebooks").glob("*.ipynb")]}
    moved = "|".join(sorted(MOVED, key=len, reverse=True))
    for path, text in texts.items():
        table = text.split("## Names that moved", 1)[0]  # the names page lists the old names, once
        old = re.findall(rf"\b(?:gb|gradebench)\.(?:{moved})\b|\.check_sync\(|Catalog\.from_openrouter", table)
        assert not old, f"{path.relative_to(REPO)} uses {sorted(set(old))}"


def test_the_names_page_lists_every_name_that_moved() -> None:
    reference = (DOCS / "reference" / "index.md").read_text().split("## Names that moved", 1)[1]
    for name, home in MOVED.items():
        assert f"`gradebench.{name}`" in reference and f"`{home}`" in reference, name


def test_the_renamed_methods_are_thin_aliases_that_say_what_to_use() -> None:
    from .report.test_report import META, build_runs

    report = gb.BenchmarkReport(build_runs(), META)
    with pytest.warns(DeprecationWarning, match=r"report\.controls_outcome\(\)"):
        assert report.control_check() == report.controls_outcome()  # type: ignore[attr-defined]
    candidate = report.runs.filter(report.runs["role"] == "candidate")["run_id"][0]
    labels = gb.HumanLabels.from_scores({candidate: 7})
    with pytest.warns(DeprecationWarning, match=r"labels\.validate\(runs\)"):
        labels.check(report.runs)  # type: ignore[attr-defined]
