"""A wait the provider asks for (``Retry-After``, ``retry-after-ms``) is waited in full, counted from when its 429
arrived, through the real client over loopback HTTP while other calls to the entry are in flight."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx2
import pytest

import gradebench as gb
from gradebench._calls.admission import Admission
from gradebench._calls.session import client_for

from ..providers import OpenAIEndpoint, serve

HI = [{"role": "user", "content": "hi"}]


class Told:
    """Answers the request marked ``told`` with a 429 asking ``headers`` twice, then a completion; everything else at
    once. Records when each marked request arrived and when its 429 left."""

    def __init__(self, headers: dict[str, str], status: int = 429) -> None:
        self.headers = headers
        self.status = status
        self.arrived: list[float] = []
        self.refused_at: list[float] = []

    def __call__(self, body: dict[str, Any], request: httpx2.Request) -> Any:
        if body.get("user") != "told":
            return OpenAIEndpoint.completion("ok")
        self.arrived.append(time.monotonic())
        if len(self.arrived) <= 2:
            self.refused_at.append(time.monotonic())
            return OpenAIEndpoint.error(self.status, "slow down", code="rate_limit_exceeded", headers=self.headers)
        return OpenAIEndpoint.completion("ok")


@pytest.mark.parametrize(
    ("headers", "asked_s"),
    [
        ({"retry-after": "1"}, 1.0),
        ({"retry-after-ms": "600"}, 0.6),
        # a proxy passing on the upstream's precise milliseconds beside its own whole seconds: the longer ask holds
        ({"retry-after": "1", "retry-after-ms": "870"}, 1.0),
    ],
)
async def test_a_retry_is_sent_no_earlier_than_the_wait_asked_from_the_429s_arrival(
    headers: dict[str, str], asked_s: float
) -> None:
    told = Told(headers)
    async with serve({"m": OpenAIEndpoint(told)}) as base_url:
        entry = gb.Entry(
            name="acme/m",
            model="m",
            grade="standard",
            base_url=base_url,
            max_retries=2,
            price_in=1.0,
            price_out=1.0,
            rpm=60_000,
        )
        admission = Admission([entry], concurrency=2)
        client = client_for(entry)
        try:

            def call(user: str) -> Any:
                send = lambda: client.chat.completions.create(model="m", messages=HI, user=user)  # noqa: E731
                return admission.request(entry, send)

            async def others() -> None:  # other calls to the entry keep coming while the told one waits
                for i in range(6):
                    await call(f"other-{i}")
                    await asyncio.sleep(0.1)

            await asyncio.gather(call("told"), others(), others())
        finally:
            await client.close()
    assert len(told.arrived) == 3
    for refused, retried in zip(told.refused_at, told.arrived[1:], strict=True):
        assert retried - refused >= asked_s, f"retried {retried - refused:.3f} s after a 429 asking {asked_s} s"


async def test_the_sdks_own_retry_of_a_503_waits_the_longer_of_two_asks() -> None:
    told = Told({"retry-after": "1", "retry-after-ms": "870"}, status=503)
    async with serve({"m": OpenAIEndpoint(told)}) as base_url:
        entry = gb.Entry(
            name="acme/m", model="m", grade="standard", base_url=base_url, max_retries=2, price_in=1.0, price_out=1.0
        )
        client = client_for(entry)
        try:
            await client.chat.completions.create(model="m", messages=HI, user="told")  # type: ignore[call-overload]
        finally:
            await client.close()
    assert len(told.arrived) == 3
    for refused, retried in zip(told.refused_at, told.arrived[1:], strict=True):
        assert retried - refused >= 1.0, f"retried {retried - refused:.3f} s after a 503 asking 1 s"
