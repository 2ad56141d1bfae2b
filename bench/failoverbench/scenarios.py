"""The sixteen scenarios, the two timing profiles and the answer every healthy call returns.

Transcribed from failoverbench's published catalogue and methodology (v0.1; see
``README.md`` beside this file): the model names, faults, timings, deadlines and checks are
the suite's, so a gateway is configured and judged here as the suite configures and judges
it. The wording and the canonical text are ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

PROMPT = "In sixty words, say how a gateway earns trust when the provider behind it fails."
ANSWER = (
    "Sixty words, no more and no fewer, so that a caller can always tell a whole answer "
    "from part of one. A gateway shows its worth on the worst day of the provider behind it: "
    "limits hit without warning, streams break off midway, bytes arrive that parse as "
    "nothing, and a model returns while its breaker still keeps callers away."
)
"""The one healthy answer: sixty words, so a cut stream can never pass for a whole one."""
WORDS = ANSWER.split()
assert len(WORDS) == 60

FALLBACK = "fb-ok"
"""The fallback model of every scenario but S14."""


@dataclass(frozen=True)
class Timing:
    """How long the wall's faults last (``fast`` for local runs, ``full`` as published)."""

    retry_after_s: float
    slow_first_token_s: float
    stall_s: float
    silence_s: float
    flap_down_s: float
    token_interval_s: float
    cut_after: int = 40
    stall_after: int = 20
    malformed_at: int = 10


TIMINGS = {
    "full": Timing(2.0, 20.0, 30.0, 120.0, 60.0, 0.015),
    "fast": Timing(2.0, 3.0, 4.0, 15.0, 6.0, 0.005),
}

CheckKind = Literal[
    "no_hang",
    "complete",
    "no_truncated_success",
    "attempts_primary_min",
    "attempts_primary_max",
    "attempts_primary_eq",
    "context_retry_discipline",
    "first_gap_min_s",
    "max_attempts_within",
    "wall_max_s",
    "alive_after",
    "fallback_used",
    "reported_model_is_fallback",
    "usage_present",
    "no_prefill_masking",
    "seq_no_hang",
    "seq_served_during_outage",
    "seq_recovered_within_s",
    "seq_probe_discipline",
]


@dataclass(frozen=True)
class Check:
    """One machine check. A failed ``advisory`` check makes a rescue "partial"; a failed
    ``informational`` one changes nothing; any other failed check is a "fail"."""

    id: str
    kind: CheckKind
    value: float = 0
    window_s: float = 0
    advisory: bool = False
    informational: bool = False


@dataclass(frozen=True)
class Sequence:
    """S15: ``count`` requests, one every ``interval_s``, each bounded by ``max_wall_s``."""

    count: int
    interval_s: float
    max_wall_s: float


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    model: str
    fault: str
    max_wall_s: float
    checks: tuple[Check, ...]
    fallback: str = FALLBACK
    ideal: Literal["success", "error"] = "success"
    sequence: dict[str, Sequence] = field(default_factory=dict)
    """Per profile, for the sequence scenario (S15); empty for one-call scenarios."""


NO_HANG = Check("no_hang", "no_hang")
SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "S01",
        "429 with Retry-After",
        "fb-s01-429-retry-after",
        "first attempt 429 with Retry-After: 2, then healthy",
        20,
        (
            Check("retried", "attempts_primary_min", 2, advisory=True),
            Check("retry_after_honoured", "first_gap_min_s", 1.8, advisory=True),
            Check("no_hammer", "max_attempts_within", 2, window_s=1.5),
        ),
    ),
    Scenario(
        "S02",
        "429 without Retry-After, persistent",
        "fb-s02-429-persistent",
        "every attempt 429, no Retry-After",
        40,
        (
            Check("no_hammer", "max_attempts_within", 4, window_s=3),
            Check("bounded_attempts", "attempts_primary_max", 6),
            NO_HANG,
        ),
    ),
    Scenario(
        "S03",
        "500 once, then healthy",
        "fb-s03-500-then-200",
        "first attempt 500, then healthy",
        20,
        (NO_HANG, Check("same_provider_retry", "attempts_primary_min", 2, advisory=True)),
    ),
    Scenario(
        "S04",
        "503 persistent",
        "fb-s04-503-persistent",
        "every attempt 503",
        40,
        (Check("bounded_attempts", "attempts_primary_max", 6), NO_HANG),
    ),
    Scenario(
        "S05",
        "TCP reset before headers",
        "fb-s05-reset",
        "first attempt reset before any byte, then healthy",
        20,
        (NO_HANG,),
    ),
    Scenario(
        "S06",
        "No response at all",
        "fb-s06-no-response",
        "the provider accepts the request and says nothing until it hangs up",
        130,
        (
            Check("within_budget", "wall_max_s", 100),
            NO_HANG,
            Check("silent_route_not_retried", "attempts_primary_max", 1, advisory=True),
        ),
    ),
    Scenario(
        "S07",
        "Slow first token",
        "fb-s07-slow-ttft",
        "headers at once, the first token late, then normal",
        60,
        (NO_HANG, Check("ttft_limit", "wall_max_s", 15, advisory=True)),
    ),
    Scenario(
        "S08",
        "Stream cut mid-answer",
        "fb-s08-stream-cut",
        "the stream dies after 40 of 60 tokens",
        40,
        (Check("no_truncated_success", "no_truncated_success"), NO_HANG),
    ),
    Scenario(
        "S09",
        "Stream stalls",
        "fb-s09-stream-stall",
        "after 20 tokens the connection goes silent, then closes",
        70,
        (
            Check("bounded", "wall_max_s", 45),
            Check("no_truncated_success", "no_truncated_success"),
            Check("alive_after", "alive_after"),
            NO_HANG,
        ),
    ),
    Scenario(
        "S10",
        "Malformed chunk in the stream",
        "fb-s10-malformed-chunk",
        "an invalid-JSON event before the tenth token; the stream otherwise completes",
        30,
        (
            Check("alive_after", "alive_after"),
            Check("no_garbage", "no_truncated_success"),
            NO_HANG,
            Check("recovered_in_place", "complete", advisory=True),
        ),
    ),
    Scenario(
        "S11",
        "Stream ends without [DONE]",
        "fb-s11-no-done",
        "a complete stream (finish reason, usage, clean close) without data: [DONE]",
        30,
        (
            Check("prompt_finalise", "wall_max_s", 8),
            Check("usage_reported", "usage_present", advisory=True),
        ),
    ),
    Scenario(
        "S12",
        "Context length exceeded",
        "fb-s12-context-length",
        "every attempt 400 context_length_exceeded",
        20,
        (
            Check("no_blind_retry", "context_retry_discipline"),
            Check("bounded_attempts", "attempts_primary_max", 2),
            NO_HANG,
        ),
    ),
    Scenario(
        "S13",
        "Content-filter rejection",
        "fb-s13-content-filter",
        "every attempt 400 content_policy_violation",
        20,
        (
            Check("no_same_model_retry", "attempts_primary_eq", 1),
            NO_HANG,
            Check("fallback_attempted", "fallback_used", advisory=True, informational=True),
        ),
        ideal="error",
    ),
    Scenario(
        "S14",
        "Fallback target rejects prefill",
        "fb-s14-stream-cut",
        "the stream dies after 40 tokens; the fallback refuses an assistant prefill",
        40,
        (
            Check("no_prefill_masking", "no_prefill_masking"),
            Check("no_truncated_success", "no_truncated_success"),
        ),
        fallback="fb-ok-noprefill",
    ),
    Scenario(
        "S15",
        "Primary flaps: down, then healthy",
        "fb-s15-flap",
        "503 for the first minutes after reset (fast: 6 s), then healthy",
        200,
        (
            Check("no_hang", "seq_no_hang"),
            Check("served_during_outage", "seq_served_during_outage"),
            Check("recovered", "seq_recovered_within_s", 30),
            Check("probe_discipline", "seq_probe_discipline", advisory=True, informational=True),
        ),
        sequence={"full": Sequence(20, 4.0, 30.0), "fast": Sequence(10, 1.2, 10.0)},
    ),
    Scenario(
        "S16",
        "Fail-over accounting",
        "fb-s16-503-persistent",
        "every primary attempt 503; the fallback answers",
        40,
        (
            Check("reports_fallback_model", "reported_model_is_fallback"),
            Check("usage_present", "usage_present", advisory=True),
            Check("bounded_attempts", "attempts_primary_max", 6),
        ),
    ),
)
