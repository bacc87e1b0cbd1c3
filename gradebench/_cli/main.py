"""The gradebench command: demo, run CONFIG, rejudge DIR, compare DIR_A DIR_B, sim-serve."""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import shutil
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar, cast

from .. import sim
from .._base.errors import CatalogError, ConfigError, GradebenchError
from .._base.numbers import fit_line, money
from .._base.vocab import Design
from .._catalog.catalog import Catalog
from .._race.benchmark import Benchmark
from .._race.job import JobSpec
from .._race.plan import job_reference, resolve_scorer
from .._race.preflight import check_catalog
from .._race.rejudge import estimate_rejudge, rejudge_report
from .._records.spec import JOB_SCORER, JudgeSpec, RaceSpec, Runs
from .._report.present import unmeasured
from .._report.report import BenchmarkReport
from .._verdict.evidence import judge_failure
from .output import sim_models, terminal_width, write_charts
from .runconfig import catalog_of, config_fields, job_of, load_config, read_inputs

__all__ = ["main"]

DEMO_INPUTS = 10
"""The demo's inputs: more than the `MIN_INPUTS` a verdict needs, so it shows one settled (six never could)."""
DEMO_RUNS = 2
"""The demo's runs per input and entry: 10 × 2 takes about the time 6 × 3 did."""
UNMEASURED = 5
"""The exit status when an entry could not be raced: its endpoint failed most of its runs, so it has no verdict."""

T = TypeVar("T")


def _print_report(report: BenchmarkReport, out: Path, cache: str | Path | None = None) -> int:
    """Print and write the report, then a line for each entry not raced: status `UNMEASURED` when one was, else 0."""
    from .._report.earlier import earlier_labels, with_earlier_labels
    from .._report.offline import charts_drawn_once
    from .._report.page import REPORT_HTML

    if (earlier := earlier_labels(out, report.meta.job)) is not None:  # read before this report replaces it
        report = with_earlier_labels(report, earlier)
    width = terminal_width()
    print(report.table(width))
    diagnostics = report.diagnostics()
    if diagnostics.height:
        # one line per kind, its first detail whole: a table would cut the very text that says what went wrong
        print(f"\nDiagnostics ({diagnostics.height}; every row: report.diagnostics(), or the Diagnostics tab):")
        for part in diagnostics.partition_by("kind", maintain_order=True):
            first = part.row(0, named=True)
            line = f"  {first['kind']} ({part.height}): {first['entry']}: {first['detail']}"
            print(line if width is None else fit_line(line, width))
    report.to_parquet(out)
    print()
    with charts_drawn_once(cache):  # a rerun the cache answers renders none of them again
        wrote = [
            f"Wrote {out}/runs.parquet, models.parquet, calls.parquet, noise.parquet, controls.parquet, meta.json",
            f"Wrote {out}/{', '.join(Path(chart).name for chart in write_charts(report, out))}",
            f"Wrote {report.to_html(out / REPORT_HTML)}: the whole report in one file, to open offline in a browser",
        ]
    for line in wrote:  # a file's name whole on its line: wrapped only between names
        print(line if width is None else fit_line(line, width))
    for line in (unreached := unmeasured(report)):  # an entry its endpoint failed is no finding: never exit 0 on it
        print(f"gradebench: {line}", file=sys.stderr)
    return UNMEASURED if unreached else 0


def _race(bench: Benchmark, max_cost: float | None, out: Path) -> int:
    """Estimate, refuse above ``max_cost``, race, print and write: what ``run`` and ``demo`` do. Exit status 5 (after
    everything is written) when an entry could not be raced, else 4 when the judge gave no verdict on some run, or the
    negative controls voided its verdicts, with one line saying so."""
    try:
        estimate = until_stopped(bench.estimate())
        print(f"{estimate.text(terminal_width())}\n")
        if max_cost is not None and not estimate.cost <= max_cost:  # an unknown (NaN) estimate is not within it
            print(
                f"gradebench: error: the estimate {money(estimate.cost)} {estimate.currency} is not within --max-cost "
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
    if status := _print_report(report, out, bench.cache.directory):
        return status
    if (failed := judge_failure(report.runs)) is not None:  # a verdict missing is a result nobody should trust as is
        print(f"gradebench: {failed.text()}", file=sys.stderr)
        return 4
    if (void := report.controls_outcome().headline()) is not None:  # nor a verdict of a judge the controls fooled
        print(f"gradebench: {void}", file=sys.stderr)
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
    catalog = catalog_of(str(spec.catalog), base)
    try:
        job = job_of(str(spec.job), base)
    except ValueError as exc:
        raise ConfigError(str(exc), path=args.config, field="job") from None
    # the report records where the job and the catalog are found again, wherever a rerun starts from
    spec = spec.replace(job=job_reference(job, found_in=base) or spec.job, catalog=catalog.reference)
    if args.budget is not None:
        spec = spec.replace(budget=args.budget)
    bench = Benchmark(job, catalog=catalog, spec=spec, cache=options.cache)
    bench.set_inputs(read_inputs(options.inputs, base, options.limit))
    max_cost = args.max_cost if args.max_cost is not None else options.max_cost
    return _race(bench, max_cost, Path(args.out or options.out))


def cmd_demo(args: argparse.Namespace) -> int:
    from ..jobs import OrderAgent, load_inputs

    catalog = sim.catalog()
    bench = Benchmark(
        OrderAgent,
        runs=args.runs,
        catalog=catalog,
        grade="standard",
        salt=args.salt,
        budget=args.budget,
        judge_batch=args.judge_batch or None,
    )
    available = load_inputs("orders")
    if args.inputs > len(available):
        print(f"--inputs {args.inputs}: the order agent has {len(available)} example inputs; using all of them")
    bench.set_inputs(available[: args.inputs])
    racing = (
        f"Racing {OrderAgent.name} on the simulated '{bench.spec.grade}' grade: {len(bench.entries)} entries x "
        f"{args.runs} runs x {len(bench.inputs)} inputs, judged by {bench.judge_entry.name}"
        f"{' through its Batch API' if bench.spec.judge_batch else ''}"
    )
    print(f"{racing if (width := terminal_width()) is None else fit_line(racing, width)}\n")
    if (status := _race(bench, args.max_cost, Path(args.out))) or not args.labels:
        return status
    from .demo import labelled_path

    labelled_path(bench.report(), Path(args.out), width)
    return 0


def cmd_rejudge(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    report = BenchmarkReport.read_parquet(directory)
    catalog = _rejudge_catalog(args.catalog, report, directory)
    scorer = None
    if args.scorer:  # the job as a run found it (the report records its folder), or in the folder this runs in
        job = JobSpec(job_of(report.meta.spec.job or report.meta.job, Path.cwd()))
        scorer = resolve_scorer(args.scorer, job)
    rubric = Path(args.rubric_file).read_text() if args.rubric_file else args.rubric
    if args.in_place and args.out:
        raise ConfigError("--in-place and --out say two places for the new report: give one", field="out")
    out = directory if args.in_place else Path(args.out) if args.out else _beside(directory, "rejudged")
    where = "over the report in it" if out == directory else "a new folder" if not out.exists() else "there"
    # a flag not given: as the report's race judged
    judging = JudgeSpec(rubric=rubric, judge=args.judge, batch=args.judge_batch or None, scorer=scorer)
    estimate = until_stopped(estimate_rejudge(report, catalog, judging, cache=args.cache))
    said = f"Rejudging {directory}: {estimate.line()}; the new report goes to {out} ({where})"
    print(f"{said if (width := terminal_width()) is None else fit_line(said, width)}\n")
    if args.max_cost is not None and not estimate.cost <= args.max_cost:  # an unknown (NaN) one is not within it
        print(
            f"gradebench: error: the estimate {money(estimate.cost)} {estimate.currency} is not within --max-cost "
            f"{args.max_cost:g}; nothing was judged",
            file=sys.stderr,
        )
        return 3
    rejudged = until_stopped(rejudge_report(report, catalog, judging, cache=args.cache))
    if args.scorer == JOB_SCORER:  # the job's own scorer: the spec says so, for a rerun to find it again
        rejudged = BenchmarkReport(rejudged.to_runs(), rejudged.meta.with_spec(scorer=JOB_SCORER), rejudged.noise)
    return _print_report(rejudged, out, args.cache)


def cmd_compare(args: argparse.Namespace) -> int:
    from .._compare.compare import compare

    comparison = compare(args.before, args.after, level=args.level, seed=args.seed)
    width = terminal_width()
    print(comparison.table())
    print()
    for sentence in comparison.sentences():
        line = f"- {sentence}"
        print(line if width is None else fit_line(line, width))
    return 0


def _rejudge_catalog(given: str | None, report: BenchmarkReport, directory: Path) -> Catalog:
    """The catalog ``--catalog`` names, else the one the report recorded; neither: an error that says which it needs."""
    if given is not None:
        return catalog_of(given, Path())
    recorded = report.meta.spec.catalog
    needs = f"pass --catalog with a catalog that holds its judge entry {report.meta.judge_entry!r}"
    if recorded is None:
        raise ConfigError(f"{directory}: the report does not say where its catalog is (it was built in code): {needs}")
    try:
        return catalog_of(recorded, Path())
    except (ValueError, OSError, CatalogError) as exc:
        raise ConfigError(f"{directory}: the report's catalog {recorded!r} cannot be loaded ({exc}): {needs}") from None


def _beside(directory: Path, what: str) -> Path:
    """A new folder beside ``directory``: ``DIR-rejudged``, then ``DIR-rejudged-2``, ... (never an existing one)."""
    made = directory.with_name(f"{directory.name}-{what}")
    n = 2
    while made.exists():
        made = directory.with_name(f"{directory.name}-{what}-{n}")
        n += 1
    return made


def cmd_sim_serve(args: argparse.Namespace) -> int:
    from .. import jobs  # noqa: F401  (the example jobs register the policies the fleet answers them with)
    from ..sim import SimServer, serve

    def ready(server: SimServer) -> None:
        print(f"gradebench simulated fleet on {server.base_url} (Ctrl-C stops)", flush=True)

    try:
        asyncio.run(serve(args.host, args.port, latency_scale=args.latency_scale, seed=args.seed, ready=ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # the address is in use, or not this machine's
        print(f"gradebench: error: cannot serve on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


def cmd_catalog(args: argparse.Namespace) -> int:
    from .._catalog.writing import catalog_command, write_catalog

    made = catalog_command(args, warn=lambda said: print(f"gradebench: warning: {said}", file=sys.stderr))
    if args.out is None:
        sys.stdout.write(made)
    else:  # written only now the catalog is made: a failure above leaves the file as it was
        print(f"Wrote {write_catalog(Path(args.out), made)}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    checked = until_stopped(check_catalog(catalog_of(args.catalog, Path()), grades=args.grade))
    print(checked.table(terminal_width()))
    return int(checked.exit_status)


def _runs(text: str) -> Runs:
    """``--runs``: a number of runs, or ``gsd`` / ``auto`` (checked by the spec)."""
    try:
        to_verdict = text in (Design.AUTO, Design.GROUP_SEQUENTIAL)
        return RaceSpec(runs=cast(Runs, text) if to_verdict else int(text)).runs
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's default, unless it has none or its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, argparse.SUPPRESS) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class _RawEpilogHelp(_Help, argparse.RawDescriptionHelpFormatter):
    """`_Help`, its description and epilog kept as written (a table of model ids)."""


_JUDGE_BATCH = (
    "send the verdicts through the judge provider's Batch API, at its batch price (they land when the batch does; a "
    "batch an earlier run submitted is collected, not paid again)"
)


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
        "print the table and the diagnostics, write parquet and charts; then the sim's careful person labels the runs "
        "the report asks for, and the label-corrected verdict is printed.",
    )
    demo.add_argument(
        "--runs",
        type=_runs,
        default=DEMO_RUNS,
        help="runs per input and entry, or race to a verdict: 'gsd' (eight planned looks; 'auto': the same race)",
    )
    demo.add_argument("--inputs", type=int, default=DEMO_INPUTS, help="how many of the 26 example inputs")
    demo.add_argument("--salt", default="", help="a new salt draws fresh samples")
    demo.add_argument("--out", default="out/demo", help="where the parquet files and charts go")
    for command in (demo,):
        command.add_argument("--budget", type=float, help="the most the race may spend now (USD)")
        command.add_argument("--max-cost", type=float, help="refuse to start when the estimate is above this")
    demo.add_argument("--judge-batch", action="store_true", help=_JUDGE_BATCH)
    demo.add_argument(
        "--no-labels",
        dest="labels",
        action="store_false",
        help="stop after the judge-only report (default: the sim's careful person then labels the runs it asks for)",
    )
    demo.set_defaults(fn=cmd_demo)

    run = add_parser(
        "run",
        help="run the benchmark a TOML config describes",
        description="Run the benchmark a TOML config file describes (see data/run.example.toml).",
        epilog="config fields:\n" + config_fields(shutil.get_terminal_size().columns - 2),  # argparse's width
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
    rejudge.add_argument(
        "--catalog",
        help="'sim' or a catalog TOML holding the judge (default: the catalog the report recorded)",
    )
    rejudge.add_argument("--rubric", help="the new rubric text (default: the report's)")
    rejudge.add_argument("--rubric-file", help="read the new rubric from this file")
    rejudge.add_argument("--judge", help="entry that judges (default: the one that judged before)")
    rejudge.add_argument("--scorer", help="'job' or a scorer spec, e.g. field_equals:decision (default: keep)")
    rejudge.add_argument("--cache", help="cache folder (default: $GRADEBENCH_CACHE or .gradebench/cache)")
    rejudge.add_argument("--out", help="where to write the new report (default: a new folder DIR-rejudged beside DIR)")
    rejudge.add_argument("--in-place", action="store_true", help="replace the report in DIR with the new one")
    rejudge.add_argument("--max-cost", type=float, help="refuse to judge when the estimate is above this")
    rejudge.add_argument("--judge-batch", action="store_true", help=_JUDGE_BATCH)
    rejudge.set_defaults(fn=cmd_rejudge)

    compared = add_parser(
        "compare",
        help="compare two exported reports of one job: what changed between the races",
        description="Pair two reports of one job (folders written by to_parquet, gradebench run or demo) by input "
        "and entry, and print each entry's change in score (a paired interval), failures, cost and latency, with "
        "everything else that differs between the races (judge, rubric, inputs, catalog, cache). Race again with a "
        "new salt to measure drift: a rerun with the same salt is served from the cache.",
    )
    compared.add_argument("before", help="the earlier report's folder")
    compared.add_argument("after", help="the later report's folder")
    compared.add_argument("--level", type=float, default=0.95, help="confidence that holds over all the entries")
    compared.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    compared.set_defaults(fn=cmd_compare)

    serve = add_parser(
        "sim-serve",
        help="serve the simulated fleet over HTTP on 127.0.0.1",
        description="Serve the simulated fleet over HTTP, for any OpenAI client\n(base URL http://HOST:PORT/v1).",
        epilog=sim_models(),
        formatter_class=_RawEpilogHelp,
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

    from .._catalog.writing import add_catalog_arguments
    from .._race.preflight import add_check_arguments

    made = add_parser("catalog", help="write a catalog TOML of OpenRouter models, priced from their model list")
    add_catalog_arguments(made).set_defaults(fn=cmd_catalog)
    check = add_parser("check", help="preflight a catalog: keys, endpoints, params, and the judge's verdict")
    add_check_arguments(check).set_defaults(fn=cmd_check)
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
    level = own.level
    own.setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        return _answer(args)
    finally:  # main() called in-process (a notebook, a test) leaves the caller's logging as it found it
        own.removeHandler(handler)
        own.setLevel(level)


def _answer(args: argparse.Namespace) -> int:
    """The command's exit status, each failure a line on stderr that says what to do."""
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
