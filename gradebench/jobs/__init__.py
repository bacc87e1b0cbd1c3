"""Example jobs for the notebooks and tests: the order agent (tools) and the selecting agent (choice + scorer).

Importing this package registers both jobs' policies with the simulated fleet.
"""

from __future__ import annotations

from ._inputs import DATA_ENV, data_dir, load_inputs
from ._order_agent import ORDER_POLICY, ORDER_TOOLS, OrderAgent, OrderPolicy, ideal_decision
from ._orders import check_return_policy, issue_refund, lookup_order, return_rule
from ._selecting_agent import SELECTING_POLICY, Option, SelectingAgent, SelectingPolicy, best_option, ideal_choice

__all__ = [
    "DATA_ENV",
    "EXAMPLE_INPUTS",
    "EXAMPLE_JOBS",
    "ORDER_POLICY",
    "ORDER_TOOLS",
    "Option",
    "OrderAgent",
    "OrderPolicy",
    "SELECTING_POLICY",
    "SelectingAgent",
    "SelectingPolicy",
    "best_option",
    "check_return_policy",
    "data_dir",
    "ideal_choice",
    "ideal_decision",
    "issue_refund",
    "load_inputs",
    "lookup_order",
    "return_rule",
]

EXAMPLE_JOBS: dict[str, type] = {OrderAgent.name: OrderAgent, SelectingAgent.name: SelectingAgent}
"""Job name -> job class."""

EXAMPLE_INPUTS: dict[str, str] = {OrderAgent.name: "orders", SelectingAgent.name: "selections"}
"""Job name -> the name of its example input set (for `load_inputs`)."""
