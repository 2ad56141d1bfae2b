"""LangChain v1: hookgate as an ``AgentMiddleware``.

::

    from hookgate.sdk import Gate
    from hookgate.sdk.adapters.langchain import HookgateMiddleware

    gate = Gate.from_config("policies/agent.yaml")
    agent = create_agent(model, tools, middleware=[HookgateMiddleware(gate)])
    result = await HookgateMiddleware.ainvoke(gate, agent, {"messages": [...]})

Mapping (LangChain's own composition rules hold: list hookgate first to make it the
outermost wrapper):

* a reply is one ``ainvoke``/``invoke`` of the agent: :meth:`HookgateMiddleware.ainvoke`
  runs it inside the gate's ``on_reply`` onion (LangGraph copies the context into its
  nodes, so every hook below belongs to that reply);
* ``awrap_tool_call``/``wrap_tool_call`` → ``on_tool_call``; a refusal becomes a
  ``ToolMessage`` with ``status="error"`` that the model reads;
* ``awrap_model_call``/``wrap_model_call`` → the ``on_system_prompt`` chain, the reply's
  headers (``extra_headers``: the proxy joins the trace and sees the reply), the wrap-up
  (its message appended to the system prompt, ``tool_choice: none``), and after the call
  ``should_stop_after_turn`` with the reported usage: a stopped reply's last answer is
  final (tool calls it asked for are dropped), so the agent ends.

Not mapped: ``convert_to_llm``, ``on_model_call`` and ``on_response`` in-process (LangChain
messages are not OpenAI bodies); they run in the proxy when the model is reached through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

from hookgate.pipeline.agent import ReplyContext, ToolCall, ToolResult
from hookgate.sdk.gate import Gate, reply_now
from hookgate.wire.usage import Usage


class HookgateMiddleware(AgentMiddleware):
    """See the module docstring."""

    def __init__(self, gate: Gate) -> None:
        super().__init__()
        self.gate = gate

    @property
    def name(self) -> str:
        return "hookgate"

    @staticmethod
    async def ainvoke(
        gate: Gate,
        agent: Any,
        input: Any,
        *,
        session_id: str | None = None,
        agent_name: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """``agent.ainvoke(input, **kwargs)`` as one reply (named ``agent_name`` in traces)."""
        return await gate.run_reply(
            lambda: agent.ainvoke(input, **kwargs),
            agent=agent_name,
            input=input,
            session_id=session_id,
        )

    @staticmethod
    async def invoke(
        gate: Gate,
        agent: Any,
        input: Any,
        *,
        session_id: str | None = None,
        agent_name: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """A synchronous ``agent.invoke`` (run in a thread) as one reply."""
        return await gate.run_reply(
            lambda: asyncio.to_thread(agent.invoke, input, **kwargs),
            agent=agent_name,
            input=input,
            session_id=session_id,
        )

    # model calls ------------------------------------------------------------------------

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        ctx = _reply()
        response = await handler(await self._prepare(request, ctx))
        return await self._after(response, ctx)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        ctx = _reply()
        response = handler(self.gate.call_sync(self._prepare(request, ctx)))
        return self.gate.call_sync(self._after(response, ctx))

    async def _prepare(self, request: ModelRequest, ctx: ReplyContext) -> ModelRequest:
        system = request.system_message
        text = system.text if system is not None else ""
        prompt = await self.gate.system_prompt(text)
        if ctx.wrap_up:
            prompt = f"{prompt}\n\n{ctx.wrap_up}" if prompt else ctx.wrap_up
        changes: dict[str, Any] = {
            "model_settings": {**request.model_settings, "extra_headers": ctx.headers()}
        }
        if prompt != text:
            changes["system_message"] = SystemMessage(prompt)
        if ctx.wrap_up and request.tools:
            changes["tool_choice"] = "none"
        return request.override(**changes)

    async def _after(self, response: ModelResponse, ctx: ReplyContext) -> ModelResponse:
        message = next((m for m in response.result if isinstance(m, AIMessage)), None)
        if not await self.gate.after_turn(_usage(message), ctx) or message is None:
            return response
        if not message.tool_calls:
            return response
        final = AIMessage(content=message.content or "Stopped by policy.", id=message.id)
        return ModelResponse(
            result=[final if m is message else m for m in response.result],
            structured_response=response.structured_response,
        )

    # tools ------------------------------------------------------------------------------

    async def awrap_tool_call(
        self, request: Any, handler: Callable[[Any], Awaitable[ToolMessage | Any]]
    ) -> ToolMessage | Any:
        call, tool_call = _call(request)

        async def execute(call: ToolCall) -> ToolResult:
            return _result(await handler(_with_arguments(request, tool_call, call)))

        return _message(await self.gate.tool(call, execute), tool_call)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], ToolMessage | Any]) -> Any:
        call, tool_call = _call(request)

        async def execute(call: ToolCall) -> ToolResult:
            message = await asyncio.to_thread(handler, _with_arguments(request, tool_call, call))
            return _result(message)

        return _message(self.gate.call_sync(self.gate.tool(call, execute)), tool_call)


def _usage(message: AIMessage | None) -> Usage | None:
    meta = message.usage_metadata if message is not None else None
    if not meta:
        return None
    details = meta.get("input_token_details") or {}
    output = meta.get("output_token_details") or {}
    return Usage(
        meta.get("input_tokens", 0),
        meta.get("output_tokens", 0),
        details.get("cache_read", 0) or 0,
        output.get("reasoning", 0) or 0,
    )


def _call(request: Any) -> tuple[ToolCall, dict[str, Any]]:
    tool_call = dict(request.tool_call)
    return ToolCall(
        tool_call["name"], dict(tool_call.get("args") or {}), tool_call.get("id")
    ), tool_call


def _with_arguments(request: Any, tool_call: dict[str, Any], call: ToolCall) -> Any:
    return request.override(tool_call={**tool_call, "args": dict(call.arguments)})


def _result(message: Any) -> ToolResult:
    if isinstance(message, ToolMessage):
        content = message.content if isinstance(message.content, str) else message.text
        return ToolResult(content, error=message.status == "error")
    return ToolResult(str(message))


def _message(result: ToolResult, tool_call: dict[str, Any]) -> ToolMessage:
    return ToolMessage(
        content=result.content,
        tool_call_id=tool_call.get("id") or "",
        name=tool_call["name"],
        status="error" if result.error else "success",
    )


def _reply() -> ReplyContext:
    return reply_now("HookgateMiddleware.ainvoke or .invoke")
