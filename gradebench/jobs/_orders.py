"""The returns desk's back office: the order database and the three tools the order agent calls.

The tools are pure: they read ``orders.json`` (the example data) and compute, and keep no state between calls or
runs, so every run of the benchmark sees the same world (a refund id is derived from the order and amount, not
drawn from a counter).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from typing import Any

import gradebench as gb

from ._inputs import read_json

__all__ = [
    "CONDITIONS",
    "FINAL_SALE_CATEGORIES",
    "OPENED_ELECTRONICS_DAYS",
    "ORDERS_FILE",
    "RETURN_WINDOW_DAYS",
    "check_return_policy",
    "issue_refund",
    "lookup_order",
    "return_rule",
]

ORDERS_FILE = "orders.json"
"""The order database in the data folder: ``{"as_of": date, "orders": {order_id: record}}``."""

RETURN_WINDOW_DAYS = 30
"""Days after delivery within which an item may be returned."""

OPENED_ELECTRONICS_DAYS = 14
"""Days after delivery within which opened or used electronics may be returned."""

FINAL_SALE_CATEGORIES = frozenset({"clearance", "gift-cards", "personalized"})
"""Categories sold as final sale: never refundable (unless damaged on arrival)."""

CONDITIONS = ("unopened", "opened", "used", "damaged")
"""Conditions a return form can report; ``damaged`` means damaged on arrival."""


def return_rule(category: str, days_since_delivery: int, condition: str) -> tuple[bool, str]:
    """The return policy as a pure function: (eligible, the rule that decided it)."""
    category, condition = str(category).strip().lower(), str(condition).strip().lower()
    if isinstance(days_since_delivery, bool) or not isinstance(days_since_delivery, int):
        return False, f"days_since_delivery must be a whole number, got {days_since_delivery!r}"
    if condition not in CONDITIONS:
        return False, f"unknown condition {condition!r}; expected one of {', '.join(CONDITIONS)}"
    if days_since_delivery < 0:
        return False, f"days_since_delivery must be >= 0, got {days_since_delivery}"
    if condition == "damaged":
        return True, "damaged on arrival: always refundable, whatever the category or date"
    if category in FINAL_SALE_CATEGORIES:
        return False, f"final sale: {category} items are never refundable unless damaged on arrival"
    if days_since_delivery > RETURN_WINDOW_DAYS:
        return False, f"outside the {RETURN_WINDOW_DAYS}-day return window ({days_since_delivery} days since delivery)"
    if category == "electronics" and condition in ("opened", "used"):
        if days_since_delivery > OPENED_ELECTRONICS_DAYS:
            return False, (
                f"opened or used electronics are returnable within {OPENED_ELECTRONICS_DAYS} days of delivery only "
                f"({days_since_delivery} days since delivery)"
            )
        return True, f"opened electronics within {OPENED_ELECTRONICS_DAYS} days of delivery: refundable"
    return True, f"within the {RETURN_WINDOW_DAYS}-day return window ({days_since_delivery} days since delivery)"


def _database() -> dict[str, Any]:
    return read_json(ORDERS_FILE)


def _normal_id(order_id: str) -> str:
    return order_id.strip().upper()


@gb.tool
def lookup_order(order_id: str) -> dict:
    """Look an order up by its id: item, category, price, delivery status and date, and the reported condition.

    Args:
        order_id: The order id, e.g. "A-1001".
    """
    if not isinstance(order_id, str):
        return {"error": f"order_id must be a string, got {order_id!r}"}
    database = _database()
    record = database.get("orders", {}).get(_normal_id(order_id))
    if record is None:
        return {"error": "no such order", "order_id": order_id}
    delivered_on = record.get("delivered_on")
    days = None
    if delivered_on:
        days = (dt.date.fromisoformat(database["as_of"]) - dt.date.fromisoformat(delivered_on)).days
    return {"order_id": _normal_id(order_id), **record, "days_since_delivery": days}


@gb.tool
def check_return_policy(category: str, days_since_delivery: int, condition: str) -> dict:
    """Check whether an item may be returned for a refund under the store's return policy.

    Args:
        category: The order's product category, e.g. "electronics" or "clothing".
        days_since_delivery: Whole days since the order was delivered.
        condition: The item's condition: "unopened", "opened", "used" or "damaged" (damaged on arrival).
    """
    eligible, rule = return_rule(category, days_since_delivery, condition)
    return {"eligible": eligible, "rule": rule}


@gb.tool
def issue_refund(order_id: str, amount: float) -> dict:
    """Refund an amount to the customer's original payment method.

    Args:
        order_id: The order id, e.g. "A-1001".
        amount: The amount to refund, at most the order's price.
    """
    if not isinstance(order_id, str):
        return {"error": f"order_id must be a string, got {order_id!r}"}
    record = _database().get("orders", {}).get(_normal_id(order_id))
    if record is None:
        return {"error": "no such order", "order_id": order_id}
    price = float(record.get("price") or 0.0)
    if isinstance(amount, bool) or not isinstance(amount, int | float) or not math.isfinite(amount) or amount <= 0:
        return {"error": f"amount must be positive, got {amount}"}
    if amount > price + 0.005:
        return {"error": f"amount {amount:.2f} exceeds the order's price {price:.2f}"}
    amount = round(amount, 2)
    # Derived, not counted: the same refund gets the same id in every run, and runs share no state.
    digest = hashlib.sha256(f"{_normal_id(order_id)}|{amount:.2f}".encode()).hexdigest()
    return {
        "refund_id": "RF-" + digest[:8].upper(),
        "order_id": _normal_id(order_id),
        "amount": amount,
        "currency": record.get("currency", "USD"),
        "status": "issued",
    }
