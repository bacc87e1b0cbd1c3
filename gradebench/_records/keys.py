"""Who a run and a call are: the ids and salts of a race, and the cache key built from them in one place.

The cache-key contract. A model call's key is the sha256 (hex) of the canonical JSON (`canonical_json`: sorted keys,
no spaces, UTF-8 kept) of::

    {"v": CACHE_FORMAT,
     "entry": {"base_url": <without a trailing slash>, "model": <model id>, "routing": <routing pin>,
               "credential": <the key's variable name, for an entry that sends a key>},
     "body": <the request body as sent>,
     "salt": {<the seat's salt>, "seq": <call number in the seat>, "attempt": <semantic retry>, "sample": <draw>}}

where the seat's salt is, for a run (`RunKey`) ``{"user", "input", "role", "repeat"}`` and for a verdict
(`JudgeKey`) ``{"user", "judged": <the judged run's id>, "role": "judge", "order": 0 | 1}``. So repeats of an input,
the n-th call of a run, a retry after an unusable answer and a judge-noise replica each get a key of their own, while a
rerun of the same race asks for the same keys, and two entries that differ only in their key never share an answer.
Nothing secret is part of a key (a key's variable name is, its value never). Every byte of this is load-bearing:
a change empties every user's cache, so it is locked by a test (``tests/records/test_keys.py``) and goes with a bump of
`CACHE_FORMAT`.

Ids are `short_hash` values (12 hex digits of the sha256 of the canonical JSON of their parts): a benchmark id
names the job, grade, salt and reference entry; a run id the benchmark, input, role, entry and repeat. Neither spells
a name, so a judge reading them learns nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._base.canonical import canonical_json
from .._base.protocol import label_headers
from .._base.vocab import Role

__all__ = [
    "CACHE_FORMAT",
    "CallKey",
    "JudgeKey",
    "RunKey",
    "SeatKey",
    "benchmark_id",
    "canonical_json",
    "short_hash",
]

CACHE_FORMAT = 2
"""Bumped whenever what a key covers or what a cached value holds changes, so old entries are never misread."""


def short_hash(*parts: Any) -> str:
    """12 hex digits of the sha256 of the canonical JSON of ``parts`` (as a list): an opaque, stable id."""
    return hashlib.sha256(canonical_json(list(parts)).encode()).hexdigest()[:12]


def benchmark_id(job: str, grade: str, salt: str, reference_entry: str) -> str:
    """The id of a benchmark: its job's name, grade, user salt and reference entry."""
    return short_hash("benchmark", job, grade, salt, reference_entry)


class SeatKey(Protocol):
    """What every call of one seat shares: the run (or verdict) it belongs to, and that part of its salt."""

    @property
    def benchmark_id(self) -> str: ...

    @property
    def run_id(self) -> str: ...

    @property
    def role(self) -> Role: ...

    @property
    def sample(self) -> int: ...

    def salt(self) -> dict[str, Any]: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class RunKey:
    """One run of a race: the benchmark, the input, the role, the entry and the repeat, under the user's salt."""

    benchmark_id: str
    """The benchmark the run belongs to."""
    user_salt: str
    """The user's salt (a new one draws fresh samples)."""
    input_id: str
    """The input run on."""
    role: Role
    """``reference`` or ``candidate``."""
    entry: str
    """The entry the run is pinned to (part of the run id, not of the salt: the request names the model)."""
    repeat: int
    """Which repeat of the input on this entry."""
    sample: int = 0
    """Which independent draw (runs are drawn once)."""
    run_id: str = field(init=False, repr=False, compare=False)
    """The opaque id of the run (made once: every call of the run carries it)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "role", Role(self.role))
        made = short_hash("run", self.benchmark_id, self.input_id, self.role.value, self.entry, self.repeat)
        object.__setattr__(self, "run_id", made)

    def salt(self) -> dict[str, Any]:
        return {"user": self.user_salt, "input": self.input_id, "role": self.role.value, "repeat": self.repeat}

    def wall_key(self, entry_identity: dict[str, Any]) -> str:
        """Where the run's wall time is kept beside its calls' answers: the run and the entry's identity."""
        material = canonical_json({"v": CACHE_FORMAT, "entry": entry_identity, "run": self.run_id, "salt": self.salt()})
        return hashlib.sha256(material.encode()).hexdigest()


@dataclass(frozen=True, kw_only=True, slots=True)
class JudgeKey:
    """One verdict: the run judged, the order the two transcripts were shown in, and which draw it is."""

    benchmark_id: str
    """The benchmark of the run judged."""
    user_salt: str
    """The user's salt."""
    run_id: str
    """The run judged (the judge's requests are labelled with it)."""
    candidate_first: bool = False
    """The label-bias check's swapped order."""
    sample: int = 0
    """Which independent judgement (judge-noise replicas are 1..k)."""

    @property
    def role(self) -> Role:
        return Role.JUDGE

    def salt(self) -> dict[str, Any]:
        return {
            "user": self.user_salt,
            "judged": self.run_id,
            "role": Role.JUDGE.value,
            "order": int(self.candidate_first),
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class CallKey:
    """One model call: its seat, its number in the seat, and the semantic-retry attempt."""

    seat: SeatKey
    """The run or verdict the call belongs to."""
    seq: int
    """The call's number within its seat (0, 1, ...)."""
    attempt: int = 0
    """Bumped to ask again after an unusable answer: a fresh sample, never the cached bad one."""

    def salt(self) -> dict[str, Any]:
        """The salt of the call: the seat's, its number, the attempt and the draw."""
        return {**self.seat.salt(), "seq": self.seq, "attempt": self.attempt, "sample": self.seat.sample}

    def cache_key(self, entry_identity: dict[str, Any], body: dict[str, Any]) -> str:
        """The call's cache key (see the module's contract)."""
        material = canonical_json({"v": CACHE_FORMAT, "entry": entry_identity, "body": body, "salt": self.salt()})
        return hashlib.sha256(material.encode()).hexdigest()

    def labels(self) -> dict[str, str]:
        """The opaque ``x-gradebench-*`` headers of the request: which benchmark, run, role, call and draw it is."""
        seat = self.seat
        return label_headers(
            benchmark=seat.benchmark_id,
            run=seat.run_id,
            role=seat.role.value,
            seq=self.seq,
            attempt=self.attempt,
            sample=seat.sample,
        )
