from __future__ import annotations

from pathlib import Path

import pytest

import gradebench as gb

EXAMPLE = Path(__file__).parent.parent.parent / "data" / "catalog.example.toml"

GOOD = """
grades = ["standard", "large"]
ceiling = "acme/max"
[picks]
standard = "acme/mid"
[[entries]]
name = "acme/mid"
model = "mid-1"
grade = "standard"
base_url = "https://api.example.com/v1"
api_key_env = "ACME_TEST_KEY"
price_in = 0.4
price_out = 1.6
[[entries]]
name = "acme/max"
model = "max-1"
grade = "large"
base_url = "https://api.example.com/v1"
price_in = 3
price_out = 15
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    return path


def test_example_catalog_loads() -> None:
    catalog = gb.Catalog.load(EXAMPLE)
    assert catalog.pick("standard").name == "openai/gpt-mid"
    assert catalog.ceiling().name == "openai/gpt-large"
    assert catalog["openrouter/qwen-mid"].routing == {"provider": {"only": ["groq"], "allow_fallbacks": False}}
    assert catalog.judge_params == {"temperature": 0}
    # the gpt-5 family rejects max_tokens and a temperature but its default: its entries rename and drop them
    mid = catalog["openai/gpt-mid"]
    assert mid.rename_params == {"max_tokens": "max_completion_tokens"} and mid.drop_params == ("temperature",)
    assert catalog.ceiling().drop_params == ("temperature",)  # so the judge's temperature 0 is not sent either
    assert catalog.ceiling().prompt_cache_key and not mid.prompt_cache_key  # the judge sends a per-input key


def test_prompt_cache_key_is_a_boolean(tmp_path: Path) -> None:
    assert gb.Catalog.load(write(tmp_path, GOOD)).ceiling().prompt_cache_key is False  # opt-in
    opted = GOOD.replace("price_out = 15\n", "price_out = 15\nprompt_cache_key = true\n")
    assert gb.Catalog.load(write(tmp_path, opted)).ceiling().prompt_cache_key is True
    with pytest.raises(gb.CatalogError, match="entry 'acme/max': field 'prompt_cache_key'"):
        gb.Catalog.load(write(tmp_path, opted.replace("prompt_cache_key = true", 'prompt_cache_key = "yes"')))


def test_judge_params_from_the_catalog(tmp_path: Path) -> None:
    assert gb.Catalog.load(write(tmp_path, "judge_params = {}\n" + GOOD)).judge_params == {}  # sends none
    assert gb.Catalog.load(write(tmp_path, "judge_params = { temperature = 1 }\n" + GOOD)).judge_params == {
        "temperature": 1
    }


def test_load_and_pick(tmp_path: Path) -> None:
    catalog = gb.Catalog.load(write(tmp_path, GOOD))
    assert catalog.judge_params == {"temperature": 0}  # the default when the catalog says nothing
    assert catalog.grades == ("standard", "large")
    assert catalog.pick("standard").model == "mid-1"
    assert catalog.pick(gb.Grade.CEILING).name == "acme/max"
    assert catalog["acme/mid"].cost(1_000_000, 500_000) == pytest.approx(0.4 + 0.8)


@pytest.mark.parametrize(
    ("change", "names"),
    [
        (
            lambda t: t.replace("price_in = 0.4", "price_in = 0.4\ntemprature = 1"),
            ["acme/mid", "temprature", "unknown"],
        ),
        (lambda t: t.replace('model = "mid-1"\n', ""), ["acme/mid", "model"]),
        (lambda t: t.replace('name = "acme/max"', 'name = "acme/mid"'), ["acme/mid", "name", "duplicate"]),
        (lambda t: t.replace('standard = "acme/mid"', 'standard = "acme/nope"'), ["picks.standard", "acme/nope"]),
        (lambda t: t.replace('ceiling = "acme/max"', 'ceiling = "acme/gone"'), ["ceiling", "acme/gone"]),
        (lambda t: t.replace('grade = "large"', 'grade = "huge"'), ["acme/max", "grade", "huge"]),
        (lambda t: t.replace("price_out = 1.6", "price_out = -1"), ["acme/mid", "price_out"]),
        (lambda t: t + "\nbogus = 1\n", ["bogus", "unknown"]),
    ],
)
def test_bad_catalog_names_file_entry_and_field(tmp_path: Path, change, names: list[str]) -> None:
    path = write(tmp_path, change(GOOD))
    with pytest.raises(gb.CatalogError) as info:
        gb.Catalog.load(path)
    message = str(info.value)
    assert str(path) in message
    for name in names:
        assert name in message


def test_not_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(gb.CatalogError, match="not valid TOML"):
        gb.Catalog.load(write(tmp_path, "grades = ["))
    with pytest.raises(gb.CatalogError, match="no such catalog file"):
        gb.Catalog.load(tmp_path / "missing.toml")


def test_entry_without_its_key_is_not_a_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = gb.Catalog.load(write(tmp_path, GOOD.replace('grade = "large"', 'grade = "standard"')))
    monkeypatch.delenv("ACME_TEST_KEY", raising=False)
    assert gb.Benchmark.candidates(catalog, "standard") == ["acme/max"]
    assert catalog.skipped("standard") == {"acme/mid": "environment variable ACME_TEST_KEY is not set"}
    monkeypatch.setenv("ACME_TEST_KEY", "k")
    assert gb.Benchmark.candidates(catalog, "standard") == ["acme/mid", "acme/max"]


def test_unknown_grade_and_entry() -> None:
    catalog = gb.Catalog.load(EXAMPLE)
    with pytest.raises(ValueError, match="grade must be one of"):
        catalog.candidates("huge")
    with pytest.raises(KeyError, match="no entry named 'nope'"):
        catalog["nope"]
