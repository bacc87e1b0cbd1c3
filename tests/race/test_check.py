"""The preflight check over loopback HTTP through gradebench's own client and call path: a good entry, an endpoint
that 404s the model, a model family that rejects ``max_tokens`` (and a temperature), a key variable unset, and a
judge that answers a valid verdict; the table's rows, the catalog lines it suggests, its cost and its exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gradebench as gb
from gradebench._base.numbers import money
from gradebench._race.preflight import PROBE_PARAMS

from ..catalog.test_openrouter import served_in_a_thread
from ..loopback import answers
from ..providers import Fleet, JudgeEndpoint, OpenAIEndpoint, serve

SECRET = "sk-check-0123456789abcdef"


def endpoints() -> dict[str, OpenAIEndpoint | JudgeEndpoint]:
    return {
        "good-1": OpenAIEndpoint(answers("ok")),
        "reasoner-1": OpenAIEndpoint(answers("ok"), reasoning_family=True),
        "nokey-1": OpenAIEndpoint(answers("ok")),
        "judge-1": JudgeEndpoint("schema"),
    }  # gone-1 is served by no endpoint: the server answers OpenAI's 404 model_not_found


def catalog_toml(base_url: str) -> str:
    def entry(name: str, model: str, grade: str = "standard", key: str = "GB_CHECK_KEY", extra: str = "") -> str:
        return (
            f'[[entries]]\nname = "{name}"\nmodel = "{model}"\ngrade = "{grade}"\nbase_url = "{base_url}"\n'
            f'api_key_env = "{key}"\nprice_in = 1.0\nprice_out = 2.0\nmax_retries = 0\n{extra}\n'
        )

    return (
        'grades = ["standard", "large"]\nceiling = "acme/judge"\n[picks]\nstandard = "acme/good"\n\n'
        + entry("acme/good", "good-1")
        + entry("acme/gone", "gone-1")
        + entry("acme/reasoner", "reasoner-1")
        + entry("acme/nokey", "nokey-1", key="GB_CHECK_UNSET_KEY")
        + entry("acme/judge", "judge-1", grade="large")
    )


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GB_CHECK_KEY", SECRET)
    monkeypatch.delenv("GB_CHECK_UNSET_KEY", raising=False)


async def test_each_entry_gets_a_row_that_says_what_to_do(tmp_path: Path, keys: None) -> None:
    fleet = endpoints()
    async with serve(fleet) as base_url:
        path = tmp_path / "catalog.toml"
        path.write_text(catalog_toml(base_url))
        checked = await gb.check_catalog(gb.Catalog.load(path))
    assert [r.entry for r in checked.rows] == ["acme/good", "acme/gone", "acme/reasoner", "acme/nokey", "acme/judge"]
    assert not checked.ok and checked.exit_status == 1

    good = checked["acme/good"]
    assert (good.key, good.answers, good.params, good.verdict, good.ok) == ("set", "yes", "ok", "-", True)
    assert good.cost == pytest.approx((19 * 1.0 + 10 * 2.0) / 1e6)  # the completion's usage at the catalog's prices
    assert good.latency_s is not None and good.calls == 1
    assert fleet["good-1"].bodies == [
        {"model": "good-1", "messages": [{"role": "user", "content": "Reply with the single word: ok"}], **PROBE_PARAMS}
    ]

    gone = checked["acme/gone"]
    assert (gone.answers, gone.params, gone.ok) == ("HTTP 404", "-", False)
    assert gone.todo == (
        f"the endpoint does not serve model 'gone-1' at {base_url}: check the entry's model and base_url (HTTP 404 "
        "after 1 attempt: The model `gone-1` does not exist)",
    )

    reasoner = checked["acme/reasoner"]
    assert (reasoner.answers, reasoner.params, reasoner.ok) == ("yes", "rejects max_tokens", False)
    assert reasoner.fixes == ('rename_params = { max_tokens = "max_completion_tokens" }',)
    assert reasoner.todo == (
        "add to entry 'acme/reasoner': rename_params = { max_tokens = \"max_completion_tokens\" }",
    )
    sent = fleet["reasoner-1"].bodies
    assert [("max_tokens" in b, "max_completion_tokens" in b) for b in sent] == [(True, False), (False, True)]
    assert reasoner.calls == 2 and reasoner.latency_s is not None  # the fix was tried, and is enough

    nokey = checked["acme/nokey"]
    assert (nokey.key, nokey.answers, nokey.calls) == ("unset", "-", 0)
    assert nokey.todo == ("environment variable GB_CHECK_UNSET_KEY is not set: set it and check again.",)
    assert fleet["nokey-1"].bodies == []  # nothing is sent without its key

    judge = checked["acme/judge"]
    assert (judge.answers, judge.params, judge.verdict, judge.ok) == ("yes", "ok", "10/10 honoured", True)
    asked = fleet["judge-1"].bodies[-1]  # the verdict probe: the judge's own prompt, schema and params
    assert asked["response_format"]["json_schema"]["name"] == "verdict" and asked["temperature"] == 0
    assert "blind judge" in asked["messages"][0]["content"]

    total = sum(r.cost or 0.0 for r in checked.rows)
    assert checked.costs == {"USD": pytest.approx(total)}
    assert f"cost of the check {money(total)} USD · 2 of 5 entries pass, 3 need attention" in checked.table()


async def test_the_check_stores_nothing_and_asks_again(tmp_path: Path, keys: None) -> None:
    fleet = endpoints()
    async with serve(fleet) as base_url:
        path = tmp_path / "catalog.toml"
        path.write_text(catalog_toml(base_url))
        catalog = gb.Catalog.load(path)
        await gb.check_catalog(catalog, grades=["standard"])
        await gb.check_catalog(catalog, grades=["standard"])
    assert len(fleet["good-1"].bodies) == 2  # asked twice: an answer from the cache would not say it answers now
    assert not (tmp_path / "cache").exists()  # GRADEBENCH_CACHE (conftest): no race will ever be served a probe
    labels = {h["x-gradebench-benchmark"] for h in fleet["good-1"].headers}
    assert labels == {"preflight"}


async def test_a_ceiling_of_the_newer_openai_families_gets_both_lines(tmp_path: Path, keys: None) -> None:
    """The judge's temperature 0 (judge_params) is refused too: the verdict probe finds it, after the params probe
    found max_tokens, and the row lists both lines, each tried."""

    def answer(body: dict, request: object) -> dict:
        judged = body["messages"][0]["role"] == "system"
        text = '{"accuracy": 7, "work": 3, "reason": "Same answer."}' if judged else "ok"
        return OpenAIEndpoint.completion(text)

    fleet = {"good-1": OpenAIEndpoint(answers("ok")), "judge-1": OpenAIEndpoint(answer, reasoning_family=True)}
    async with serve(fleet) as base_url:
        text = catalog_toml(base_url).split("[[entries]]")
        path = tmp_path / "catalog.toml"
        path.write_text("[[entries]]".join([text[0], text[1], text[5]]))
        checked = await gb.check_catalog(gb.Catalog.load(path), grades=["large"])
    assert [r.entry for r in checked.rows] == ["acme/judge"]
    judge = checked["acme/judge"]
    assert (judge.params, judge.verdict) == ("rejects max_tokens, temperature", "10/10 honoured")
    assert judge.fixes == ('rename_params = { max_tokens = "max_completion_tokens" }', 'drop_params = ["temperature"]')
    last = fleet["judge-1"].bodies[-1]
    assert "temperature" not in last and last["response_format"]["type"] == "json_schema"
    assert checked.exit_status == 1


def test_the_command_prints_the_table_and_exits_1_on_a_failure(
    tmp_path: Path, keys: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from gradebench._cli.main import main

    fleet = endpoints()
    with served_in_a_thread(Fleet(fleet)) as server:
        path = tmp_path / "catalog.toml"
        path.write_text(catalog_toml(server.base_url))
        failing = main(["check", str(path)])
        printed = capsys.readouterr().out
        passing = main(["check", str(path), "--grade", "large"])  # the judge alone: it passes
        alone = capsys.readouterr().out
    assert failing == 1 and passing == 0
    lines = printed.splitlines()
    assert lines[0] == f"check of {path.resolve()} · 5 entries · judge acme/judge"
    assert lines[1].split() == ["entry", "key", "answers", "params", "verdict", "latency", "cost", "what", "to", "do"]
    rows = {line.split()[0]: line for line in lines[2:7]}
    assert rows["acme/good"].split()[:5] == ["acme/good", "set", "yes", "ok", "-"]
    assert rows["acme/good"].endswith(" -")
    assert rows["acme/gone"].split()[:4] == ["acme/gone", "set", "HTTP", "404"]
    assert rows["acme/reasoner"].split()[:5] == ["acme/reasoner", "set", "yes", "rejects", "max_tokens"]
    assert rows["acme/reasoner"].endswith('rename_params = { max_tokens = "max_completion_tokens" }')
    assert rows["acme/nokey"].split()[:3] == ["acme/nokey", "unset", "-"]
    assert "10/10 honoured" in rows["acme/judge"]
    assert "2 of 5 entries pass, 3 need attention" in lines[7]
    assert SECRET not in printed  # the key is read, sent, and written nowhere
    assert "1 of 1 entries pass" in alone


def test_an_unknown_grade_is_one_line_and_status_2(
    tmp_path: Path, keys: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from gradebench._cli.main import main

    path = tmp_path / "catalog.toml"
    path.write_text(catalog_toml("http://127.0.0.1:9/v1"))
    assert main(["check", str(path), "--grade", "huge"]) == 2
    assert "grade must be one of ['standard', 'large'], got 'huge'" in capsys.readouterr().err


def test_check_sync_from_plain_code(keys: None) -> None:
    checked = gb.check_catalog_sync(gb.sim.catalog(latency_scale=0), grades=["small"])
    assert checked.ok and [r.entry for r in checked.rows] == ["sim/pico", "sim/mini", "sim/nano", "sim/oracle"]
    assert checked["sim/oracle"].verdict.startswith("10/10")


async def test_an_endpoint_nobody_answers_is_unreachable(tmp_path: Path, keys: None) -> None:
    path = tmp_path / "catalog.toml"
    path.write_text(catalog_toml("http://127.0.0.1:9/v1"))  # the discard port: nothing listens
    checked = await gb.check_catalog(gb.Catalog.load(path), grades=["standard"])
    good = checked["acme/good"]
    assert (good.answers, good.params, good.latency_s) == ("unreachable", "-", None)
    assert good.todo[0].startswith("nothing answers at http://127.0.0.1:9/v1: check base_url (connection to ")
    assert checked["acme/judge"].verdict == "not asked"


async def test_a_named_param_is_dropped_beside_what_the_entry_drops_and_an_unnamed_400_is_tried_bare(
    tmp_path: Path, keys: None
) -> None:
    def picky(body: dict, request: object) -> object:
        if "seed" in body:
            return OpenAIEndpoint.error(400, "Unrecognized request argument supplied: seed", param="seed")
        return OpenAIEndpoint.completion("ok")

    def vague(body: dict, request: object) -> object:
        if len(body) > 2:  # anything beyond model and messages
            return OpenAIEndpoint.error(400, "Invalid request.")
        return OpenAIEndpoint.completion("ok")

    fleet = {"good-1": OpenAIEndpoint(picky), "gone-1": OpenAIEndpoint(vague), "judge-1": JudgeEndpoint("schema")}
    async with serve(fleet) as base_url:
        text = catalog_toml(base_url).split("[[entries]]")
        extra = 'params = { seed = 1, top_p = 0.5 }\ndrop_params = ["logprobs"]\n'
        path = tmp_path / "catalog.toml"
        path.write_text("[[entries]]".join([text[0], text[1] + extra, text[2] + extra, text[5]]))
        checked = await gb.check_catalog(gb.Catalog.load(path))
    picked = checked["acme/good"]
    assert (picked.params, picked.fixes) == ("rejects seed", ('drop_params = ["logprobs", "seed"]',))
    assert fleet["good-1"].bodies[-1] == {
        "model": "good-1",
        "messages": [{"role": "user", "content": "Reply with the single word: ok"}],
        "top_p": 0.5,
        **PROBE_PARAMS,
    }
    vaguely = checked["acme/gone"]
    assert (vaguely.answers, vaguely.params, vaguely.fixes) == ("yes", "rejected", ())
    assert vaguely.todo == (
        "it answers a bare request but refuses the one with the entry's params (seed, top_p, and max_tokens): HTTP 400 "
        "after 1 attempt: Invalid request.",
    )


def test_the_old_catalog_methods_are_thin_aliases_that_say_what_to_use(keys: None) -> None:
    catalog = gb.sim.catalog(latency_scale=0)
    with pytest.warns(DeprecationWarning, match=r"gradebench\.check_catalog_sync\(catalog\)"):
        checked = catalog.check_sync(grades=["small"])  # type: ignore[attr-defined]
    again = gb.check_catalog_sync(catalog, grades=["small"])
    assert [(r.entry, r.ok) for r in checked.rows] == [(r.entry, r.ok) for r in again.rows] and checked.ok
    with pytest.warns(DeprecationWarning, match=r"gradebench\.check_catalog\(catalog\)"):
        pending = catalog.check(grades=["small"])  # type: ignore[attr-defined]
    pending.close()  # a coroutine, as before; not awaited here
    with pytest.warns(DeprecationWarning, match=r"gradebench\.catalog_from_openrouter\(\)"):
        with pytest.raises(ValueError):
            gb.Catalog.from_openrouter({}, pick="x")  # type: ignore[attr-defined]


def check_command(path: Path, columns: str = "80") -> subprocess.CompletedProcess[str]:
    """``gradebench check FILE`` in the file's folder, as a user types it (the path pytest makes is longer than 80
    columns under xdist: no layout can fit one word that long), in a process of its own, its output to a pipe at
    ``COLUMNS``."""
    env = {**os.environ, "COLUMNS": columns, "GB_CHECK_KEY": SECRET}
    command = [sys.executable, "-m", "gradebench._cli.main", "check", path.name]
    return subprocess.run(command, env=env, cwd=path.parent, capture_output=True, text=True, timeout=120)


PROXY_ERROR = (
    "litellm.BadRequestError: OpenAIException - Error code: 400\n"
    "Received Model Group=proxy-1\nAvailable Model Group Fallbacks=None"
)


def test_an_odd_entry_is_a_row_a_lenient_judge_a_finding_and_every_line_fits(tmp_path: Path) -> None:
    """An entry that answers the probe with a tool call is a row of its own (one call, not a tool loop), a judge
    that gives 7/10 to identical runs does not pass, and a proxy's multi-line error is kept whole, in 80 columns."""
    tool_call = OpenAIEndpoint.tool_call("lookup_order", {"order_id": "A-1001"})
    fleet = {
        "good-1": OpenAIEndpoint(answers("ok")),
        "gone-1": OpenAIEndpoint(lambda body, request: OpenAIEndpoint.error(400, PROXY_ERROR)),
        "reasoner-1": OpenAIEndpoint(answers(None, tool_calls=[tool_call])),
        "judge-1": JudgeEndpoint("schema", verdict={"accuracy": 5, "work": 2, "reason": "Same answer."}),
    }
    with served_in_a_thread(Fleet(fleet)) as server:
        path = tmp_path / "catalog.toml"
        text = catalog_toml(server.base_url).split("[[entries]]")
        path.write_text("[[entries]]".join([text[0], text[1], text[2], text[3], text[5]]))
        done = check_command(path)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("check of") and "· 4 entries · judge acme/judge" in done.stdout
    assert max(len(line) for line in lines) <= 80, "\n".join(line for line in lines if len(line) > 80)
    words = " ".join(done.stdout.split())
    tooly = next(line for line in lines if line.startswith("acme/reasoner"))
    assert tooly.split()[:5] == ["acme/reasoner", "set", "tool", "call", "ok"]
    assert "it answered the one-line request with a tool call though no tool was offered" in words
    assert len(fleet["reasoner-1"].bodies) == 1  # one call: not a tool loop of a job's max_steps
    judge = next(line for line in lines if line.startswith("acme/judge"))
    assert "7/10 honoured" in judge
    assert "the judge gave 7/10 to a run identical to the reference" in words
    assert "a margin of 1 point passes what a judge using the whole scale would read as 1.4" in words
    assert " ".join(PROXY_ERROR.split()) in words  # the whole error, its lines joined
    assert "1 of 4 entries pass, 3 need attention" in words


def test_a_pipe_with_no_columns_keeps_one_row_a_line(tmp_path: Path) -> None:
    fleet = {"good-1": OpenAIEndpoint(lambda body, request: OpenAIEndpoint.error(400, PROXY_ERROR))}
    with served_in_a_thread(Fleet(fleet)) as server:
        path = tmp_path / "catalog.toml"
        path.write_text(catalog_toml(server.base_url))
        done = check_command(path, columns="")
    rows = [line for line in done.stdout.splitlines() if line.startswith("acme/")]
    assert [r.split()[0] for r in rows] == ["acme/good", "acme/gone", "acme/reasoner", "acme/nokey", "acme/judge"]
    assert rows[0].endswith(" ".join(PROXY_ERROR.split()))  # the error's lines joined, on its row


async def test_a_judge_that_answers_its_verdict_with_a_tool_call_is_its_row(tmp_path: Path, keys: None) -> None:
    tool_call = OpenAIEndpoint.tool_call("grade", {"score": 10})

    def answer(body: dict, request: object) -> dict:
        judged = body["messages"][0]["role"] == "system"
        return OpenAIEndpoint.completion(None, tool_calls=[tool_call]) if judged else OpenAIEndpoint.completion("ok")

    fleet = {"good-1": OpenAIEndpoint(answers("ok")), "judge-1": OpenAIEndpoint(answer)}
    async with serve(fleet) as base_url:
        text = catalog_toml(base_url).split("[[entries]]")
        path = tmp_path / "catalog.toml"
        path.write_text("[[entries]]".join([text[0], text[1], text[5]]))
        checked = await gb.check_catalog(gb.Catalog.load(path))
    judge = checked["acme/judge"]
    assert (judge.answers, judge.verdict, judge.ok) == ("yes", "invalid", False)
    assert judge.todo == ("the judge answered the verdict probe with a tool call, not a verdict",)
    assert checked["acme/good"].ok
