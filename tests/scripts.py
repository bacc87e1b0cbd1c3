"""Load a file that is not in a package (a benchmark, the docs' build hook) as a module, for its tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parents[1]


def load_file(path: Path, name: str | None = None) -> ModuleType:
    """The module in ``path``, registered under ``name`` (default: the file's stem) — a dataclass looks its module
    up in `sys.modules`."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module."""
    return load_file(ROOT / "benchmarks" / f"{name}.py")
