from __future__ import annotations

import json

import pytest

import gradebench as gb
from gradebench._judge.prompt import build_judge_messages, identifying_names, transcript_events
from gradebench._judge.scoring import ask_score as judge
from gradebench._judge.scoring import parse_verdict

from ..conftest import Scripted, completion, make_seat, scripted_catalog


def call(**kw) -> gb.results.Call:
    base = dict(
        run_id="r",
        seq=0,
        role="candidate",
        entry="acme/pick",
        request={"model": "pick-1", "messages": []},
        response=None,
    )
    return gb.results.Call.from_bodies(**{**base, **kw})


def test_transcript_shows_messages_tools_and_answer_once() -> None:
    first = call(
        request={
            "model": "pick-1",
            "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "refund A-1?"}],
        },
        response=completion(tool_calls=[{"name": "lookup", "arguments": {"id": "A-1"}}], id="chatcmpl-xyz"),
        tool_results=[
            {"id": "call_0", "name": "lookup", "arguments": {"id": "A-1"}, "result": {"ok": True}},
            {"id": "call_1", "name": "refund", "arguments": {"id": "A-1"}, "error": "ValueError: no"},
        ],
    )
    second = call(
        seq=1,
        request={
            "model": "pick-1",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "refund A-1?"},
                {"role": "assistant", "content": None},
            ],
        },
        response=completion("Refunded."),
    )
    events = transcript_events([first, second], {"decision": "refund"}, None)
    assert events == [
        {"kind": "system", "content": "be brief"},
        {"kind": "user", "content": "refund A-1?"},
        {"kind": "tool_call", "name": "lookup", "arguments": {"id": "A-1"}},
        {"kind": "tool_result", "name": "lookup", "result": {"ok": True}},
        {"kind": "tool_call", "name": "refund", "arguments": {"id": "A-1"}},
        {"kind": "tool_error", "name": "refund", "error": "ValueError: no"},
        {"kind": "assistant", "content": "Refunded."},
        {"kind": "answer", "output": {"decision": "refund"}},
    ]
    failed = transcript_events([first], None, "CallError: acme/pick: HTTP 503 after 3 attempts")
    assert failed[-1] == {"kind": "error", "error": "CallError: acme/pick: HTTP 503 after 3 attempts"}


def test_prompt_is_blind() -> None:
    leaky = call(
        entry="acme/other",
        request={"model": "other-1", "messages": [{"role": "user", "content": "hi"}]},
        response={
            **completion("I am other-1, served as ACME/OTHER (fp_abc123)", id="chatcmpl-9f8e"),
            "system_fingerprint": "fp_abc123",
            "model": "other-1",
        },
    )
    names = identifying_names([leaky], ["acme/pick", "pick-1", "acme/other", "other-1"])
    messages = build_judge_messages(
        instructions="Answer.",
        input={"q": 1},
        rubric="Be right.",
        reference=transcript_events([leaky], "chatcmpl-9f8e", None),
        candidate=transcript_events([leaky], "x", None),
        redact=names,
    )
    text = json.dumps(messages)
    for name in ("acme/other", "other-1", "fp_abc123", "chatcmpl-9f8e"):
        assert name.lower() not in text.lower()
    user = messages[1]["content"]
    assert '<transcript label="K" role="reference">' in user and '<transcript label="Q" role="candidate">' in user
    assert user.index('role="reference"') < user.index('role="candidate"')
    assert "untrusted data" in user and "Be right." in user
    assert "costs at least 3 points" in user


@pytest.mark.parametrize(
    ("text", "pure", "accuracy"),
    [
        ('{"accuracy": 6, "work": 2, "reason": "ok"}', True, 6),
        ('Here it is:\n```json\n{"accuracy": 4, "work": 3, "reason": "skipped a tool"}\n```', False, 4),
        ('My verdict {"accuracy": 7, "work": 1, "reason": "fine"} done.', False, 7),
    ],
)
def test_parse_verdict(text: str, pure: bool, accuracy: int) -> None:
    verdict, was_pure = parse_verdict(text)
    assert (verdict.accuracy, was_pure) == (accuracy, pure)


@pytest.mark.parametrize(
    "text",
    [
        '{"accuracy": 9, "work": 2, "reason": "x"}',
        '{"accuracy": 5.5, "work": 2, "reason": "x"}',
        '{"accuracy": 5, "reason": "x"}',
        "no json here",
        '{"accuracy": 5, "work": 1, "reason": "x", "extra": 1}',
    ],
)
def test_invalid_verdicts_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        parse_verdict(text)


async def test_invalid_verdict_is_retried_with_a_fresh_salt_then_given_up() -> None:
    endpoint = Scripted(
        [
            completion('{"accuracy": 12, "work": 1, "reason": "x"}'),
            completion('{"accuracy": 5, "work": 2, "reason": "y"}'),
        ]
    )
    seat = make_seat(scripted_catalog(endpoint), "acme/judge")
    verdict = await judge(seat, [{"role": "user", "content": "judge"}], params={"temperature": 0})
    assert (verdict.accuracy, verdict.work, verdict.score, verdict.attempts) == (5, 2, 7, 2)
    assert verdict.path == "schema"
    assert [r.headers["x-gradebench-attempt"] for r in endpoint.requests] == ["0", "1"]
    assert endpoint.bodies[0]["response_format"]["json_schema"]["strict"] is True

    always_bad = Scripted(lambda body, req: completion("I refuse to answer in JSON."))
    verdict = await judge(
        make_seat(scripted_catalog(always_bad), "acme/judge"), [{"role": "user", "content": "j"}], params={}
    )
    assert verdict.score is None and verdict.attempts == 3
    assert "no JSON object found" in (verdict.error or "")


async def test_schema_rejected_falls_back_to_prose() -> None:
    import httpx2

    def answer(body, request):
        if "response_format" in body:
            return httpx2.Response(400, json={"error": {"message": "response_format is not supported"}})
        return completion('JudgeScore:\n```json\n{"accuracy": 3, "work": 1, "reason": "misread"}\n```')

    endpoint = Scripted(answer)
    verdict = await judge(
        make_seat(scripted_catalog(endpoint), "acme/judge"),
        [{"role": "user", "content": "j"}],
        params={"temperature": 0},
    )
    assert (verdict.accuracy, verdict.path, verdict.params) == (3, "fallback", {"temperature": 0})
    assert "response_format" not in endpoint.bodies[-1]


def test_swapped_order_and_neutral_labels() -> None:
    from gradebench._judge.prompt import transcript_labels

    ref, cand = transcript_labels("run-1")
    assert ref != cand and {ref, cand} <= set("KQRTVXZ")
    assert transcript_labels("run-1") == (ref, cand)  # seeded
    assert len({transcript_labels(f"run-{i}") for i in range(40)}) > 5
    events = [{"kind": "answer", "output": 1}]
    messages = build_judge_messages(
        instructions="Answer.",
        input=1,
        rubric="",
        reference=events,
        candidate=events,
        labels=(ref, cand),
        candidate_first=True,
        facts="Checked in code: same calls.",
    )
    user = messages[1]["content"]
    assert user.index('role="candidate"') < user.index('role="reference"')
    assert f'<transcript label="{cand}" role="candidate">' in user
    assert "<checked_in_code>\nChecked in code: same calls.\n</checked_in_code>" in user
    assert user.rstrip().endswith(f"Score transcript {cand} (the candidate) against transcript {ref} (the reference).")


async def test_a_rejected_schema_is_remembered_for_the_race() -> None:
    import httpx2

    def answer(body, request):
        if "response_format" in body:
            return httpx2.Response(400, json={"error": {"message": "response_format is not supported"}})
        return completion('{"accuracy": 6, "work": 2, "reason": "fine"}')

    endpoint = Scripted(answer)
    rejected: set[str] = set()
    catalog = scripted_catalog(endpoint)
    for run_id in ("r1", "r2", "r3"):
        verdict = await judge(
            make_seat(catalog, "acme/judge", run_id=run_id),
            [{"role": "user", "content": "j"}],
            params={},
            schema_rejected=rejected,
        )
        assert (verdict.score, verdict.path, verdict.schema) == (8, "fallback", "rejected")
    assert rejected == {"acme/judge"}
    assert sum("response_format" in b for b in endpoint.bodies) == 1  # asked with the schema once, not per verdict

    ignored = Scripted(lambda body, req: completion('Sure: {"accuracy": 6, "work": 2, "reason": "fine"}'))
    verdict = await judge(
        make_seat(scripted_catalog(ignored), "acme/judge"), [{"role": "user", "content": "j"}], params={}
    )
    assert (verdict.path, verdict.schema) == ("fallback", "ignored")


@pytest.mark.parametrize(
    ("shape", "cause"),
    [
        ({"finish_reason": "length"}, "stopped at the length limit"),
        ({"reasoning_content": '{"accuracy": 7, "work": 3, "reason": "x"}'}, "only in the judge's reasoning"),
        ({"refusal": "I won't grade this."}, "the judge refused"),
    ],
)
async def test_a_judge_reply_without_content_says_why(shape: dict, cause: str) -> None:
    body = completion(None)
    if "finish_reason" in shape:
        body["choices"][0]["finish_reason"] = shape["finish_reason"]
    else:
        body["choices"][0]["message"].update(shape)
    endpoint = Scripted(lambda b, r: body)
    verdict = await judge(
        make_seat(scripted_catalog(endpoint), "acme/judge"), [{"role": "user", "content": "j"}], params={}
    )
    assert verdict.score is None and cause in (verdict.error or "")
    assert "no JSON object found" not in (verdict.error or "")


def test_refusal_is_in_the_transcript_and_reasoning_only_when_asked() -> None:
    response = completion(None)
    response["choices"][0]["message"].update(refusal="I can't help with refunds.", reasoning_content="Policy says no.")
    refused = call(request={"model": "pick-1", "messages": [{"role": "user", "content": "refund?"}]}, response=response)
    events = transcript_events([refused], "", None)
    assert {"kind": "refusal", "content": "I can't help with refunds."} in events
    assert not any(e["kind"] == "reasoning" for e in events)
    shown = transcript_events([refused], "", None, reasoning=True)
    assert {"kind": "reasoning", "content": "Policy says no."} in shown
