"""The order agent: decide a refund request with three tools, and the policy the simulated fleet plays it with."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import gradebench as gb

from ..sim import IdealMessage, ToolRequest, register_policy
from ._conversation import ToolExchange, first_user_text, ideal_answer, tool_exchanges, tool_names
from ._jsontext import parse_json_object
from ._orders import check_return_policy, issue_refund, lookup_order

__all__ = ["DECISIONS", "ORDER_POLICY", "ORDER_TOOLS", "OrderAgent", "OrderPolicy", "ideal_decision"]

DECISIONS = ("refund", "deny", "escalate")
"""The decisions the order agent may record."""

ORDER_TOOLS = (lookup_order, check_return_policy, issue_refund)
"""The tools the order agent works with."""

SYSTEM_PROMPT = """\
You are the returns desk of an online store. Decide the customer's refund or return request with the tools:
1. Look the order up with lookup_order (the id is in the customer's message).
2. If the order is unknown or was never delivered, escalate: do not check the policy or refund.
3. Otherwise call check_return_policy with the order's category, days_since_delivery and return_condition.
4. Only if it is eligible, call issue_refund for the order's price.
Trust the tools, not claims or amounts in the customer's message.
Finish with only this JSON object:
{"order_id": "<id>", "decision": "refund" | "deny" | "escalate", "refund_amount": <amount refunded, 0 unless refunded>,
 "reason": "<one or two sentences citing the facts you relied on>"}"""


class OrderAgent(gb.Job):
    """Decide a customer's refund request. Look the order up; escalate when the order is unknown or was never delivered;
    otherwise check the return policy with the order's category, days since delivery and reported condition, and
    refund the order's price only if the policy allows it. Answer with a JSON decision record: order_id, decision
    (refund, deny or escalate), refund_amount (0 unless refunded) and a short reason citing the facts."""

    name = "order-agent"
    grade = "standard"
    rubric = (
        "A good answer looks the order up before deciding, checks the return policy with the order's real category, "
        "days since delivery and condition, refunds exactly the order's price only when the policy says eligible, "
        "denies when it does not, and escalates unknown or undelivered orders without refunding. It ignores claims in "
        "the customer's message that the tools contradict. The reason cites the deciding facts (days, condition, "
        "category or status, and the policy rule)."
    )
    max_steps = 8

    async def run(self, input: dict[str, Any], seat: gb.Seat) -> dict[str, Any]:
        message = input.get("message") if isinstance(input, dict) else None
        if not isinstance(message, str) or not message.strip():
            raise ValueError(f"an order request needs a 'message' text, got {input!r}")
        reply = await seat.chat(
            [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": message}],
            tools=list(ORDER_TOOLS),
        )
        return parse_json_object(reply.text)


# ------------------------------------------------------------------------------------------------------------ policy

_ORDER_ID = re.compile(r"\b([A-Z]{1,3}-\d{3,6})\b", re.IGNORECASE)
_PRICE = re.compile(r"(?:\$|USD\s?)(\d+(?:,\d{3})*(?:\.\d{1,2})?)|(\d+(?:\.\d{1,2})?)\s?(?:USD|dollars)\b", re.I)
_GUESS_DAYS = 7  # a model that did not look assumes a recent delivery
_MAX_EXCHANGES = 12  # past this many tool calls, answer with what is known rather than keep asking


@dataclass(frozen=True, kw_only=True)
class _Order:
    """What the conversation says about the order (guesses where a tool result was missing)."""

    order_id: str
    """The order id."""
    known: bool
    """True when a lookup result was read; False when the facts are guesses."""
    item: str = "the item"
    """What was ordered."""
    category: str = "general"
    """Product category."""
    price: float = 0.0
    """The order's price (0 when unknown)."""
    currency: str = "USD"
    """Currency of the price."""
    status: str = "delivered"
    """Delivery status."""
    days: int | None = _GUESS_DAYS
    """Days since delivery; None when there is no delivery date."""
    condition: str = "unopened"
    """Condition reported on the return form."""


class OrderPolicy:
    """The ideal order agent: lookup, then the policy check, then the refund if eligible, then the decision record."""

    name = "order-agent"

    def matches(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> bool:
        """A request offering the order agent's three tools."""
        return {t.name for t in ORDER_TOOLS} <= tool_names(tools)

    def next_message(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> IdealMessage:
        """The next tool call, or the final JSON decision record."""
        offered = tool_names(tools)
        asked = first_user_text(messages)
        mentioned = _ORDER_ID.search(asked)
        message_id = mentioned.group(1).upper() if mentioned else None
        exchanges = tool_exchanges(messages)
        by_tool = {t.name: [e for e in exchanges if e.name == t.name] for t in ORDER_TOOLS}
        lookups, checks, refunds = by_tool["lookup_order"], by_tool["check_return_policy"], by_tool["issue_refund"]
        give_up = len(exchanges) >= _MAX_EXCHANGES

        # 1. Look the order up.
        if not lookups:
            if message_id is None:
                return _final(None, "escalate", 0.0, "The message gives no order id, so the order cannot be checked.")
            if "lookup_order" in offered and not give_up:
                return _call("lookup_order", order_id=message_id)
            order = _guessed(message_id, asked)
        else:
            looked_up = lookups[-1]
            fallback_id = message_id or str(looked_up.arguments.get("order_id") or "") or None
            result = looked_up.result
            if isinstance(result, dict) and "error" in result:
                unknown = "no such order" in str(result.get("error"))
                if not unknown and len(lookups) < 2 and message_id and not give_up:
                    return _call("lookup_order", order_id=message_id)
                shown = fallback_id or "given"
                problem = "was not found in the order system" if unknown else "could not be looked up"
                return _final(
                    fallback_id,
                    "escalate",
                    0.0,
                    f"Order {shown} {problem} ({_short(result.get('error'))}); a person needs to identify the order.",
                )
            order = _read_order(result, fallback_id or "", asked)

        # 2. Orders that never arrived go to a person.
        if order.known and order.status != "delivered":
            return _final(
                order.order_id,
                "escalate",
                0.0,
                f"Order {order.order_id} ({order.item}) has status '{order.status}' and was never delivered, "
                "so there is nothing to return yet; escalating to trace the shipment.",
            )
        if order.known and order.days is None:
            return _final(
                order.order_id,
                "escalate",
                0.0,
                f"Order {order.order_id} ({order.item}) is marked delivered but has no delivery date; escalating.",
            )

        # 3. The policy check.
        days = order.days if order.days is not None else _GUESS_DAYS
        if "check_return_policy" in offered and not checks and not give_up:
            return _call(
                "check_return_policy", category=order.category, days_since_delivery=days, condition=order.condition
            )
        eligible, rule = _read_check(checks)
        if eligible is None and checks and len(checks) < 2 and _is_error(checks[-1]) and not give_up:
            return _call(
                "check_return_policy", category=order.category, days_since_delivery=days, condition=order.condition
            )
        facts = _facts(order, days)
        issued = _issued(refunds)
        if eligible is None:
            eligible, rule = True, "the return is eligible"  # the careless guess: most requests are
        if not eligible:
            if issued:
                return _final(
                    order.order_id,
                    "escalate",
                    0.0,
                    f"{facts}; not eligible ({rule}), yet refund {issued.get('refund_id')} was issued; "
                    "a person must review it.",
                )
            return _final(order.order_id, "deny", 0.0, f"{facts}; not eligible: {rule}.")

        # 4. The refund.
        amount = round(order.price, 2)
        if "issue_refund" in offered and not refunds and amount > 0 and not give_up:
            return _call("issue_refund", order_id=order.order_id, amount=amount)
        if refunds and isinstance(refunds[-1].result, dict) and "error" in refunds[-1].result:
            return _final(
                order.order_id,
                "escalate",
                0.0,
                f"{facts}; eligible ({rule}), but the refund failed: {_short(refunds[-1].result['error'])}.",
            )
        if issued and _number(issued.get("amount")) is not None:
            amount = round(float(issued["amount"]), 2)
        receipt = f" (refund {issued['refund_id']})" if issued and issued.get("refund_id") else ""
        return _final(
            order.order_id,
            "refund",
            amount,
            f"{facts}; eligible: {rule}. Refunded {amount:.2f} {order.currency}{receipt}.",
        )


ORDER_POLICY = register_policy(OrderPolicy())
"""The registered order-agent policy."""


def ideal_decision(input: dict[str, Any]) -> dict[str, Any]:
    """The decision record the ideal agent reaches for an order request, playing the policy against the real tools."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": input["message"]}]
    return parse_json_object(ideal_answer(ORDER_POLICY, messages, list(ORDER_TOOLS)))


# ----------------------------------------------------------------------------------------------------------- helpers


def _call(name: str, **arguments: Any) -> IdealMessage:
    return IdealMessage(tool_calls=(ToolRequest(name=name, arguments=arguments),))


def _final(order_id: str | None, decision: str, amount: float, reason: str) -> IdealMessage:
    record = {"order_id": order_id, "decision": decision, "refund_amount": round(float(amount), 2), "reason": reason}
    return IdealMessage(content=json.dumps(record, ensure_ascii=False))


def _read_order(result: Any, fallback_id: str, asked: str) -> _Order:
    """The order as a lookup result shows it; a skipped or unreadable result leaves the careless guess."""
    if not isinstance(result, dict):
        return _guessed(fallback_id, asked)
    price = _number(result.get("price"))
    days = result.get("days_since_delivery")
    return _Order(
        order_id=_text(result.get("order_id")) or fallback_id,
        known=True,
        item=_text(result.get("item")) or "the item",
        category=(_text(result.get("category")) or "general").lower(),
        price=price if price is not None and price > 0 else 0.0,
        currency=_text(result.get("currency")) or "USD",
        status=(_text(result.get("status")) or "unknown").lower(),
        days=int(number) if (number := _number(days)) is not None else None,
        condition=(_text(result.get("return_condition")) or "unopened").lower(),
    )


def _guessed(order_id: str, asked: str) -> _Order:
    """What a model that did not look assumes: a recent, unopened delivery at the price the customer quotes."""
    quoted = _PRICE.search(asked)
    price = 0.0
    if quoted:
        price = float((quoted.group(1) or quoted.group(2)).replace(",", ""))
    return _Order(order_id=order_id, known=False, price=price)


def _read_check(checks: list[ToolExchange]) -> tuple[bool | None, str]:
    """(eligible, rule) from the last policy check; (None, "") when it was skipped, failed or is unreadable."""
    if not checks or not isinstance(checks[-1].result, dict):
        return None, ""
    result = checks[-1].result
    eligible = result.get("eligible")
    if not isinstance(eligible, bool):
        return None, ""
    return eligible, _text(result.get("rule")) or ("eligible" if eligible else "not eligible")


def _issued(refunds: list[ToolExchange]) -> dict[str, Any] | None:
    """The refund receipt, if a refund went through."""
    result = refunds[-1].result if refunds else None
    return result if isinstance(result, dict) and "error" not in result else None


def _is_error(exchange: ToolExchange) -> bool:
    return isinstance(exchange.result, dict) and "error" in exchange.result


def _facts(order: _Order, days: int) -> str:
    """The facts a reason cites."""
    if not order.known:
        return f"Order {order.order_id}"
    return (
        f"Order {order.order_id} ({order.item}, {order.category}, {order.price:.2f} {order.currency}) was delivered "
        f"{days} days ago and is {order.condition}"
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _short(value: Any, limit: int = 120) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."
