"""OpenAI Agents SDK (``openai-agents``): hookgate attached to the agent, once.

::

    from hookgate.sdk.adapters.openai_agents import attach

    agent = attach(gate, Agent(name="assistant", tools=[...], model=...))
    result = await Runner.run(agent, "What's the weather in Paris?")   # or run_streamed, run_sync

:func:`attach` returns a governed copy of the agent and of every agent its runs can reach
(handoff targets and theirs, cycles included); the SDK's own ``Runner.run``,
``run_streamed`` and ``run_sync`` then run governed replies. Mapping:

* a reply is one run: the SDK gives each ``Runner`` run its own trace (a ``NoOpTrace``
  when tracing is disabled), and the reply is keyed by it — opened at the run's first model
  call or tool call, closed by the agent hooks' ``on_end`` when the run produces its final
  output. Concurrent runs never mix. The session is the run's ``group_id``
  (``RunConfig(group_id=...)``, the SDK's conversation id for traces). An agent used as a
  tool (``attach(gate, researcher).as_tool(...)``) runs inside the calling run's trace, so
  its model and tool calls belong to the calling reply;
* model calls: each agent's model is wrapped so that its calls run with the reply current,
  and its ``openai`` client is governed in place (:func:`hookgate.sdk.client.govern`, one
  model call = one turn): ``on_system_prompt`` (the Responses ``instructions`` or the chat
  system message), ``convert_to_llm``, ``on_model_call``, ``on_response`` — streamed
  events too —, a ``chat`` span with usage, ``should_stop_after_turn`` and the wrap-up.
  A stopped reply's next model call is answered without the model by a final message, so
  the run ends as after any answer. A model given by name (or none) is resolved by the
  SDK's default provider (``set_default_openai_client``, ``OPENAI_*``): give the agent a
  ``Model`` to use another;
* every ``FunctionTool`` → ``on_tool_call``: a refusal is the tool's output, so the model
  reads the reason; rewritten arguments and results pass through. Every MCP server's
  ``call_tool`` runs through ``on_tool_call`` too;
* :meth:`Policy.tools` → each governed agent's tools: the policy tools (the ``todo``
  policy's ``write_todos``) are added as ``FunctionTool`` s beside the agent's own and
  governed like them;
* the user's own ``AgentHooks`` keep running (hookgate's wrap them).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import logging
import weakref
from collections.abc import AsyncIterator
from typing import Any

import openai
from agents import (
    Agent,
    AgentHooks,
    FunctionTool,
    Handoff,
    Model,
    MultiProvider,
    get_current_trace,
)
from agents.models import get_default_model
from mcp.types import CallToolResult, TextContent

from hookgate.pipeline.agent import PolicyTool, ReplyContext, ToolCall, ToolResult
from hookgate.sdk.client import govern
from hookgate.sdk.driver import Driver
from hookgate.sdk.gate import Gate

log = logging.getLogger("hookgate")

_IN_TOOL: contextvars.ContextVar[bool] = contextvars.ContextVar("hookgate_in_tool", default=False)
"""True inside a governed tool: a run started there (an agent used as a tool) is nested in
the calling run, so its end is not the reply's end."""


def attach(gate: Gate, agent: Agent[Any], *, session_id: str | None = None) -> Agent[Any]:
    """A governed copy of ``agent`` and of every agent its runs can reach (see the module
    docstring). The original agents are not changed. ``session_id`` names the session of
    every run of the copy (default: each run's trace ``group_id``); attaching is cheap, so
    a server may attach once per conversation."""
    return _GovernedGraph(gate.driver, _Runs(gate.driver, session_id)).agent(agent)


_REPLIES: weakref.WeakKeyDictionary[Any, asyncio.Future[ReplyContext]] = weakref.WeakKeyDictionary()
"""The reply of each running ``Runner`` run, keyed by the run's trace; shared by every
attached agent: a run has one reply, whichever governed agents (handoff targets, agents
used as tools) take part in it."""


class _Runs:
    """Finds and opens the reply of the run being run here, for one :func:`attach`."""

    def __init__(self, driver: Driver, session_id: str | None) -> None:
        self.driver = driver
        self._session_id = session_id

    async def reply(self, agent: str) -> ReplyContext | None:
        """The reply of the run being run here, opened now if this is its first step;
        None outside a ``Runner`` run."""
        trace = get_current_trace()
        if trace is None:
            return None
        opened = _REPLIES.get(trace)
        if opened is not None and opened.done() and self.driver.reply_of(opened.result().reply_id):
            return opened.result()
        if opened is None or opened.done():  # first step, or a run after an ended one
            opened = asyncio.get_running_loop().create_future()
            _REPLIES[trace] = opened
            try:
                session = self._session_id or getattr(trace, "group_id", None)
                opened.set_result(await self.driver.open_reply(agent=agent, session_id=session))
            except BaseException as exc:
                opened.set_exception(exc)
                del _REPLIES[trace]
                raise
        return await asyncio.shield(opened)

    async def close(self, output: Any) -> None:
        """The run being run here produced its final output: its reply ends."""
        trace = get_current_trace()
        opened = _REPLIES.pop(trace, None) if trace is not None else None
        if opened is not None and opened.done() and opened.exception() is None:
            await self.driver.close_reply(opened.result().reply_id, output)


class _GovernedGraph:
    """Clones of every agent a run can reach — handoff targets, their handoffs, cycles
    included — governed, made once per :func:`attach`."""

    def __init__(self, driver: Driver, runs: _Runs) -> None:
        self.runs = runs
        self._made: dict[int, Agent[Any]] = {}
        self._policy_tools = [_function_tool(driver, tool) for tool in driver.offer_tools()]

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        made = self._made.get(id(agent))
        if made is not None:
            return made
        governed = agent.clone(
            model=_GovernedModel(self.runs, agent.name, agent.model),
            tools=[
                _governed_tool(self.runs, agent.name, t)
                for t in [*agent.tools, *self._policy_tools]
            ],
            mcp_servers=[_GovernedServer(self.runs, agent.name, s) for s in agent.mcp_servers],
            hooks=_Hooks(self.runs, agent.hooks),
        )
        self._made[id(agent)] = governed  # before the handoffs: a cycle finds it
        governed.handoffs = [self._handoff(h) for h in agent.handoffs]
        return governed

    def _handoff(self, target: Any) -> Any:
        if isinstance(target, Agent):
            return self.agent(target)
        if isinstance(target, Handoff):
            invoke = target.on_invoke_handoff

            async def on_invoke_handoff(context: Any, arguments: str) -> Agent[Any]:
                return self.agent(await invoke(context, arguments))

            return dataclasses.replace(target, on_invoke_handoff=on_invoke_handoff)
        return target


class _GovernedModel(Model):
    """The agent's model, its calls made with the run's reply current and its ``openai``
    client governed (one model call = one turn)."""

    def __init__(self, runs: _Runs, agent: str, model: str | Model | None) -> None:
        self._runs = runs
        self._agent = agent
        self._model = model
        self._inner: Model | None = None

    def inner(self) -> Model:
        """The wrapped model (resolved by the SDK's default provider on first use)."""
        if self._inner is None:
            model = self._model
            if not isinstance(model, Model):
                model = MultiProvider().get_model(model or get_default_model())
            client = getattr(model, "_client", None)  # the SDK's OpenAI models keep it here
            if isinstance(client, openai.AsyncOpenAI):
                govern(client, turns=True)
            self._inner = model
        return self._inner

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        reply = await self._runs.reply(self._agent)
        if reply is None:
            return await self.inner().get_response(*args, **kwargs)
        with self._runs.driver.current(reply):
            return await self.inner().get_response(*args, **kwargs)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        reply = await self._runs.reply(self._agent)
        if reply is None:
            async for event in self.inner().stream_response(*args, **kwargs):
                yield event
            return
        with self._runs.driver.current(reply):
            async for event in self.inner().stream_response(*args, **kwargs):
                yield event

    async def close(self) -> None:
        if self._inner is not None:
            await self._inner.close()


class _Hooks(AgentHooks[Any]):
    """Ends the run's reply with its final output; the user's own hooks keep running."""

    def __init__(self, runs: _Runs, inner: Any) -> None:
        self._runs = runs
        self._inner = inner

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        if self._inner is not None:
            await self._inner.on_end(context, agent, output)
        if not _IN_TOOL.get():
            await self._runs.close(output)

    async def on_start(self, context: Any, agent: Any) -> None:
        if self._inner is not None:
            await self._inner.on_start(context, agent)

    async def on_handoff(self, context: Any, agent: Any, source: Any) -> None:
        if self._inner is not None:
            await self._inner.on_handoff(context, agent, source)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if self._inner is not None:
            await self._inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self._inner is not None:
            await self._inner.on_tool_end(context, agent, tool, result)

    async def on_llm_start(self, context: Any, agent: Any, *args: Any) -> None:
        if self._inner is not None:
            await self._inner.on_llm_start(context, agent, *args)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        if self._inner is not None:
            await self._inner.on_llm_end(context, agent, response)


def _function_tool(driver: Driver, tool: PolicyTool) -> FunctionTool:
    """A policy tool as the Agents SDK runs tools (governed by :func:`_governed_tool`, which
    makes the run's reply current)."""

    async def invoke(context: Any, arguments: str) -> str:
        return (await driver.run_tool(tool.name, json.loads(arguments or "{}"))).content

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=dict(tool.parameters),
        on_invoke_tool=invoke,
        strict_json_schema=False,  # the policy's schema, as written
    )


def _governed_tool(runs: _Runs, agent: str, tool: Any) -> Any:
    if not isinstance(tool, FunctionTool):
        return tool
    inner = getattr(tool, "_agent_instance", None)  # set by Agent.as_tool
    if inner is not None and not isinstance(getattr(inner, "model", None), _GovernedModel):
        log.warning(
            "hookgate: tool %r runs agent %r, which hookgate is not attached to: its own "
            "tools run ungoverned; use attach(gate, agent).as_tool(...)",
            tool.name,
            getattr(inner, "name", "?"),
        )
    invoke = tool.on_invoke_tool

    async def on_invoke_tool(context: Any, arguments: str) -> Any:
        reply = await runs.reply(agent)
        if reply is None:
            return await invoke(context, arguments)
        call = ToolCall(tool.name, json.loads(arguments or "{}"), context.tool_call_id)

        async def execute(call: ToolCall) -> ToolResult:
            token = _IN_TOOL.set(True)
            try:
                output = await invoke(context, json.dumps(call.arguments))
            finally:
                _IN_TOOL.reset(token)
            return ToolResult(output if isinstance(output, str) else str(output), raw=output)

        with runs.driver.current(reply):
            result = await runs.driver.tool(call, execute, reply)
        if result.raw is not None and not result.blocked and result.content == str(result.raw):
            return result.raw  # unchanged: the tool's own output (an image, a dict, ...)
        return result.content

    return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool)


class _GovernedServer:
    """An MCP server whose tool calls run through ``on_tool_call`` (everything else is
    the server's own)."""

    def __init__(self, runs: _Runs, agent: str, server: Any) -> None:
        self._runs = runs
        self._agent = agent
        self._server = server

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)

    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any] | None, meta: Any = None
    ) -> Any:
        kwargs = {} if meta is None else {"meta": meta}
        reply = await self._runs.reply(self._agent)
        if reply is None:
            return await self._server.call_tool(tool_name, arguments, **kwargs)

        async def execute(call: ToolCall) -> ToolResult:
            answer = await self._server.call_tool(call.name, dict(call.arguments), **kwargs)
            error = bool(getattr(answer, "isError", False))
            return ToolResult(_mcp_text(answer), error=error, raw=answer)

        call = ToolCall(tool_name, dict(arguments or {}), None)
        with self._runs.driver.current(reply):
            result = await self._runs.driver.tool(call, execute, reply)
        if result.raw is not None and result.content == _mcp_text(result.raw):
            return result.raw  # unchanged: the server's own result, structured parts intact
        return CallToolResult(
            content=[TextContent(type="text", text=result.content)], isError=result.error
        )


def _mcp_text(answer: Any) -> str:
    return "".join(getattr(part, "text", "") for part in getattr(answer, "content", None) or [])
