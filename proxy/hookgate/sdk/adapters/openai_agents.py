"""OpenAI Agents SDK (``openai-agents``): run an ``Agent`` with hookgate's hooks.

::

    from hookgate.sdk.adapters.openai_agents import run

    result = await run(gate, agent, "What's the weather in Paris?", session_id="s-1")

Mapping:

* a reply is one ``Runner.run``: :func:`run` runs it inside ``on_reply``
  (:func:`run_streamed` likewise for ``Runner.run_streamed``; the reply ends with its stream);
* every ``FunctionTool`` of every agent the run can reach (the starting agent, its handoff
  targets and theirs; an agent used as a tool is governed as that tool, its own tools are
  not yet) is wrapped (``on_invoke_tool``) in
  ``on_tool_call``: a refusal is the tool's output, so the model reads the reason;
  rewritten arguments and results pass through. Every MCP server of those agents is
  wrapped too: its ``call_tool`` runs through ``on_tool_call``;
* ``RunHooks.on_llm_end`` → :meth:`Gate.after_turn` with the response's usage; a reply a
  policy stops ends with :class:`StoppedReply` (the last answer, no further tool calls);
* ``RunConfig.call_model_input_filter`` → the ``on_system_prompt`` chain on the
  instructions, plus the wrap-up message; a wrapping-up reply runs with
  ``tool_choice: none`` (the agent is cloned with ``reset_tool_choice=False`` so the SDK
  keeps it);
* ``ModelSettings.extra_headers`` carry the reply's headers to the model endpoint (the
  proxy joins the trace and sees the reply).

Not mapped in-process: ``convert_to_llm`` (items are Responses input items, left to the
proxy), ``on_model_call``, ``on_response``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agents import Agent, FunctionTool, Handoff, ModelSettings, RunConfig, RunHooks, Runner
from agents.run_config import CallModelData, ModelInputData
from mcp.types import CallToolResult, TextContent

from hookgate.pipeline.agent import Reply, ReplyContext, ToolCall, ToolResult
from hookgate.sdk.gate import Gate, Split, reply_now
from hookgate.wire.usage import Usage


@dataclass(frozen=True)
class StoppedReply:
    """What :func:`run` returns when a policy stopped the reply after a turn."""

    final_output: str
    reason: str = "stopped by policy"


class _Stop(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


async def run(
    gate: Gate,
    agent: Agent[Any],
    input: Any,
    *,
    session_id: str | None = None,
    run_config: RunConfig | None = None,
    **kwargs: Any,
) -> Any:
    """``Runner.run(agent, input)`` as one governed reply (see the module docstring)."""

    async def reply() -> Any:
        governed, config = _governed_run(gate, agent, run_config)
        try:
            return await Runner.run(
                governed, input, run_config=config, hooks=_Hooks(gate, config), **kwargs
            )
        except _Stop as stop:
            return StoppedReply(stop.text)

    return await gate.run_reply(reply, agent=agent.name, input=input, session_id=session_id)


async def run_streamed(
    gate: Gate,
    agent: Agent[Any],
    input: Any,
    *,
    session_id: str | None = None,
    run_config: RunConfig | None = None,
    **kwargs: Any,
) -> GovernedStream:
    """``Runner.run_streamed(agent, input)`` as one governed reply.

    Iterate ``stream_events()`` of the result as usual; the reply ends with the stream. A
    reply a policy stops ends its stream early; ``stopped`` then holds the last answer.
    """
    handle = await gate.begin_reply(agent=agent.name, input=input, session_id=session_id)
    with gate.current(handle.ctx):  # the run's task copies the reply into its context
        governed, config = _governed_run(gate, agent, run_config)
        result = Runner.run_streamed(
            governed, input, run_config=config, hooks=_Hooks(gate, config), **kwargs
        )
    return GovernedStream(result, handle)


class GovernedStream:
    """A streamed run (``RunResultStreaming``) whose end is the end of its reply."""

    def __init__(self, result: Any, handle: Split[Reply, Any]) -> None:
        self.result = result
        self._handle = handle
        self.stopped: StoppedReply | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.result, name)

    async def stream_events(self) -> AsyncIterator[Any]:
        """The run's events; the reply's ``on_reply`` layers finish when they end."""
        try:
            async for event in self.result.stream_events():
                yield event
        except _Stop as stop:
            self.stopped = StoppedReply(stop.text)
        except BaseException as exc:
            await self._handle.fail(exc)
            raise
        await self._handle.finish(self.result)


def _governed_run(
    gate: Gate, agent: Agent[Any], run_config: RunConfig | None
) -> tuple[Agent[Any], RunConfig]:
    """The agent with governed tools, and a run config carrying the reply's hooks."""
    ctx = _reply()
    config = run_config or RunConfig()
    settings = config.model_settings or ModelSettings()
    config = dataclasses.replace(
        config,
        model_settings=dataclasses.replace(settings, extra_headers=ctx.headers()),
        call_model_input_filter=_InputFilter(gate, config),
    )
    return _GovernedGraph(gate).agent(agent), config


class _GovernedGraph:
    """Clones of every agent a run can reach — handoff targets, their handoffs, cycles
    included — with every function tool and MCP server governed, made once per run."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self._made: dict[int, Agent[Any]] = {}

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        made = self._made.get(id(agent))
        if made is not None:
            return made
        governed = agent.clone(
            tools=[_governed(self.gate, t) for t in agent.tools],
            mcp_servers=[_GovernedServer(self.gate, s) for s in agent.mcp_servers],
            reset_tool_choice=False,
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


class _GovernedServer:
    """An MCP server whose tool calls run through ``on_tool_call`` (everything else is
    the server's own)."""

    def __init__(self, gate: Gate, server: Any) -> None:
        self._gate = gate
        self._server = server

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)

    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any] | None, meta: Any = None
    ) -> Any:
        call = ToolCall(tool_name, dict(arguments or {}), None)
        answers: list[Any] = []

        async def execute(call: ToolCall) -> ToolResult:
            kwargs = {} if meta is None else {"meta": meta}
            answer = await self._server.call_tool(call.name, dict(call.arguments), **kwargs)
            answers.append(answer)
            return ToolResult(_mcp_text(answer), error=bool(getattr(answer, "isError", False)))

        result = await self._gate.tool(call, execute)
        if answers and result.content == _mcp_text(answers[-1]) and not result.blocked:
            return answers[-1]  # unchanged: the server's own result, structured parts intact
        return CallToolResult(
            content=[TextContent(type="text", text=result.content)], isError=result.error
        )


def _mcp_text(answer: Any) -> str:
    return "".join(getattr(part, "text", "") for part in getattr(answer, "content", None) or [])


class _InputFilter:
    """The system-prompt chain and the wrap-up, before each model call."""

    def __init__(self, gate: Gate, config: RunConfig) -> None:
        self.gate = gate
        self.inner = config.call_model_input_filter

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        if self.inner is not None:
            filtered = self.inner(data)
            model_data = await filtered if inspect.isawaitable(filtered) else filtered
        ctx = _reply()
        instructions = await self.gate.system_prompt(model_data.instructions or "")
        if ctx.wrap_up:
            instructions = f"{instructions}\n\n{ctx.wrap_up}" if instructions else ctx.wrap_up
        return ModelInputData(input=model_data.input, instructions=instructions or None)


class _Hooks(RunHooks[Any]):
    def __init__(self, gate: Gate, config: RunConfig) -> None:
        self.gate = gate
        self.config = config

    async def on_llm_end(self, context: Any, agent: Agent[Any], response: Any) -> None:
        ctx = _reply()
        usage = response.usage
        turn = Usage(
            usage.input_tokens,
            usage.output_tokens,
            getattr(usage.input_tokens_details, "cached_tokens", 0) or 0,
            getattr(usage.output_tokens_details, "reasoning_tokens", 0) or 0,
        )
        if await self.gate.after_turn(turn, ctx):
            raise _Stop(_text(response))
        if ctx.wrap_up and self.config.model_settings is not None:
            self.config.model_settings = dataclasses.replace(
                self.config.model_settings, tool_choice="none"
            )


def _governed(gate: Gate, tool: Any) -> Any:
    if not isinstance(tool, FunctionTool):
        return tool
    invoke = tool.on_invoke_tool

    async def on_invoke_tool(context: Any, arguments: str) -> Any:
        call = ToolCall(tool.name, json.loads(arguments or "{}"), context.tool_call_id)

        async def execute(call: ToolCall) -> ToolResult:
            output = await invoke(context, json.dumps(call.arguments))
            return ToolResult(output if isinstance(output, str) else str(output))

        return (await gate.tool(call, execute)).content

    return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool)


def _text(response: Any) -> str:
    parts = []
    for item in response.output:
        for content in getattr(item, "content", None) or []:
            text = getattr(content, "text", None)
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def _reply() -> ReplyContext:
    return reply_now("hookgate.sdk.adapters.openai_agents.run")
