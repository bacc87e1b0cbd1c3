"""A new user's first race on real models, as files: their own openai ticket classifier with gold labels, a catalog of
real entries on local llama.cpp servers, and the run config — written to a folder and driven by the real command line.

The catalog: SmolLM2-135M-Instruct at temperature 0 is the reference; SmolLM2 at temperature 1, Gemma 3 270M (a base
model, not tuned to follow instructions) and the random-weights model are the candidates; SmolLM2 judges. Every entry
has prices of its own so that a cost taken from the wrong entry shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRIAGE = '''"""The ticket classifier as it runs in production: plain openai code, streamed, and the job around it."""

import openai

import gradebench as gb

LABELS = ("billing", "bug", "feature")


async def classify(ticket: str, client: openai.AsyncOpenAI) -> str:
    stream = await client.chat.completions.create(
        model="gpt-4o-mini",  # gradebench sends each entry's own model instead
        messages=[
            {"role": "system", "content": "Label the support ticket: billing, bug or feature. Answer the label only."},
            {"role": "user", "content": ticket},
        ],
        max_tokens=MAX_TOKENS,
        stream=True,
        stream_options={"include_usage": True},
    )
    text = ""
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    return text


def label_of(text: str) -> str:
    """The first label the reply names, else the reply itself (a wrong answer, as the gold labels will say)."""
    lowered = text.lower()
    named = [(lowered.find(label), label) for label in LABELS if label in lowered]
    return min(named)[1] if named else text.strip()


async def triage(input: dict, seat: gb.Seat) -> dict:
    """Label the support ticket as billing, bug or feature; answer with the label only."""
    return {"label": label_of(await classify(input["text"], client=seat.openai))}
'''

TICKETS = [
    ("t1", "My invoice shows the wrong amount and I was billed twice.", "billing"),
    ("t2", "The app crashes with an error every time I open the settings page.", "bug"),
    ("t3", "Please add a dark mode feature to the dashboard.", "feature"),
    ("t4", "I was charged twice on my credit card for this month's payment.", "billing"),
    ("t5", "Feature request: exporting reports to CSV would save me hours.", "feature"),
    ("t6", "Bug: the login button does nothing on Android, it is broken.", "bug"),
    ("t7", "I need a refund for the payment on my last invoice.", "billing"),
    ("t8", "Search is broken since the last update: it crashes with an error.", "bug"),
]

MAX_TOKENS = 8
"""The job's max_tokens: a label is one or two tokens; a base model that rambles is cut here (``length``)."""

PRICES = {
    "local/smollm2": (0.10, 0.40),
    "local/smollm2-warm": (0.11, 0.44),
    "local/gemma-base": (0.20, 0.80),
    "local/random": (0.01, 0.02),
    "local/smollm2-judge": (0.50, 2.00),
}
"""Per 1M tokens (in, out): made up, each entry's own."""


def catalog_toml(servers: dict[str, Any]) -> str:
    def entry(name: str, server: str, grade: str, params: str) -> str:
        price_in, price_out = PRICES[name]
        return (
            f'[[entries]]\nname = "{name}"\nmodel = "{server}"\ngrade = "{grade}"\n'
            f'base_url = "{servers[server].base_url}"\nprice_in = {price_in}\nprice_out = {price_out}\n'
            f"params = {params}\ntimeout_s = 300\nmax_retries = 1\n"
        )

    return "\n".join(
        [
            '# Real models on local llama.cpp servers: no key needed.\ngrades = ["standard", "large"]',
            'ceiling = "local/smollm2-judge"\njudge_params = { temperature = 0, max_tokens = 120 }',
            '[picks]\nstandard = "local/smollm2"\nlarge = "local/smollm2-judge"\n',
            entry("local/smollm2", "smollm2", "standard", "{ temperature = 0 }"),
            entry("local/smollm2-warm", "smollm2", "standard", "{ temperature = 1.0 }"),
            entry("local/gemma-base", "gemma", "standard", "{ temperature = 0 }"),
            entry("local/random", "random", "standard", "{ temperature = 0 }"),
            entry("local/smollm2-judge", "judge", "large", "{ temperature = 0 }"),
        ]
    )


RUN_TOML = """job = "triage:triage"
catalog = "catalog.toml"
inputs = "tickets.jsonl"
grade = "standard"
runs = 1
scorer = "field_equals:label@expected_label"
out = "out/triage"
"""


def write(folder: Path, servers: dict[str, Any]) -> None:
    """The three files of a new user's race, and the catalog of the running servers."""
    (folder / "triage.py").write_text(TRIAGE.replace("MAX_TOKENS", str(MAX_TOKENS)))
    lines = [json.dumps({"id": i, "text": text, "expected_label": label}) for i, text, label in TICKETS]
    (folder / "tickets.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "catalog.toml").write_text(catalog_toml(servers))
    (folder / "triage.toml").write_text(RUN_TOML)
