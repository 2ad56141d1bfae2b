"""cubeloop (the successor of CubePi): hookgate as a cubeloop ``Middleware``.

::

    from hookgate.sdk.adapters.cubeloop import HookgateMiddleware, on_payload

    agent = Agent(model=..., tools=[...], middleware=[HookgateMiddleware(gate)],
                  on_payload=on_payload)
    await agent.prompt("What's the weather in Paris?")

Mapping (cubeloop composes its middleware in list order; put hookgate first):

* a reply is one cubeloop run (its ``run_id``): the gate's ``on_reply`` layers open at the
  run's first model call and close in ``on_run_end``; the reply is current for the run's
  task, so :func:`on_payload` finds it;
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
from hookgate.sdk.gate import CURRENT, Gate, Split, current_reply
from hookgate.wire.usage import Usage


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

    def __init__(self, gate: Gate, *, agent: str | None = None) -> None:
        self.gate = gate
        self.agent = agent
        self._runs: dict[str | None, str] = {}
        """cubeloop run id → the gate's reply id."""
        self._tools: dict[tuple[str, str], Split[ToolCall, ToolResult]] = {}

    async def _reply(self, ctx: AgentContext) -> ReplyContext:
        """The reply of the run ``ctx`` belongs to, opened at the run's first model call
        and made current for the run's task (:func:`on_payload` reads it there)."""
        reply = self.gate.reply_of(self._runs.get(ctx.run_id))
        if reply is None:
            reply = await self.gate.open_reply(agent=self.agent)
            self._runs[ctx.run_id] = reply.reply_id
        self.gate.enter(reply)
        return reply

    async def on_run_end(self, ctx: AgentContext, *, signal: Any = None) -> None:
        reply_id = self._runs.pop(ctx.run_id, None)
        if reply_id is not None:
            await self.gate.close_reply(reply_id, ctx.messages[-1] if ctx.messages else None)
            if (now := current_reply()) is not None and now.reply_id == reply_id:
                CURRENT.set(None)

    async def transform_system_prompt(
        self, system_prompt: str, *, ctx: AgentContext, signal: Any = None
    ) -> str:
        reply = await self._reply(ctx)
        prompt: str = await self.gate.system_prompt(
            system_prompt, self.gate.model_context(reply=reply)
        )
        if reply.wrap_up:
            prompt = f"{prompt}\n\n{reply.wrap_up}"
        return prompt

    async def before_tool_call(
        self, ctx: BeforeToolCallContext, *, signal: Any = None
    ) -> BeforeToolCallResult | None:
        reply = await self._reply(ctx.context)
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
        reply = await self._reply(ctx.context)
        split = self._tools.pop((reply.reply_id, ctx.tool_call.id), None)
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
        return await self.gate.after_turn(turn, await self._reply(turn_ctx.context))
