"""The ``on_tool_call`` onion records each policy's decision in the model calls'
vocabulary: ``allow``, ``modify`` (other arguments, another result, an answer of its own),
``block`` (a refusal it made, or an error it raised)."""

from __future__ import annotations

import pytest

from hookgate import (
    NextTool,
    Observation,
    Policy,
    PolicyBlocked,
    ReplyContext,
    ToolCall,
    ToolResult,
)
from hookgate.pipeline.hooks import check
from hookgate.pipeline.tool_calls import tool_onion


class Pass(Policy):
    name = "pass"

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        return await next(call, ctx)


class Lower(Policy):
    name = "lower"

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        city = str(call.arguments["city"]).lower()
        return await next(call.with_arguments({**call.arguments, "city": city}), ctx)


class Refuse(Policy):
    name = "refuse"

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        return ToolResult.refused("not today")


class Raise(Policy):
    name = "raise"

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        raise PolicyBlocked("never", code="never")


async def weather(call: ToolCall, ctx: ReplyContext) -> ToolResult:
    return ToolResult(f"sunny in {call.arguments['city']}")


def ctx() -> ReplyContext:
    return ReplyContext(agent="a", reply_id="r", session_id=None, session={})


async def test_allow_modify_and_block_by_slot() -> None:
    policies = [Pass(), Lower(), Pass(), Refuse()]
    check(policies)
    observation = Observation()
    result = await tool_onion(policies, weather, observation)(
        ToolCall("w", {"city": "OSLO"}), ctx()
    )
    assert result.blocked
    assert observation.decisions == {
        "pass": "allow", "lower": "modify", "pass#2": "allow", "refuse": "block"
    }  # fmt: skip
    ran = Observation()
    answer = await tool_onion(policies[:3], weather, ran)(ToolCall("w", {"city": "OSLO"}), ctx())
    assert answer.content == "sunny in oslo"
    assert ran.decisions == {"pass": "allow", "lower": "modify", "pass#2": "allow"}


async def test_a_policy_that_raises_is_the_one_that_blocked() -> None:
    policies = [Pass(), Raise()]
    check(policies)
    observation = Observation()
    with pytest.raises(PolicyBlocked):
        await tool_onion(policies, weather, observation)(ToolCall("w", {"city": "x"}), ctx())
    assert observation.decisions == {"raise": "block"}
