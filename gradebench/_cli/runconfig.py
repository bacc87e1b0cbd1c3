"""The run config of ``gradebench run``: a race spec in TOML, beside where the inputs come from and the results go.

`load_config` reads one (a bad field is one `ConfigError` naming the file and the field, a misspelt one the field it
most likely meant); `read_inputs` reads the inputs it names; `catalog_of` and `job_of` find its catalog and job,
relative to the config file's folder.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pydantic

from .. import sim
from .._base.errors import ConfigError
from .._base.tomlfile import first_problem, problem_text, read_toml
from .._catalog.catalog import Catalog
from .._race.plan import load_catalog, resolve_job
from .._race.prompt_job import PromptFields, PromptJob
from .._records.spec import RaceSpec

__all__ = ["RunConfig", "RunOptions", "catalog_of", "config_fields", "job_of", "load_config", "read_inputs"]


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
    prompt: PromptFields | None = None
    """Instead of job, a job without code: a [prompt] table of gb.PromptJob's fields (name, template, output, ...)."""


@dataclass(frozen=True)
class RunConfig:
    """A ``gradebench run`` config file (TOML): the race spec's fields (``job`` required; ``catalog`` defaults to
    ``sim``) and the run options."""

    spec: RaceSpec
    options: RunOptions
    base: Path
    """The config file's folder: inputs, the catalog and a job module are found relative to it."""


def config_fields(width: int | None = None) -> str:
    """The config's fields, one per line, for ``run --help``: each wrapped to ``width`` columns when given, under
    the column of descriptions."""
    lines = []
    for name, info in RunOptions.model_fields.items():
        described = info.description or ""
        described += " (required)" if info.is_required() else f" (default {info.get_default()!r})"
        lines.append(f"  {name:<15} {described}")
    defaults = {f.name: f.default for f in dataclasses.fields(RaceSpec)}
    for name, described in RaceSpec.describe().items():
        default = "sim" if name == "catalog" else defaults[name]
        shown = (
            " (required, or a [prompt] table)"
            if name == "job"
            else ""
            if default in (None, (), "")
            else f" (default {default})"
        )
        lines.append(f"  {name:<15} {described}{shown}")
    if width is None:
        return "\n".join(lines)
    indent = " " * 18  # under the descriptions, not the names
    return "\n".join(
        textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
        for line in lines
    )


def load_config(path: Path) -> RunConfig:
    """A run config: the spec and the options, each checked; a bad field raises a `ConfigError` naming it."""
    raw = read_toml(path, what="config", error=ConfigError)
    options = {k: raw.pop(k) for k in list(raw) if k in RunOptions.model_fields}
    try:
        parsed = RunOptions.model_validate(options)
    except pydantic.ValidationError as exc:
        loc, msg = first_problem(exc, RunOptions)
        field = ".".join(str(x) for x in loc)
        raise ConfigError(f"{path}: {problem_text(field, msg)}", path=str(path), field=field) from None
    raw.setdefault("catalog", "sim")
    try:
        spec = RaceSpec.from_dict(raw, source=str(path), also_known=RunOptions.model_fields)
    except ValueError as exc:
        field = str(exc).split("field ", 1)[-1].split(":", 1)[0].split(" ", 1)[0].strip("'")
        raise ConfigError(str(exc), path=str(path), field=field) from None
    if parsed.prompt is not None:  # a job without code: the spec records it as the prompt job's reference
        if spec.job is not None:
            raise ConfigError(
                f"{path}: field 'job': give job = ... or a [prompt] table (a job without code), not both",
                path=str(path),
                field="job",
            )
        table = parsed.prompt.model_dump(exclude_unset=True)
        try:
            made = PromptJob.from_dict(table, base=path.parent, source=str(path), table="prompt.")
        except ValueError as exc:
            field = str(exc).split("field ", 1)[-1].split(":", 1)[0].strip("'")
            raise ConfigError(str(exc), path=str(path), field=field) from None
        if made.reference is None:
            raise ConfigError(f"{path}: field 'prompt.tools': a tool cannot be imported by name", field="prompt.tools")
        spec = spec.replace(job=made.reference)
    if spec.job is None:
        raise ConfigError(
            f"{path}: field 'job': Field required (or a [prompt] table: a job without code)",
            path=str(path),
            field="job",
        )
    return RunConfig(spec=spec, options=parsed, base=path.parent)


def read_inputs(spec: str, base: Path, limit: int | None) -> list[Any]:
    """The inputs a config names: ``example:NAME`` (an example job's inputs) or a file relative to ``base``."""
    if spec.startswith("example:"):
        from ..jobs import load_inputs

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


def catalog_of(reference: str, base: Path) -> Catalog:
    """``sim`` (the simulated fleet), a TOML file relative to ``base``, or ``module:function``."""
    return sim.catalog() if reference == "sim" else load_catalog(reference, base)


def job_of(reference: str, base: Path | None = None) -> Any:
    """An example job by its name (order-agent, selecting-agent), or ``module:attribute`` (found in ``base`` too)."""
    from ..jobs import EXAMPLE_JOBS

    if reference in EXAMPLE_JOBS:
        return EXAMPLE_JOBS[reference]
    if ":" not in reference:
        raise ValueError(f"job {reference!r} is neither an example job {sorted(EXAMPLE_JOBS)} nor module:attribute")
    return resolve_job(reference, base)
