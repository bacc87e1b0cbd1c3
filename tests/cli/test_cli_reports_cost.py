"""``gradebench run --max-cost`` with an entry whose endpoint reports the cost and that has no prices: the estimate
is unknown, so it is not within the limit and nothing is raced (exit status 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradebench._cli.main import main

from ..verdict.test_unmeasured import QUESTIONS
from .test_cli_unmeasured import entry_toml, served


def test_max_cost_refuses_an_estimate_left_unknown_by_an_entry_without_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with served() as base_url:
        proxy = entry_toml("proxy/ref", "gpt-ref", base_url).replace("price_in = 1.0\nprice_out = 2.0\n", "")
        entries = [
            entry_toml("acme/ref", "gpt-ref", base_url),
            proxy + "reports_cost = true\n",
            entry_toml("judge/oracle", "judge-1", base_url, grade="large"),
        ]
        head = 'grades = ["standard", "large"]\nceiling = "judge/oracle"\n\n[picks]\nstandard = "acme/ref"\n\n'
        (tmp_path / "catalog.toml").write_text(head + "\n".join(entries))
        (tmp_path / "inputs.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS[:2]))
        (tmp_path / "run.toml").write_text(
            f'catalog = "catalog.toml"\ngrade = "standard"\nruns = 1\ninputs = "inputs.jsonl"\n'
            f'out = "{tmp_path / "out"}"\ncache = "{tmp_path / "cache"}"\ncontrols = 0\ncandidates = ["proxy/ref"]\n\n'
            '[prompt]\nname = "codes"\ninstructions = "Answer the code asked for."\ntemplate = "{text}"\n'
        )
        assert main(["run", str(tmp_path / "run.toml"), "--max-cost", "5"]) == 3
    said = capsys.readouterr()
    assert "cost unknown until the endpoint reports it (reports_cost, no prices): proxy/ref" in said.out
    assert "the estimate unknown USD is not within --max-cost 5; nothing was raced" in said.err
