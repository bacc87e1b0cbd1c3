"""The simulated fleet a test serves over loopback, as the catalog a real CLI process loads:
``--catalog tests.served_sim:catalog`` with ``GRADEBENCH_TEST_SIM_URL`` set to the server's base URL."""

from __future__ import annotations

import os

import gradebench as gb


def catalog() -> gb.Catalog:
    return gb.sim.catalog(base_url=os.environ["GRADEBENCH_TEST_SIM_URL"], latency_scale=0)
