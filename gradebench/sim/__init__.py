"""The simulated OpenAI-compatible fleet: offline models with profiles, served through the real openai client.

``gradebench.sim.catalog()`` is the fleet as a catalog: every entry is ``simulated=True`` and the fleet is mounted
in-process at ``http://sim.gradebench.invalid`` (an ``httpx2.MockTransport`` under the real client; see
`gradebench.mount`). ``SimFleet(...).catalog()`` does the same and keeps the fleet in hand (``fleet.requests``).
``serve``/``start_server`` put a fleet on a loopback socket. The example jobs register their policies (the ideal
next message) with ``register_policy`` when imported; the fleet asks them, and never imports a job itself.
See ``gradebench.sim._profiles`` for the table of entries and their quirks. ``human_score`` and ``human_labels`` are a
careful person's scores of a report's runs (the sim's truth for human labels), and ``swayed_catalog`` the fleet with
a judge swayed by verbosity (``SWAYED``) and a cheap, verbose, often wrong entry (``WINDY``). The fleet serves
OpenAI's Files and Batch APIs too (``gradebench.sim._batches``; `BatchOptions` says how they behave).
"""

from __future__ import annotations

from .._catalog.catalog import Catalog
from ._batches import BatchOptions, BatchService, SimBatch
from ._drift import Drift
from ._fleet import DEFAULT_BASE_URL, LATENCY_ENV, SimFleet, SimRequest
from ._human import SWAYED, WINDY, human_labels, human_score, swayed_catalog
from ._policy import IdealMessage, Policy, ToolRequest, policies, register_policy
from ._profiles import PROFILES, Profile
from ._server import SimServer, serve, start_server

__all__ = [
    "BatchOptions",
    "BatchService",
    "DEFAULT_BASE_URL",
    "IdealMessage",
    "LATENCY_ENV",
    "PROFILES",
    "Policy",
    "Profile",
    "SWAYED",
    "SimBatch",
    "SimFleet",
    "SimRequest",
    "SimServer",
    "ToolRequest",
    "WINDY",
    "catalog",
    "human_labels",
    "human_score",
    "policies",
    "register_policy",
    "serve",
    "start_server",
    "swayed_catalog",
]


def catalog(
    *,
    latency_scale: float | None = None,
    seed: int = 0,
    base_url: str | None = None,
    drift: Drift | None = None,
    batch: BatchOptions | None = None,
) -> Catalog:
    """The simulated fleet as a catalog, served in-process (or by the ``gradebench sim-serve`` at ``base_url``).

    ``latency_scale`` multiplies every simulated latency and speeds the server-side rate limit up in proportion
    (0: no sleeps and no rate limiting, for tests); None reads ``GRADEBENCH_SIM_LATENCY_SCALE`` (default 1).
    ``SimFleet(latency_scale=..., seed=...).catalog()`` is the same with the fleet kept (its ``requests``).
    ``drift`` serves changed versions of entries behind the same catalog, as a provider that swaps a model does
    (``{"sim/squint": "sim/swift"}``, or behaviour fields: ``{"sim/squint": {"skip_rate": 0.3}}``; see
    `SimFleet.set_drift`); it applies to the in-process fleet this call mounts, so ``base_url`` and ``drift`` do
    not go together (give a drifted `SimFleet` to ``start_server`` instead). ``batch``: how the fleet's Batch API
    behaves (`BatchOptions`), for the in-process fleet likewise.
    """
    for given, name in ((drift, "drift"), (batch, "batch")):
        if given and base_url is not None:
            raise ValueError(
                f"{name} applies to the in-process fleet: with base_url, start the server with a SimFleet(...{name}=)"
            )
    return SimFleet(latency_scale=latency_scale, seed=seed, drift=drift, batch=batch).catalog(base_url=base_url)
