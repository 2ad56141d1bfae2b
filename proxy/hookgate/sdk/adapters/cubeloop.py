"""cubeloop (the successor of CubePi): hookgate as a cubeloop ``Middleware``.

::

    from hookgate.sdk.adapters.cubeloop import HookgateMiddleware, on_payload, prompt

    agent = Agent(model=..., tools=[...], middleware=[HookgateMiddleware(gate)],
                  on_payload=on_payload)
    await prompt(gate, agent, "What's the weather in Paris?", session_id="s-1")

Mapping (cubeloop composes its middleware in list order; put hookgate first):

* a reply is one ``agent.prompt``: :func:`prompt` runs it inside ``on_reply``;
* ``before_tool_call`` + ``after_tool_call`` → one ``on_tool_call`` onion (split in its two
  halves): a refusal blocks the call with the reason the model reads, rewritten arguments
  become ``edited_args``, a rewritten result replaces the tool's content;
* ``transform_system_prompt`` → the ``on_system_prompt`` chain, plus the wrap-up message;
* ``should_stop_after_turn`` → :meth:`Gate.after_turn` with the turn's usage;
* :func:`on_payload` (cubeloop's per-request payload callback) adds the reply's headers and,
  when the reply must wrap up, ``tool_choice: none``.

Not mapped in-process: ``convert_to_llm`` (cubeloop keeps only the last middleware's),
``on_model_call`` and ``on_response``; they run in the proxy.
"""

from __future__ import annotations

from typing import Any

from cubeloop import Middleware, TextContent
from cubeloop.agent.types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ShouldStopAfterTurnContext,
)

from hookgate.pipeline.agent import ReplyContext, ToolCall, ToolResult
from hookgate.sdk.gate import Gate, Split, current_reply, reply_now
from hookgate.wire.usage import Usage


async def prompt(
    gate: Gate,
    agent: Any,
    message: Any,
    *,
    session_id: str | None = None,
    agent_name: str | None = None,
    **kwargs: Any,
) -> Any:
    """``agent.prompt(message, **kwargs)`` as one reply (named ``agent_name`` in traces)."""
    return await gate.run_reply(
        lambda: agent.prompt(message, **kwargs),
        agent=agent_name,
        input=message,
        session_id=session_id,
    )


def on_payload(payload: dict[str, Any], model: Any) -> dict[str, Any]:
    """cubeloop's ``on_payload``: the reply's headers, and no tools when wrapping up."""
    ctx = current_reply()
    if ctx is None:
        return payload
    payload["extra_headers"] = {**(payload.get("extra_headers") or {}), **ctx.headers()}
    if ctx.wrap_up and payload.get("tools"):
        payload["tool_choice"] = "none"
    return payload


class HookgateMiddleware(Middleware):
    """See the module docstring."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self._tools: dict[tuple[str, str], Split[ToolCall, ToolResult]] = {}

    async def transform_system_prompt(
        self, system_prompt: str, *, ctx: AgentContext, signal: Any = None
    ) -> str:
        reply = _reply()
        prompt: str = await self.gate.system_prompt(system_prompt)
        if reply.wrap_up:
            prompt = f"{prompt}\n\n{reply.wrap_up}"
        return prompt

    async def before_tool_call(
        self, ctx: BeforeToolCallContext, *, signal: Any = None
    ) -> BeforeToolCallResult | None:
        reply = _reply()
        raw = ctx.tool_call
        split = await self.gate.begin_tool(ToolCall(raw.name, dict(raw.arguments), raw.id), reply)
        if split.short_circuited:
            return BeforeToolCallResult(block=True, reason=split.result().content)
        self._tools[(reply.reply_id, raw.id)] = split
        if dict(split.value.arguments) != dict(raw.arguments):
            return BeforeToolCallResult(edited_args=dict(split.value.arguments))
        return None

    async def after_tool_call(
        self, ctx: AfterToolCallContext, *, signal: Any = None
    ) -> AfterToolCallResult | None:
        split = self._tools.pop((_reply().reply_id, ctx.tool_call.id), None)
        if split is None:
            return None
        text = "".join(getattr(c, "text", "") for c in ctx.result.content)
        result = await split.finish(ToolResult(text, error=ctx.is_error))
        if result.content == text and result.error == ctx.is_error:
            return None
        return AfterToolCallResult(
            content=[TextContent(text=result.content)], is_error=result.error
        )

    async def should_stop_after_turn(self, ctx: Any) -> bool:
        # cubeloop passes a ShouldStopAfterTurnContext (its signature says AgentContext)
        turn_ctx: ShouldStopAfterTurnContext = ctx
        usage = turn_ctx.message.usage
        turn = None if usage is None else Usage(usage.input_tokens, usage.output_tokens,
                                                 usage.cache_read_tokens)  # fmt: skip
        return await self.gate.after_turn(turn, _reply())


def _reply() -> ReplyContext:
    return reply_now("hookgate.sdk.adapters.cubeloop.prompt")
