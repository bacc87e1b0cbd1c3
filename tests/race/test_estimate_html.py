"""The estimate as a notebook shows it: every name in it is text, never markup (an entry's name is the user's or a
model list's, and a notebook cell's output is trusted: markup there can drive the kernel)."""

from __future__ import annotations

import json

import httpx2

import gradebench as gb
from gradebench.testing import completion

from ..conftest import Scripted

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(2)</script>"
JUDGE = f"acme/judge{SCRIPT}"


async def answer_job(input: dict, seat: gb.Seat) -> dict:
    """Answer with a JSON object."""
    return json.loads((await seat.chat([{"role": "user", "content": f"Question {input['id']}?"}])).text)


def answer(body: dict, request: httpx2.Request) -> dict:
    if request.headers["x-gradebench-role"] == "judge":
        return completion(json.dumps({"accuracy": 7, "work": 3, "reason": f"fine {SCRIPT}"}))
    return completion(json.dumps({"a": "alpha"}), tokens=(100, 20))


def hostile_catalog(endpoint: Scripted) -> gb.Catalog:
    base = {"base_url": endpoint.base_url, "price_in": 1.0, "price_out": 2.0, "max_retries": 0}
    entries = [
        gb.Entry(name="acme/pick", model="pick", grade="standard", **base),
        gb.Entry(name=IMG, model=SCRIPT, grade="standard", **base),
        gb.Entry(name=JUDGE, model="judge", grade="large", **{**base, "price_in": 5.0}),
    ]
    return gb.Catalog(
        entries, grades=["standard", "large"], picks={"standard": "acme/pick"}, ceiling=JUDGE, source="xss"
    )


async def test_the_estimates_html_shows_a_hostile_entry_name_as_text(tmp_path) -> None:
    endpoint = Scripted(answer)
    bench = gb.Benchmark(
        answer_job, runs=1, catalog=hostile_catalog(endpoint), grade="standard", cache=tmp_path, progress=False
    )
    made = await bench.set_inputs([{"id": "q0"}, {"id": "q1"}]).estimate()
    assert IMG in [e.entry for e in made.entries]  # the hostile entry is in the estimate, so its name is drawn
    page = made._repr_html_()
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page  # the judge's name, in the wall time's note
    assert "<img" not in page and "<script" not in page
