"""``tool_retry`` (SDK): run a failing tool again, with exponential backoff.

YAML (LangChain's ``ToolRetryMiddleware``, in hookgate's words: docs/vocabulary.md)::

    - tool_retry:
        retries: 2                  # attempts after the first
        tools: ["*"]                # which tools (globs, case-insensitive)
        retry_on: [exception, error_result]  # exception: the tool raised; error_result: it
                                    #   returned an error result
        exceptions: [Exception]     # which exceptions (class names, their subclasses
                                    #   too): [TimeoutError, ConnectionError]
        on_failure: continue        # after the last attempt raised: the model reads what
                                    #   went wrong (continue), or the exception propagates
                                    #   to the framework (error)
        backoff_base_s: 1.0         # full jitter, as fallback: before retry n wait
        backoff_max_s: 60.0         #   U(0, min(backoff_max_s, backoff_base_s * 2**(n-1)))

Only failures are retried: a call a policy refused (``ToolResult.blocked``) is never run
again. Where the framework runs a tool between two hooks of its own (cubeloop's
``before_tool_call``/``after_tool_call``, AgentScope's tool stream) it cannot be run again
from a hook: there the tool's error result stands (LangChain, the Agents SDK and PraisonAI
retry). List it after ``tool_guard`` so a refused call is not retried and each attempt is
not counted against a tool limit; list ``tracing`` before it to see one ``execute_tool``
span per call, after it for one per attempt.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from hookgate.pipeline.agent import NextTool, NotRepeatable, ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.hooks import Policy, PolicyConfig
from hookgate.policies.globs import listed
from hookgate.policies.vocabulary import OnFailure
from hookgate.resilience.backoff import full_jitter

log = logging.getLogger("hookgate")


class ToolRetryConfig(PolicyConfig):
    """Settings of the ``tool_retry`` policy."""

    retries: int = Field(2, ge=0, le=20)
    """Attempts after the first."""
    tools: tuple[str, ...] = ("*",)
    """Which tools (globs, case-insensitive)."""
    retry_on: tuple[Literal["exception", "error_result"], ...] = ("exception", "error_result")
    """``exception``: the tool raised; ``error_result``: it returned an error result."""
    exceptions: tuple[str, ...] = ("Exception",)
    """Class names of the exceptions retried (a subclass of one is too)."""
    on_failure: OnFailure = "continue"
    """After the last attempt raised: the model reads what went wrong (``continue``), or the
    exception reaches the framework (``error``)."""
    backoff_base_s: float = Field(1.0, ge=0)
    """Full jitter, as ``fallback``: before retry n wait U(0, min(``backoff_max_s``, base *
    2**(n-1)))."""
    backoff_max_s: float = Field(60.0, ge=0)
    """The longest backoff wait."""

    @model_validator(mode="after")
    def _something_to_retry(self) -> ToolRetryConfig:
        if not self.retry_on:
            raise ValueError("retry_on lists nothing to retry on")
        if "exceptions" in self.model_fields_set and "exception" not in self.retry_on:
            raise ValueError("exceptions narrows retry_on's exception, which is not listed")
        if not self.exceptions:
            raise ValueError("exceptions lists no exception class")
        return self

    def delay_s(self, retry: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (1-based): the backoff of
        :func:`hookgate.resilience.backoff.full_jitter`, as ``fallback`` waits."""
        return full_jitter(retry - 1, self.backoff_base_s, self.backoff_max_s, rng)


class ToolRetryPolicy(Policy[ToolRetryConfig]):
    """See the module docstring."""

    name: ClassVar[str] = "tool_retry"
    runs_in = frozenset({"sdk"})

    def __init__(self, config: ToolRetryConfig) -> None:
        super().__init__(config)
        self._rng = random.Random()

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        if not listed(call.name, self.config.tools):
            return await next(call, ctx)
        attempts = self.config.retries + 1
        outcome: ToolResult | Exception | None = None
        ran = 0
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                retries = ctx.state.setdefault(self.slot, {})
                retries["retries"] = retries.get("retries", 0) + 1
                await asyncio.sleep(self.config.delay_s(attempt - 1, self._rng))
            try:
                outcome = await next(call, ctx)
            except NotRepeatable:  # the framework runs the tool once: its outcome stands
                break
            except Exception as exc:
                if not self._retries_exception(exc):
                    raise
                ran, outcome = attempt, exc
                log.info("tool %s raised %s (attempt %d of %d)", call.name,
                         type(exc).__name__, attempt, attempts)  # fmt: skip
                continue
            ran = attempt
            if outcome.blocked or not outcome.error or "error_result" not in self.config.retry_on:
                return outcome
        if isinstance(outcome, Exception):
            if self.config.on_failure == "error":
                raise outcome
            return ToolResult(_failed(call.name, ran, outcome), error=True)
        assert outcome is not None, "the first attempt always runs"
        return outcome  # the model reads the tool's own error

    def _retries_exception(self, exc: Exception) -> bool:
        if "exception" not in self.config.retry_on:
            return False
        names = {cls.__name__ for cls in type(exc).__mro__}
        return any(name in names for name in self.config.exceptions)


def _failed(tool: str, attempts: int, exc: Exception) -> str:
    """What the model reads when the last attempt raised: the kind of failure, not a
    traceback."""
    tries = "attempt" if attempts == 1 else "attempts"
    return f"Tool {tool!r} failed after {attempts} {tries}: {type(exc).__name__}: {exc}"
