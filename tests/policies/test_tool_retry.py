"""The ``tool_retry`` policy through the Gate: what is retried, how often, how it ends."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from hookgate.pipeline.agent import ToolCall, ToolResult
from hookgate.policies.tool_guard import ToolGuardConfig, ToolGuardPolicy
from hookgate.policies.tool_retry import ToolRetryConfig, ToolRetryPolicy
from hookgate.sdk import Gate


class Flaky:
    """A tool that fails ``failures`` times (raising ``error``, or returning an error
    result when ``error`` is None), then works."""

    def __init__(self, failures: int, error: type[Exception] | None = ConnectionError) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0
        self.at: list[float] = []

    async def __call__(self, call: ToolCall) -> ToolResult:
        self.calls += 1
        self.at.append(time.perf_counter())
        if self.calls <= self.failures:
            if self.error is None:
                return ToolResult("upstream said 503", error=True)
            raise self.error(f"attempt {self.calls} failed")
        return ToolResult("sunny")


def gate(**settings: Any) -> Gate:
    settings.setdefault("backoff_base_s", 0)
    return Gate([ToolRetryPolicy(ToolRetryConfig(**settings))])


async def run(gate: Gate, tool: Flaky, name: str = "get_weather") -> ToolResult:
    async with gate.reply() as ctx:
        result = await gate.driver.tool(ToolCall(name, {"city": "Paris"}, "c1"), tool, ctx)
    return result


@pytest.mark.parametrize("error", [ConnectionError, None], ids=["raised", "error-result"])
async def test_a_flaky_tool_is_retried_until_it_works(error: type[Exception] | None) -> None:
    tool = Flaky(2, error)
    result = await run(gate(retries=2), tool)
    assert result.content == "sunny" and result.success
    assert tool.calls == 3


async def test_after_the_last_attempt_the_model_reads_what_went_wrong() -> None:
    tool = Flaky(5)
    result = await run(gate(retries=2), tool)
    assert tool.calls == 3 and result.error and not result.blocked
    assert result.content == (
        "Tool 'get_weather' failed after 3 attempts: ConnectionError: attempt 3 failed"
    )
    error_result = await run(gate(retries=1), Flaky(5, None))
    assert (error_result.content, error_result.error) == ("upstream said 503", True)  # its own


async def test_on_failure_error_and_exceptions_not_listed_propagate() -> None:
    with pytest.raises(ConnectionError, match="attempt 2"):
        await run(gate(retries=1, on_failure="error"), Flaky(5))
    tool = Flaky(5, ValueError)
    with pytest.raises(ValueError, match="attempt 1"):
        await run(gate(exceptions=["ConnectionError"]), tool)
    assert tool.calls == 1
    subclass = Flaky(1, ConnectionResetError)  # a ConnectionError
    assert (await run(gate(exceptions=["ConnectionError"]), subclass)).content == "sunny"
    results_only = Flaky(5)
    with pytest.raises(ConnectionError, match="attempt 1"):
        await run(gate(retry_on=["error_result"]), results_only)
    assert (await run(gate(retry_on=["exception"]), Flaky(1, None))).error  # not retried


def test_retry_conditions_are_checked() -> None:
    with pytest.raises(ValueError, match="retry_on lists nothing"):
        ToolRetryConfig(retry_on=())
    with pytest.raises(ValueError, match="exceptions narrows"):
        ToolRetryConfig(retry_on=("error_result",), exceptions=("TimeoutError",))
    with pytest.raises(ValueError, match="retry_on"):
        ToolRetryConfig.model_validate({"retry_on": ["TimeoutError"]})


async def test_only_the_listed_tools_and_never_a_refused_call() -> None:
    other = Flaky(1)
    with pytest.raises(ConnectionError):
        await run(gate(tools=["get_*"]), other, name="send_mail")
    assert other.calls == 1
    guarded = Gate(
        [
            ToolGuardPolicy(ToolGuardConfig(deny=("get_weather",))),
            ToolRetryPolicy(ToolRetryConfig(backoff_base_s=0)),
        ]
    )
    tool = Flaky(0)
    result = await run(guarded, tool)
    assert result.blocked and tool.calls == 0


async def test_backoff_grows_and_is_capped() -> None:
    """The one backoff (``hookgate.resilience.backoff.full_jitter``, as ``fallback``'s):
    before retry n, a wait drawn in [0, min(max, base * 2**(n-1))]."""
    config = ToolRetryConfig(backoff_base_s=1, backoff_max_s=5)
    rng = random.Random(7)
    for retry, bound in ((1, 1), (2, 2), (3, 4), (4, 5), (5, 5)):
        delays = [config.delay_s(retry, rng) for _ in range(400)]
        assert all(0 <= d <= bound for d in delays)
        assert max(delays) > 0.9 * bound
    tool = Flaky(3)
    await run(gate(retries=3, backoff_base_s=0.04, backoff_max_s=0.05), tool)
    waits = [b - a for a, b in zip(tool.at, tool.at[1:], strict=False)]
    assert len(waits) == 3 and sum(waits) < 0.15 + 0.1


async def test_a_tool_the_framework_runs_once_keeps_its_outcome() -> None:
    """cubeloop and AgentScope run a tool between two hooks (a split onion): it cannot be
    run again from a hook, so its error stands instead of failing the reply."""
    retrying = gate(retries=3)
    async with retrying.reply() as ctx:
        split = await retrying.driver.begin_tool(ToolCall("get_weather", {}, "c1"), ctx)
        assert not split.short_circuited
        result = await split.finish(ToolResult("upstream said 503", error=True))
        raised = await retrying.driver.begin_tool(ToolCall("get_weather", {}, "c2"), ctx)
        await raised.fail(ConnectionError("hung up"))
    assert (result.content, result.error) == ("upstream said 503", True)
