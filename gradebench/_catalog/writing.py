"""A catalog written down: the TOML file `Catalog.load` reads back to the same entries (`catalog_toml`), and the
``gradebench catalog openrouter`` command that writes one of OpenRouter models, priced from its model list
(`gradebench._catalog.openrouter`).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from .._base.errors import ConfigError
from .._base.tomlfile import TomlTable, write_toml
from .catalog import Catalog
from .openrouter import DEFAULT_BASE_URL, DEFAULT_KEY_ENV, NAME_PREFIX, OpenRouterModel, from_openrouter

__all__ = ["add_catalog_arguments", "catalog_command", "catalog_toml", "cli_grades", "write_catalog"]


def catalog_toml(catalog: Catalog, models: Mapping[str, OpenRouterModel] | None = None, *, note: str = "") -> str:
    """The catalog as a TOML file `Catalog.load` reads back to the same entries: the fields an OpenRouter catalog
    sets (name, model, grade, base_url, api_key_env, prices, currency, family), with what the list said of each model
    that no field holds (``models``) as a comment above it, and ``note`` as the file's opening comment. Every value
    and comment goes through `write_toml`, so nothing the list says (a display name with line breaks, quotes or
    ``[[entries]]``) can add an entry or change a field."""
    tables = [TomlTable("picks", dict(catalog.picks), comment="the pinned reference entry of each grade")]
    for entry in catalog.entries:
        fields: dict[str, str | float] = {
            "name": entry.name,
            "model": entry.model,
            "grade": entry.grade,
            "base_url": entry.base_url,
        }
        if entry.api_key_env:
            fields["api_key_env"] = entry.api_key_env
        for key in ("price_in", "price_out", "price_cached_in"):
            if getattr(entry, key) is not None:
                fields[key] = float(getattr(entry, key))
        fields["currency"] = entry.currency
        if entry.reports_cost:  # no prices of its own: the endpoint's figure for each call
            fields["reports_cost"] = True
        if entry.family:  # told from the model id (the vendor of vendor/model): who made it, for judge_family
            fields["family"] = entry.family
        record = (models or {}).get(entry.model)
        tables.append(
            TomlTable(
                "entries",
                fields,
                array=True,
                comment=" · ".join(record.notes()) if record is not None else "",
                comments=_FIELD_COMMENTS,
            )
        )
    top = {"grades": list(catalog.grades), "ceiling": catalog.ceiling_name}
    return write_toml(top, tables, comments=_TOP_COMMENTS, opening=note)


_TOP_COMMENTS = {"grades": "weakest to strongest", "ceiling": "the entry that judges"}
_FIELD_COMMENTS = {
    "api_key_env": "the variable's name, never the key",
    "price_in": "per 1M input tokens",
    "price_out": "per 1M output tokens",
    "price_cached_in": "per 1M input tokens read from cache",
}


# ------------------------------------------------------------------------------------------------- the command line


def add_catalog_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``gradebench catalog openrouter MODEL... [--grade ...] [--pick ...]``'s arguments."""
    parser.description = (
        "Write a catalog TOML file (to -o PATH, else to stdout) of OpenRouter models, priced from OpenRouter's model "
        "list (GET BASE_URL/models, no key needed; or a saved copy of it, --models-file): edit it, then `gradebench "
        "check` it."
    )
    parser.epilog = (
        "example: gradebench catalog openrouter qwen/qwen3-32b --grade large=openai/gpt-5 --pick qwen/qwen3-32b "
        "--pick openai/gpt-5 -o catalog.toml"
    )
    parser.add_argument("source", choices=["openrouter"], help="whose model list to read")
    parser.add_argument("models", nargs="*", metavar="MODEL", help="OpenRouter model ids of the default grade")
    parser.add_argument(
        "--grade",
        action="append",
        metavar="GRADE[=MODEL,...]",
        help="GRADE: the grade of the MODELs (default standard); GRADE=MODEL,...: those models in that grade. "
        "Grades are weakest first, in the order given (the MODELs' grade first unless named among them)",
    )
    parser.add_argument(
        "--pick", action="append", metavar="MODEL", help="the reference of its grade: one for every grade"
    )
    parser.add_argument("--ceiling", metavar="MODEL", help="the model that judges (default: the last grade's pick)")
    parser.add_argument(
        "--base-url",
        default=DEFAULT_BASE_URL,
        help="the API base every entry calls, and where the model list is read unless --models-file is given",
    )
    parser.add_argument(
        "--models-file",
        metavar="PATH",
        help="a saved GET /models answer to read instead (curl https://openrouter.ai/api/v1/models -o models.json): "
        "offline, the entries still at --base-url",
    )
    parser.add_argument(
        "-o",
        "--out",
        metavar="PATH",
        help="write the catalog to this file, only once it is made (a failure leaves PATH as it was)",
    )
    parser.add_argument("--api-key-env", default=DEFAULT_KEY_ENV, help="the variable the entries read their key from")
    return parser


def catalog_command(args: argparse.Namespace, *, warn: Callable[[str], None] | None = None) -> str:
    """What ``gradebench catalog openrouter`` writes: the catalog TOML, its provenance in the opening comment; what
    the model list held that was skipped goes to ``warn`` (default: a Python warning)."""
    grades = cli_grades(args.models, args.grade or [])
    of_grade = {model_id: grade for grade, ids in grades.items() for model_id in ids}
    pick: dict[str, str] = {}
    for ref in args.pick or []:
        grade = of_grade.get(ref.removeprefix(NAME_PREFIX) if ref not in of_grade else ref)
        if grade is None:
            raise ConfigError(f"--pick {ref}: not one of the models named: {sorted(of_grade)}", field="pick")
        if grade in pick:
            raise ConfigError(f"--pick {ref}: grade {grade!r} has a pick already ({pick[grade]})", field="pick")
        pick[grade] = ref
    for grade, ids in grades.items():  # said before anything is fetched: a usage error costs no request
        if grade not in pick and len(ids) == 1:  # a grade of one model: that model is its pick
            pick[grade] = ids[0]
        if grade not in pick:
            raise ConfigError(f"grade {grade!r} has no pick: add --pick MODEL (one of {ids})", field="pick")
    with warnings.catch_warnings(record=warn is not None) as said:
        warnings.simplefilter("always", UserWarning)
        catalog, models = from_openrouter(
            grades,
            pick=pick,
            ceiling=args.ceiling,
            base_url=args.base_url,
            api_key_env=args.api_key_env or None,
            saved_list=args.models_file,
        )
    for warning in said or []:
        assert warn is not None  # recorded only when there is a warn to tell
        warn(str(warning.message))
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    note = (
        f"A catalog of {len(catalog)} OpenRouter models, priced from {catalog.source} on {when}.\n"
        "Prices are USD per 1M tokens (OpenRouter lists them per token). Edit freely; `gradebench check` tries it.\n"
        f"Made by: {_command_line(args)}"
    )
    return catalog_toml(catalog, models, note=note)


def write_catalog(path: Path, text: str) -> Path:
    """Write the catalog to ``path`` whole or not at all: a file beside it, renamed over it once written."""
    made = path.with_name(f".{path.name}.part")
    made.write_text(text)
    os.replace(made, path)
    return path


def _command_line(args: argparse.Namespace) -> str:
    """The command that makes this file again (no key is ever part of it)."""
    words = ["gradebench", "catalog", "openrouter", *args.models]
    for option, values in (("--grade", args.grade), ("--pick", args.pick), ("--ceiling", [args.ceiling])):
        words += [w for value in values or [] if value for w in (option, value)]
    if args.base_url != DEFAULT_BASE_URL:
        words += ["--base-url", args.base_url]
    if args.api_key_env != DEFAULT_KEY_ENV:
        words += ["--api-key-env", args.api_key_env]
    for option, value in (("--models-file", args.models_file), ("-o", args.out)):
        words += [option, value] if value else []
    return " ".join(shlex.quote(w) for w in words)


def cli_grades(models: Iterable[str], specs: Iterable[str]) -> dict[str, list[str]]:
    """``--grade`` options and the bare MODELs as grade → model ids, weakest first (see `add_catalog_arguments`)."""
    grades: dict[str, list[str]] = {}
    default: str | None = None
    for spec in specs:
        name, has_models, ids = (part.strip() for part in spec.partition("="))
        if not name:
            raise ConfigError(f"--grade {spec!r}: give GRADE or GRADE=MODEL,MODEL...", field="grade")
        grades.setdefault(name, [])
        if has_models:
            grades[name] += [m.strip() for m in ids.split(",") if m.strip()]
        elif default not in (None, name):
            raise ConfigError(f"--grade {name}: the MODELs' grade is {default!r} already", field="grade")
        else:
            default = name
    models = list(models)
    if default is None:
        default = "standard"
        if not models and grades:  # every model is in a named grade: no default grade to make
            return grades
        grades = {default: [], **grades} if default not in grades else grades
    grades[default] = [*models, *grades[default]]
    return grades
