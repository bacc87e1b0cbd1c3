"""Starting gradebench is cheap: ``import gradebench`` loads none of the heavy libraries; each loads with the first
name that needs it, and every name of the root still answers (with the aliases kept for one release attached)."""

import json
import subprocess
import sys

import gradebench as gb

HEAVY = ("polars", "numpy", "pyarrow", "altair", "ipywidgets", "vl_convert", "openai", "pydantic", "genai_prices")
"""What ``import gradebench`` must not load: each costs 0.1–1 s of every command and every subprocess a test starts."""

MODULE_BUDGET = 150
"""``import gradebench`` loads 84 modules with the interpreter's own; the heavy libraries above bring over 1,200."""


def loaded_after(code: str) -> dict:
    """The modules loaded in a fresh interpreter after running ``code``, and how many."""
    probe = f"import sys; {code}; print(__import__('json').dumps(sorted(sys.modules)))"
    found = json.loads(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True).stdout)
    return {"heavy": sorted({m.split(".")[0] for m in found} & set(HEAVY)), "count": len(found)}


def test_importing_gradebench_loads_no_heavy_library_and_few_modules():
    loaded = loaded_after("import gradebench")
    assert loaded["heavy"] == [] and loaded["count"] <= MODULE_BUDGET, loaded


def test_a_name_of_the_root_loads_what_it_needs_with_its_old_aliases():
    loaded = loaded_after("import gradebench as gb; gb.Catalog; assert hasattr(gb.Catalog, 'check_sync')")
    assert {"polars", "pydantic"} <= set(loaded["heavy"]) and "altair" not in loaded["heavy"]


def test_the_genai_prices_database_loads_with_the_first_entry_priced_from_it():
    loaded = loaded_after("import gradebench as gb; gb.Benchmark")
    assert "genai_prices" not in loaded["heavy"]


def test_every_name_of_the_root_answers_and_lists():
    for name in gb.__all__:
        assert getattr(gb, name) is not None, name
    assert set(gb.__all__) <= set(dir(gb))
    assert gb.Benchmark.__module__ == "gradebench._race.benchmark"
