"""``tool_retry`` (SDK): run a failing tool again, with exponential backoff.

YAML (the parameters of LangChain's ``ToolRetryMiddleware``)::

    - tool_retry:
        max_retries: 2              # attempts after the first
        tools: ["*"]                # which tools (globs, case-insensitive)
        retry_on: [exception, error]  # exception: the tool raised; error: it returned an
                                    #   error result; or exception class names (and their
                                    #   subclasses): [TimeoutError, ConnectionError]
        on_failure: return_message  # after the last attempt: the model reads what went
                                    #   wrong (return_message), or the exception propagates
                                    #   to the framework (raise)
        initial_delay: 1.0          # seconds before the first retry
        backoff_factor: 2.0         # each delay is the previous one times this
        max_delay: 60.0             # no delay is longer
        jitter: true                # each delay is drawn between half and all of it

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

log = logging.getLogger("hookgate")


class ToolRetryConfig(PolicyConfig):
    """Settings of the ``tool_retry`` policy."""

    max_retries: int = Field(2, ge=0, le=20)
    tools: tuple[str, ...] = ("*",)
    retry_on: tuple[str, ...] = ("exception", "error")
    on_failure: Literal["return_message", "raise"] = "return_message"
    initial_delay: float = Field(1.0, ge=0)
    backoff_factor: float = Field(2.0, ge=1)
    max_delay: float = Field(60.0, ge=0)
    jitter: bool = True

    @model_validator(mode="after")
    def _delays(self) -> ToolRetryConfig:
        if self.max_delay < self.initial_delay:
            raise ValueError("max_delay must be at least initial_delay")
        if not self.retry_on:
            raise ValueError("retry_on lists nothing to retry on")
        return self

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        delay = min(self.initial_delay * self.backoff_factor ** (retry - 1), self.max_delay)
        return random.uniform(delay / 2, delay) if self.jitter else delay


class ToolRetryPolicy(Policy[ToolRetryConfig]):
    """See the module docstring."""

    name: ClassVar[str] = "tool_retry"
    runs_in = frozenset({"sdk"})

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        if not listed(call.name, self.config.tools):
            return await next(call, ctx)
        attempts = self.config.max_retries + 1
        outcome: ToolResult | Exception | None = None
        ran = 0
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                retries = ctx.state.setdefault(self.slot, {})
                retries["retries"] = retries.get("retries", 0) + 1
                await asyncio.sleep(self.config.delay(attempt - 1))
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
            if outcome.blocked or not outcome.error or "error" not in self.config.retry_on:
                return outcome
        if isinstance(outcome, Exception):
            if self.config.on_failure == "raise":
                raise outcome
            return ToolResult(_failed(call.name, ran, outcome), error=True)
        assert outcome is not None, "the first attempt always runs"
        return outcome  # the model reads the tool's own error

    def _retries_exception(self, exc: Exception) -> bool:
        names = {cls.__name__ for cls in type(exc).__mro__}
        return any(kind == "exception" or kind in names for kind in self.config.retry_on)


def _failed(tool: str, attempts: int, exc: Exception) -> str:
    """What the model reads when the last attempt raised: the kind of failure, not a
    traceback."""
    tries = "attempt" if attempts == 1 else "attempts"
    return f"Tool {tool!r} failed after {attempts} {tries}: {type(exc).__name__}: {exc}"
