"""cubeloop (the successor of CubePi): hookgate as a cubeloop ``Middleware``.

::

    from hookgate.sdk.adapters.cubeloop import HookgateMiddleware

    middleware = HookgateMiddleware(gate)
    provider = middleware.instrument(OpenAIProvider(api_key=..., base_url=...))
    agent = Agent(model=provider.model("gpt-4o-mini"), tools=[...], middleware=[middleware])
    await agent.prompt("What's the weather in Paris?")

Mapping (cubeloop composes its middleware in list order; put hookgate first):

* a reply is one cubeloop run (its ``run_id``): the gate's ``on_reply`` layers open at the
  run's first model call and close in ``on_run_end``; the reply is current for the run's
  task;
* model calls: :meth:`HookgateMiddleware.instrument` governs an OpenAI provider's client
  in place (:func:`hookgate.sdk.client.govern`), so each model request runs the
  model-level hooks in-process — ``on_system_prompt``, ``convert_to_llm``,
  ``on_model_call`` (denied tools are not offered, a wrapping-up reply gets the message and
  ``tool_choice: none``), ``on_response`` on cubeloop's stream (placeholders restored in
  text and tool-call argument deltas, so the user and cubeloop's own state never hold
  one) — with a ``chat`` span and usage. Without it (a provider of another SDK),
  ``transform_system_prompt`` runs the ``on_system_prompt`` chain and adds the wrap-up
  message (:meth:`Driver.system_prompt <hookgate.sdk.driver.Driver.system_prompt>`), and
  the rest is left to a proxy;
* ``before_tool_call`` + ``after_tool_call`` → one ``on_tool_call`` onion (split in its two
  halves): a refusal blocks the call with the reason the model reads, rewritten arguments
  become ``edited_args``, a rewritten result replaces the tool's content;
* ``should_stop_after_turn`` → :meth:`Driver.after_turn
  <hookgate.sdk.driver.Driver.after_turn>` with the turn's usage.
"""

from __future__ import annotations

import time
from typing import Any, TypeVar

import openai
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
from hookgate.sdk.client import govern
from hookgate.sdk.driver import Split, current_reply
from hookgate.sdk.gate import Gate
from hookgate.wire.usage import Usage

P = TypeVar("P")


class HookgateMiddleware(Middleware):
    """See the module docstring."""

    def __init__(self, gate: Gate, *, agent: str | None = None) -> None:
        self.driver = gate.driver
        self.agent = agent
        self._runs: dict[str | None, str] = {}
        """cubeloop run id → the gate's reply id."""
        self._tools: dict[tuple[str, str], tuple[Split[ToolCall, ToolResult], float]] = {}
        self._in_process = False
        """True once a provider is instrumented: its client runs the model-level hooks."""

    def instrument(self, provider: P) -> P:
        """Govern a cubeloop OpenAI provider's client in place (see the module docstring);
        returns the provider. Instrument the provider of every agent this middleware is
        attached to: the middleware then leaves the system prompt to the client."""
        client = getattr(provider, "_client", None)  # cubeloop's OpenAI providers keep it
        if not isinstance(client, openai.AsyncOpenAI):
            raise TypeError(f"{type(provider).__name__} does not talk through an openai client")
        govern(client)
        self._in_process = True
        return provider

    async def _reply(self, ctx: AgentContext) -> ReplyContext:
        """The reply of the run ``ctx`` belongs to, opened at the run's first model call
        and made current for the run's task (the instrumented client's
        :class:`~hookgate.sdk.transport.GateTransport` reads it there)."""
        reply = self.driver.reply_of(self._runs.get(ctx.run_id))
        if reply is None:
            reply = await self.driver.open_reply(agent=self.agent)
            self._runs[ctx.run_id] = reply.reply_id
        self.driver.set_current(reply)
        return reply

    async def on_run_end(self, ctx: AgentContext, *, signal: Any = None) -> None:
        reply_id = self._runs.pop(ctx.run_id, None)
        if reply_id is not None:
            await self.driver.close_reply(reply_id, ctx.messages[-1] if ctx.messages else None)
            if (now := current_reply()) is not None and now.reply_id == reply_id:
                self.driver.set_current(None)

    async def transform_system_prompt(
        self, system_prompt: str, *, ctx: AgentContext, signal: Any = None
    ) -> str:
        reply = await self._reply(ctx)
        if self._in_process:
            return system_prompt
        return await self.driver.system_prompt(system_prompt, reply)

    async def before_tool_call(
        self, ctx: BeforeToolCallContext, *, signal: Any = None
    ) -> BeforeToolCallResult | None:
        reply = await self._reply(ctx.context)
        raw = ctx.tool_call
        split = await self.driver.begin_tool(ToolCall(raw.name, dict(raw.arguments), raw.id), reply)
        if split.short_circuited:
            return BeforeToolCallResult(block=True, reason=split.result().content)
        self._tools[(reply.reply_id, raw.id)] = (split, time.perf_counter())
        if dict(split.value.arguments) != dict(raw.arguments):
            return BeforeToolCallResult(edited_args=dict(split.value.arguments))
        return None

    async def after_tool_call(
        self, ctx: AfterToolCallContext, *, signal: Any = None
    ) -> AfterToolCallResult | None:
        reply = await self._reply(ctx.context)
        begun = self._tools.pop((reply.reply_id, ctx.tool_call.id), None)
        if begun is None:
            return None
        split, started = begun
        elapsed = (time.perf_counter() - started) * 1000
        text = "".join(getattr(c, "text", "") for c in ctx.result.content)
        result = await split.finish(
            ToolResult(text, error=ctx.is_error, execution_time_ms=elapsed, raw=ctx.result)
        )
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
        return await self.driver.after_turn(turn, await self._reply(turn_ctx.context))
