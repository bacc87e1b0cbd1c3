"""Judging the negative controls (`gradebench._records.planted`): in a race, beside the candidate runs and under its
budget;
priced for its estimate; and again when a report's runs are judged again.

A control is judged exactly as a candidate run is (`gradebench._judge.judge.judge_run`: the tool diff, the blind prompt,
both orders under the label-bias check), as its own run id, so its verdict has a cache key of its own and a rerun
takes it from the cache. The control's record keeps its verdict and answer but none of the reference's calls it was
shown with: it made no model call, so it costs nothing but its verdict, and no sum over runs or calls counts it
twice. No race event is sent for it: a progress display counts candidate runs only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .._base.fanout import fan_out, lane_width
from .._calls.session import Session
from .._judge.judge import JudgeSetup, judge_messages, judge_run
from .._judge.tooldiff import compare, judge_note
from .._records.planted import ControlPlant, control_seed, plant_controls, planted_run
from .._records.records import Run
from .budget import Budget
from .costs import JUDGE_OUTPUT_TOKENS, cacheable_prefix, judge_prompt_tokens, predicted_cost

__all__ = ["CONTROL_LANE", "ControlJudging", "ControlPrice", "control_price", "judge_control", "plants_of"]

CONTROL_LANE = "(control)"
"""The name the budget knows the controls' verdicts by (what the dearest of them cost is kept under it)."""


async def judge_control(
    session: Session, plant: ControlPlant, references: Mapping[str, Run], values: Mapping[str, Any], setup: JudgeSetup
) -> Run:
    """One control judged blind: its record, with its verdict and tool diff, and no calls (see the module)."""
    shown = planted_run(plant, references)
    judged = await judge_run(session, shown, references[plant.input_id], values.get(plant.input_id), setup)
    return replace(judged, calls=[], wall_s=0.0, wall_now_s=0.0)


@dataclass(frozen=True, kw_only=True)
class ControlPrice:
    """What judging one control asks of the judge."""

    judge_calls: int
    """Judge calls (two under the label-bias check)."""
    input_tokens: int
    """Their prompts' tokens."""
    cached_tokens: int
    """Of those, what a provider's prompt cache serves once another verdict of the input laid its prefix down: the
    control is its input's reference transcript up to the answer, so as much as a run like the reference shares."""
    output_tokens: int
    """Their verdicts' tokens (`JUDGE_OUTPUT_TOKENS` each)."""
    cost: float
    """What they cost at the judge's prices, every prompt paid in full (what the budget reserves from)."""
    cached_cost: float
    """What they cost with the cached prefix (what the estimate counts: of an input's verdicts, one pays in full,
    and the estimate counts that one among the candidates')."""


def control_price(
    plant: ControlPlant, references: Mapping[str, Run], values: Mapping[str, Any], setup: JudgeSetup
) -> ControlPrice:
    """The price of judging ``plant``, from the very prompts it will be judged with (by every judge of a panel)."""
    shown, reference = planted_run(plant, references), references[plant.input_id]
    facts = judge_note(compare(shown.calls, shown.output, reference.calls, reference.output))
    value = values.get(plant.input_id)
    orders = (False, True) if setup.swap else (False,)
    prices = []
    for judge in setup.judges:
        one = setup.alone(judge)
        prompts = [judge_messages(shown, reference, value, one, facts=facts, candidate_first=o) for o in orders]
        tokens = [judge_prompt_tokens(p, one) for p in prompts]
        schema = judge.name not in one.schema_rejected
        cached = [
            min(t, cacheable_prefix(reference, value, one, facts, candidate_first=o, schema=schema))
            for t, o in zip(tokens, orders, strict=True)
        ]
        prices.append(
            ControlPrice(
                judge_calls=len(orders),
                input_tokens=sum(tokens),
                cached_tokens=sum(cached),
                output_tokens=len(orders) * JUDGE_OUTPUT_TOKENS,
                cost=sum(predicted_cost(judge, t, JUDGE_OUTPUT_TOKENS) for t in tokens),
                cached_cost=sum(
                    predicted_cost(judge, t, JUDGE_OUTPUT_TOKENS, c) for t, c in zip(tokens, cached, strict=True)
                ),
            )
        )
    return ControlPrice(
        judge_calls=sum(p.judge_calls for p in prices),
        input_tokens=sum(p.input_tokens for p in prices),
        cached_tokens=sum(p.cached_tokens for p in prices),
        output_tokens=sum(p.output_tokens for p in prices),
        cost=sum(p.cost for p in prices),
        cached_cost=sum(p.cached_cost for p in prices),
    )


def plants_of(
    references: Mapping[str, Run], count: int, *, salt: str, benchmark_id: str
) -> tuple[list[ControlPlant], list[str]]:
    """The controls a race of this benchmark plants on these reference runs (see `plant_controls`)."""
    return plant_controls(references, count, benchmark_id=benchmark_id, seed=control_seed(salt, benchmark_id))


class ControlJudging:
    """The controls of one race: planted from its reference runs, each judged blind as it is admitted by the budget
    (first in its order: a control waits for no candidate run)."""

    def __init__(
        self,
        plants: Sequence[ControlPlant],
        session: Session,
        references: Mapping[str, Run],
        values: Mapping[str, Any],
        setup: JudgeSetup,
        *,
        budget: Budget | None,
        concurrency: int,
    ):
        self.plants = list(plants)
        """The controls planted."""
        self.session, self.references, self.values, self.setup = session, references, values, setup
        self.budget, self.concurrency = budget, concurrency
        self._judged: dict[str, Run] = {}

    async def run(self) -> None:
        """Judge every control (one the budget does not admit is left unjudged, and the race stops)."""
        width = lane_width(self.concurrency, self.setup.entry.max_concurrency)
        await fan_out(list(enumerate(self.plants)), self._one, width=width)

    async def _one(self, item: tuple[int, ControlPlant]) -> None:
        place, plant = item
        budget, held = self.budget, 0.0
        if budget is not None:
            price = control_price(plant, self.references, self.values, self.setup).cost
            held = budget.reservation(CONTROL_LANE, price)
            # the candidate runs take places 0, 1, ...: the controls come before all of them
            if not await budget.admit(held, place=place - len(self.plants)):
                return
        run = await judge_control(self.session, plant, self.references, self.values, self.setup)
        if budget is not None:
            budget.settle(CONTROL_LANE, held, run.spent_now_with_verdict)
        self._judged[plant.run_id] = run

    def judged(self) -> list[Run]:
        """The controls judged so far, in planting order (the rows of ``report.controls``)."""
        return [self._judged[p.run_id] for p in self.plants if p.run_id in self._judged]
