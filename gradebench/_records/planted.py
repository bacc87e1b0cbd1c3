"""Negative controls, planted: runs known to be wrong, made from the reference runs, for the judge to score blind.

A control is the reference transcript of its input — the same messages, the same tool calls and results — with only
the final answer replaced (`ControlKind`): by the reference's answer to another input whose answer differs, by an
empty answer, by the reference's answer cut in half, by the reference's answer with its key fact changed (`altered`: a
number moved by one, a yes/no or a flag flipped — plain text edits, no model call), or by that altered answer argued
at length (`verbose`: its explanation restated, so it reads like a long-winded run sure of a wrong answer). The first
three are the default three controls; the last two are planted when a race asks for four or five. So the judge reads
what a real run of this input could have been, under the same prompt template, labels and facts checked in code as
every candidate; nothing in its prompt (or the request's opaque labels) tells a control from a real run.

Which controls a race plants is a pure function of its reference runs and a seed (`plant_controls`): the kinds cycle
through `KINDS`, each control goes on the next input of a seeded shuffle (on another input when its kind cannot be
planted there), so a rerun plants the same ones and asking for more keeps the first. A control's run id is its own
short hash, so its verdicts have cache keys of their own and the real runs' keys are untouched.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._base.canonical import canonical_json
from .._base.vocab import ControlKind, Role
from .codec import dumps, pack
from .keys import short_hash
from .records import Call, Run

__all__ = [
    "KINDS",
    "UNPLANTABLE",
    "ControlPlant",
    "altered",
    "argued_at_length",
    "control_entry",
    "control_seed",
    "empty_like",
    "halved",
    "plant_controls",
    "planted_run",
]

KINDS = (ControlKind.OTHER_ANSWER, ControlKind.EMPTY, ControlKind.HALF, ControlKind.ALTERED, ControlKind.VERBOSE)
"""The kinds in the order controls are planted: five controls are one of each (the default three, the first three)."""

UNPLANTABLE: dict[ControlKind, str] = {
    ControlKind.OTHER_ANSWER: "another input's answer needs two inputs whose reference answers differ",
    ControlKind.EMPTY: "an empty answer needs a reference answer that is not empty",
    ControlKind.HALF: "the answer cut in half needs a reference answer of text, a list or an object",
    ControlKind.ALTERED: (
        "the answer with its key fact changed needs a reference answer with a number, a yes/no or a flag"
    ),
    ControlKind.VERBOSE: (
        "the answer argued at length needs a reference answer with a key fact to change and an explanation in text"
    ),
}
"""Why a kind could not be planted on a race's reference answers."""


@dataclass(frozen=True, kw_only=True)
class ControlPlant:
    """One planted control: which input's reference transcript it is, and how its answer was made wrong."""

    run_id: str
    """The control's own opaque id (a short hash, like any run's): its verdicts are keyed by it."""
    number: int
    """Its place among the race's controls (0, 1, ...): the kind cycles with it."""
    kind: ControlKind
    """How the answer is wrong."""
    input_id: str
    """The input whose reference transcript the control is."""
    donor: str | None = None
    """For ``other_answer``: the input whose reference answer was planted; else None."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ControlKind(self.kind))


def control_seed(salt: str, benchmark_id: str) -> str:
    """The seed a race plants its controls with: a new salt plants them on other inputs."""
    return f"controls:{salt}:{benchmark_id}"


def control_entry(kind: ControlKind | str) -> str:
    """The ``entry`` of a control's row in ``report.controls``: a label no catalog entry has, never counted as one."""
    return f"(control: {ControlKind(kind).value})"


def plant_controls(
    references: Mapping[str, Run], count: int, *, benchmark_id: str, seed: str
) -> tuple[list[ControlPlant], list[str]]:
    """The controls to plant on these reference runs (ok ones, by input id), and why a kind could not be planted.

    Control ``i`` is of kind ``KINDS[i % 3]`` and goes on input ``i`` of a shuffle seeded by ``seed`` (or the first
    input after it where its kind can be planted); its donor, for ``other_answer``, is the first of another seeded
    shuffle of the inputs whose reference answer differs from this input's.
    """
    usable = {k: r for k, r in references.items() if r.ok}
    order = sorted(usable, key=lambda i: short_hash("control-input", seed, i))
    plants: list[ControlPlant] = []
    missed: list[str] = []
    for number in range(count):
        kind = KINDS[number % len(KINDS)]
        found = None
        for step in range(len(order)):
            input_id = order[(number + step) % len(order)]
            donor = _donor(usable, input_id, seed, number) if kind is ControlKind.OTHER_ANSWER else None
            if _plantable(kind, usable[input_id], donor):
                found = (input_id, donor)
                break
        if found is None:
            if UNPLANTABLE[kind] not in missed:
                missed.append(UNPLANTABLE[kind])
            continue
        input_id, donor = found
        run_id = short_hash("control", benchmark_id, seed, number, kind.value, input_id, donor)
        plants.append(ControlPlant(run_id=run_id, number=number, kind=kind, input_id=input_id, donor=donor))
    return plants, missed


def _donor(references: Mapping[str, Run], input_id: str, seed: str, number: int) -> str | None:
    """An input whose reference answer differs from ``input_id``'s (seeded), or None."""
    own = canonical_json(references[input_id].output)
    others = [k for k, r in references.items() if k != input_id and canonical_json(r.output) != own]
    return min(others, key=lambda k: short_hash("control-donor", seed, number, k), default=None)


def _plantable(kind: ControlKind, reference: Run, donor: str | None) -> bool:
    if kind is ControlKind.OTHER_ANSWER:
        return donor is not None
    if kind is ControlKind.EMPTY:
        return not _is_empty(reference.output)
    if kind is ControlKind.ALTERED:
        return altered(reference.output) is not None
    if kind is ControlKind.VERBOSE:
        return argued_at_length(reference.output) is not None
    return halved(reference.output) is not None


def planted_run(plant: ControlPlant, references: Mapping[str, Run]) -> Run:
    """The control as the judge is shown it: the reference run of its input, its final answer (the output and the
    last assistant message that has text) replaced as its kind says. Its role is ``control`` and its entry
    `control_entry`; it holds the reference's calls, for the judge's prompt, so it must not be counted as spending."""
    reference = references[plant.input_id]
    content_of: Callable[[str], str]
    thought: dict[str, Any] = {}  # the reasoning the final message carries, where it is another input's too
    if plant.kind is ControlKind.OTHER_ANSWER:
        assert plant.donor is not None
        donor = references[plant.donor]
        output: Any = donor.output
        said = _final_text(donor.calls)
        donor_message = donor.calls[said].message if said is not None else {}
        donor_text = donor_message.get("content")
        thought = {k: donor_message.get(k) for k in _REASONING} if donor_message else {}
        content_of = _replacer(reference.output, output, lambda text: str(donor_text) if donor_text else text)
    elif plant.kind is ControlKind.EMPTY:
        output, content_of = empty_like(reference.output), lambda _text: ""
    elif plant.kind is ControlKind.ALTERED:
        output = altered(reference.output)
        content_of = _replacer(reference.output, output, lambda text: altered(text) or text)
    elif plant.kind is ControlKind.VERBOSE:
        output = argued_at_length(reference.output)
        content_of = _replacer(reference.output, output, lambda text: argued_at_length(text) or text)
    else:
        output = halved(reference.output)
        content_of = _replacer(reference.output, output, lambda text: halved(text) or text)
    calls = list(reference.calls)
    final = _final_text(calls)
    if final is not None:
        calls[final] = _with_content(calls[final], content_of(str(calls[final].message["content"])), thought)
    return dataclasses.replace(
        reference,
        run_id=plant.run_id,
        role=Role.CONTROL,
        entry=control_entry(plant.kind),
        repeat=plant.number,
        output=output,
        calls=calls,
        verdict=None,
        scorer=None,
        scorer_error=None,
    )


# ------------------------------------------------------------------------------------------------------- answers


def empty_like(value: Any) -> Any:
    """An empty answer of the value's own kind: ``""``, ``[]``, ``{}``; None for anything else."""
    if isinstance(value, str):
        return ""
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {}
    return None


def halved(value: Any) -> Any:
    """The value cut in half, or None when it cannot be: a text's first half (back to a word boundary when there is
    one), a list's first half of its items, an object's first half of its keys (a single item or key is cut
    inside). A number, a flag or None cannot be cut."""
    if isinstance(value, str):
        text = value.strip()
        if len(text) < 2:
            return None
        cut = text[: len(text) // 2]
        words = cut.rstrip()
        if " " in words and not text[len(cut)].isspace():
            words = words[: words.rfind(" ")].rstrip() or words
        return words or None
    if isinstance(value, list | dict):
        items = list(value.items()) if isinstance(value, dict) else list(value)
        if not items:
            return None
        if len(items) == 1:
            inner = halved(items[0][1] if isinstance(value, dict) else items[0])
            if inner is None:
                return None
            return {items[0][0]: inner} if isinstance(value, dict) else [inner]
        kept = items[: len(items) // 2]
        return dict(kept) if isinstance(value, dict) else kept
    return None


EXPLAINING = ("reason", "explanation", "rationale", "notes")
"""An object's keys that carry its shown work, not its answer: never the key fact changed, and what is argued at
length."""
_FLIPS = {"yes": "no", "no": "yes", "true": "false", "false": "true", "approve": "deny", "deny": "approve"}
"""Words whose opposite is a plausible wrong answer, lower case (the case of the original is kept)."""
_NUMBER = re.compile(r"\d+")


def altered(value: Any) -> Any:
    """The value with its key fact changed, or None when it has none to change: a number moved by one (an int up one,
    a float up 1.0), a flag flipped, a text's yes/no (approve/deny, true/false) flipped or else its first number
    moved by one; in a list or an object the first such item (an object's explaining keys left as they are, numbers
    and flags before texts, so an amount changes before an id)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1 if isinstance(value, int) else round(value + 1.0, 10)
    if isinstance(value, str):
        return _altered_text(value)
    if isinstance(value, list | dict):
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        fields = [(k, v) for k, v in items if not (isinstance(value, dict) and k in EXPLAINING)]
        scalar = [(k, v) for k, v in fields if isinstance(v, bool | int | float)]
        for key, item in [*scalar, *[f for f in fields if f not in scalar]]:
            if (changed := altered(item)) is not None:
                if isinstance(value, dict):
                    return {**value, key: changed}
                return [changed if i == key else v for i, v in enumerate(value)]
    return None


def _altered_text(text: str) -> str | None:
    words = re.split(r"(\W+)", text)
    for index, word in enumerate(words):
        if (flip := _FLIPS.get(word.lower())) is not None:
            flip = flip.capitalize() if word[:1].isupper() else flip
            flip = flip.upper() if word.isupper() and len(word) > 1 else flip
            return "".join([*words[:index], flip, *words[index + 1 :]])
    found = _NUMBER.search(text)
    if found is None:
        return None
    return text[: found.start()] + str(int(found.group()) + 1) + text[found.end() :]


def argued_at_length(value: Any) -> Any:
    """The altered answer argued at length, or None when it cannot be: a text altered and its argument restated, an
    object altered with each explaining key's text restated (it needs one that is not empty)."""
    changed = altered(value)
    if changed is None:
        return None
    if isinstance(value, str):
        return _at_length(changed)
    if isinstance(changed, dict) and any(isinstance(changed.get(k), str) and changed[k].strip() for k in EXPLAINING):
        return {
            k: _at_length(v) if k in EXPLAINING and isinstance(v, str) and v.strip() else v for k, v in changed.items()
        }
    return None


def _at_length(text: str) -> str:
    """The text restated twice more, as a run sure of its answer explains it: about three times as long."""
    said = text.strip()
    return (
        f"{said} To set out the reasoning in full: {said} Checking every step once more against the facts above: "
        f"{said} Having verified each point carefully, this answer is correct."
    )


def _is_empty(value: Any) -> bool:
    return value is None or value in ("", [], {}) or (isinstance(value, str) and not value.strip())


_JSON_STYLES: Sequence[Callable[[Any], str]] = (
    lambda v: json.dumps(v),
    lambda v: json.dumps(v, ensure_ascii=False),
    lambda v: json.dumps(v, separators=(",", ":")),
    lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":")),
    lambda v: json.dumps(v, indent=2),
    lambda v: json.dumps(v, ensure_ascii=False, indent=2),
)
"""How a model or a job may have written its answer as JSON: a planted answer is written the same way."""


def _replacer(old: Any, new: Any, otherwise: Callable[[str], str]) -> Callable[[str], str]:
    """The final message's new text: the new answer written as the old one was when the message is the old answer as
    JSON, else ``otherwise(text)`` (the message says the answer in words of its own)."""

    def replace(text: str) -> str:
        for style in _JSON_STYLES:
            if style(old) == text.strip():
                return style(new)
        return otherwise(text)

    return replace


def _final_text(calls: Sequence[Call]) -> int | None:
    """The index of the last call whose assistant message has text: where a run says its answer."""
    for index in range(len(calls) - 1, -1, -1):
        content = calls[index].message.get("content")
        if isinstance(content, str) and content.strip():
            return index
    return None


_REASONING = ("reasoning_content", "reasoning", "reasoning_details")
"""Where a provider puts a model's reasoning in its message (`gradebench._base.protocol.reasoning_text`)."""


def _with_content(call: Call, content: str, thought: Mapping[str, Any]) -> Call:
    """The call with its assistant message's text (and, given ``thought``, its reasoning) replaced; everything
    else, ids and usage included, kept."""
    response = call.response
    assert response is not None  # a call whose message has text answered
    choice = dict(response["choices"][0])
    choice["message"] = {**choice["message"], **thought, "content": content}
    response = {**response, "choices": [choice, *response["choices"][1:]]}
    return dataclasses.replace(call, response_packed=pack(dumps(response)))
