from __future__ import annotations

from collections import defaultdict
from typing import Any

import gradebench as gb
from gradebench._judge.tooldiff import ToolStep, compare, diff_traces, judge_note, misread_fields, normalise, tool_trace
from gradebench.jobs import OrderAgent, load_inputs

from ..conftest import completion

ORDER = {
    "order_id": "A-1001",
    "item": "Aero wireless headphones",
    "category": "electronics",
    "price": 129.99,
    "currency": "USD",
    "status": "delivered",
    "days_since_delivery": 6,
    "return_condition": "unopened",
}
POLICY = {"eligible": True, "rule": "within the 30-day return window (6 days since delivery)"}
REFUND = {"refund_id": "RF-1234ABCD", "order_id": "A-1001", "amount": 129.99, "currency": "USD", "status": "issued"}
CHECK_ARGS = {"category": "electronics", "days_since_delivery": 6, "condition": "unopened"}
REFUNDED = {"order_id": "A-1001", "decision": "refund", "refund_amount": 129.99, "reason": "Eligible, refunded."}


def rec(name: str, arguments: Any, result: Any = None, *, error: str | None = None) -> dict[str, Any]:
    record = {"id": f"call_{name}", "name": name, "arguments": arguments}
    return {**record, "error": error} if error is not None else {**record, "result": result}


def calls(*steps: dict[str, Any]) -> list[gb.results.Call]:
    """One model call per tool call, then a final answer, as a tool loop records them."""
    made = [
        gb.results.Call.from_bodies(
            run_id="r",
            seq=i,
            role="candidate",
            entry="acme/pick",
            request={"model": "pick-1", "messages": []},
            response=completion(tool_calls=[{"name": s["name"], "arguments": s["arguments"]}]),
            tool_results=[s],
        )
        for i, s in enumerate(steps)
    ]
    final = gb.results.Call.from_bodies(
        run_id="r",
        seq=len(steps),
        role="candidate",
        entry="acme/pick",
        request={"messages": []},
        response=completion("{}"),
    )
    return [*made, final]


LOOKUP = rec("lookup_order", {"order_id": "A-1001"}, ORDER)
CHECK = rec("check_return_policy", CHECK_ARGS, POLICY)
ISSUE = rec("issue_refund", {"order_id": "A-1001", "amount": 129.99}, REFUND)
REFERENCE = calls(LOOKUP, CHECK, ISSUE)


def test_identical_traces_are_clean() -> None:
    diff = compare(calls(LOOKUP, CHECK, ISSUE), REFUNDED, REFERENCE, REFUNDED)
    assert diff.clean and (diff.tool_missing, diff.tool_extra, diff.tool_arg_mismatch) == (0, 0, 0)
    assert diff.text == "same tool calls as the reference" and diff.misread == [] and len(diff.matched) == 3
    assert judge_note(diff).startswith("Checked in code: the candidate made the same tool calls")


def test_trace_reads_tool_results() -> None:
    steps = tool_trace(calls(LOOKUP, rec("issue_refund", '{"order_id": "A-1001"', error="arguments are not JSON")))
    assert steps[0] == ToolStep(name="lookup_order", arguments={"order_id": "A-1001"}, result=ORDER)
    assert list(steps[0].result) == sorted(ORDER)  # keys sorted
    assert steps[1].arguments == '{"order_id": "A-1001"' and steps[1].result is None
    assert steps[1].error == "arguments are not JSON"


def test_normalise_rules() -> None:
    assert normalise({"b": 1.0, "a": [2, " X "]}) == {"a": [2, "x"], "b": 1}
    assert list(normalise({"b": 1, "a": 2})) == ["a", "b"]
    assert normalise(0.1 + 0.2) == normalise(0.3) and normalise(129.99000000001) == 129.99
    assert normalise(True) is True and normalise(1) == 1 and normalise("5") == "5"
    assert normalise("  Hello   World ") == "hello world"
    assert normalise('{"x": 1.0}') == {"x": 1} and normalise([3, 1]) != normalise([1, 3])


def test_argument_order_and_number_form_do_not_matter() -> None:
    reordered = rec(
        "check_return_policy", {"condition": "Unopened", "days_since_delivery": 6.0, "category": "electronics "}, POLICY
    )
    refund = rec("issue_refund", {"amount": 129.99000000001, "order_id": "a-1001"}, REFUND)
    diff = compare(calls(LOOKUP, reordered, refund), REFUNDED, REFERENCE, REFUNDED)
    assert diff.clean, diff.text


def test_skipped_tool_is_missing() -> None:
    diff = compare(calls(LOOKUP, ISSUE), REFUNDED, REFERENCE, REFUNDED)
    assert (diff.tool_missing, diff.tool_extra, diff.tool_arg_mismatch) == (1, 0, 0)
    assert diff.missing[0].name == "check_return_policy" and not diff.clean
    assert diff.text == "missing check_return_policy"
    assert judge_note(diff) == (
        "Checked in code: the candidate skipped check_return_policy, which the reference called."
    )


def test_extra_refund_is_extra() -> None:
    denied = {**POLICY, "eligible": False}
    reference = calls(LOOKUP, rec("check_return_policy", CHECK_ARGS, denied))
    deny = {"order_id": "A-1001", "decision": "deny", "refund_amount": 0, "reason": "Not eligible."}
    diff = compare(calls(LOOKUP, rec("check_return_policy", CHECK_ARGS, denied), ISSUE), REFUNDED, reference, deny)
    assert (diff.tool_missing, diff.tool_extra, diff.tool_arg_mismatch) == (0, 1, 0)
    assert diff.text == "extra issue_refund" and diff.misread == []
    assert "made an extra call to issue_refund, which the reference did not make" in judge_note(diff)


def test_other_order_id_is_an_argument_mismatch() -> None:
    other = rec("lookup_order", {"order_id": "A-1002"}, {**ORDER, "order_id": "A-1002"})
    diff = compare(calls(other, CHECK, ISSUE), REFUNDED, REFERENCE, REFUNDED)
    assert (diff.tool_missing, diff.tool_extra, diff.tool_arg_mismatch) == (0, 0, 1)
    run, ref = diff.arg_mismatch[0]
    assert (run.arguments, ref.arguments) == ({"order_id": "A-1002"}, {"order_id": "A-1001"})
    # and the refund then went to another order than the one looked up: a value handed on wrongly
    assert (
        diff.text
        == 'lookup_order args differ (order_id: "A-1002" vs "A-1001"); misread order_id (passed to issue_refund)'
    )
    assert 'called lookup_order with other arguments than the reference (order_id: "A-1002" vs' in judge_note(diff)


def test_mismatch_names_only_the_first_differing_key() -> None:
    run = [
        ToolStep(
            name="check_return_policy", arguments={"category": "toys", "condition": "used", "days_since_delivery": 40}
        )
    ]
    reference = [ToolStep(name="check_return_policy", arguments=CHECK_ARGS)]
    assert diff_traces(run, reference).text == 'check_return_policy args differ (category: "toys" vs "electronics")'


def test_duplicated_calls_count_as_extra_or_missing() -> None:
    twice = compare(calls(LOOKUP, LOOKUP, CHECK, ISSUE), REFUNDED, REFERENCE, REFUNDED)
    assert (twice.tool_missing, twice.tool_extra, twice.tool_arg_mismatch) == (0, 1, 0)
    assert twice.text == "extra lookup_order"
    once = compare(calls(LOOKUP, CHECK, ISSUE), REFUNDED, calls(LOOKUP, LOOKUP, CHECK, ISSUE), REFUNDED)
    assert (once.tool_missing, once.tool_extra) == (1, 0) and once.text == "missing lookup_order"
    thrice = compare(calls(LOOKUP, CHECK), REFUNDED, calls(LOOKUP, CHECK, ISSUE, ISSUE), REFUNDED)
    assert thrice.text == "missing issue_refund x2"


def test_raw_json_arguments_equal_parsed_ones() -> None:
    raw = rec("lookup_order", ' {"order_id": "A-1001"} ', ORDER)
    diff = compare(calls(raw, CHECK, ISSUE), REFUNDED, REFERENCE, REFUNDED)
    assert diff.clean, diff.text
    broken = rec("lookup_order", '{"order_id": "A-1001"', error="arguments are not valid JSON")
    diff = compare(calls(broken, CHECK, ISSUE), REFUNDED, REFERENCE, REFUNDED)
    assert diff.tool_arg_mismatch == 1 and diff.text.startswith('lookup_order args differ ("{\\"order_id')


def test_misread_decision_after_the_same_evidence() -> None:
    deny = {**REFUNDED, "decision": "deny"}
    diff = compare(calls(LOOKUP, CHECK, ISSUE), deny, REFERENCE, REFUNDED)
    assert diff.misread == ["decision"] and not diff.clean
    assert (diff.tool_missing, diff.tool_extra, diff.tool_arg_mismatch) == (0, 0, 0)
    assert diff.text == "same tool calls as the reference; misread decision"
    assert judge_note(diff).endswith(
        "Its answer's decision does not follow from the tool results it received (a misread)."
    )
    # the reason's wording is not a decision field
    assert compare(calls(LOOKUP, CHECK, ISSUE), {**REFUNDED, "reason": "Other words."}, REFERENCE, REFUNDED).clean


def test_no_misread_when_traces_differ() -> None:
    deny = {"order_id": "A-1001", "decision": "deny", "refund_amount": 0, "reason": "Not eligible."}
    diff = compare(
        calls(
            LOOKUP,
            rec(
                "check_return_policy", {**CHECK_ARGS, "days_since_delivery": 60}, {"eligible": False, "rule": "outside"}
            ),
        ),
        deny,
        REFERENCE,
        REFUNDED,
    )
    # not a misread of the answer against the reference (the traces differ), but the policy check was given another
    # day count than the lookup returned: a value read wrongly and handed on
    assert diff.misread == ["days_since_delivery (passed to check_return_policy)"]
    assert diff.tool_arg_mismatch == 1 and diff.tool_missing == 1
    assert diff.text.startswith("missing issue_refund; check_return_policy args differ (days_since_delivery: 60 vs 6)")
    # different results for the same calls are not the same evidence either
    flipped = calls(LOOKUP, rec("check_return_policy", CHECK_ARGS, {**POLICY, "eligible": False}), ISSUE)
    assert misread_fields(deny, REFUNDED, tool_trace(flipped), tool_trace(REFERENCE)) == []


def test_output_contradicting_its_own_tool_result() -> None:
    wrong_id = {**REFUNDED, "order_id": "A-1010"}
    diff = compare(calls(LOOKUP), wrong_id, calls(LOOKUP), REFUNDED)
    assert diff.misread == ["order_id"]
    # same value in another case is no contradiction; prose and nulls are not compared
    assert compare(calls(LOOKUP), {**REFUNDED, "order_id": "a-1001"}, calls(LOOKUP), REFUNDED).clean
    run = [ToolStep(name="t", arguments={}, result={"status": "delivered", "note": "x" * 80, "price": None})]
    out = {"status": "lost", "note": "y" * 80, "price": 3, "amount": 5}
    assert misread_fields(out, {}, run, []) == ["status"]
    # the reference states the same value: the yardstick reads the tool the same way, so it is not flagged
    assert misread_fields(out, {"status": "lost"}, run, []) == []
    # a key two results disagree on is flagged only when the output agrees with neither
    two = [*run, ToolStep(name="t", arguments={"n": 2}, result={"status": "lost"})]
    assert misread_fields(out, {}, two, []) == []


def test_text_stays_short() -> None:
    many = [ToolStep(name=f"tool_number_{i}", arguments={"key": "v" * 40}) for i in range(12)]
    other = [ToolStep(name=f"tool_number_{i}", arguments={"key": "w" * 40}) for i in range(12)]
    text = diff_traces(many, other).text
    assert len(text) <= 200 and text.endswith("more")


# ------------------------------------------------------------------------------------------------ the simulated fleet


async def test_sim_fleet_traces() -> None:
    catalog = gb.sim.catalog(latency_scale=0)
    bench = gb.Benchmark(OrderAgent, runs=3, catalog=catalog, grade="standard", progress=False)
    bench.set_inputs(load_inputs("orders")[:8])
    await bench.run()
    runs = bench.report().to_runs()
    reference = {r.input_id: r for r in runs if r.role == "reference"}
    found: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for run in runs:
        if run.role != "candidate" or not run.ok:
            continue
        ref = reference[run.input_id]
        diff = compare(run.calls, run.output, ref.calls, ref.output)
        tally = found[run.entry]
        tally["runs"] += 1
        tally["missing"] += diff.tool_missing > 0
        tally["extra"] += diff.tool_extra > 0
        tally["arg_mismatch"] += diff.tool_arg_mismatch > 0
        tally["misread"] += bool(diff.misread)
        tally["other_decision"] += run.output.get("decision") != ref.output.get("decision")
        if run.entry == "sim/steady" and run.output == ref.output:
            assert diff.clean, (run.input_id, diff.text)
        assert len(diff.text) <= 200
        assert "sim/" not in judge_note(diff)
    print({entry: dict(t) for entry, t in sorted(found.items())})
    assert found["sim/swift"]["missing"] >= 1
    assert found["sim/squint"]["misread"] + found["sim/squint"]["other_decision"] >= 1
