"""Scorers: compare a run's output in code with the reference output (or a gold value the input carries), 0..1.

A scorer is any callable ``(output, reference_output) -> float | None`` (None: cannot be compared) with a ``name`` used
in reports. One that compares with a gold label takes the input too, as a keyword ``input``: gradebench passes it to a
scorer whose signature names ``input`` (or whose ``reads_input`` is True), and such a scorer scores the reference run
as well: was the pinned model right in the first place? The ready ones here are pure and never raise on odd input: a
reference (or gold value) that lacks what the scorer reads gives None, a run that lacks it 0.0. Each takes ``gold=``,
a dotted path into the input: then it holds the output to the input's value there, not to the reference's.

Multiple-choice helpers: `extract_choice` finds the answer letter in free text, `seeded_shuffle` permutes options
reproducibly (sha256 of a key, so the same input shows the same order in every process and Python version).
"""

from ._choice import DEFAULT_LETTERS as DEFAULT_LETTERS  # the letters options are labelled with, for a job's prompt
from ._choice import Shuffled, extract_choice, seeded_shuffle
from ._paths import without_gold
from ._ready import (
    SPECS,
    ChoiceLetter,
    FieldEquals,
    NumericClose,
    Scorer,
    SetF1,
    choice_letter,
    field_equals,
    from_spec,
    gold_path,
    numeric_close,
    set_f1,
)

__all__ = [
    "ChoiceLetter",
    "FieldEquals",
    "NumericClose",
    "SPECS",
    "Scorer",
    "SetF1",
    "Shuffled",
    "choice_letter",
    "extract_choice",
    "field_equals",
    "from_spec",
    "gold_path",
    "numeric_close",
    "seeded_shuffle",
    "set_f1",
    "without_gold",
]
