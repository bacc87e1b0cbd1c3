"""The example jobs' data, shipped in the package (``gradebench/jobs/data``): their inputs and the order database."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["DATA_ENV", "INPUT_FILES", "data_dir", "load_inputs", "read_json"]

DATA_ENV = "GRADEBENCH_DATA"
"""Environment variable that points the example jobs at another data folder."""

INPUT_FILES = {"orders": "order_requests.jsonl", "selections": "selection_requests.jsonl"}
"""Input set name -> JSON Lines file in the data folder."""


def data_dir() -> Path:
    """The data folder: ``$GRADEBENCH_DATA`` when set, else the one installed with the package."""
    override = os.environ.get(DATA_ENV)
    # Read on every call, so a test or notebook can point at another folder without reimporting.
    return Path(override) if override else Path(__file__).resolve().parent / "data"


def load_inputs(name: str) -> list[dict[str, Any]]:
    """The example inputs ``"orders"`` or ``"selections"``, one dict per line of their JSON Lines file."""
    if name not in INPUT_FILES:
        raise ValueError(f"unknown input set {name!r}; choose one of {sorted(INPUT_FILES)}")
    path = data_dir() / INPUT_FILES[name]
    if not path.is_file():
        raise FileNotFoundError(f"example inputs {name!r} not found: {path} (set {DATA_ENV} to the data folder)")
    inputs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object, got {type(value).__name__}")
        inputs.append(value)
    return inputs


def read_json(filename: str) -> Any:
    """A JSON file of the data folder (e.g. the order database ``orders.json``)."""
    path = data_dir() / filename
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path} (set {DATA_ENV} to the data folder)")
    return json.loads(path.read_text(encoding="utf-8"))
