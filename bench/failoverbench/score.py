"""The scorer: the caller's view and the wall's log, judged by each scenario's checks.

Verdicts (the suite's methodology v0.1):

* **pass** — rescued (the whole canonical answer; for S13 a clean error) and every check
  passed;
* **partial** — rescued, but an advisory check failed (or S13 answered by routing around the
  refusal);
* **safe** — not rescued, but a bounded clean error and every required check passed;
* **fail** — a hang, a truncated answer presented as success, or a required check failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from bench.failoverbench.caller import Result
from bench.failoverbench.scenarios import ANSWER, Check, Scenario

_SPACE = re.compile(r"\s+")


def normal(text: str) -> str:
    return _SPACE.sub(" ", text.strip())


def complete(text: str) -> bool:
    return normal(text) == normal(ANSWER)


def _name(model: str | None) -> str:
    return (model or "").rsplit("/", 1)[-1].lower()


@dataclass
class Outcome:
    """What one scenario produced: the caller's result (the last one, for S15), the wall's
    log, whether a healthy call succeeded afterwards, and, for S15, every call."""

    scenario: Scenario
    result: Result
    log: list[dict[str, Any]]
    alive_after: bool
    alive_error: str | None = None
    sequence: list[Result] | None = None
    sent_at: list[float] | None = None
    flap_down_s: float = 0.0

    def attempts(self, model: str) -> list[dict[str, Any]]:
        return [e for e in self.log if _name(e["model"]) == _name(model)]

    @property
    def primary(self) -> list[dict[str, Any]]:
        return self.attempts(self.scenario.model)

    @property
    def fallback(self) -> list[dict[str, Any]]:
        return self.attempts(self.scenario.fallback)

    @property
    def outcome(self) -> str:
        if self.sequence is None:
            return self.result.outcome
        outcomes = {r.outcome for r in self.sequence}
        return "hang" if "hang" in outcomes else "success" if outcomes == {"success"} else "error"

    @property
    def complete(self) -> bool:
        results = self.sequence if self.sequence is not None else [self.result]
        return all(complete(r.content) for r in results)


def check(c: Check, o: Outcome) -> tuple[str, str]:
    """``(status, detail)``; status is pass, fail, info (a failed informational check) or
    na (nothing to judge)."""
    ok, detail = _judge(c, o)
    if ok is None:
        return "na", detail
    return ("pass" if ok else "info" if c.informational else "fail"), detail


def _judge(c: Check, o: Outcome) -> tuple[bool | None, str]:
    r, primary, fallback = o.result, o.primary, o.fallback
    n = len(primary)
    if c.kind == "no_hang":
        return o.outcome != "hang", f"{o.outcome} after {r.elapsed_s:.1f}s"
    if c.kind == "complete":
        return o.outcome == "success" and o.complete, "whole answer" if o.complete else "not whole"
    if c.kind == "no_truncated_success":
        words = len(normal(r.content).split())
        bad = o.outcome == "success" and not o.complete
        return not bad, f"success with {words}/60 words" if bad else f"{o.outcome}"
    if c.kind == "attempts_primary_min":
        return n >= c.value, f"{n} primary attempt(s)"
    if c.kind == "attempts_primary_max":
        return n <= c.value, f"{n} primary attempt(s)"
    if c.kind == "attempts_primary_eq":
        return n == c.value, f"{n} primary attempt(s)"
    if c.kind == "context_retry_discipline":
        sizes = [e["prompt_tokens"] for e in primary]
        shrinking = all(b < a for a, b in pairwise(sizes))
        return n <= 1 or shrinking, f"{n} primary attempt(s), prompt sizes {sizes}"
    if c.kind == "first_gap_min_s":
        if n < 2:
            return False, "no second attempt"
        gap = primary[1]["t"] - primary[0]["t"]
        return gap >= c.value, f"gap {gap:.2f}s"
    if c.kind == "max_attempts_within":
        within = sum(1 for e in primary if e["t"] - primary[0]["t"] < c.window_s)
        return within <= c.value, f"{within} attempt(s) in the first {c.window_s:g}s"
    if c.kind == "wall_max_s":
        return o.outcome != "hang" and r.elapsed_s <= c.value, f"{r.elapsed_s:.1f}s"
    if c.kind == "alive_after":
        return o.alive_after, "healthy call answered" if o.alive_after else f"{o.alive_error}"
    if c.kind == "fallback_used":
        return bool(fallback), f"{len(fallback)} fallback attempt(s)"
    if c.kind == "reported_model_is_fallback":
        if not fallback:
            return None, "the fallback was never used"
        return _name(o.scenario.fallback) in _name(r.model), f"response model {r.model!r}"
    if c.kind == "usage_present":
        return bool(r.usage), f"usage {r.usage}" if r.usage else "no usage"
    if c.kind == "no_prefill_masking":
        refused = sum(1 for e in o.log if str(e["action"]).startswith("400 prefill"))
        return not (o.outcome == "error" and refused), f"{refused} prefill refusal(s), {o.outcome}"
    return _judge_sequence(c, o)


def _judge_sequence(c: Check, o: Outcome) -> tuple[bool | None, str]:
    assert o.sequence is not None and o.sent_at is not None, c.kind
    down = [r for r, t in zip(o.sequence, o.sent_at, strict=True) if t < o.flap_down_s]
    if c.kind == "seq_no_hang":
        hung = sum(r.hang for r in o.sequence)
        return hung == 0, f"{hung} of {len(o.sequence)} request(s) hung"
    if c.kind == "seq_served_during_outage":
        served = sum(r.ok and complete(r.content) for r in down)
        return bool(down) and served == len(down), f"{served}/{len(down)} answered in the outage"
    if c.kind == "seq_recovered_within_s":
        back = [e["t"] for e in o.primary if str(e["action"]).startswith("200")]
        if not back:
            return False, "the primary was never used again after it recovered"
        late = min(back) - o.flap_down_s
        return late <= c.value, f"primary answered again {late:+.1f}s after recovery"
    if c.kind == "seq_probe_discipline":
        tries = sum(1 for e in o.primary if e["t"] < o.flap_down_s)
        return tries <= len(down), f"{tries} primary attempt(s) for {len(down)} request(s)"
    raise ValueError(f"unknown check {c.kind}")


def verdict(o: Outcome, checks: list[tuple[Check, str, str]]) -> tuple[str, str]:
    """``(verdict, reason)`` from the outcome and its checks' ``(check, status, detail)``."""
    if o.outcome == "hang":
        return "fail", "hang"
    if o.scenario.ideal == "success" and o.outcome == "success" and not o.complete:
        return "fail", "truncated answer presented as success"
    failed = [c.id for c, status, _ in checks if status == "fail" and not c.advisory]
    if failed:
        return "fail", "failed: " + ", ".join(failed)
    advisory = [c.id for c, status, _ in checks if status == "fail" and c.advisory]
    if o.scenario.ideal == "error":
        if o.outcome == "success":
            return "partial", "answered by routing around the refusal"
        rescued = True
    else:
        rescued = o.outcome == "success" and o.complete
    if rescued and advisory:
        return "partial", "rescued; advisory: " + ", ".join(advisory)
    if rescued:
        return "pass", "rescued"
    return "safe", f"clean error: {o.result.error or ''}"[:160]
