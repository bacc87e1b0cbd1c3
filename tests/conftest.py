"""Tests are offline: real network is refused, the cache lives in a tmp dir, simulated latencies are zero."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

import gradebench as gb
from gradebench._base.vocab import Role
from gradebench._calls.seat import JobLimits
from gradebench.testing import ScriptedEndpoint, completion

__all__ = ["Scripted", "completion", "make_seat", "scripted_catalog"]

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else address
    if (
        isinstance(host, str)
        and (host.startswith("127.") or host in ("::1", "localhost"))
        or self.family == socket.AF_UNIX
    ):
        return _real_connect(self, address)
    raise RuntimeError(f"tests must not reach the network (tried {address!r})")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    monkeypatch.setenv("GRADEBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GRADEBENCH_SIM_LATENCY_SCALE", "0")
    # The command line fits its tables and lines to $COLUMNS. pytest imports readline, which sets COLUMNS=80 in the
    # C environment of its process: the workers of `pytest -n` start with it, a plain `pytest` does not. Without it,
    # every test sees output to a pipe, whether or not the suite runs on workers (or a terminal exported COLUMNS).
    monkeypatch.delenv("COLUMNS", raising=False)


class Scripted(ScriptedEndpoint):
    """The suite's scripted endpoint: judge requests go to the script too (the tests script their verdicts)."""

    def __init__(self, answers: list[Any] | Callable[[dict[str, Any], httpx2.Request], Any]):
        super().__init__(answers, verdict=None)


def scripted_catalog(handler: ScriptedEndpoint, **entry_overrides: Any) -> gb.Catalog:
    """A catalog whose every entry is served by ``handler``: acme/pick and acme/other (standard), acme/judge."""
    fields = {"base_url": handler.base_url, "price_in": 1.0, "price_out": 2.0, "max_retries": 0, **entry_overrides}
    entries = [
        gb.Entry(name="acme/pick", model="pick-1", grade="standard", **fields),
        gb.Entry(name="acme/other", model="other-1", grade="standard", **fields),
        gb.Entry(name="acme/judge", model="judge-1", grade="large", **fields),
    ]
    picks = {"standard": "acme/pick", "large": "acme/judge"}
    return gb.Catalog(entries, grades=["standard", "large"], picks=picks, ceiling="acme/judge", source="scripted")


def make_seat(
    catalog: gb.Catalog,
    entry: str,
    *,
    run_id: str = "run-1",
    salt: dict[str, Any] | None = None,
    cache: gb.results.CallCache | None = None,
    **limits: Any,
) -> gb.Seat:
    """A seat outside any benchmark, for testing the seat itself (through the client and transport a race uses).
    ``limits``: the `JobLimits` fields (``job_params`` is its ``params``)."""
    from gradebench._calls.session import Session, mounted

    session = Session(catalog, cache if cache is not None else gb.results.CallCache(), 8, mounted())
    key = SeatKeyForTests(
        run_id=run_id, salt_parts=salt or {"user": "", "input": "i", "role": "candidate", "repeat": 0}
    )
    if "job_params" in limits:
        limits["params"] = limits.pop("job_params")
    return session.seat(catalog[entry], key, JobLimits(**limits))


@dataclass(frozen=True, kw_only=True)
class SeatKeyForTests:
    """A seat's key with a run id of the test's choosing (a race computes its own, see
    `gradebench._records.keys.RunKey`)."""

    run_id: str
    salt_parts: dict[str, Any]
    benchmark_id: str = "bench-1"
    role: Role = Role.CANDIDATE
    sample: int = 0

    def salt(self) -> dict[str, Any]:
        return dict(self.salt_parts)
