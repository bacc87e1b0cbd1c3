"""The ``gradebench`` command: demo, run CONFIG, rejudge DIR, sim-serve; bad input exits non-zero with one line."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import openai
import polars as pl
import pytest

import gradebench as gb
from gradebench._cli.main import main

DATA = Path(__file__).parent.parent.parent / "gradebench" / "jobs" / "data"


def test_demo_prints_the_table_and_writes_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--runs", "2", "--inputs", "2", "--out", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "order-agent · grade standard · reference sim/steady · judge sim/oracle" in out
    for entry in ("sim/steady", "sim/swift", "sim/squint", "sim/chatty", "sim/flaky"):
        assert entry in out
    runs = pl.read_parquet(tmp_path / "demo" / "runs.parquet")
    assert runs.height == 2 + 5 * 2 * 2 and runs["simulated"].all()
    controls = pl.read_parquet(tmp_path / "demo" / "controls.parquet")  # judged among the runs, kept apart
    assert controls["role"].to_list() == ["control"] * 3 and controls["score"].null_count() == 0
    written = {p.name for p in (tmp_path / "demo").iterdir()}
    assert written == {
        "runs.parquet",
        "models.parquet",
        "noise.parquet",
        "controls.parquet",
        "calls.parquet",
        "meta.json",
        "cost_quality.png",
        "cost_quality.svg",
        "cost_quality.html",
        "latency_quality.png",
        "score_distribution.png",
        "report.html",
    }
    assert (tmp_path / "demo" / "cost_quality.png").read_bytes().startswith(b"\x89PNG")
    # the judge-only report leads with what its verdicts are worth; 2 inputs settle nothing, so no label is asked
    assert out.index("what the judge-only verdicts are worth on this job (no labels yet):") < out.index("  entry ")
    assert "The labelled path: no labels asked" in out


@pytest.mark.slow
def test_the_demo_shows_the_labelled_path_and_its_corrected_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After the judge-only report, the sim's careful person answers the panel's questions (active order) on the
    entry the recommendation turns on and the reference entry, as many as the report asked for; the verdict printed
    is the label-corrected one, and the labels and the labelled report's HTML are written beside the others."""
    out = tmp_path / "demo"
    assert main(["demo", "--runs", "2", "--inputs", "8", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    labelled = gb.BenchmarkReport.read_parquet(out)  # the labels beside the report: the corrected verdict
    judged = gb.BenchmarkReport(labelled.to_runs(), labelled.meta)  # the race, before the labels
    worth = judged.worth()
    assert worth is not None and worth.pivot is not None and judged.labels_needed is not None
    asked = next(line for line in printed.splitlines() if line.startswith("  to confirm or overturn"))
    assert f"label {worth.pivot} (" in asked
    path = printed[printed.index("The labelled path:") :]
    assert path.startswith("The labelled path: the sim's careful person answers the label panel (active order)")
    assert "  after 10 labels: " in path and "what your labels say of the judge-only verdicts:" in path
    labels = gb.HumanLabels.read(out / "labels.parquet")
    assert set(judged.runs.filter(pl.col("run_id").is_in(list(labels.scores)))["entry"]) == {worth.pivot, "sim/steady"}
    assert all(c is not None for c in labels.chances.values()) and len(labels.chances) == len(labels)
    row = labelled.models.filter(entry=worth.pivot).row(0, named=True)
    assert row["verdict_basis"] == "label-corrected"
    line = next(x for x in path.splitlines() if x.startswith(f"  {worth.pivot} ") and "paired runs" in x)
    assert line.startswith(f"  {worth.pivot} {row['verdict']} ")
    assert "label-corrected on" in line and (out / "report-labelled.html").is_file()
    pick = labelled.recommend()
    assert pick is not None and f"recommendation: {pick.sentence}" in path
    if pick.entry == worth.pivot:  # 16 runs an entry: fewer labels than a verdict acts on, and the pick says so
        assert "; its labels are fewer than the 20 a side the simulation supports" in pick.sentence


def write_config(tmp_path: Path, **fields: object) -> Path:
    base = {
        "job": "selecting-agent",
        "grade": "standard",
        "runs": 2,
        "limit": 2,
        "scorer": "job",
        "inputs": str(DATA / "selection_requests.jsonl"),
        "out": str(tmp_path / "sel"),
    }
    base.update(fields)
    lines = [f"{k} = {v!r}".replace("'", '"') if not isinstance(v, int) else f"{k} = {v}" for k, v in base.items()]
    path = tmp_path / "run.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_run_config_then_rejudge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(write_config(tmp_path))]) == 0
    runs = pl.read_parquet(tmp_path / "sel" / "runs.parquet")
    assert (tmp_path / "sel" / "scorer_agreement.png").exists()
    assert runs.filter(role="candidate")["scorer"].null_count() < runs.filter(role="candidate").height
    capsys.readouterr()
    assert (
        main(
            [
                "rejudge",
                str(tmp_path / "sel"),
                "--rubric",
                "Cheapest option that meets every must-have.",
                "--out",
                str(tmp_path / "again"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "selecting-agent" in printed
    assert printed.index(f"the new report goes to {tmp_path / 'again'}") < printed.index("selecting-agent")
    again = pl.read_parquet(tmp_path / "again" / "runs.parquet")
    judged = ["score", "accuracy", "work", "reason", "judge_cost", "judge_path", "judge_attempts"]
    reused = ["cached", "spent_now"]  # the runs were taken from disk: nothing spent on them now
    assert again.drop(judged + reused).equals(runs.drop(judged + reused))
    assert again["cached"].all() and again["spent_now"].sum() == 0


def test_rejudge_finds_the_catalog_prints_the_estimate_and_writes_a_new_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(write_config(tmp_path))]) == 0
    before = (tmp_path / "sel" / "runs.parquet").read_bytes()
    capsys.readouterr()
    rubric = ["--rubric", "Cheapest option that meets every must-have."]
    assert main(["rejudge", str(tmp_path / "sel"), *rubric]) == 0  # no --catalog: the one the report recorded
    printed = capsys.readouterr().out
    first = printed.splitlines()[0]
    assert re.search(
        r"runs to judge with sim/oracle: 0 verdicts in the cache, \d+ judge calls to make, at most 0\.\d+ USD", first
    )
    assert f"the new report goes to {tmp_path / 'sel-rejudged'} (a new folder)" in first
    assert (tmp_path / "sel" / "runs.parquet").read_bytes() == before  # the report judged is left as it was
    assert (tmp_path / "sel-rejudged" / "runs.parquet").is_file()
    # the same rubric again: every verdict is in the cache, so the estimate says nothing is to be paid
    assert main(["rejudge", str(tmp_path / "sel"), *rubric, "--in-place"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert (
        "0 judge calls to make, at most 0 USD" in first
        and f"goes to {tmp_path / 'sel'} (over the report in it)" in first
    )
    assert main(["rejudge", str(tmp_path / "sel"), "--rubric", "A new rubric.", "--max-cost", "0.0000001"]) == 3
    assert "is not within --max-cost" in capsys.readouterr().err
    assert not (tmp_path / "sel-rejudged-2").exists()


def test_rejudge_of_a_report_whose_catalog_was_built_in_code_says_which_catalog_it_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gradebench.jobs import OrderAgent, load_inputs

    catalog = gb.Catalog(
        list(gb.sim.catalog()),
        grades=["small", "standard", "large"],
        picks={"standard": "sim/steady"},
        ceiling="sim/oracle",
    )
    bench = gb.Benchmark(OrderAgent, catalog=catalog, runs=1, candidates=["sim/swift"], progress=False)
    bench.set_inputs(load_inputs("orders")[:1]).run_sync()
    bench.report().to_parquet(tmp_path / "coded")
    assert main(["rejudge", str(tmp_path / "coded")]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        "it was built in code" in err and "pass --catalog with a catalog that holds its judge entry 'sim/oracle'" in err
    )


def test_the_example_run_config_is_valid() -> None:
    from gradebench._cli.main import load_config, read_inputs

    example = DATA.parent.parent.parent / "data" / "run.example.toml"
    cfg = load_config(example)
    options = cfg.options
    assert cfg.spec.job == "selecting-agent" and len(read_inputs(options.inputs, example.parent, options.limit)) == 5


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"runz": 3}, "unknown field 'runz' (did you mean 'runs'?)"),
        ({"runs": 0}, "field 'runs'"),
        ({"job": "nope"}, "job 'nope' is neither an example job"),
        ({"inputs": "/nonexistent/in.jsonl"}, "inputs file /nonexistent/in.jsonl does not exist"),
        ({"inputs": "example:nope"}, "inputs 'example:nope': unknown input set"),
        ({"grade": "huge"}, "grade must be one of"),
        ({"scorer": "vibes"}, "scorer 'vibes' is not one of"),
        ({"candidates": ["sim/nope"]}, "no entry named 'sim/nope'"),
    ],
)
def test_bad_config_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], fields, expected) -> None:
    path = write_config(tmp_path, **fields) if fields.get("candidates") is None else None
    if path is None:
        path = write_config(tmp_path)
        path.write_text(path.read_text() + 'candidates = ["sim/nope"]\n')
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gradebench: error: ") and expected in err and "\n" not in err


def test_missing_config_and_report_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "none.toml")]) == 2
    assert "none.toml: no such config file" in capsys.readouterr().err
    assert main(["rejudge", str(tmp_path / "nothing")]) == 2
    assert "runs.parquet" in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sim_serve_answers_a_plain_openai_client() -> None:
    port = free_port()
    env = {**os.environ, "GRADEBENCH_SIM_LATENCY_SCALE": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gradebench", "sim-serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="anything", max_retries=3, timeout=5)
        deadline = time.monotonic() + 60  # its start (an import of gradebench) is slow on a loaded machine
        while True:
            try:
                models = client.models.list()
                break
            except openai.APIConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        assert "sim-steady-1" in {m.id for m in models.data}
        reply = client.chat.completions.create(model="sim-steady-1", messages=[{"role": "user", "content": "Hello"}])
        assert reply.choices[0].message.content and reply.usage.total_tokens > 0
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    # said once the port is bound, with the URL it serves
    assert out.splitlines()[0] == f"gradebench simulated fleet on http://127.0.0.1:{port}/v1 (Ctrl-C stops)"


def test_sim_serve_on_a_port_in_use_is_one_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["sim-serve", "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.startswith(f"gradebench: error: cannot serve on 127.0.0.1:{port}: ") and "in use" in err


def test_verbose_after_the_sub_command_logs_gradebenchs_calls_only(tmp_path: Path) -> None:
    env = {**os.environ, "GRADEBENCH_CACHE": str(tmp_path / "cache"), "GRADEBENCH_SIM_LATENCY_SCALE": "0"}
    script = (
        "import logging, sys; from gradebench._cli.main import main\n"
        "code = main(sys.argv[1:])\n"
        "logging.getLogger('some.library').info('a library line that -v must not show')\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "demo", "-v", "--runs", "1", "--inputs", "1", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,  # a failing run's limit only: on a loaded machine this demo took over 120 s
    )
    assert done.returncode == 0, done.stderr
    assert "gradebench: call entry=sim/steady role=reference" in done.stderr
    assert "a library line" not in done.stderr and "httpx" not in done.stderr


def test_every_command_says_what_it_does_and_its_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    for command, expected in [
        ("demo", "(default: 10)"),
        ("rejudge", "(default: the catalog the report recorded)"),
        ("sim-serve", "(default: 8000)"),
        ("run", "scorer       job (the job's own)"),
    ]:
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert " ".join(expected.split()) in " ".join(text.split()), command
        assert text.split("\n\n")[1].strip(), f"{command} --help has no description"
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    fields = capsys.readouterr().out
    assert all(f"  {name} " in fields for name in ("job", "catalog", "grade", "inputs", "limit", "out", "concurrency"))


def test_demo_says_when_it_has_fewer_inputs_than_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gradebench.jobs import load_inputs

    available = len(load_inputs("orders"))
    assert main(["demo", "--inputs", "100", "--runs", "1", "--out", str(tmp_path / "d")]) == 0
    printed = capsys.readouterr().out
    assert f"--inputs 100: the order agent has {available} example inputs; using all of them" in printed
    assert pl.read_parquet(tmp_path / "d" / "runs.parquet")["input_id"].n_unique() == available


def test_the_estimate_is_printed_before_the_race_and_max_cost_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "d"
    assert main(["demo", "--runs", "1", "--inputs", "2", "--max-cost", "0.000001", "--out", str(out)]) == 3
    captured = capsys.readouterr()
    assert "estimate: 10 runs" in captured.out and "is not within --max-cost" in captured.err
    assert not out.exists()  # nothing raced, nothing written
    assert main(["demo", "--runs", "auto", "--inputs", "8", "--budget", "0.05", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.index("estimate:") < printed.index("order-agent · grade standard")
    assert "raced to a verdict" in printed
    runs = pl.read_parquet(out / "runs.parquet")
    spent = runs["spent_now"].sum() + pl.read_parquet(out / "calls.parquet").filter(role="judge")["cost"].sum()
    assert spent <= 0.05


def test_sim_serve_help_lists_the_model_ids_it_serves(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sim-serve", "--help"])
    printed = capsys.readouterr().out
    for entry in gb.sim.catalog():
        assert re.search(rf"^  {re.escape(entry.model)} +{re.escape(entry.name)} +{entry.grade} ", printed, re.M)


def test_main_in_process_leaves_the_callers_logging_as_it_found_it(tmp_path: Path) -> None:
    """A notebook or a test that calls main() keeps its own log level and handlers: a -v run left gradebench's logger
    at INFO for the rest of the process (every later call logged, and kept by whatever captures logs)."""
    import logging

    own = logging.getLogger("gradebench")
    before = (own.level, list(own.handlers))
    assert main(["-v", "check", str(tmp_path / "missing.toml")]) == 2
    assert (own.level, list(own.handlers)) == before


def test_at_80_columns_every_line_fits_and_nothing_is_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    for command in ("demo", "run", "rejudge", "compare", "sim-serve", "catalog", "check"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        wide = [line for line in capsys.readouterr().out.splitlines() if len(line) > 80]
        assert not wide, f"{command} --help:\n" + "\n".join(wide)
    monkeypatch.chdir(tmp_path)
    out = Path("reports-of-the-order-agent") / "demo"
    assert main(["demo", "--runs", "1", "--inputs", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    wide = [line for line in printed.splitlines() if len(line) > 80]
    assert not wide, "\n".join(wide)
    words = " ".join(printed.split())
    assert "estimate: 10 runs · 30 calls + 13 judge calls" in words  # the estimate's line, wrapped between words
    assert "(negative controls: their verdicts alone)" in words
    assert "candidate runs are taken to make the reference's calls with its tokens" in words
    for written in out.iterdir():  # every file written is named, whole, on some line
        assert written.name in words, written.name
    assert f"Wrote {out}/runs.parquet, models.parquet," in words and f"Wrote {out}/cost_quality.png," in words
    assert f"Wrote {out / 'report.html'}: the whole report in one file, to open offline in a browser" in words
