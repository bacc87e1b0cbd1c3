"""The sizes the house keeps, measured with `ast` over every module of the package: no module over 500 lines, no
class over 300, no function over 8 parameters (``self`` and ``cls`` not counted). A piece that grows past one is split
by concept, where a reader would look for it."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gradebench

PACKAGE = Path(gradebench.__file__).parent

MODULE_LINES = 500
CLASS_LINES = 300
PARAMETERS = 8

WIDE_BY_DESIGN = {("function", "gradebench._race.benchmark:Benchmark.__init__")}
"""Allowed more parameters for good: `Benchmark`'s convenience keywords, each a field of the race spec."""

# A piece over a limit while a change of its own splits it; empty when none is (the last test says when one may go).
BEING_SPLIT: set[tuple[str, str]] = set()


@dataclass(frozen=True, kw_only=True)
class Size:
    """How large one piece of the package is."""

    kind: str
    """``module``, ``class`` or ``function``."""
    where: str
    """The module's dotted name; for a class or a function, ``module:qualified.name``."""
    size: int
    """Lines of a module or a class (its ``class`` line to its last), parameters of a function."""

    @property
    def limit(self) -> int:
        return {"module": MODULE_LINES, "class": CLASS_LINES, "function": PARAMETERS}[self.kind]

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.where

    def __str__(self) -> str:
        unit = "parameters" if self.kind == "function" else "lines"
        return f"{self.kind} {self.where}: {self.size} {unit} (at most {self.limit})"


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's parameters, ``*args`` and ``**kwargs`` included, a first ``self`` or ``cls`` not — nor ``**old``,
    the keywords a function still takes for one release after they moved (each warns, naming the new form)."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    bound = 1 if positional and positional[0].arg in ("self", "cls") else 0
    legacy = args.kwarg is not None and args.kwarg.arg == "old"
    keywords = len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None and not legacy)
    return len(positional) - bound + keywords


def sizes(source: str, module: str) -> Iterator[Size]:
    """The size of a module's source, and of every class and function in it (nested ones too)."""
    yield Size(kind="module", where=module, size=len(source.splitlines()))

    def inside(node: ast.AST, prefix: str) -> Iterator[Size]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = prefix + child.name
                assert child.end_lineno is not None
                yield Size(kind="class", where=f"{module}:{name}", size=child.end_lineno - child.lineno + 1)
                yield from inside(child, name + ".")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                yield Size(kind="function", where=f"{module}:{name}", size=parameters(child))
                yield from inside(child, name + ".")
            else:
                yield from inside(child, prefix)

    yield from inside(ast.parse(source), "")


@functools.cache
def package_sizes() -> tuple[Size, ...]:
    """Every module of the package, and its classes and functions."""
    found: list[Size] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found += sizes(path.read_text(encoding="utf-8"), module)
    return tuple(found)


def over(kind: str) -> list[Size]:
    """The pieces of this kind over their limit (but for those wide by design)."""
    return [s for s in package_sizes() if s.kind == kind and s.size > s.limit and s.key not in WIDE_BY_DESIGN]


def test_the_measure_counts_lines_classes_and_parameters() -> None:
    source = (
        "class Outer:\n"
        "    def method(self, a, b, /, c, *rest, d, **more): ...\n"
        "    class Inner:\n"
        "        @classmethod\n"
        "        def make(cls): ...\n"
        "\n"
        "async def free(x, y=1): ...\n"
    )
    found = {s.key: s.size for s in sizes(source, "m")}
    assert found == {
        ("module", "m"): 7,
        ("class", "m:Outer"): 5,
        ("function", "m:Outer.method"): 6,
        ("class", "m:Outer.Inner"): 3,
        ("function", "m:Outer.Inner.make"): 0,
        ("function", "m:free"): 2,
    }
    measured = package_sizes()
    assert len({s.where for s in measured if s.kind == "module"}) > 50  # the whole package, not a corner of it
    assert ("module", "gradebench.scorers") in {s.key for s in measured}  # a package is its __init__


def test_no_module_is_over_500_lines() -> None:
    found = [str(s) for s in over("module") if s.key not in BEING_SPLIT]
    assert not found, "split by concept: " + "; ".join(found)


def test_no_class_is_over_300_lines() -> None:
    found = [str(s) for s in over("class") if s.key not in BEING_SPLIT]
    assert not found, "split by concept: " + "; ".join(found)


def test_no_function_takes_over_8_parameters() -> None:
    found = [str(s) for s in over("function") if s.key not in BEING_SPLIT]
    assert not found, "group what travels together (a spec, a record): " + "; ".join(found)


def test_every_exception_is_still_needed() -> None:
    still = {s.key for s in package_sizes() if s.size > s.limit}
    gone = sorted(f"{kind} {where}" for kind, where in (BEING_SPLIT | WIDE_BY_DESIGN) - still)
    assert not gone, "within the limits now, take off the lists above: " + "; ".join(gone)
