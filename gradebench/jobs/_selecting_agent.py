"""The selecting agent: pick the best of several options for a request; and its policy for the simulated fleet.

The options are shown in a seeded shuffle (the input's id is the key), so a model's preference for the first letter
does not line up with the right answer, and every run of one input sees the same order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradebench as gb

from ..scorers import DEFAULT_LETTERS, extract_choice, field_equals, seeded_shuffle
from ..sim import IdealMessage, register_policy
from ._conversation import first_user_text, system_text

__all__ = [
    "SELECTING_POLICY",
    "Option",
    "SelectingAgent",
    "SelectingPolicy",
    "best_option",
    "ideal_choice",
    "render_prompt",
]

SYSTEM_PROMPT = """\
You pick the best option for a request. The best option is the cheapest one that has every must-have and costs no \
more than the budget. Reply with the option's letter on the first line as "Answer: <letter>", then one line of \
justification."""

_MARKER = "You pick the best option for a request."  # what the policy recognises the job's conversations by


@dataclass(frozen=True, kw_only=True)
class Option:
    """One option as the prompt shows it."""

    name: str
    """What the option is called."""
    price: float
    """Its price, in the request's currency."""
    features: tuple[str, ...]
    """The features it has (must-haves are matched against these exactly)."""


def best_option(options: Sequence[Option], budget: float, must_haves: Sequence[str]) -> int:
    """Index of the best option: the cheapest within budget having every must-have.

    When none qualifies, the one with the most must-haves within budget, then the cheapest, wins (a sensible fallback;
    the example data always has a qualifying option).
    """
    if not options:
        raise ValueError("there are no options to choose from")
    wanted = set(must_haves)

    def rank(i: int) -> tuple[bool, int, float, int]:
        option = options[i]
        return (option.price > budget, -len(wanted & set(option.features)), option.price, i)

    return min(range(len(options)), key=rank)


def render_prompt(input: dict[str, Any], options: Sequence[dict[str, Any]]) -> str:
    """The user message the job writes: the request, budget, must-haves and the lettered options."""
    currency = str(input.get("currency", "USD"))
    lines = [
        f"Request: {_one_line(input['request'])}",
        f"Budget: up to {_money(input['budget'])} {currency}",
        f"Must-haves: {'; '.join(map(_one_line, input.get('must_haves', []))) or 'none'}",
        "Options:",
    ]
    for letter, option in zip(DEFAULT_LETTERS, options, strict=False):
        features = "; ".join(map(_one_line, option.get("features", [])))
        lines.append(f"{letter}) {_one_line(option['name'])} — {_money(option['price'])} {currency} — {features}")
    return "\n".join(lines)


class SelectingAgent(gb.Job):
    """Pick the best option for a request: the cheapest option that has every must-have and stays within the budget.
    The options are shown lettered in a shuffled order; answer with the letter and a one-line justification. The
    output names the chosen option's id, the letter shown and the justification."""

    name = "selecting-agent"
    grade = "standard"
    rubric = (
        "A good answer picks the cheapest option that has every must-have and costs no more than the budget, and its "
        "one-line justification cites the deciding facts: the price against the budget and the must-haves, and why "
        "cheaper options fall short."
    )
    max_steps = 2
    scorer = field_equals("choice")

    async def run(self, input: dict[str, Any], seat: gb.Seat) -> dict[str, Any]:
        options = _checked_options(input)
        shuffled = seeded_shuffle(options, key=input["id"])
        letters = DEFAULT_LETTERS[: len(options)]
        reply = await seat.chat(
            [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": render_prompt(input, shuffled.options)},
            ]
        )
        letter = extract_choice(reply.text, letters)
        if letter is None:
            raise ValueError(f"the reply names no option letter {letters[0]}-{letters[-1]}: {reply.text[:200]!r}")
        chosen = shuffled.options[letters.index(letter)]
        return {"choice": chosen["id"], "letter": letter, "justification": _justification(reply.text)}


# ------------------------------------------------------------------------------------------------------------ policy

_BUDGET = re.compile(r"^Budget:\s*up to\s*([\d.,]+)\s*(\S*)\s*$", re.MULTILINE)
_MUST = re.compile(r"^Must-haves:\s*(.*)$", re.MULTILINE)
_OPTION = re.compile(r"^([A-J])\)\s*(.+?)\s+—\s+([\d.,]+)\s*\S*\s+—\s*(.*)$", re.MULTILINE)


class SelectingPolicy:
    """The ideal selecting agent: reads the prompt the job writes and applies the rule exactly."""

    name = "selecting-agent"

    def matches(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> bool:
        """A conversation opened by the selecting agent's system prompt."""
        return _MARKER in system_text(messages)

    def next_message(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> IdealMessage:
        """The answer letter and a one-line justification."""
        prompt = first_user_text(messages)
        budget_match = _BUDGET.search(prompt)
        must_match = _MUST.search(prompt)
        parsed = [(m.group(1), m.group(2), _parse_money(m.group(3)), m.group(4)) for m in _OPTION.finditer(prompt)]
        options = [
            (letter, Option(name=name, price=price, features=_split(features)))
            for letter, name, price, features in parsed
            if price is not None
        ]
        if not options:
            return IdealMessage(content="Answer: A\nThe options could not be read, so this is the first one listed.")
        budget = _parse_money(budget_match.group(1)) if budget_match else None
        currency = budget_match.group(2) if budget_match and budget_match.group(2) else ""
        must = list(_split(must_match.group(1))) if must_match else []
        must = [] if must == ["none"] else must
        index = best_option([o for _, o in options], budget if budget is not None else math.inf, must)
        letter, best = options[index]
        return IdealMessage(content=f"Answer: {letter}\n{_why(best, [o for _, o in options], budget, currency, must)}")


SELECTING_POLICY = register_policy(SelectingPolicy())
"""The registered selecting-agent policy."""


def ideal_choice(input: dict[str, Any]) -> dict[str, Any]:
    """The ideal answer for a selection request: ``{"choice": option id, "letter": letter shown}``.

    Plays the policy on the very prompt the job writes, so it also checks that the prompt reads back.
    """
    options = _checked_options(input)
    shuffled = seeded_shuffle(options, key=input["id"])
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": render_prompt(input, shuffled.options)},
    ]
    letter = extract_choice(SELECTING_POLICY.next_message(messages, []).content, DEFAULT_LETTERS[: len(options)])
    if letter is None:
        raise ValueError(f"the policy gave no letter for input {input.get('id')!r}")
    return {"choice": shuffled.options[DEFAULT_LETTERS.index(letter)]["id"], "letter": letter}


# ----------------------------------------------------------------------------------------------------------- helpers


def _checked_options(input: Any) -> list[dict[str, Any]]:
    if not isinstance(input, dict):
        raise ValueError(f"a selection request must be a dict, got {type(input).__name__}")
    for key in ("id", "request", "budget", "options"):
        if key not in input:
            raise ValueError(f"selection request {input.get('id')!r} has no {key!r}")
    options = input["options"]
    if not isinstance(options, list) or not 1 <= len(options) <= len(DEFAULT_LETTERS):
        raise ValueError(f"selection request {input['id']!r} needs 1-{len(DEFAULT_LETTERS)} options")
    for option in options:
        if not isinstance(option, dict) or not {"id", "name", "price"} <= option.keys():
            raise ValueError(
                f"selection request {input['id']!r}: every option needs id, name and price, got {option!r}"
            )
    return options


def _why(best: Option, options: list[Option], budget: float | None, currency: str, must: list[str]) -> str:
    """One line citing the deciding facts: price against budget, the must-haves, and why cheaper options lose."""
    price = f"{_money(best.price)} {currency}".strip()
    within = f" within the {_money(budget)} {currency} budget".rstrip() if budget is not None else ""
    has = f" and has every must-have ({', '.join(must)})" if must else ""
    lacking = [o.name for o in options if o.price < best.price and not set(must) <= set(o.features)]
    tail = f"; cheaper {', '.join(lacking)} {'misses' if len(lacking) == 1 else 'miss'} a must-have" if lacking else ""
    does = "that does" if must else "that fits"
    return f"{best.name} costs {price}{within}{has}; it is the cheapest option {does}{tail}."


_ANSWER_PREFIX = re.compile(
    r"^\W*(?:final\s+|correct\s+)?answer\W*(?:is\W*)?(?:option\s*)?\(?[A-J]\)?(?![A-Za-z0-9])[\s.:*)\]-]*",
    re.IGNORECASE,
)


def _justification(text: str) -> str:
    """The reply without its answer marker, as one line."""
    rest = _ANSWER_PREFIX.sub("", text.strip(), count=1)
    return " ".join(rest.split())


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(";") if part.strip())


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())


def _money(value: float) -> str:
    value = float(value)
    return f"{value:.0f}" if value.is_integer() else f"{value:.2f}"


def _parse_money(text: str) -> float | None:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None
