"""Scorers: letter extraction, the ready scorers (including their None paths) and the seeded shuffle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradebench import scorers
from gradebench.scorers import (
    Scorer,
    choice_letter,
    extract_choice,
    field_equals,
    numeric_close,
    seeded_shuffle,
    set_f1,
)

# ------------------------------------------------------------------------------------------------- extract_choice


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("B", "B"),
        ("  b  ", "B"),
        ("**B**", "B"),
        ("$\\boxed{B}$", "B"),
        ("\\boxed{\\text{B}}", "B"),
        ("\\boxed{(C)}", "C"),
        ("(B)", "B"),
        ("B)", "B"),
        ("B.", "B"),
        ("Answer: B", "B"),
        ("**Answer:** B", "B"),
        ("Answer - D", "D"),
        ("The answer is B", "B"),
        ("The correct answer is (C).", "C"),
        ("final answer: **(B)**", "B"),
        ("Final Answer: option E", "E"),
        ("Ｂ", "B"),
        ("答案 answer：（Ｃ）", "C"),
        ("answer: b", "B"),
        ("the answer is d because it is cheapest", "D"),
        ("A good choice is C", "C"),
        ("A solid pick: the one labelled D.", "D"),
        ("I think B", "B"),
        ("I would pick B over A", "B"),
        ("My recommendation is option C.", "C"),
        ("Answer: A because it is cheapest", "A"),
        ("The answer is A", "A"),
        ("A", "A"),
        ("Answer: B\nC looked tempting but misses a must-have.", "B"),
        ("Answer: A\nAnswer: C", "C"),
        ("Maybe B. The final answer is D.", "D"),
        ("\\boxed{B} but some say C", "B"),
        ("The answer is not A; it is C", "C"),
        ("The answer is a laptop with 16 GB: C", "C"),
        ("Option A is over budget, so C", "C"),
        ("C, because A is over budget", "C"),
        ("B) Zephyr 14 fits the budget.\nA is too slow.", "B"),
    ],
)
def test_extract_choice_forms(text: str, expected: str) -> None:
    assert extract_choice(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "nothing here",
        "A good laptop is what you need.",
        "I am not sure.",
        "Answer: K",  # outside the letters
        "Plan b",
        "the USB-C port",
        "answer unclear",
        None,
        42,
        ["B"],
        {"answer": "B"},
    ],
)
def test_extract_choice_none(text: object) -> None:
    assert extract_choice(text) is None


def test_extract_choice_respects_letters() -> None:
    assert extract_choice("Answer: E", letters="ABCD") is None
    assert extract_choice("Answer: E", letters="ABCDE") == "E"
    assert extract_choice("answer: e", letters="abcde") == "E"
    with pytest.raises(ValueError, match="letters"):
        extract_choice("B", letters="")
    with pytest.raises(ValueError, match="letters"):
        extract_choice("B", letters="A1")


# ------------------------------------------------------------------------------------------------------- scorers


def test_scorers_satisfy_protocol_and_have_names() -> None:
    made = [field_equals("decision"), numeric_close("amount"), set_f1("tags"), choice_letter(), choice_letter(path="a")]
    for scorer in made:
        assert isinstance(scorer, Scorer)
        assert isinstance(scorer.name, str) and scorer.name
    assert field_equals("decision").name == "field_equals(decision)"
    assert set_f1("tags").name == "set_f1(tags)"
    assert choice_letter().name == "choice_letter"
    assert "rel=0.05" in numeric_close("x", rel=0.05).name


def test_all_lists_public_names() -> None:
    defined = {
        n
        for n, v in vars(scorers).items()
        if not n.startswith("_") and callable(v) and _in_package(getattr(v, "__module__", None), scorers.__name__)
    }
    assert set(scorers.__all__) == defined | {"SPECS"}  # and the table of specs
    assert scorers.__all__ == sorted(scorers.__all__)


def _in_package(module: str | None, package: str) -> bool:
    """Whether ``module`` is ``package`` or one of its modules (a name of the package may be defined in a part)."""
    return module is not None and (module == package or module.startswith(package + "."))


def test_field_equals() -> None:
    s = field_equals("decision")
    assert s({"decision": "refund"}, {"decision": "refund"}) == 1.0
    assert s({"decision": "deny"}, {"decision": "refund"}) == 0.0
    assert s({}, {"decision": "refund"}) == 0.0  # the candidate lacks it
    assert s(None, {"decision": "refund"}) == 0.0
    assert s("not a dict", {"decision": "refund"}) == 0.0
    assert s({"decision": "refund"}, {}) is None  # the reference lacks it
    assert s({"decision": "refund"}, None) is None
    assert s({"decision": "refund"}, ["decision"]) is None
    assert s({"decision": None}, {"decision": None}) == 1.0


def test_field_equals_nested_paths_and_types() -> None:
    s = field_equals("a.b")
    assert s({"a": {"b": 3}}, {"a": {"b": 3.0}}) == 1.0
    assert s({"a": {"b": True}}, {"a": {"b": 1}}) == 0.0  # True is not the number 1
    assert s({"a": 5}, {"a": {"b": 1}}) == 0.0
    assert s({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 2}]}}) == 1.0
    assert s('{"a": {"b": "x"}}', {"a": {"b": "x"}}) == 1.0  # an output stored as JSON text
    assert field_equals("items.1")({"items": ["x", "y"]}, {"items": ["z", "y"]}) == 1.0
    assert field_equals("items.5")({"items": ["x"]}, {"items": ["z"]}) is None


def test_field_equals_never_raises_on_odd_values() -> None:
    class Weird:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("ambiguous")

    s = field_equals("x")
    assert s({"x": Weird()}, {"x": 1}) == 0.0
    assert s({"x": object()}, {"x": object()}) == 0.0


@pytest.mark.parametrize("path", ["", ".a", "a..b", None, 3])
def test_bad_paths_raise(path: object) -> None:
    with pytest.raises(ValueError, match="path"):
        field_equals(path)  # type: ignore[arg-type]


def test_numeric_close() -> None:
    s = numeric_close("amount")
    assert s({"amount": 100.5}, {"amount": 100.0}) == 1.0  # within 1%
    assert s({"amount": 102.0}, {"amount": 100.0}) == 0.0
    assert s({"amount": 100}, {"amount": 100.0}) == 1.0
    assert s({"amount": "100"}, {"amount": 100.0}) == 0.0  # a non-number candidate
    assert s({"amount": True}, {"amount": 1}) == 0.0
    assert s({"amount": float("nan")}, {"amount": 1.0}) == 0.0
    assert s({}, {"amount": 1.0}) == 0.0
    assert s({"amount": 1.0}, {"amount": "1.0"}) is None  # the reference has no number
    assert s({"amount": 1.0}, {"amount": None}) is None
    assert s({"amount": 1.0}, {}) is None
    assert s({"amount": 1.0}, {"amount": float("inf")}) is None


def test_numeric_close_tolerances() -> None:
    assert numeric_close("x", rel=0.0)({"x": 1.0}, {"x": 1.0}) == 1.0
    assert numeric_close("x", rel=0.0)({"x": 1.001}, {"x": 1.0}) == 0.0
    assert numeric_close("x", rel=0.0, abs=0.01)({"x": 1.005}, {"x": 1.0}) == 1.0
    assert numeric_close("x", rel=0.0, abs=0.5)({"x": 0.0}, {"x": 0.4}) == 1.0
    with pytest.raises(ValueError, match="rel"):
        numeric_close("x", rel=-1)
    with pytest.raises(ValueError, match="abs"):
        numeric_close("x", abs=float("nan"))


def test_set_f1() -> None:
    s = set_f1("tags")
    assert s({"tags": ["a", "b"]}, {"tags": ["b", "a"]}) == 1.0
    assert s({"tags": ["a", "a", "b"]}, {"tags": ["a", "b"]}) == 1.0  # sets, not multisets
    assert s({"tags": ["a"]}, {"tags": ["a", "b"]}) == pytest.approx(2 / 3)
    assert s({"tags": ["a", "c"]}, {"tags": ["a", "b"]}) == pytest.approx(0.5)
    assert s({"tags": ["x"]}, {"tags": ["a"]}) == 0.0
    assert s({"tags": []}, {"tags": []}) == 1.0
    assert s({"tags": []}, {"tags": ["a"]}) == 0.0
    assert s({"tags": ["a"]}, {"tags": []}) == 0.0
    assert s({"tags": "ab"}, {"tags": ["a", "b"]}) == 0.0  # a string is not a collection
    assert s({}, {"tags": ["a"]}) == 0.0
    assert s({"tags": ["a"]}, {}) is None
    assert s({"tags": ["a"]}, {"tags": "a"}) is None
    assert s({"tags": [1, True]}, {"tags": [1, 1.0]}) == pytest.approx(2 / 3)  # True is not 1
    assert s({"tags": [{"k": 1}, [1, 2]]}, {"tags": [[1, 2], {"k": 1}]}) == 1.0  # unhashable items


def test_choice_letter() -> None:
    s = choice_letter()
    assert s("Answer: B", "The answer is (B).") == 1.0
    assert s("Answer: C", "B") == 0.0
    assert s("no idea", "B") == 0.0
    assert s(None, "B") == 0.0
    assert s("B", "unclear") is None
    assert s("B", None) is None
    on_path = choice_letter(letters="ABCD", path="answer")
    assert on_path({"answer": "**C**"}, {"answer": "C"}) == 1.0
    assert on_path({"answer": 3}, {"answer": "C"}) == 0.0
    assert on_path({}, {"answer": "C"}) == 0.0
    assert on_path({"answer": "C"}, {"answer": "E"}) is None  # E is not one of the letters
    assert on_path({"answer": "C"}, {}) is None


# ------------------------------------------------------------------------------------------------- seeded_shuffle


def test_seeded_shuffle_is_stable_and_a_permutation() -> None:
    options = [f"opt-{i}" for i in range(8)]
    first = seeded_shuffle(options, key="sel-01")
    again = seeded_shuffle(options, key="sel-01")
    assert first == again
    assert sorted(first.order) == list(range(8))
    assert all(first.options[i] == options[k] for i, k in enumerate(first.order))
    assert options == [f"opt-{i}" for i in range(8)]  # the input is not shuffled in place
    assert first.target_letter is None
    assert {tuple(seeded_shuffle(options, key=f"k{n}").order) for n in range(20)}.__len__() > 15


def test_seeded_shuffle_known_permutations() -> None:
    # Fixed by sha256 of the key: the same in every process and Python version. Changing these breaks reproducibility.
    assert seeded_shuffle(list(range(8)), "sel-01").order == [6, 7, 3, 0, 4, 5, 1, 2]
    assert seeded_shuffle(list(range(8)), "x").order == [2, 1, 7, 4, 3, 6, 0, 5]
    assert seeded_shuffle(list(range(8)), b"bytes").order == [5, 2, 0, 7, 4, 6, 1, 3]
    assert seeded_shuffle(list(range(8)), 42).order == [6, 7, 3, 1, 0, 5, 2, 4]
    assert seeded_shuffle(list("abcde"), "sel-01").options == ["d", "b", "c", "e", "a"]


def test_seeded_shuffle_same_across_processes() -> None:
    code = "from gradebench.scorers import seeded_shuffle; print(seeded_shuffle(list(range(8)), 'sel-01').order)"
    root = Path(__file__).resolve().parents[2]
    started = [  # two string hashes apart, side by side; this process's own (random) hash is the third
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(root)},
        )
        for hash_seed in ("0", "1")
    ]
    outputs = {process.communicate(timeout=300)[0].strip() for process in started}
    assert [process.returncode for process in started] == [0, 0]
    outputs.add(str(seeded_shuffle(list(range(8)), "sel-01").order))
    assert outputs == {json.dumps([6, 7, 3, 0, 4, 5, 1, 2]).replace('"', "")}


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10])
def test_seeded_shuffle_target_letter_for_every_position(n: int) -> None:
    options = [{"id": i} for i in range(n)]
    for target in range(n):
        for key in ("a", "b", "sel-07"):
            shuffled = seeded_shuffle(options, key=key, target=target)
            letter = shuffled.target_letter
            assert letter is not None
            assert shuffled.options["ABCDEFGHIJ".index(letter)] == {"id": target}
            assert shuffled.original_index(letter) == target


def test_seeded_shuffle_empty_and_bad_targets() -> None:
    assert seeded_shuffle([], key="k").options == []
    for bad in (-1, 3, True, "0", 1.0):
        with pytest.raises(ValueError, match="target"):
            seeded_shuffle(["a", "b", "c"], key="k", target=bad)  # type: ignore[arg-type]
    landed_beyond = 0
    for target in range(5):
        position = seeded_shuffle(list(range(5)), key="k").order.index(target)
        if position < 2:
            assert seeded_shuffle(list(range(5)), key="k", target=target, letters="AB").target_letter == "AB"[position]
        else:
            landed_beyond += 1
            with pytest.raises(ValueError, match="letters"):
                seeded_shuffle(list(range(5)), key="k", target=target, letters="AB")
    assert landed_beyond == 3
    shuffled = seeded_shuffle(["a", "b"], key="k")
    assert shuffled.original_index("Z") is None
    assert shuffled.original_index("") is None


def test_one_registry_of_specs() -> None:
    assert scorers.from_spec("field_equals:decision")({"decision": "refund"}, {"decision": "refund"}) == 1.0
    assert scorers.from_spec("numeric_close:total")({"total": 100.5}, {"total": 100.0}) == 1.0
    assert scorers.from_spec("set_f1:items")({"items": ["a", "b"]}, {"items": ["a"]}) == pytest.approx(2 / 3)
    assert scorers.from_spec("choice_letter")("The answer is **B**.", "B") == 1.0
    assert scorers.from_spec("choice_letter:answer")({"answer": "(C)"}, {"answer": "C"}) == 1.0
    for bad in ("field_equals", "nope:x", ""):
        with pytest.raises(ValueError, match="is not one of field_equals:PATH"):
            scorers.from_spec(bad)


# ------------------------------------------------------------------------------------------------------ gold labels


def test_gold_holds_the_output_to_the_inputs_value_not_the_references() -> None:
    s = field_equals("label", gold="expected.label")
    assert s.reads_input and not field_equals("label").reads_input
    assert s({"label": "bug"}, {"label": "feature"}, input={"expected": {"label": "bug"}}) == 1.0
    assert s({"label": "bug"}, {"label": "bug"}, input={"expected": {"label": "feature"}}) == 0.0
    assert s({}, None, input={"expected": {"label": "bug"}}) == 0.0  # the run lacks it
    assert s({"label": "bug"}, {"label": "bug"}, input={"id": "t1"}) is None  # no gold label: not compared
    assert s({"label": "bug"}, {"label": "bug"}) is None  # no input given
    close = numeric_close("total", gold="truth")
    assert close({"total": 100.5}, None, input={"truth": 100}) == 1.0
    assert close({"total": 90}, {"total": 90}, input={"truth": 100}) == 0.0
    assert close({"total": 1}, None, input={"truth": "x"}) is None
    assert set_f1("tags", gold="gold_tags")({"tags": ["a", "b"]}, None, input={"gold_tags": ["a"]}) == pytest.approx(
        2 / 3
    )
    letter = choice_letter(gold="answer")
    assert letter("Answer: **B**", "C", input={"answer": "B"}) == 1.0
    assert letter("Answer: C", "C", input={"answer": "(B)"}) == 0.0
    assert letter("Answer: B", "B", input={"answer": 1}) is None  # a gold answer that names no letter
    assert choice_letter(path="text", gold="answer")({"text": "B"}, None, input={"answer": "B"}) == 1.0


def test_gold_scorers_have_names_and_specs_that_round_trip() -> None:
    assert field_equals("label", gold="expected").name == "field_equals(label, gold=expected)"
    assert numeric_close("x", gold="y").name == "numeric_close(x, rel=0.01, abs=0, gold=y)"
    assert choice_letter(gold="answer").name == "choice_letter(gold=answer)"
    for spec in (
        "field_equals:label@expected_label",
        "numeric_close:total@gold.total",
        "set_f1:tags@gold_tags",
        "choice_letter@answer",
        "choice_letter:text@answer",
        "field_equals:decision",
        "choice_letter",
    ):
        assert scorers.from_spec(spec).spec == spec
    assert scorers.from_spec("field_equals:label@expected") == field_equals("label", gold="expected")
    assert numeric_close("x", rel=0.1, gold="y").spec is None  # tolerances a spec cannot say
    assert field_equals("a@b").spec is None  # a path a spec could not read back
    assert {"field_equals:PATH@GOLD", "choice_letter[:PATH]@GOLD"} <= set(scorers.SPECS)
    for bad in ("field_equals:label@", "choice_letter@a..b"):
        with pytest.raises(ValueError, match="gold must be a dotted path"):
            scorers.from_spec(bad)
    with pytest.raises(ValueError, match="gold must be a dotted path"):
        field_equals("label", gold="")
