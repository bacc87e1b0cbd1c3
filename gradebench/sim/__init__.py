"""The simulated OpenAI-compatible fleet: offline models with profiles, served through the real openai client.

``sim_catalog()`` is what ``Catalog.sim()`` returns: every entry is ``simulated=True`` and the catalog's transport is
the fleet's in-process ``httpx2.MockTransport``. ``serve``/``start_server`` put the same fleet on a loopback socket.
See ``gradebench.sim._profiles`` for the table of entries and their quirks.
"""

from __future__ import annotations

import os

from .._catalog import Catalog, Entry
from ._fleet import SimFleet, SimRequest
from ._policy import IdealMessage, Policy, ToolRequest, policies, register_policy
from ._profiles import CEILING, GRADES, PICKS, PROFILES, Profile
from ._server import SimServer, serve, start_server

__all__ = [
    "DEFAULT_BASE_URL",
    "IdealMessage",
    "Policy",
    "Profile",
    "SimFleet",
    "SimRequest",
    "SimServer",
    "ToolRequest",
    "policies",
    "register_policy",
    "serve",
    "sim_catalog",
    "start_server",
]

DEFAULT_BASE_URL = "http://sim.gradebench.invalid/v1"
"""Base URL of the in-process fleet (``.invalid``: it can never resolve to a real host)."""


def sim_catalog(*, latency_scale: float | None = None, seed: int = 0, base_url: str | None = None) -> Catalog:
    """The simulated fleet as a catalog; ``catalog.fleet`` is the `SimFleet` behind it (``catalog.fleet.requests``).

    ``latency_scale`` multiplies every simulated latency and speeds the server-side rate limit up in proportion
    (0: no sleeps and no rate limiting, for tests); None reads ``GRADEBENCH_SIM_LATENCY_SCALE`` (default 1).
    With ``base_url`` (a running ``gradebench sim-serve``), entries point there and no in-process transport is set;
    the local ``catalog.fleet`` is then only a description of the profiles, not the one answering.
    """
    if latency_scale is None:
        latency_scale = float(os.environ.get("GRADEBENCH_SIM_LATENCY_SCALE", "1"))
    fleet = SimFleet(latency_scale=latency_scale, seed=seed)
    url = base_url or DEFAULT_BASE_URL
    entries = [
        Entry(
            name=p.name,
            model=p.model,
            grade=p.grade,
            base_url=url,
            api_key_env=None,
            price_in=p.price_in,
            price_out=p.price_out,
            price_cached_in=p.price_cached_in,
            currency="USD",
            max_concurrency=p.max_concurrency,
            # client-side pacing speeds up with the simulated clock, as the server's limit does
            rpm=None if not p.catalog_rpm or latency_scale == 0 else max(1, round(p.catalog_rpm / latency_scale)),
            max_retries=p.max_retries,
            simulated=True,
        )
        for p in PROFILES
    ]
    catalog = Catalog(
        entries,
        grades=GRADES,
        picks=PICKS,
        ceiling=CEILING,
        transport=None if base_url else fleet.transport(),
        fleet=fleet,
        source="sim",
    )
    return catalog
