"""The gradebench command: demo, run CONFIG, rejudge DIR, sim-serve."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import polars as pl
import pydantic

from . import sim
from ._benchmark import Benchmark
from ._catalog import Catalog
from ._errors import ConfigError, GradebenchError
from ._job import JobSpec
from ._plan import job_reference, load_catalog, resolve_job, resolve_scorer
from ._rejudge import rejudge_report
from ._report import BenchmarkReport
from ._spec import RaceSpec, Runs
from ._tomlfile import first_problem, read_toml
from ._vocab import Design

__all__ = ["main"]

DEMO_INPUTS = 10
"""The demo's inputs: more than the `MIN_INPUTS` a verdict needs, so it shows one settled (six never could)."""
DEMO_RUNS = 2
"""The demo's runs per input and entry: 10 × 2 takes about the time 6 × 3 did."""

T = TypeVar("T")


class RunOptions(pydantic.BaseModel):
    """What a ``gradebench run`` config says beside the race spec: where the inputs come from and the results go."""

    model_config = pydantic.ConfigDict(extra="forbid", use_attribute_docstrings=True)

    inputs: str
    """A .jsonl, .json, .csv or .parquet file (relative to the config file), or example:orders / example:selections."""
    limit: int | None = pydantic.Field(default=None, ge=1)
    """Use only the first N inputs."""
    max_cost: float | None = pydantic.Field(default=None, gt=0)
    """Refuse to start when the estimate is above this."""
    out: str = "out/run"
    """Where the parquet files and charts go."""
    cache: str | None = None
    """Cache folder (default: $GRADEBENCH_CACHE or .gradebench/cache)."""


@dataclass(frozen=True)
class RunConfig:
    """A ``gradebench run`` config file (TOML): the race spec's fields (``job`` required; ``catalog`` defaults to
    ``sim``) and the run options."""

    spec: RaceSpec
    options: RunOptions
    base: Path
    """The config file's folder: inputs, the catalog and a job module are found relative to it."""


def config_fields() -> str:
    """The config's fields, one per line, for ``run --help``."""
    lines = []
    for name, info in RunOptions.model_fields.items():
        described = info.description or ""
        described += " (required)" if info.is_required() else f" (default {info.get_default()!r})"
        lines.append(f"  {name:<15} {described}")
    defaults = {f.name: f.default for f in dataclasses.fields(RaceSpec)}
    for name, described in RaceSpec.describe().items():
        default = "sim" if name == "catalog" else defaults[name]
        shown = " (required)" if name == "job" else "" if default in (None, (), "") else f" (default {default})"
        lines.append(f"  {name:<15} {described}{shown}")
    return "\n".join(lines)


def load_config(path: Path) -> RunConfig:
    """A run config: the spec and the options, each checked; a bad field raises a `ConfigError` naming it."""
    raw = read_toml(path, what="config", error=ConfigError)
    options = {k: raw.pop(k) for k in list(raw) if k in RunOptions.model_fields}
    try:
        parsed = RunOptions.model_validate(options)
    except pydantic.ValidationError as exc:
        loc, msg = first_problem(exc)
        field = ".".join(str(x) for x in loc)
        raise ConfigError(f"{path}: field {field!r}: {msg}", path=str(path), field=field) from None
    raw.setdefault("catalog", "sim")
    try:
        spec = RaceSpec.from_dict(raw, source=str(path))
    except ValueError as exc:
        field = str(exc).split("field ", 1)[-1].split(":", 1)[0].strip("'")
        raise ConfigError(str(exc), path=str(path), field=field) from None
    if spec.job is None:
        raise ConfigError(f"{path}: field 'job': Field required", path=str(path), field="job")
    return RunConfig(spec=spec, options=parsed, base=path.parent)


def read_inputs(spec: str, base: Path, limit: int | None) -> list[Any]:
    """The inputs a config names: ``example:NAME`` (an example job's inputs) or a file relative to ``base``."""
    if spec.startswith("example:"):
        from .jobs import load_inputs

        try:
            rows = load_inputs(spec.removeprefix("example:"))
        except ValueError as exc:
            raise ConfigError(f"inputs {spec!r}: {exc}", field="inputs") from None
        return rows[:limit] if limit else rows
    path = base / spec
    if not path.exists():
        raise ConfigError(f"inputs file {path} does not exist", path=str(path), field="inputs")
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            rows = _json_lines(path)
        elif suffix == ".json":
            rows = json.loads(path.read_text())
        elif suffix == ".csv":
            rows = pl.read_csv(path).to_dicts()
        elif suffix == ".parquet":
            rows = pl.read_parquet(path).to_dicts()
        else:
            raise ConfigError(
                f"inputs file {path}: use .jsonl, .json, .csv or .parquet", path=str(path), field="inputs"
            )
    except (json.JSONDecodeError, pl.exceptions.PolarsError) as exc:
        raise ConfigError(f"inputs file {path} cannot be read: {exc}", path=str(path), field="inputs") from None
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"inputs file {path} holds no list of inputs", path=str(path), field="inputs")
    return rows[:limit] if limit else rows


def _json_lines(path: Path) -> list[Any]:
    """The values of a JSON Lines file; a line that is not JSON raises, naming its number in the file."""
    rows = []
    for number, line in enumerate(path.read_text().split("\n"), start=1):  # "\n" only: JSON may hold U+2028
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"inputs file {path}: line {number} is not JSON: {exc.msg} (column {exc.colno})",
                path=str(path),
                field="inputs",
            ) from None
    return rows


def _catalog(reference: str, base: Path) -> Catalog:
    """``sim`` (the simulated fleet), a TOML file relative to ``base``, or ``module:function``."""
    return sim.catalog() if reference == "sim" else load_catalog(reference, base)


def _job(reference: str, base: Path | None = None) -> Any:
    """An example job by its name (order-agent, selecting-agent), or ``module:attribute`` (found in ``base`` too)."""
    from .jobs import EXAMPLE_JOBS

    if reference in EXAMPLE_JOBS:
        return EXAMPLE_JOBS[reference]
    if ":" not in reference:
        raise ValueError(f"job {reference!r} is neither an example job {sorted(EXAMPLE_JOBS)} nor module:attribute")
    return resolve_job(reference, base)


def _print_report(report: BenchmarkReport, out: Path) -> None:
    print(report.table())
    diagnostics = report.diagnostics()
    if diagnostics.height:
        # one line per kind, its first detail whole: a table would cut the very text that says what went wrong
        print(f"\nDiagnostics ({diagnostics.height}; every row: report.diagnostics(), or the Diagnostics tab):")
        for part in diagnostics.partition_by("kind", maintain_order=True):
            first = part.row(0, named=True)
            print(f"  {first['kind']} ({part.height}): {first['entry']}: {first['detail']}")
    report.to_parquet(out)
    print(f"\nWrote {out}/runs.parquet, models.parquet, calls.parquet, noise.parquet, meta.json")
    print(f"Wrote {', '.join(write_charts(report, out))}")


def write_charts(report: BenchmarkReport, out: Path) -> list[str]:
    """The report's charts as offline files beside its parquet: PNG to look at, SVG and self-contained HTML to embed.

    Every chart is written, also when no run was judged: one with nothing to plot says so in its title.
    """
    from . import charts

    made = {
        "cost_quality": charts.cost_quality(report),
        "latency_quality": charts.latency_quality(report),
        "score_distribution": charts.score_distribution(report),
    }
    if report.runs["scorer"].drop_nulls().len():
        made["scorer_agreement"] = charts.scorer_agreement(report)
    written = []
    for name, chart in made.items():
        for suffix in (".png", ".svg", ".html") if name == "cost_quality" else (".png",):
            written.append(str(charts.save_chart(chart, out / f"{name}{suffix}")))
    return written


def _race(bench: Benchmark, max_cost: float | None, out: Path) -> int:
    """Estimate, refuse above ``max_cost``, race, print and write: what ``run`` and ``demo`` do. Exit status 4 (after
    everything is written) when the judge gave no verdict on some run, with one line saying so."""
    from ._evidence import judge_failure

    try:
        estimate = until_stopped(bench.estimate())
        print(f"{estimate}\n")
        if max_cost is not None and estimate.cost > max_cost:
            print(
                f"gradebench: error: the estimate {estimate.cost:.6f} {estimate.currency} is above --max-cost "
                f"{max_cost:g}; nothing was raced (only the reference runs were made)",
                file=sys.stderr,
            )
            return 3
        until_stopped(bench.run())
    except BaseException as exc:  # stopped, or a reference failed: what ran is written before the one line
        report = bench.metadata.get(Benchmark.REPORT)
        if report is not None:
            report.to_parquet(out)
            exc.add_note(f"gradebench: what ran is written to {out}")
        raise
    report = bench.report()
    _print_report(report, out)
    if (failed := judge_failure(report.runs)) is not None:  # a verdict missing is a result nobody should trust as is
        print(f"gradebench: {failed.text()}", file=sys.stderr)
        return 4
    return 0


class Stopped(Exception):
    """The command was stopped by a signal (SIGINT, SIGTERM) and wound down: its cache flushed."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


def until_stopped(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``, stopped cleanly by SIGINT or SIGTERM: the work is cancelled — a race keeps the runs that
    finished and its cache is flushed as its session closes — and `Stopped` is raised (no traceback)."""
    caught: list[int] = []

    async def guarded() -> T:
        task, loop = asyncio.current_task(), asyncio.get_running_loop()
        assert task is not None

        def stop(signum: int) -> None:
            caught.append(signum)
            task.cancel()

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop, signum)
        try:
            return await work
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)

    try:
        return asyncio.run(guarded())
    except (asyncio.CancelledError, KeyboardInterrupt):
        if caught:
            raise Stopped(caught[0]) from None
        raise


def cmd_run(args: argparse.Namespace) -> int:
    config = load_config(Path(args.config))
    spec, options, base = config.spec, config.options, config.base
    catalog = _catalog(str(spec.catalog), base)
    try:
        job = _job(str(spec.job), base)
    except ValueError as exc:
        raise ConfigError(str(exc), path=args.config, field="job") from None
    # the report records where the job and the catalog are found again, wherever a rerun starts from
    spec = spec.replace(job=job_reference(job) or spec.job, catalog=catalog.reference)
    if args.budget is not None:
        spec = spec.replace(budget=args.budget)
    bench = Benchmark(job, catalog=catalog, spec=spec, cache=options.cache)
    bench.set_inputs(read_inputs(options.inputs, base, options.limit))
    max_cost = args.max_cost if args.max_cost is not None else options.max_cost
    return _race(bench, max_cost, Path(args.out or options.out))


def cmd_demo(args: argparse.Namespace) -> int:
    from .jobs import OrderAgent, load_inputs

    catalog = sim.catalog()
    bench = Benchmark(OrderAgent, runs=args.runs, catalog=catalog, grade="standard", salt=args.salt, budget=args.budget)
    available = load_inputs("orders")
    if args.inputs > len(available):
        print(f"--inputs {args.inputs}: the order agent has {len(available)} example inputs; using all of them")
    bench.set_inputs(available[: args.inputs])
    print(
        f"Racing {OrderAgent.name} on the simulated '{bench.spec.grade}' grade: {len(bench.entries)} entries x "
        f"{args.runs} runs x {len(bench.inputs)} inputs, judged by {bench.judge_entry.name}\n"
    )
    return _race(bench, args.max_cost, Path(args.out))


def cmd_rejudge(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    report = BenchmarkReport.read_parquet(directory)
    catalog = sim.catalog() if args.catalog == "sim" else Catalog.load(args.catalog)
    scorer = None
    if args.scorer:
        job = JobSpec(_job(report.meta.spec.job or report.meta.job))
        scorer = resolve_scorer(args.scorer, job)
    rubric = Path(args.rubric_file).read_text() if args.rubric_file else args.rubric
    out = Path(args.out or directory)
    where = "over the report in it" if out == directory else "there"
    print(f"Rejudging {report.runs.height} runs of {directory}; the new report goes to {out} ({where})\n")
    new = until_stopped(
        rejudge_report(report, catalog, rubric=rubric, judge=args.judge, cache=args.cache, scorer=scorer)
    )
    _print_report(new, out)
    return 0


def cmd_sim_serve(args: argparse.Namespace) -> int:
    from . import jobs  # noqa: F401  (the example jobs register the policies the fleet answers them with)
    from .sim import serve

    print(f"gradebench simulated fleet on http://{args.host}:{args.port}/v1 (Ctrl-C stops)", flush=True)
    try:
        asyncio.run(serve(args.host, args.port, latency_scale=args.latency_scale, seed=args.seed))
    except KeyboardInterrupt:
        pass
    return 0


def _runs(text: str) -> Runs:
    """``--runs``: a number of runs, or ``auto`` (checked by the spec)."""
    try:
        return RaceSpec(runs=cast(Runs, text) if text == Design.AUTO else int(text)).runs
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's default, unless it has none or its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, argparse.SUPPRESS) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gradebench",
        description="Race an LLM job across the models of its grade, judge every run blind against the pinned "
        "reference, and report quality, cost and speed.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every model call (gradebench's own log)")
    # -v also after the sub-command (gradebench demo -v); SUPPRESS keeps a -v given before it
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_parser = functools.partial(sub.add_parser, parents=[verbose], formatter_class=_Help)

    demo = add_parser(
        "demo",
        help="race the order agent on the simulated 'standard' grade",
        description="Race the example order agent on the simulated fleet's 'standard' grade (offline, no key): "
        "print the table and the diagnostics, write parquet and charts.",
    )
    demo.add_argument(
        "--runs", type=_runs, default=DEMO_RUNS, help="runs per input and entry, or 'auto' (race to a verdict)"
    )
    demo.add_argument("--inputs", type=int, default=DEMO_INPUTS, help="how many of the 26 example inputs")
    demo.add_argument("--salt", default="", help="a new salt draws fresh samples")
    demo.add_argument("--out", default="out/demo", help="where the parquet files and charts go")
    for command in (demo,):
        command.add_argument("--budget", type=float, help="the most the race may spend now (USD)")
        command.add_argument("--max-cost", type=float, help="refuse to start when the estimate is above this")
    demo.set_defaults(fn=cmd_demo)

    run = add_parser(
        "run",
        help="run the benchmark a TOML config describes",
        description="Run the benchmark a TOML config file describes (see data/run.example.toml).",
        epilog="config fields:\n" + config_fields(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("config", help="the config file (TOML)")
    run.add_argument("--out", help="output folder (default: the config's 'out')")
    run.add_argument("--budget", type=float, help="the most the race may spend now (default: the config's)")
    run.add_argument(
        "--max-cost", type=float, help="refuse to start when the estimate is above this (default: the config's)"
    )
    run.set_defaults(fn=cmd_run)

    rejudge = add_parser(
        "rejudge",
        help="judge the runs of an exported report again; no candidate is called",
        description="Judge the runs of a report written by to_parquet again, with another rubric or judge. No "
        "candidate is called; verdicts already in the cache are free.",
    )
    rejudge.add_argument("dir", help="the report's folder (runs.parquet, calls.parquet, meta.json, ...)")
    rejudge.add_argument("--catalog", default="sim", help="'sim' or a catalog TOML (its ceiling judges)")
    rejudge.add_argument("--rubric", help="the new rubric text (default: the report's)")
    rejudge.add_argument("--rubric-file", help="read the new rubric from this file")
    rejudge.add_argument("--judge", help="entry that judges (default: the one that judged before)")
    rejudge.add_argument("--scorer", help="'job' or a scorer spec, e.g. field_equals:decision (default: keep)")
    rejudge.add_argument("--cache", help="cache folder (default: $GRADEBENCH_CACHE or .gradebench/cache)")
    rejudge.add_argument("--out", help="where to write the new report (default: DIR, replacing the report there)")
    rejudge.set_defaults(fn=cmd_rejudge)

    serve = add_parser(
        "sim-serve",
        help="serve the simulated fleet over HTTP on 127.0.0.1",
        description="Serve the simulated fleet over HTTP, for any OpenAI client (base URL http://HOST:PORT/v1).",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on")
    serve.add_argument(
        "--latency-scale",
        type=float,
        default=float(os.environ.get("GRADEBENCH_SIM_LATENCY_SCALE", "1")),
        help="multiplies every simulated latency (0: none)",
    )
    serve.add_argument("--seed", type=int, default=0, help="seed of the fleet's randomness")
    serve.set_defaults(fn=cmd_sim_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # gradebench's own log only: -v must not turn on every library's INFO lines
    own = logging.getLogger("gradebench")
    for old in [h for h in own.handlers if getattr(h, "gradebench_cli", False)]:
        own.removeHandler(old)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    handler.gradebench_cli = True  # type: ignore[attr-defined]
    own.addHandler(handler)
    own.setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        return args.fn(args)
    except Stopped as stop:
        kept = "".join(f"; {n.removeprefix('gradebench: ')}" for n in getattr(stop, "__notes__", ()))
        print(
            f"gradebench: {stop}: what finished is in the cache, and running the same command again resumes from "
            f"there{kept}",
            file=sys.stderr,
        )
        return 128 + stop.signum
    except Exception as exc:
        notes = [n.removeprefix("gradebench: ") for n in getattr(exc, "__notes__", ()) if n.startswith("gradebench: ")]
        if notes:  # a reference run failed: the notes say which, and what the model said
            print(f"gradebench: error: {'; '.join(notes)}", file=sys.stderr)
            return 2
        if not isinstance(exc, GradebenchError | ValueError | KeyError | FileNotFoundError):
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"gradebench: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
