"""What OpenRouter's model list says is data, never file structure or a reason to refuse: a display name with line
breaks, quotes or ``[[entries]]`` cannot add an entry to the catalog file `gradebench catalog openrouter` writes, odd
items in the list are skipped and counted, and a model listed twice keeps its first prices, said."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import gradebench as gb
from gradebench._base.tomlfile import TomlTable, write_toml
from gradebench._cli.main import main

from ..providers import OpenRouterModels
from .test_openrouter import GRADES, LISTED, PICK, api_base, served_in_a_thread

EVIL = "http://203.0.113.9:8080/v1"
HOSTILE_NAMES = [
    # closes the comment line and writes an entry of its own, with the user's key variable, at another host
    f'Qwen\nname = "x"\n[[entries]]\nname = "openrouter/evil"\nmodel = "m"\ngrade = "standard"\nbase_url = "{EVIL}"\n'
    'api_key_env = "OPENROUTER_API_KEY"\nprice_in = 0.0\nprice_out = 0.0\ncurrency = "USD"\n#',
    'GPT "5" ]] [[grades]]\r\nbase_url = "' + EVIL + '"\u2028[picks]\x7f\x00\ttab',
]


def hostile_list() -> list[dict[str, object]]:
    listed = [dict(item) for item in LISTED]
    listed[0]["name"] = HOSTILE_NAMES[0]
    listed[2]["name"] = HOSTILE_NAMES[1]
    return listed


def test_a_hostile_display_name_adds_no_entry_and_changes_no_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with served_in_a_thread(OpenRouterModels(hostile_list())) as server:
        base = api_base(server)
        status = main(["catalog", "openrouter", *GRADES["standard"], "--grade", "large=openai/gpt-5",
                       "--pick", PICK["standard"], "--base-url", base])  # fmt: skip
        made = gb.catalog_from_openrouter(GRADES, pick=PICK, base_url=base)
    text = capsys.readouterr().out
    assert status == 0
    parsed = tomllib.loads(text)
    assert set(parsed) == {"grades", "ceiling", "picks", "entries"}
    assert [e["name"] for e in parsed["entries"]] == [e.name for e in made.entries]
    assert all(e["base_url"] == base for e in parsed["entries"]) and EVIL not in str(parsed)
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    loaded = gb.Catalog.load(path)
    assert loaded.entries == made.entries
    assert (loaded.grades, loaded.picks, loaded.ceiling_name) == (made.grades, made.picks, made.ceiling_name)
    # the names are still said, each on its one comment line, their line breaks shown escaped
    assert '# Qwen\\nname = "x"\\n[[entries]]\\nname = "openrouter/evil"' in text
    assert '# GPT "5" ]] [[grades]]\\r\\nbase_url = ' in text
    assert sum(line.startswith("[[entries]]") for line in text.splitlines()) == 3


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_the_writer_keeps_every_value_data(name: str) -> None:
    text = write_toml(
        {name: name, "list": [name, 1.5, True]},
        [TomlTable("entries", {"name": name, name: 2}, array=True, comment=name, comments={"name": name})],
        comments={name: name},
        opening=name,
    )
    assert tomllib.loads(text) == {name: name, "list": [name, 1.5, True], "entries": [{"name": name, name: 2}]}


def test_odd_items_in_the_list_are_skipped_and_counted() -> None:
    listed = [None, "a string", 7, [], {"name": "no id"}, {"id": 5}, *LISTED, None]
    with served_in_a_thread(OpenRouterModels(listed)) as server:  # type: ignore[arg-type]
        with pytest.warns(UserWarning, match=r"/api/v1/models: skipped 7 item\(s\) of the model list"):
            catalog = gb.catalog_from_openrouter(GRADES, pick=PICK, base_url=api_base(server))
    assert [e.model for e in catalog] == [*GRADES["standard"], *GRADES["large"]]


def test_a_model_listed_twice_keeps_its_first_prices_and_says_so() -> None:
    cheaper_later = OpenRouterModels.model("openai/gpt-5", prompt="0.0000000001", completion="0.0000000001")
    with served_in_a_thread(OpenRouterModels([*LISTED, cheaper_later])) as server:
        with pytest.warns(UserWarning, match=r"listed more than once, the first listing kept: \['openai/gpt-5'\]"):
            catalog = gb.catalog_from_openrouter(GRADES, pick=PICK, base_url=api_base(server))
    gpt5 = catalog["openrouter/openai/gpt-5"]
    assert (gpt5.price_in, gpt5.price_out) == (1.25, 10.0)


def test_the_command_says_what_it_skipped_and_writes_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    cheaper_later = OpenRouterModels.model("qwen/qwen3-32b", prompt="0.0000000001", completion="0.0000000001")
    listed = [None, "a string", *LISTED, cheaper_later]
    with served_in_a_thread(OpenRouterModels(listed)) as server:  # type: ignore[arg-type]
        status = main(["catalog", "openrouter", "qwen/qwen3-32b", "--base-url", api_base(server)])
    out, err = capsys.readouterr()
    assert status == 0
    assert err.splitlines() == [
        f"gradebench: warning: {api_base(server)}/models: skipped 2 item(s) of the model list that are not a model "
        "with an id",
        f"gradebench: warning: {api_base(server)}/models: model(s) listed more than once, the first listing kept: "
        "['qwen/qwen3-32b']",
    ]
    assert tomllib.loads(out)["entries"][0]["price_in"] == 0.1
