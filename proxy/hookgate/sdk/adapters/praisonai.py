"""PraisonAI (``praisonaiagents``): hookgate's tool middleware and a governed model client.

::

    from hookgate.sdk.adapters.praisonai import aclose, instrument, start, tool_middleware

    agent = Agent(name="assistant", instructions="...", model="gpt-4o-mini", tools=[...],
                  hooks=[tool_middleware(gate)])
    instrument(agent)                      # the agent's model calls run through the gate
    answer = await start(gate, agent, "What's the weather in Paris?", session_id="s-1")
    await aclose(agent)                    # when done with the agent

Mapping:

* a reply is one ``agent.astart``/``achat``: :func:`start` runs it inside ``on_reply``
  (PraisonAI runs its ``BEFORE_AGENT`` hooks in tasks of their own, so a reply they open
  would not be current for the agent's model and tool calls);
* PraisonAI's ``wrap_tool_call`` middleware (an onion, first registered outermost) →
  ``on_tool_call``: a refusal is returned as the tool's result, which the model reads (the
  event-hook deny would replace our reason with a fixed text); rewritten arguments and
  results pass through. PraisonAI runs middleware synchronously in worker threads; the
  onion runs on the reply's event loop (:meth:`Gate.call_sync`);
* :func:`instrument` gives the agent a governed ``openai`` client (PraisonAI has no client
  setting; this sets its client attribute, so the version is pinned): each model call
  runs the model-level hooks in-process (``on_system_prompt``, ``convert_to_llm``,
  ``on_model_call`` — denied tools are not offered —, ``on_response``: the answer and its
  streamed deltas carry the values, never a placeholder) with a ``chat`` span, and is one
  turn of the reply — PraisonAI has no turn hook of its own (its model hooks wrap a whole
  tool loop), so ``should_stop_after_turn`` and the wrap-up run there, and a stopped
  reply's next model call is answered with a final message that ends PraisonAI's loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from typing import Any

import openai
from praisonaiagents.hooks import ToolRequest, ToolResponse, wrap_tool_call
from praisonaiagents.llm.openai_client import OpenAIClient

from hookgate.pipeline.agent import ToolCall, ToolResult
from hookgate.sdk.client import http_client
from hookgate.sdk.gate import Gate


async def start(
    gate: Gate, agent: Any, prompt: str, *, session_id: str | None = None, **kwargs: Any
) -> Any:
    """``agent.astart(prompt, **kwargs)`` as one governed reply."""
    return await gate.run_reply(
        lambda: agent.astart(prompt, **kwargs),
        agent=getattr(agent, "name", None),
        input=prompt,
        session_id=session_id,
    )


def tool_middleware(gate: Gate) -> Any:
    """A ``wrap_tool_call`` middleware running every tool call through the gate."""

    @wrap_tool_call  # type: ignore[untyped-decorator]
    def hookgate_tools(request: ToolRequest, call_next: Any) -> ToolResponse:
        call_id = request.context.metadata.get("tool_call_id") if request.context else None
        call = ToolCall(request.tool_name, dict(request.arguments or {}), call_id)

        async def execute(call: ToolCall) -> ToolResult:
            changed = dataclasses.replace(request, arguments=dict(call.arguments))
            response = await asyncio.to_thread(call_next, changed)
            result = response.result
            text = result if isinstance(result, str) else json.dumps(result, default=str)
            return ToolResult(text, error=response.error is not None)

        result = gate.call_sync(gate.tool(call, execute))
        return ToolResponse(
            tool_name=request.tool_name,
            result=result.content,
            error=result.content if result.error and not result.blocked else None,
            context=request.context,
        )

    return hookgate_tools


def instrument(agent: Any, *, base_url: str | None = None, api_key: str | None = None) -> Any:
    """Give ``agent`` an OpenAI client governed as the module docstring says.

    ``base_url``/``api_key`` default to PraisonAI's own environment variables.
    """
    base_url = base_url or os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL")
    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    client = OpenAIClient(api_key=api_key, base_url=base_url)
    client._sync_client = openai.OpenAI(
        api_key=api_key, base_url=base_url, http_client=http_client(asynchronous=False)
    )
    client._async_client = openai.AsyncOpenAI(
        api_key=api_key, base_url=base_url, http_client=http_client(turns=True)
    )
    client._async_client_owned = False
    if not hasattr(agent, "_Agent__openai_client"):
        raise RuntimeError("this praisonaiagents version keeps its client elsewhere")
    agent._Agent__openai_client = client
    return agent


async def aclose(agent: Any) -> None:
    """Close the clients :func:`instrument` gave ``agent``."""
    client = agent._Agent__openai_client
    await client._async_client.close()
    client._sync_client.close()
