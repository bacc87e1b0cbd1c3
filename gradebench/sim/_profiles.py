"""The simulated fleet's entries and the behaviour profile of each.

Prices are USD per 1M tokens (input, cached input, output; cached input is 10% of input, as OpenAI's current families
price it); latency is ``mean ± jitter`` ms plus ms per output token; rates are probabilities: "acc" per final answer
(else one field or word is wrong), "skip" per tool call, "misr" per run (one tool result read wrongly), "fail" per
HTTP attempt (503); "verb" is the verbosity factor of explanations.

==========  ========  ===================  ============  ====  ====  ====  ====  ====  =================================
entry       grade     $ in / cached / out  latency ms    acc   skip  misr  fail  verb  quirks
==========  ========  ===================  ============  ====  ====  ====  ====  ====  =================================
sim/pico    small     0.02 / 0.002 / 0.08  150±50 +2     0.60  0.30  0.10  0.01  0.4   very cheap, guesses, terse
sim/mini    small     0.08 / 0.008 / 0.30  300±80 +4     0.88  0.05  0.05  0.01  0.9   pick; server 120 rpm, burst 4
sim/nano    small     0.04 / 0.004 / 0.15  200±60 +3     0.82  0.06  0.25  0.01  0.7   cheap, misreads tool results
sim/steady  standard  0.40 / 0.04 / 1.60   600±150 +8    0.95  0.02  0.02  0.01  1.0   pick; accurate, disciplined
sim/swift   standard  0.10 / 0.01 / 0.40   200±50 +3     0.94  0.25  0.03  0.01  0.5   4x cheaper, fast; skips tools
sim/squint  standard  0.25 / 0.025 / 1.00  450±100 +6    0.93  0.03  0.30  0.01  1.0   misreads a tool result
sim/chatty  standard  1.20 / 0.12 / 6.00   1500±400 +15  0.95  0.02  0.02  0.01  3.0   dear, verbose, slow, no better
sim/flaky   standard  0.20 / 0.02 / 0.80   500±200 +6    0.94  0.03  0.03  0.35  1.0   503s; the entry retries twice
sim/oracle  large     5.00 / 0.50 / 20.0   2000±500 +20  0.99  0.00  0.00  0.00  1.2   ceiling and judge (noise 0.1)
sim/sage    large     2.50 / 0.25 / 10.0   2500±700 +25  0.97  0.01  0.01  0.01  1.3   pick; accurate, slow; thinks
                                                                                       (DeepSeek reasoning_content)
sim/prose   large     1.00 / 0.10 / 4.00   1200±300 +12  0.93  0.03  0.04  0.01  1.8   answers json_schema in prose
==========  ========  ===================  ============  ====  ====  ====  ====  ====  =================================

Families (the catalog's ``family``: who made the model, so a judge of a candidate's family can be flagged): ``atlas``
makes sim/oracle and sim/prose; ``borealis`` sim/sage, sim/steady, sim/swift and sim/mini; ``cirrus`` sim/squint,
sim/chatty, sim/flaky, sim/pico and sim/nano. So the ceiling judges no entry of its family on the standard and small
grades, while sim/sage as a second judge shares a family with the standard grade's reference (sim/steady) and with
sim/swift. A profile may also write in a house style (``signature``: a sentence its explanations end with) and, as a
judge, favour answers written in it (``self_preference``): the built-in fleet does neither, a test's fleet may.

Verbosity scales explanation-like fields (``reason``, ``explanation``, ``rationale``, ``notes``) and plain text: 1 keeps
the ideal answer, below 1 cuts it (less shown work), above 1 pads it (more output tokens, more latency, more cost).
Catalog ``rpm`` of ``sim/mini`` (120) equals its server limit, but the client's bucket allows a burst of 6 where the
server's allows 4: a cold start meets real 429s (with ``retry-after``, ``retry-after-ms`` and
``x-ratelimit-limit-requests``), which admission control waits out while it lowers the entry's pace to what the
server takes (`gradebench._calls.admission`).

Every model caches prompt prefixes as OpenAI does (``gradebench.sim._prompt_cache``): a prefix of at least 1024 tokens
seen recently is reported in ``usage.prompt_tokens_details.cached_tokens``. ``sim/sage`` thinks before answering, as
DeepSeek's thinking mode does (``gradebench.sim._reasoning``): its messages carry ``reasoning_content``, its usage
counts ``reasoning_tokens`` (inside ``completion_tokens``), and a conversation that passes one of its tool-call turns
back without that turn's ``reasoning_content`` is answered 400.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CEILING", "GRADES", "PICKS", "PROFILES", "REASONING_FLAVOURS", "Profile"]

REASONING_FLAVOURS = ("deepseek", "openrouter")
"""The reasoning flavours a profile may name (see ``gradebench.sim._reasoning``)."""


@dataclass(frozen=True, kw_only=True)
class Profile:
    """How one simulated model behaves, what it costs and how the catalog lists it."""

    name: str
    """Catalog entry name, e.g. ``sim/steady``."""
    model: str
    """Model id the endpoint answers to, e.g. ``sim-steady-1``."""
    grade: str
    """Grade of the entry: small, standard or large."""
    price_in: float
    """USD per 1M input tokens."""
    price_out: float
    """USD per 1M output tokens (reasoning tokens included)."""
    accuracy: float
    """Probability a final answer is left as the policy gave it (else one field or word is changed)."""
    skip_rate: float
    """Probability a tool call the policy asks for is skipped (the model answers as if it had looked)."""
    misread_rate: float
    """Probability a run reads one tool result wrongly (a flipped boolean, changed number or altered string)."""
    verbosity: float
    """Length factor of explanations: 1 as ideal, below 1 terse, above 1 padded."""
    latency_ms: float
    """Mean time to first byte, in ms (multiplied by the fleet's latency scale)."""
    jitter_ms: float
    """Uniform jitter around the mean, in ms."""
    ms_per_token: float
    """Extra time per output token, in ms."""
    failure_rate: float
    """Probability an HTTP attempt gets a 503 (rolled again on every retry)."""
    server_rpm: int | None = None
    """Server-side token-bucket limit in requests per minute (429 beyond it); None: unlimited."""
    burst: int = 4
    """Token-bucket capacity: requests that may arrive at once before the limit bites."""
    ignores_schema: bool = False
    """Answers ``response_format`` json_schema requests in prose with a fenced json block."""
    judge_noise: float = 0.1
    """Probability the sim judge on this model moves accuracy by one point."""
    position_bias: float = 0.05
    """Probability the sim judge on this model gives a candidate shown first one point more (an order effect)."""
    verbosity_bias: float = 0.0
    """Probability the sim judge on this model lets a wrong answer pass when the candidate explains at length (at
    least `gradebench.sim._grader.LONG` times the reference's shown work): a judge swayed by verbosity. 0 for every
    built-in entry; `gradebench.sim.SWAYED` has 0.9."""
    judge_skims: bool = False
    """The sim judge on this model skims: it checks the tool calls but never reads the answer, and gives full marks
    for shown work, so a wrong or empty answer scores as high as a right one (a weak model as a judge)."""
    catalog_rpm: int | None = None
    """The ``rpm`` the catalog entry declares (what admission control paces to); None: none."""
    max_concurrency: int | None = 16
    """The ``max_concurrency`` the catalog entry declares."""
    max_retries: int = 4
    """The ``max_retries`` the catalog entry declares (the openai SDK's retries)."""
    price_cached_in: float | None = None
    """USD per 1M input tokens served from the prompt cache; None: the same as ``price_in``."""
    reasoning: str | None = None
    """Thinks before answering, in a provider's shape: ``"deepseek"`` (``reasoning_content``, required back on tool-call
    turns) or ``"openrouter"`` (``reasoning`` and ``reasoning_details``, required back unchanged); None: no thinking."""
    quirks: str = ""
    """One line for tables and docs."""
    family: str | None = None
    """Who made the model (the catalog entry's ``family``); None: unknown."""
    signature: str | None = None
    """A sentence the model's explanations end with: its family's house style (None: none)."""
    self_preference: int = 0
    """Points of accuracy the sim judge on this model adds (up to 7) to a candidate whose transcript carries this
    profile's ``signature``: a judge that favours its own family's answers, as real ones do."""

    def __post_init__(self) -> None:
        if self.reasoning is not None and self.reasoning not in REASONING_FLAVOURS:
            raise ValueError(f"reasoning must be one of {list(REASONING_FLAVOURS)} or None, got {self.reasoning!r}")


PROFILES: tuple[Profile, ...] = (
    # small: one far cheaper than the pick but poor, one cheap but reading carelessly.
    Profile(
        name="sim/pico",
        family="cirrus",
        model="sim-pico-1",
        grade="small",
        price_in=0.02,
        price_out=0.08,
        price_cached_in=0.002,
        accuracy=0.60,
        skip_rate=0.30,
        misread_rate=0.10,
        verbosity=0.4,
        latency_ms=150,
        jitter_ms=50,
        ms_per_token=2,
        failure_rate=0.01,
        judge_noise=0.3,
        max_concurrency=32,
        quirks="very cheap, low accuracy, skips tools, terse",
    ),
    Profile(
        name="sim/mini",
        family="borealis",
        model="sim-mini-1",
        grade="small",
        price_in=0.08,
        price_out=0.30,
        price_cached_in=0.008,
        accuracy=0.88,
        skip_rate=0.05,
        misread_rate=0.05,
        verbosity=0.9,
        latency_ms=300,
        jitter_ms=80,
        ms_per_token=4,
        failure_rate=0.01,
        judge_noise=0.2,
        server_rpm=120,
        burst=4,
        catalog_rpm=120,
        max_concurrency=8,
        quirks="decent; rate-limited server-side at 120 rpm (burst 4); the catalog paces at 120 with a burst of 6",
    ),
    Profile(
        name="sim/nano",
        family="cirrus",
        model="sim-nano-1",
        grade="small",
        price_in=0.04,
        price_out=0.15,
        price_cached_in=0.004,
        accuracy=0.82,
        skip_rate=0.06,
        misread_rate=0.25,
        verbosity=0.7,
        latency_ms=200,
        jitter_ms=60,
        ms_per_token=3,
        failure_rate=0.01,
        judge_noise=0.25,
        max_concurrency=32,
        quirks="cheap, misreads tool results",
    ),
    # standard: the pick, a cheap one that is almost as good (until it skips), a careless reader, an expensive
    # talker that is no better, and a cheap one that fails at the HTTP level.
    Profile(
        name="sim/steady",
        family="borealis",
        model="sim-steady-1",
        grade="standard",
        price_in=0.40,
        price_out=1.60,
        price_cached_in=0.04,
        accuracy=0.95,
        skip_rate=0.02,
        misread_rate=0.02,
        verbosity=1.0,
        latency_ms=600,
        jitter_ms=150,
        ms_per_token=8,
        failure_rate=0.01,
        judge_noise=0.1,
        quirks="steady, accurate, disciplined",
    ),
    Profile(
        name="sim/swift",
        family="borealis",
        model="sim-swift-1",
        grade="standard",
        price_in=0.10,
        price_out=0.40,
        price_cached_in=0.01,
        accuracy=0.94,
        skip_rate=0.25,
        misread_rate=0.03,
        verbosity=0.5,
        latency_ms=200,
        jitter_ms=50,
        ms_per_token=3,
        failure_rate=0.01,
        judge_noise=0.15,
        max_concurrency=32,
        quirks="fast and 4x cheaper; skips a tool call ~25%; terse",
    ),
    Profile(
        name="sim/squint",
        family="cirrus",
        model="sim-squint-1",
        grade="standard",
        price_in=0.25,
        price_out=1.00,
        price_cached_in=0.025,
        accuracy=0.93,
        skip_rate=0.03,
        misread_rate=0.30,
        verbosity=1.0,
        latency_ms=450,
        jitter_ms=100,
        ms_per_token=6,
        failure_rate=0.01,
        judge_noise=0.15,
        quirks="misreads a tool result in ~30% of runs",
    ),
    Profile(
        name="sim/chatty",
        family="cirrus",
        model="sim-chatty-1",
        grade="standard",
        price_in=1.20,
        price_out=6.00,
        price_cached_in=0.12,
        accuracy=0.95,
        skip_rate=0.02,
        misread_rate=0.02,
        verbosity=3.0,
        latency_ms=1500,
        jitter_ms=400,
        ms_per_token=15,
        failure_rate=0.01,
        judge_noise=0.1,
        max_concurrency=8,
        quirks="verbose: long explanations, many output tokens, slow; dear and no better",
    ),
    Profile(
        name="sim/flaky",
        family="cirrus",
        model="sim-flaky-1",
        grade="standard",
        price_in=0.20,
        price_out=0.80,
        price_cached_in=0.02,
        accuracy=0.94,
        skip_rate=0.03,
        misread_rate=0.03,
        verbosity=1.0,
        latency_ms=500,
        jitter_ms=200,
        ms_per_token=6,
        failure_rate=0.35,
        judge_noise=0.15,
        max_retries=2,
        quirks="503 on ~35% of attempts; the entry retries twice, so some runs still fail",
    ),
    # large: the ceiling (judge), the pick, and one that ignores response schemas.
    Profile(
        name="sim/oracle",
        family="atlas",
        model="sim-oracle-1",
        grade="large",
        price_in=5.00,
        price_out=20.00,
        price_cached_in=0.50,
        accuracy=0.99,
        skip_rate=0.0,
        misread_rate=0.0,
        verbosity=1.2,
        latency_ms=2000,
        jitter_ms=500,
        ms_per_token=20,
        failure_rate=0.0,
        judge_noise=0.1,
        max_concurrency=64,  # the judge serves every verdict of a race
        quirks="the ceiling and judge: accurate, low judge noise, expensive",
    ),
    Profile(
        name="sim/sage",
        family="borealis",
        model="sim-sage-1",
        grade="large",
        price_in=2.50,
        price_out=10.00,
        price_cached_in=0.25,
        accuracy=0.97,
        skip_rate=0.01,
        misread_rate=0.01,
        verbosity=1.3,
        latency_ms=2500,
        jitter_ms=700,
        ms_per_token=25,
        failure_rate=0.01,
        judge_noise=0.05,
        max_concurrency=8,
        reasoning="deepseek",
        quirks="accurate, slow; thinks first (reasoning_content, which a tool-call turn must pass back)",
    ),
    Profile(
        name="sim/prose",
        family="atlas",
        model="sim-prose-1",
        grade="large",
        price_in=1.00,
        price_out=4.00,
        price_cached_in=0.10,
        accuracy=0.93,
        skip_rate=0.03,
        misread_rate=0.04,
        verbosity=1.8,
        latency_ms=1200,
        jitter_ms=300,
        ms_per_token=12,
        failure_rate=0.01,
        judge_noise=0.15,
        ignores_schema=True,
        quirks="ignores json_schema response_format: prose with a fenced json block",
    ),
)

GRADES: tuple[str, ...] = ("small", "standard", "large")
"""The fleet's grades, weakest first."""

PICKS: dict[str, str] = {"small": "sim/mini", "standard": "sim/steady", "large": "sim/sage"}
"""The pinned reference entry of each grade."""

CEILING = "sim/oracle"
"""The strongest entry: the judge."""
