"""The cache-key contract is locked: a refactor that changes one byte of a key empties every user's cache.

The digests of an entry without a key were computed by the release before the keys moved into
`gradebench._records.keys`;
they must never change without a bump of `CACHE_FORMAT` (and a note that every cache is cold again). An entry that
sends a key has named it in its keys since the release after (two keys on one URL must never share answers).
"""

from __future__ import annotations

import dataclasses

import gradebench as gb
from gradebench._base.vocab import Role
from gradebench._records.inputs import RaceInput
from gradebench._records.keys import CACHE_FORMAT, CallKey, JudgeKey, RunKey, benchmark_id, canonical_json, short_hash

ENTRY = gb.Entry(
    name="acme/mid",
    model="mid-2026-10",
    grade="standard",
    base_url="https://api.example.com/v1/",
    api_key_env="ACME_API_KEY",
    routing={"provider": {"only": ["acme"]}},
)
KEYLESS = dataclasses.replace(ENTRY, api_key_env=None)  # the simulated fleet's entries, a local server's
KEYED_DIGEST = "ed132e8257933f31e0416114b538dc274556aa465df828874ade223dc75a3776"
BODY = {
    "model": "mid-2026-10",
    "messages": [{"role": "user", "content": "Refund order A-1? é"}],
    "temperature": 0.2,
    "provider": {"only": ["acme"]},
}


def run_key() -> RunKey:
    bench = benchmark_id("refund-desk", "standard", "s1", "acme/mid")
    return RunKey(
        benchmark_id=bench, user_salt="s1", input_id="ord-01", role=Role.CANDIDATE, entry="acme/mid", repeat=2
    )


def test_ids_are_locked() -> None:
    assert benchmark_id("refund-desk", "standard", "s1", "acme/mid") == "bdc711a35e3e"
    assert run_key().run_id == "a9d97802bc3c"
    assert RaceInput.parse([{"id": "x", "n": [1, 2]}])[0].id == "x"
    assert RaceInput.parse([{"n": [1, 2], "id": None}])[0].id == short_hash({"n": [1, 2], "id": None})
    assert short_hash({"id": "x", "n": [1, 2]}) == "a14c05fcd42a"  # an input without an id is named by its content


def test_a_runs_call_key_is_locked() -> None:
    key = CallKey(seat=run_key(), seq=1, attempt=0)
    assert CACHE_FORMAT == 2
    assert key.salt() == {
        "user": "s1",
        "input": "ord-01",
        "role": "candidate",
        "repeat": 2,
        "seq": 1,
        "attempt": 0,
        "sample": 0,
    }
    assert canonical_json({"v": CACHE_FORMAT, "entry": KEYLESS.identity(), "body": BODY, "salt": key.salt()}) == (
        '{"body":{"messages":[{"content":"Refund order A-1? é","role":"user"}],"model":"mid-2026-10",'
        '"provider":{"only":["acme"]},"temperature":0.2},"entry":{"base_url":"https://api.example.com/v1",'
        '"model":"mid-2026-10","routing":{"provider":{"only":["acme"]}}},"salt":{"attempt":0,"input":"ord-01",'
        '"repeat":2,"role":"candidate","sample":0,"seq":1,"user":"s1"},"v":2}'
    )
    assert key.cache_key(KEYLESS.identity(), BODY) == "4f7c34454537559da345a0e33fc5578272b92ca0f074b86ce22ece37501c2951"
    assert ENTRY.identity() == {**KEYLESS.identity(), "credential": "ACME_API_KEY"}
    assert key.cache_key(ENTRY.identity(), BODY) == KEYED_DIGEST


def test_a_verdicts_call_key_is_locked() -> None:
    judge = JudgeKey(benchmark_id="bdc711a35e3e", user_salt="s1", run_id="a9d97802bc3c", candidate_first=True, sample=3)
    key = CallKey(seat=judge, seq=0, attempt=2)
    assert key.cache_key(KEYLESS.identity(), BODY) == "a7bdccc94773cccc4d1f72146c532254cda136b8532fdfbcada4589538247e39"
    assert key.labels() == {
        "x-gradebench-benchmark": "bdc711a35e3e",
        "x-gradebench-run": "a9d97802bc3c",
        "x-gradebench-role": "judge",
        "x-gradebench-seq": "0",
        "x-gradebench-attempt": "2",
        "x-gradebench-sample": "3",
    }


def test_every_part_of_the_salt_changes_the_key() -> None:
    base = run_key()
    first = CallKey(seat=base, seq=0).cache_key(ENTRY.identity(), BODY)
    others = [
        CallKey(seat=base, seq=1),
        CallKey(seat=base, seq=0, attempt=1),
        CallKey(seat=RunKey(**{**_fields(base), "repeat": 3}), seq=0),
        CallKey(seat=RunKey(**{**_fields(base), "user_salt": "s2"}), seq=0),
        CallKey(seat=RunKey(**{**_fields(base), "input_id": "ord-02"}), seq=0),
        CallKey(seat=RunKey(**{**_fields(base), "role": Role.REFERENCE}), seq=0),
        CallKey(seat=RunKey(**{**_fields(base), "sample": 1}), seq=0),
    ]
    keys = {k.cache_key(ENTRY.identity(), BODY) for k in others}
    assert first not in keys and len(keys) == len(others)


def _fields(key: RunKey) -> dict:
    return {f: getattr(key, f) for f in ("benchmark_id", "user_salt", "input_id", "role", "entry", "repeat", "sample")}


def test_a_batched_requests_custom_id_is_locked() -> None:
    """A batch line carries its labels in its ``custom_id`` (a batch line has no headers): a note of a batch written
    by one release is matched by the next, so the id is locked like the key it is cut from."""
    from gradebench._base.protocol import batch_custom_id, batch_labels

    judge = JudgeKey(benchmark_id="bdc711a35e3e", user_salt="s1", run_id="a9d97802bc3c", candidate_first=True, sample=3)
    key = CallKey(seat=judge, seq=0, attempt=2)
    digest = key.cache_key(KEYLESS.identity(), BODY)
    custom_id = batch_custom_id(key.labels(), digest)
    assert custom_id == "gb-a9d97802bc3c-0-2-3-a7bdccc94773cccc4d1f72146c532254cda136b853"
    assert len(custom_id) == 64 and digest.startswith(custom_id.rsplit("-", 1)[1])
    assert batch_labels(custom_id) == {k: v for k, v in key.labels().items() if k != "x-gradebench-benchmark"}


def test_a_race_asked_not_to_batch_is_the_race_it_always_was() -> None:
    """``judge_batch`` off (the default) adds nothing to a race: its meta.json, its frames and its keys are those of
    a race of the release before it (the digests of `tests/judge/test_judges.py` hold every part of two such races)."""
    from gradebench._calls.batch.api import batch_api_of

    spec = gb.RaceSpec()
    assert spec.judge_batch is False and gb.RaceSpec(judge_batch=False) == spec
    assert "judge_batch" not in spec.to_dict() and gb.RaceSpec.from_dict(spec.to_dict()) == spec  # meta.json as before
    assert gb.RaceSpec(judge_batch=True).to_dict()["judge_batch"] is True
    entry = dataclasses.replace(KEYLESS, batch=None)
    assert entry.identity() == KEYLESS.identity() and batch_api_of(entry, False) is None
    assert dataclasses.replace(KEYLESS, batch="openai").identity() == KEYLESS.identity()  # batching: the same keys
