"""A catalog from OpenRouter's model list: read over loopback HTTP through httpx2 from the documented shape
(https://openrouter.ai/docs/api-reference/list-available-models), priced per 1M tokens, written as TOML that loads back
to the same entries; every bad model, price or pick is one `CatalogError` naming it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

import gradebench as gb
from gradebench._catalog.openrouter import DEFAULT_BASE_URL
from gradebench._catalog.writing import cli_grades
from gradebench._cli.main import main
from gradebench.sim._server import SimServer, start_server

from ..providers import Fleet, JudgeEndpoint, OpenRouterEndpoint, OpenRouterModels

SECRET = "sk-or-v1-check-0123456789abcdef"

LISTED = [
    OpenRouterModels.model(
        "qwen/qwen3-32b", prompt="0.0000001", completion="0.0000003", input_cache_read="0.000000025", name="Qwen3 32B"
    ),
    OpenRouterModels.model("meta-llama/llama-3.3-70b-instruct", prompt="0.00000013", completion="0.0000004"),
    OpenRouterModels.model(
        "openai/gpt-5",
        prompt="0.00000125",
        completion="0.00001",
        input_cache_read="0.000000125",
        request="0.0001",
        context_length=400000,
    ),
    # a router elsewhere in the list, priced -1 (its price depends on the model it picks): fine while not named
    OpenRouterModels.model("openrouter/auto", prompt="-1", completion="-1"),
]
GRADES = {"standard": ["qwen/qwen3-32b", "meta-llama/llama-3.3-70b-instruct"], "large": ["openai/gpt-5"]}
PICK = {"standard": "qwen/qwen3-32b", "large": "openai/gpt-5"}


@contextmanager
def served_in_a_thread(fleet: Any) -> Iterator[SimServer]:
    """gradebench's loopback server on a loop of its own, answering every request with ``fleet.handle``: for code
    that runs its own loop or none (``from_openrouter``'s sync GET, the command line's ``asyncio.run``)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(start_server(fleet=fleet), loop).result(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def api_base(server: SimServer) -> str:
    """The base URL as OpenRouter spells it: ``.../api/v1``."""
    return f"http://127.0.0.1:{server.port}/api/v1"


def test_a_catalog_from_the_model_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", SECRET)
    listing = OpenRouterModels(LISTED)
    with served_in_a_thread(listing) as server:
        catalog = gb.catalog_from_openrouter(GRADES, pick=PICK, base_url=api_base(server))
    assert catalog.grades == ("standard", "large")
    assert [e.name for e in catalog] == [
        "openrouter/qwen/qwen3-32b",
        "openrouter/meta-llama/llama-3.3-70b-instruct",
        "openrouter/openai/gpt-5",
    ]
    qwen = catalog["openrouter/qwen/qwen3-32b"]
    # strings in USD per token, exactly as USD per 1M tokens (Decimal: no 0.30000000000000004)
    assert (qwen.price_in, qwen.price_out, qwen.price_cached_in) == (0.1, 0.3, 0.025)
    assert qwen.model == "qwen/qwen3-32b" and qwen.grade == "standard" and qwen.currency == "USD"
    assert qwen.base_url == api_base(server) and qwen.api_key_env == "OPENROUTER_API_KEY"
    llama = catalog["openrouter/meta-llama/llama-3.3-70b-instruct"]
    assert (llama.price_in, llama.price_out, llama.price_cached_in) == (0.13, 0.4, None)  # no cache price listed
    assert catalog.pick("standard") is qwen
    assert catalog.ceiling().name == "openrouter/openai/gpt-5"  # the strongest grade's pick, by default
    assert catalog.source == api_base(server) + "/models"
    [request] = listing.requests
    assert request.url.path == "/api/v1/models"
    assert "authorization" not in {k.lower() for k in request.headers}  # the list needs no key: none is sent


def test_picks_and_the_ceiling_by_entry_name_or_model_id() -> None:
    with served_in_a_thread(OpenRouterModels(LISTED)) as server:
        catalog = gb.catalog_from_openrouter(
            {"standard": ["qwen/qwen3-32b"], "large": ["openai/gpt-5", "meta-llama/llama-3.3-70b-instruct"]},
            pick={"standard": "openrouter/qwen/qwen3-32b", "large": "meta-llama/llama-3.3-70b-instruct"},
            ceiling="openrouter/openai/gpt-5",
            base_url=api_base(server),
            api_key_env="MY_ROUTER_KEY",
        )
    assert catalog.pick("large").name == "openrouter/meta-llama/llama-3.3-70b-instruct"
    assert catalog.ceiling().model == "openai/gpt-5"
    assert {e.api_key_env for e in catalog} == {"MY_ROUTER_KEY"}


def test_models_with_each_ones_grade_and_one_pick() -> None:
    with served_in_a_thread(OpenRouterModels(LISTED)) as server:
        catalog = gb.catalog_from_openrouter(
            models=["qwen/qwen3-32b", "meta-llama/llama-3.3-70b-instruct", "openai/gpt-5"],
            grades={
                "qwen/qwen3-32b": "standard",
                "meta-llama/llama-3.3-70b-instruct": "standard",
                "openai/gpt-5": "large",
            },
            pick="meta-llama/llama-3.3-70b-instruct",  # the standard grade's; large has one model, so it is its pick
            base_url=api_base(server),
        )
        assert catalog.grades == ("standard", "large")  # weakest first, in the order the models list them
        assert catalog.pick("standard").model == "meta-llama/llama-3.3-70b-instruct"
        assert catalog.pick("large").model == catalog.ceiling().model == "openai/gpt-5"
        with pytest.raises(ValueError, match=r"model 'openai/gpt-5' has no grade in grades="):
            gb.catalog_from_openrouter(
                models=["qwen/qwen3-32b", "openai/gpt-5"],
                grades={"qwen/qwen3-32b": "standard"},
                pick="qwen/qwen3-32b",
                base_url=api_base(server),
            )


@pytest.mark.parametrize(
    ("grades", "pick", "names"),
    [
        (
            {"standard": ["qwen/qwen3-33b"]},
            {"standard": "qwen/qwen3-33b"},
            ["lists no model 'qwen/qwen3-33b'", "close"],
        ),
        (
            {"standard": ["openrouter/auto"]},
            {"standard": "openrouter/auto"},
            ["openrouter/auto", "pricing.prompt", "-1"],
        ),
        (  # a grade of two models and no pick (one of one model picks it)
            {"standard": ["qwen/qwen3-32b"], "large": ["openai/gpt-5", "meta-llama/llama-3.3-70b-instruct"]},
            {"standard": "qwen/qwen3-32b"},
            ["'large'", "pick"],
        ),
        ({"standard": ["qwen/qwen3-32b"]}, {"standard": "openai/gpt-5"}, ["pick.standard", "openai/gpt-5"]),
        ({"standard": ["qwen/qwen3-32b"]}, {"standard": "qwen/qwen3-32b", "huge": "x"}, ["'huge'"]),
        ({"standard": ["qwen/qwen3-32b"], "large": ["qwen/qwen3-32b"]}, {}, ["qwen/qwen3-32b", "twice"]),
        ({"standard": []}, {}, ["grade 'standard' names no model"]),
    ],
)
def test_a_bad_model_price_or_pick_is_one_error_naming_it(
    grades: dict[str, list[str]], pick: dict[str, str], names: list[str]
) -> None:
    with served_in_a_thread(OpenRouterModels(LISTED)) as server:
        with pytest.raises(gb.CatalogError) as info:
            gb.catalog_from_openrouter(grades, pick=pick, base_url=api_base(server))
    for name in names:
        assert name in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("pricing", "field"),
    [
        ({"prompt": "abc"}, "pricing.prompt"),
        ({"completion": "-0.5"}, "pricing.completion"),
        ({"completion": "NaN"}, "pricing.completion"),
        ({"input_cache_read": "-1"}, "pricing.input_cache_read"),
        ({"prompt": None}, "pricing.prompt"),
    ],
)
def test_a_price_that_is_not_a_number_names_the_model_and_field(pricing: dict[str, Any], field: str) -> None:
    listed = OpenRouterModels.model("acme/odd", input_cache_read="0.00000001")
    listed["pricing"].update(pricing)
    with served_in_a_thread(OpenRouterModels([listed])) as server:
        with pytest.raises(gb.CatalogError) as info:
            gb.catalog_from_openrouter(
                {"standard": ["acme/odd"]}, pick={"standard": "acme/odd"}, base_url=api_base(server)
            )
    assert info.value.entry == "openrouter/acme/odd" and info.value.field == field
    assert "model 'acme/odd'" in str(info.value) and field in str(info.value)


def test_a_list_that_fails_or_is_not_a_list_names_the_url() -> None:
    with served_in_a_thread(OpenRouterModels(LISTED, status=503)) as server:
        with pytest.raises(gb.CatalogError, match=r"/api/v1/models: the model list answered HTTP 503"):
            gb.catalog_from_openrouter(GRADES, pick=PICK, base_url=api_base(server))
    with served_in_a_thread(Fleet({})) as server:  # every request a 404: no list there
        with pytest.raises(gb.CatalogError, match="HTTP 404"):
            gb.catalog_from_openrouter(GRADES, pick=PICK, base_url=api_base(server))


def test_the_command_writes_toml_that_loads_back_to_the_same_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", SECRET)
    with served_in_a_thread(OpenRouterModels(LISTED)) as server:
        base = api_base(server)
        status = main(
            [
                "catalog",
                "openrouter",
                "qwen/qwen3-32b",
                "meta-llama/llama-3.3-70b-instruct",
                "--grade",
                "large=openai/gpt-5",
                "--pick",
                "qwen/qwen3-32b",
                "--pick",
                "openai/gpt-5",
                "--base-url",
                base,
            ]
        )
        made = gb.catalog_from_openrouter(GRADES, pick=PICK, base_url=base)
    text = capsys.readouterr().out
    assert status == 0
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    loaded = gb.Catalog.load(path)
    assert loaded.entries == made.entries
    assert (loaded.grades, loaded.picks, loaded.ceiling_name) == (made.grades, made.picks, made.ceiling_name)
    # what no entry field holds is said beside it; the key never is
    assert "# openai/gpt-5 · context 400000 tokens · 0.0001 USD per request on top" in text
    assert "# Qwen3 32B · context 131072 tokens" in text
    assert SECRET not in text
    assert "Made by: gradebench catalog openrouter qwen/qwen3-32b" in text


def test_the_command_refuses_a_grade_without_a_pick_before_asking(
    capsys: pytest.CaptureFixture[str],
) -> None:
    listing = OpenRouterModels(LISTED)
    with served_in_a_thread(listing) as server:
        # the large grade has two models, so it needs a pick (a grade of one model picks it)
        status = main(["catalog", "openrouter", "qwen/qwen3-32b", "--grade", "large=openai/gpt-5,openrouter/auto",
                       "--pick", "qwen/qwen3-32b", "--base-url", api_base(server)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2
    assert err.strip() == (
        "gradebench: error: grade 'large' has no pick: add --pick MODEL (one of ['openai/gpt-5', 'openrouter/auto'])"
    )
    assert listing.requests == []  # a usage error costs no request


def test_the_command_names_a_model_the_list_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    with served_in_a_thread(OpenRouterModels(LISTED)) as server:
        status = main(
            ["catalog", "openrouter", "qwen/qwen3-8b", "--pick", "qwen/qwen3-8b", "--base-url", api_base(server)]
        )
    err = capsys.readouterr().err
    assert status == 2 and "lists no model 'qwen/qwen3-8b'" in err and "qwen/qwen3-32b" in err  # the close one


def test_grades_on_the_command_line_are_weakest_first_in_the_order_given() -> None:
    assert cli_grades(["a", "b"], []) == {"standard": ["a", "b"]}
    assert cli_grades(["a"], ["large=c,d"]) == {"standard": ["a"], "large": ["c", "d"]}
    assert cli_grades(["b"], ["small=a", "medium", "large=c"]) == {"small": ["a"], "medium": ["b"], "large": ["c"]}
    assert cli_grades([], ["small=a", "large=c"]) == {"small": ["a"], "large": ["c"]}
    with pytest.raises(gb.ConfigError, match="--grade"):
        cli_grades(["a"], ["small", "large"])


async def test_an_openrouter_catalog_passes_the_check_on_its_own_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """The entries it writes are callable as they stand: the same server answers chat completions for its models."""
    monkeypatch.setenv("OPENROUTER_API_KEY", SECRET)
    chat = Fleet(
        {
            "qwen/qwen3-32b": OpenRouterEndpoint(lambda body, request: OpenRouterEndpoint.completion("ok")),
            "openai/gpt-5": JudgeEndpoint("schema"),
        }
    )
    server = await start_server(fleet=OpenRouterModels(LISTED, chat=chat))
    try:
        base = api_base(server)
        grades = {"standard": ["qwen/qwen3-32b"], "large": ["openai/gpt-5"]}
        catalog = await asyncio.to_thread(gb.catalog_from_openrouter, grades, pick=PICK, base_url=base)
        checked = await gb.check_catalog(catalog)
    finally:
        await server.close()
    assert checked.ok, checked.table()
    assert checked["openrouter/qwen/qwen3-32b"].cost == pytest.approx(0.00095)  # OpenRouter's own usage.cost
    assert checked["openrouter/openai/gpt-5"].verdict == "10/10 honoured"
    sent = chat.endpoints["qwen/qwen3-32b"].headers[0]
    assert sent["authorization"] == f"Bearer {SECRET}"  # the key from the variable the entry names


OFFLINE_ARGS = ["catalog", "openrouter", "qwen/qwen3-32b", "--grade", "large=openai/gpt-5", "--pick", "qwen/qwen3-32b"]


def test_a_saved_model_list_makes_the_catalog_offline_its_entries_at_openrouter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "models.json"
    with served_in_a_thread(OpenRouterModels(LISTED)) as server:  # saved as `curl .../models -o models.json` does
        saved.write_bytes(httpx2.get(f"{api_base(server)}/models").content)
    # nothing listens where the list would be fetched from: the saved copy is read, no request is made
    path = tmp_path / "catalog.toml"
    assert main([*OFFLINE_ARGS, "--models-file", str(saved), "-o", str(path)]) == 0
    said = capsys.readouterr()
    assert said.out == f"Wrote {path}\n" and said.err == ""
    loaded = gb.Catalog.load(path)
    assert {e.base_url for e in loaded.entries} == {DEFAULT_BASE_URL}  # not the list's place: where the models are
    assert [e.price_in for e in loaded.entries] == [pytest.approx(0.1), pytest.approx(1.25)]
    text = path.read_text()
    assert f"priced from {saved} on " in text and f"--models-file {saved} -o {path}" in text
    # and a local server's URL for both, when that is what is meant
    with served_in_a_thread(OpenRouterModels(LISTED)) as server:
        assert main([*OFFLINE_ARGS, "--base-url", api_base(server), "-o", str(path)]) == 0
    assert {e.base_url for e in gb.Catalog.load(path).entries} == {api_base(server)}


def test_a_failed_fetch_leaves_the_file_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "catalog.toml"
    path.write_text("# the catalog of yesterday\n")
    with served_in_a_thread(OpenRouterModels(LISTED, status=503)) as server:
        status = main([*OFFLINE_ARGS, "--base-url", api_base(server), "-o", str(path)])
    assert status == 2 and "the model list answered HTTP 503" in capsys.readouterr().err
    assert path.read_text() == "# the catalog of yesterday\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.toml"]  # no half-written file beside it
    assert main([*OFFLINE_ARGS, "--models-file", str(tmp_path / "missing.json"), "-o", str(path)]) == 2
    assert "missing.json: the model list cannot be read: No such file or directory" in capsys.readouterr().err


@pytest.mark.slow  # two processes of the command (about 2 s each on an idle machine)
def test_an_empty_file_a_failed_redirect_left_is_said_so(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent.parent)}
    command = f"{sys.executable} -m gradebench._cli.main"
    failed = f"{command} catalog openrouter qwen/qwen3-32b --base-url http://127.0.0.1:9/api/v1 > catalog.toml"
    done = subprocess.run(failed, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and (tmp_path / "catalog.toml").read_text() == ""  # the shell made it, empty
    checked = subprocess.run(
        f"{command} check catalog.toml", shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 2
    assert checked.stderr.strip() == (
        "gradebench: error: catalog.toml: the catalog file is empty (a command whose output went to it with > and "
        "failed leaves it so): make it again"
    )
