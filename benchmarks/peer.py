"""gradebench side by side with a peer, Inspect AI, on one loopback server: N samples of one model call plus one judge
call each, both tools in fresh processes of their own, in turn.

    python benchmarks/peer.py --n 2000 --rounds 3 --latency-ms 50 --concurrency 100
    python benchmarks/peer.py --inspect-python /path/to/venv/bin/python ...
    python benchmarks/peer.py --gradebench-python /path/to/plain-venv/bin/python ...   # gradebench's side there

The server is a real HTTP server in its own process (gradebench.sim's loopback server, answering every request with
one fixed reply per model after ``--latency-ms``); a second one answers at once. It counts the requests it gets per
model, with their body and prompt sizes, so the two tools are checked to do the same work. Each round measures, each
tool in turn (which one goes first alternates by round):

- race wall at ``--latency-ms`` and with no latency: a fresh process racing N samples on a fresh cache — gradebench's
  ``Benchmark`` with ``runs=N`` (a job of one model call; the judge scores each run) and ``to_parquet``; Inspect's
  ``eval`` of a Task of N samples (``generate()``, ``model_graded_qa``) through its ``openai-api`` provider
  (``benchmarks/peer_inspect.py``), ``max_connections`` and ``max_samples`` at ``--concurrency``;
- CPU per call: the racing process's CPU time (user + system, import included) over the requests the server got;
- fully cached rerun: the same race again on its cache, in a fresh process (gradebench's cache; Inspect's
  ``cache=`` option, which the first race ran with too);
- judge-only rerun: ``gradebench rejudge`` on the race's report and cache, against ``inspect score`` on the race's
  log, each a fresh process of the command line, both under a rubric one word changed (the same length), so every
  judge call is made again and nothing else is.

Wall times are whole processes (start to exit, imports included). Inspect AI is not a gradebench dependency: it is
installed (``pip install inspect-ai==VERSION``) into a venv of its own under ``--cache-dir`` unless
``--inspect-python`` names one. Both races judge under a rubric of one line; on Inspect's side its grading
instructions are padded so that the judge prompt is as long as gradebench's (measured server-side on the first
race). Prints the load average at the start and the end, each measurement as it goes (stderr), the table of medians
(ratio: Inspect's over gradebench's), the requests the server got, anything that differs in the work done, and one
JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

INSPECT_VERSION = "0.3.285"
RUNNER_MODEL, JUDGE_MODEL = "runner-1", "judge-1"
ANSWER = "A one-line answer."
VERDICT = '{"accuracy": 7, "work": 3, "reason": "It answers the question in one line."}'
GRADE = "It answers the question in one line.\n\nGRADE: C"
PROMPT = "Question {i:06d}: one line, please."
"""The user message: gradebench's runs send it with i = 0, Inspect's samples with their index (same length)."""
RUBRIC = "Judge whether it answers the question in one line."
RUBRIC_AGAIN = "Judge whether it answers the question in one word."
"""A judge-only rerun judges again under a rubric one word changed (the same length), so no judge call is cached."""
GRADE_ASK = "After assessing the submitted answer reply with 'GRADE: $LETTER' where LETTER is one of CI."
"""No commas in Inspect's instructions: ``inspect score -S`` splits a value at commas into a list."""
INSPECT_TEMPLATE_CHARS = 216
"""Characters of Inspect 0.3.285's model_graded_qa template around the question, answer, criterion and instructions."""
API_KEY_ENV = "LOOPBACK_API_KEY"
KINDS = ("race", "race_no_latency", "cached", "rejudge")
SIDES = ("gradebench", "inspect")


# ------------------------------------------------------------------------------------------------- the server


class CountingModels:
    """What the loopback server answers: one fixed chat completion per model after ``latency_s``, the judge's in
    the shape asked for (gradebench's verdict JSON when the request has a ``response_format``, Inspect's
    ``GRADE: C`` otherwise). ``GET /v1/_stats`` gives the counts since ``POST /v1/_reset``."""

    def __init__(self, latency_s: float):
        self.latency_s = latency_s
        self.stats: dict[str, dict[str, int]] = {}

    async def handle(self, request: Any) -> Any:
        import httpx2

        path = request.url.path
        if path.endswith("/_stats"):
            return httpx2.Response(200, json=self.stats)
        if path.endswith("/_reset"):
            self.stats = {}
            return httpx2.Response(200, json={})
        if not path.endswith("/chat/completions"):  # e.g. gradebench's GET /props of a local server: none here
            return httpx2.Response(404, json={"error": {"message": f"no {path} here"}})
        raw = await request.aread()
        body = json.loads(raw)
        model = body.get("model", "?")
        seen = self.stats.setdefault(model, {"requests": 0, "body_bytes": 0, "prompt_chars": 0})
        seen["requests"] += 1
        seen["body_bytes"] += len(raw)
        seen["prompt_chars"] += prompt_chars(body.get("messages", []))
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if model == JUDGE_MODEL:
            content = VERDICT if "response_format" in body else GRADE
        else:
            content = ANSWER
        return httpx2.Response(200, json=completion(model, content))


def prompt_chars(messages: list[dict[str, Any]]) -> int:
    """Characters of text in a chat request's messages (a content string, or its text parts)."""
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(part.get("text", "")) for part in content if isinstance(part, dict))
    return total


def completion(model: str, content: str) -> dict[str, Any]:
    """An OpenAI chat completion object (https://platform.openai.com/docs/api-reference/chat/object)."""
    return {
        "id": "chatcmpl-peer",
        "object": "chat.completion",
        "created": 1741570283,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
    }


async def serve(latency_ms: float) -> None:
    """Serve `CountingModels` on a free loopback port; its base URL on stdout says it is ready."""
    from gradebench.sim import start_server

    server = await start_server(fleet=CountingModels(latency_ms / 1000))  # type: ignore[arg-type]
    print(server.base_url, flush=True)
    await server.serve_forever()


class Server:
    """A `serve` process: started, read for its base URL, asked for its counts, stopped."""

    def __init__(self, latency_ms: float):
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(latency_ms)], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise SystemExit(f"the loopback server did not start (exit {self.process.poll()})")

    def ask(self, what: str) -> dict[str, dict[str, int]]:
        import urllib.request

        method = "GET" if what == "_stats" else "POST"
        with urllib.request.urlopen(urllib.request.Request(f"{self.base_url}/{what}", method=method)) as answer:
            return json.loads(answer.read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


# -------------------------------------------------------------------------------------------- gradebench's side


def catalog_toml(base_url: str) -> str:
    """A catalog of the runner and the judge on the loopback server, for the race and for ``gradebench rejudge``."""
    entry = (
        '[[entries]]\nname = "{name}"\nmodel = "{model}"\ngrade = "{grade}"\nbase_url = "{url}"\n'
        'api_key_env = "{key}"\nprice_in = 0.1\nprice_out = 0.4\ncurrency = "USD"\nmax_retries = 0\n'
    )
    return (
        'grades = ["standard", "large"]\nceiling = "loopback/judge"\n\n[picks]\nstandard = "loopback/runner"\n\n'
        + entry.format(name="loopback/runner", model=RUNNER_MODEL, grade="standard", url=base_url, key=API_KEY_ENV)
        + "\n"
        + entry.format(name="loopback/judge", model=JUDGE_MODEL, grade="large", url=base_url, key=API_KEY_ENV)
    )


async def one_call(input: dict, seat: Any) -> str:
    """Answer the question in one line."""
    return (await seat.chat([{"role": "user", "content": PROMPT.format(i=0)}])).text


def gradebench_race(catalog: Path, n: int, concurrency: int, cache: Path, out: Path) -> dict[str, Any]:
    """What a gradebench racing process does: race N runs, log the table, write the report. No negative controls:
    this judge answers the same verdict whatever it reads (and Inspect's scorer plants none)."""
    import gradebench as gb

    started = time.perf_counter()
    bench = gb.Benchmark(
        one_call,
        runs=n,
        catalog=gb.Catalog.load(catalog),
        grade="standard",
        salt="peer",
        cache=cache,
        concurrency=concurrency,
        controls=0,
        progress=False,
    )
    bench.set_input({"id": "q"}).set_spec(rubric=RUBRIC)
    asyncio.run(bench.run())
    report = bench.report()
    report.table()
    report.to_parquet(out)
    runs = report.runs
    failed = runs.filter(~runs["ok"]).height + runs["judge_error"].drop_nulls().len()
    if failed:
        raise SystemExit(f"{failed} runs or verdicts failed; the figures would be meaningless")
    return {"wall_s": round(time.perf_counter() - started, 3), "cached": bool(runs["cached"].all())}


# ------------------------------------------------------------------------------------------------ the rounds


class Peer:
    """The commands of one measurement for each tool, run as fresh processes, with the work the server saw."""

    def __init__(self, args: argparse.Namespace, inspect_python: str, folder: Path, servers: dict[str, Server]):
        self.args, self.inspect_python, self.folder, self.servers = args, inspect_python, folder, servers
        self.instructions: dict[str, Path] = {}  # Inspect's padded grading instructions, once gradebench's are known

    def command(self, side: str, kind: str, round_: int) -> tuple[list[str], dict[str, str], Server]:
        args, folder = self.args, self.folder
        server = self.servers["none" if kind == "race_no_latency" else "latency"]
        stem = folder / f"{side}-{'zero' if kind == 'race_no_latency' else 'timed'}-{round_}"
        env = {**os.environ, API_KEY_ENV: "peer", "LOOPBACK_BASE_URL": server.base_url}
        env["INSPECT_CACHE_DIR"] = str(stem.with_name(f"{stem.name}-inspect-cache"))
        size = ["--n", str(args.n), "--concurrency", str(args.concurrency)]
        if side == "gradebench":
            catalog = stem.with_name(stem.name + "-catalog.toml")
            catalog.write_text(catalog_toml(server.base_url))
            python = args.gradebench_python or sys.executable
            race = [python, __file__, "--gradebench-race", str(catalog), *size]
            race += ["--cache", str(stem / "cache"), "--out", str(stem / "report")]
            if kind == "rejudge":
                out = stem / f"rejudged-{round_}"
                rejudge = [python, "-m", "gradebench", "rejudge", str(stem / "report"), "--catalog"]
                again = ["--rubric", RUBRIC_AGAIN, "--cache", str(stem / "cache"), "--out", str(out)]
                return [*rejudge, str(catalog), *again], env, server
            return race, env, server
        if kind == "rejudge":
            log = json.loads((stem / "inspect.json").read_text())["log"]
            inspect = str(Path(self.inspect_python).with_name("inspect"))
            score = [inspect, "score", log, "--scorer", "model_graded_qa", "-S", "model=openai-api/loopback/judge-1"]
            if self.instructions:
                score += ["-S", f"instructions={json.dumps(self.instructions['rejudge'].read_text())}"]  # YAML
            return [*score, "--action", "overwrite", "--output-file", str(stem / "rescored.eval")], env, server
        here = Path(__file__).with_name("peer_inspect.py")
        run = [self.inspect_python, str(here), *size, "--log-dir", str(stem / "logs"), "--cache"]
        if self.instructions:
            run += ["--instructions-file", str(self.instructions["race"])]
        return run, env, server

    def measure(self, side: str, kind: str, round_: int) -> dict[str, Any]:
        command, env, server = self.command(side, kind, round_)
        server.ask("_reset")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            said = f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
            raise SystemExit(f"{side} {kind} failed (exit {done.returncode}):\n{said}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        work = server.ask("_stats")
        requests = sum(m["requests"] for m in work.values())
        said = done.stdout.strip().splitlines()[-1] if kind != "rejudge" else "{}"
        if side == "inspect" and kind == "race":  # the log the judge-only rerun scores again
            stem = self.folder / f"inspect-timed-{round_}"
            stem.mkdir(parents=True, exist_ok=True)
            (stem / "inspect.json").write_text(said)
        return {
            "side": side,
            "kind": kind,
            "round": round_,
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "requests": requests,
            "cpu_ms_per_call": round(cpu / requests * 1000, 3) if requests else None,
            "work": work,
            "said": json.loads(said),
        }

    def pad_instructions(self, gradebench_judge_chars: float) -> None:
        """Inspect's grading instructions for the race and, one word changed, for the judge-only rerun: padded so
        that its judge prompt is as long as gradebench's."""
        filler = " Judge whether the submission answers the question asked accurately and in one line."
        needed = round(gradebench_judge_chars) - INSPECT_TEMPLATE_CHARS - len(PROMPT.format(i=0)) - 2 * len(ANSWER)
        pad = (filler * (needed // len(filler) + 1))[: max(0, needed - len(GRADE_ASK) - 2)]
        self.instructions = {}
        for kind, said in (("race", RUBRIC), ("rejudge", RUBRIC_AGAIN)):
            self.instructions[kind] = self.folder / f"instructions-{kind}.txt"
            self.instructions[kind].write_text(f"{said}{pad[len(said) :]}\n\n{GRADE_ASK}")


def rounds(args: argparse.Namespace, inspect_python: str) -> list[dict[str, Any]]:
    taken: list[dict[str, Any]] = []
    servers = {"latency": Server(args.latency_ms), "none": Server(0.0)}
    try:
        with tempfile.TemporaryDirectory(prefix="peer-") as tmp:
            peer = Peer(args, inspect_python, Path(tmp), servers)
            for round_ in range(args.rounds):
                order = SIDES if round_ % 2 == 0 else SIDES[::-1]  # the first round's gradebench race sizes the pad
                for kind in KINDS:
                    for side in order:
                        one = peer.measure(side, kind, round_)
                        taken.append(one)
                        print(json.dumps(one), file=sys.stderr, flush=True)
                        if not peer.instructions and side == "gradebench" and kind == "race":
                            judge = one["work"][JUDGE_MODEL]
                            peer.pad_instructions(judge["prompt_chars"] / judge["requests"])
    finally:
        for server in servers.values():
            server.stop()
    return taken


# ------------------------------------------------------------------------------------------------ the Inspect venv


def inspect_venv(cache_dir: Path) -> str:
    """The Python of a venv holding inspect-ai==INSPECT_VERSION under ``cache_dir``, made on first use."""
    venv = cache_dir / f"inspect-ai-{INSPECT_VERSION}"
    python = venv / "bin" / "python"
    if python.exists() and has_inspect(str(python)):
        return str(python)
    print(f"installing inspect-ai=={INSPECT_VERSION} into {venv} (once)", file=sys.stderr, flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"inspect-ai=={INSPECT_VERSION}", "openai"],
            check=True,
            capture_output=True,
            text=True,
        )
    except subprocess.CalledProcessError as exc:
        raise SystemExit(
            f"could not install inspect-ai=={INSPECT_VERSION} into {venv} ({' '.join(exc.cmd)} exited "
            f"{exc.returncode}):\n{(exc.stderr or '')[-2000:]}\nInstall it yourself and pass --inspect-python PATH."
        ) from None
    return str(python)


def has_inspect(python: str) -> bool:
    """Whether that Python has inspect_ai at INSPECT_VERSION (another version would measure another peer) and the
    openai package its ``openai-api`` provider needs (Inspect does not install it)."""
    probe = "import importlib.metadata as m, openai; print(m.version('inspect-ai'))"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip() == INSPECT_VERSION


# ------------------------------------------------------------------------------------------------ the figures


def figures(taken: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """Medians per tool and measurement, their ratios (Inspect's over gradebench's), and the work done."""

    def median(side: str, kind: str, key: str) -> float:
        return round(statistics.median(t[key] for t in taken if t["side"] == side and t["kind"] == kind), 3)

    def work(side: str, kind: str) -> dict[str, Any]:
        first = next(t for t in taken if t["side"] == side and t["kind"] == kind)
        return {
            model: {"requests": w["requests"], "prompt_chars_per_request": round(w["prompt_chars"] / w["requests"], 1)}
            for model, w in sorted(first["work"].items())
        }

    rows = {
        f"race wall, {args.latency_ms:g} ms latency (s)": ("race", "wall_s"),
        "race wall, no latency (s)": ("race_no_latency", "wall_s"),
        f"CPU per call, {args.latency_ms:g} ms (ms)": ("race", "cpu_ms_per_call"),
        "fully cached rerun (s)": ("cached", "wall_s"),
        "judge-only rerun (s)": ("rejudge", "wall_s"),
    }
    table = {}
    for label, (kind, key) in rows.items():
        ours, theirs = median("gradebench", kind, key), median("inspect", kind, key)
        table[label] = {"gradebench": ours, "inspect": theirs, "ratio": round(theirs / ours, 2) if ours else None}
    works = {side: {kind: work(side, kind) for kind in KINDS} for side in SIDES}
    return {"table": table, "work": works}


def same_work(works: dict[str, Any], n: int) -> list[str]:
    """What differs between the two tools' requests to the server (nothing, when they did the same work)."""
    problems = []
    for side in SIDES:
        race = works[side]["race"]
        for model in (RUNNER_MODEL, JUDGE_MODEL):
            got = race.get(model, {}).get("requests", 0)
            expected = n + 1 if side == "gradebench" and model == RUNNER_MODEL else n  # gradebench's reference run
            if got != expected:
                problems.append(f"{side}'s race made {got} requests to {model}, not {expected}")
        if works[side]["rejudge"].get(RUNNER_MODEL):
            problems.append(f"{side}'s judge-only rerun called the runner")
        if (works[side]["rejudge"].get(JUDGE_MODEL) or {}).get("requests") != n:
            problems.append(f"{side}'s judge-only rerun did not make {n} judge requests")
        cached = sum(w["requests"] for w in works[side]["cached"].values())
        if cached:
            problems.append(f"{side}'s cached rerun made {cached} requests")
    for model in (RUNNER_MODEL, JUDGE_MODEL):
        sizes = [works[side]["race"][model]["prompt_chars_per_request"] for side in SIDES]
        if abs(sizes[0] - sizes[1]) > 0.1 * max(sizes):
            problems.append(f"prompt sizes to {model} differ by more than 10%: {sizes[0]} vs {sizes[1]} characters")
    return problems


def show(result: dict[str, Any]) -> None:
    print(f"\n| measure | gradebench | Inspect AI {INSPECT_VERSION} | ratio |")
    print("|---|---|---|---|")
    for label, row in result["table"].items():
        print(f"| {label} | {row['gradebench']:.3g} | {row['inspect']:.3g} | {row['ratio']}× |")
    print("\nrequests to the server in the first round (model: requests × prompt characters each):")
    for side in SIDES:
        each = {
            kind: ", ".join(f"{m} {w['requests']} × {w['prompt_chars_per_request']:g}" for m, w in work.items())
            or "none"
            for kind, work in result["work"][side].items()
        }
        print(f"  {side}: " + "; ".join(f"{kind}: {said}" for kind, said in each.items()))
    for problem in result["same_work_problems"]:
        print(f"  NOT THE SAME WORK: {problem}")
    print()


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    made.add_argument("--n", type=int, default=2000, help="samples: one model call and one judge call each")
    made.add_argument("--rounds", type=int, default=3, help="rounds of every measurement, the tools in turn")
    made.add_argument("--latency-ms", type=float, default=50.0, help="the server's latency for the timed race")
    made.add_argument("--concurrency", type=int, default=100)
    made.add_argument("--inspect-python", help="a Python with inspect-ai installed (default: a venv of our own)")
    made.add_argument(
        "--gradebench-python", help="the Python gradebench's side runs in (default: this one), e.g. a plain venv's"
    )
    made.add_argument(
        "--cache-dir", type=Path, default=Path.home() / ".cache" / "gradebench-peer", help="where that venv goes"
    )
    made.add_argument("--serve", type=float, help=argparse.SUPPRESS)  # the server process, at this latency (ms)
    made.add_argument("--gradebench-race", type=Path, help=argparse.SUPPRESS)  # a racing process, on this catalog
    made.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    made.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    return made


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.serve is not None:
        asyncio.run(serve(args.serve))
        return
    if args.gradebench_race:
        print(json.dumps(gradebench_race(args.gradebench_race, args.n, args.concurrency, args.cache, args.out)))
        return
    inspect_python = args.inspect_python or inspect_venv(args.cache_dir)
    if not has_inspect(inspect_python):
        raise SystemExit(f"{inspect_python} does not import inspect-ai {INSPECT_VERSION}: install that version there")
    if not Path(inspect_python).with_name("inspect").exists():
        raise SystemExit(f"no `inspect` command beside {inspect_python} (the judge-only rerun runs `inspect score`)")
    load_at_start = load()
    print(f"load average at start: {load_at_start}", flush=True)
    taken = rounds(args, inspect_python)
    result = figures(taken, args)
    result["same_work_problems"] = same_work(result["work"], args.n) + [
        f"Inspect's {t['kind']} in round {t['round']} scored {t['said']['correct']} of {args.n} samples correct"
        for t in taken
        if t["side"] == "inspect" and t["kind"] != "rejudge" and t["said"]["correct"] != args.n
    ]  # its grader read every GRADE the server gave (gradebench's race fails on any unread verdict itself)
    load_at_end = load()
    show(result)
    print(f"load average at end: {load_at_end}", flush=True)
    line = {
        "n": args.n,
        "rounds": args.rounds,
        "latency_ms": args.latency_ms,
        "concurrency": args.concurrency,
        "inspect_ai": INSPECT_VERSION,
        "load_start": load_at_start,
        "load_end": load_at_end,
        **result,
        "runs": taken,
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
