"""Real models on a real llama.cpp server, one per model on a free loopback port, for the tests marked ``real``.

`scripts/real_models.py` builds ``llama-server`` once and fetches the models into its cache folder (reused by later
runs); a machine that cannot (no compiler, no registry) skips these tests with the reason, never passes them silently.
The servers start once a session and are stopped by their PID at its end.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real_models.py"

RANDOM_CTX = 2048
"""The random-weights server's context, two slots of 1024 tokens: small enough that a long prompt overflows it."""

SMALL_CTX = 1024
"""A second random-weights server's context, two slots of 512 tokens: a prompt the first one serves overflows it."""

SERVERS = [
    ("smollm2", "smollm2", 8192),
    ("judge", "smollm2", 8192),
    ("gemma", "gemma", 4096),
    ("random", "random", RANDOM_CTX),
    ("random-small", "random", SMALL_CTX),
]
"""(server, model, context): two slots each."""


def real_models() -> ModuleType:
    """`scripts/real_models.py`, the script CI and a user run, imported from its file (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("real_models", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("real_models", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def real_servers() -> Iterator[dict[str, Any]]:
    """Each name of `SERVERS` to its `Server`, each healthy, stopped by PID after the session.
    The judge is SmolLM2 on a server of its own: one thread a server, so judging runs beside the candidates' calls."""
    script = real_models()
    try:
        paths = script.prepare()
    except script.Unavailable as why:
        pytest.skip(f"real models unavailable on this machine: {why}")
    log_dir = script.cache_dir() / "logs"
    log_dir.mkdir(exist_ok=True)
    servers: dict[str, Any] = {}
    try:
        for name, model, ctx in SERVERS:
            servers[name] = script.start(paths["llama-server"], paths[model], name, ctx=ctx, log_dir=log_dir)
        for server in servers.values():
            script.wait_healthy(server)
        yield servers
    finally:
        for server in servers.values():
            server.stop()
