"""PraisonAI (``praisonaiagents``): hookgate attached to an agent, once.

::

    from hookgate.sdk.adapters.praisonai import aclose, attach

    agent = attach(gate, Agent(name="assistant", instructions="...", model="gpt-4o-mini",
                               tools=[...]))
    answer = await agent.astart("What's the weather in Paris?")   # or achat, start, chat
    await aclose(agent)                    # when done with the agent

Mapping:

* a reply is one call of the agent's own entry points — ``astart``, ``achat``, ``start``,
  ``chat`` — which :func:`attach` wraps on the agent object (a call made inside a reply, as
  ``start`` calling ``chat``, belongs to it), in ``attach``'s ``session_id``. PraisonAI has
  no run hook a reply could use: its ``BEFORE_AGENT`` hooks run in tasks of their own and
  its model middleware in executor threads, so a reply they opened would not be current for
  the agent's model and tool calls. The synchronous ones open and close the reply on the
  gate's own loop (:mod:`hookgate.sdk.bridge`) around the call in the caller's thread;
* PraisonAI's ``wrap_tool_call`` middleware (an onion, first registered outermost; attach
  puts hookgate's first, or pass ``hooks=[tool_middleware(gate)]`` yourself) →
  ``on_tool_call``: a refusal is returned as the tool's result, which the model reads (the
  event-hook deny would replace our reason with a fixed text); rewritten arguments and
  results pass through. PraisonAI runs middleware synchronously in worker threads; the
  onion runs on the reply's event loop (:meth:`Driver.call_sync
  <hookgate.sdk.driver.Driver.call_sync>`);
* model calls: attach gives the agent governed ``openai`` clients (PraisonAI has no client
  setting; this sets its client attribute, so the version is pinned). The asynchronous
  one runs each model call through the model-level hooks in-process (``on_system_prompt``,
  ``convert_to_llm``, ``on_model_call`` — denied tools are not offered —, ``on_response``:
  the answer and its streamed deltas carry the values, never a placeholder) with a ``chat``
  span, and counts it as a turn of the reply — PraisonAI has no turn hook (its model hooks
  wrap a whole tool loop), so ``should_stop_after_turn`` and the wrap-up run there, and a
  stopped reply's next model call is answered with a final message that ends PraisonAI's
  loop. PraisonAI's synchronous entry points (``start``/``chat``) run that async client on
  an event loop of their own per call, so they are governed too; its sync client, where a
  path uses it, carries the reply's headers only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from praisonaiagents.hooks import ToolRequest, ToolResponse, wrap_tool_call
from praisonaiagents.llm.openai_client import OpenAIClient

from hookgate.pipeline.agent import ToolCall, ToolResult
from hookgate.sdk.client import current_headers, govern
from hookgate.sdk.driver import Driver, current_reply
from hookgate.sdk.gate import Gate


def _text(result: Any) -> str:
    """What the model reads of a tool's value (PraisonAI sends JSON for non-strings)."""
    return result if isinstance(result, str) else json.dumps(result, default=str)


def attach(
    gate: Gate,
    agent: Any,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    session_id: str | None = None,
) -> Any:
    """Govern ``agent`` in place (see the module docstring) and return it.

    ``base_url``/``api_key`` default to PraisonAI's own environment variables;
    ``session_id`` names the session of the agent's replies (PraisonAI's
    ``MiddlewareContext.session_id``): attaching is cheap, so attach per conversation.
    """
    if not any(getattr(hook, "hookgate", False) for hook in agent._hooks or []):
        agent._hooks = [tool_middleware(gate), *(agent._hooks or [])]
        agent._middleware_manager = None  # PraisonAI builds it from _hooks on first use
    _give_clients(agent, base_url, api_key)
    for name in ("astart", "achat"):
        setattr(agent, name, _async_entry(gate.driver, agent, session_id, getattr(agent, name)))
    for name in ("start", "chat"):
        setattr(agent, name, _sync_entry(gate.driver, agent, session_id, getattr(agent, name)))
    return agent


def _async_entry(
    driver: Driver, agent: Any, session_id: str | None, entry: Callable[..., Awaitable[Any]]
) -> Any:
    @functools.wraps(entry)
    async def governed(*args: Any, **kwargs: Any) -> Any:
        if current_reply() is not None:  # called by a governed entry point
            return await entry(*args, **kwargs)
        prompt = args[0] if args else kwargs.get("prompt")
        ctx = await driver.open_reply(agent=agent.name, input=prompt, session_id=session_id)
        try:
            with driver.current(ctx):
                result = await entry(*args, **kwargs)
        except BaseException as exc:
            await driver.close_reply(ctx.reply_id, error=exc)
            raise
        return await driver.close_reply(ctx.reply_id, result)

    return governed


def _sync_entry(
    driver: Driver, agent: Any, session_id: str | None, entry: Callable[..., Any]
) -> Any:
    @functools.wraps(entry)
    def governed(*args: Any, **kwargs: Any) -> Any:
        if current_reply() is not None:
            return entry(*args, **kwargs)
        prompt = args[0] if args else kwargs.get("prompt")
        sync = driver.sync  # the reply's layers on the gate's loop, the call in this thread
        ctx = sync.run(driver.open_reply(agent=agent.name, input=prompt, session_id=session_id))
        try:
            with driver.current(ctx, loop=sync.loop):
                result = entry(*args, **kwargs)
        except BaseException as exc:
            sync.run(driver.close_reply(ctx.reply_id, error=exc))
            raise
        return sync.run(driver.close_reply(ctx.reply_id, result))

    return governed


def tool_middleware(gate: Gate) -> Any:
    """A ``wrap_tool_call`` middleware running every tool call through the gate."""
    driver = gate.driver

    @wrap_tool_call  # type: ignore[untyped-decorator]
    def hookgate_tools(request: ToolRequest, call_next: Any) -> ToolResponse:
        call_id = request.context.metadata.get("tool_call_id") if request.context else None
        call = ToolCall(request.tool_name, dict(request.arguments or {}), call_id)

        async def execute(call: ToolCall) -> ToolResult:
            changed = dataclasses.replace(request, arguments=dict(call.arguments))
            response = await asyncio.to_thread(call_next, changed)
            result = response.result
            text = _text(result)
            error = response.error
            return ToolResult(text, error=error is not None, error_message=error, raw=result)

        result = driver.call_sync(driver.tool(call, execute))
        unchanged = result.raw is not None and result.content == _text(result.raw)
        return ToolResponse(
            tool_name=request.tool_name,
            result=result.raw if unchanged else result.content,  # the tool's own value
            error=result.content if result.error and not result.blocked else None,
            context=request.context,
        )

    hookgate_tools.hookgate = True  # attach finds it among the agent's hooks
    return hookgate_tools


class _GovernedClient(OpenAIClient):  # type: ignore[misc]
    """PraisonAI's own OpenAI client, each ``openai`` client it builds governed: the async
    one through the gate (each model call a turn), the sync one with the reply's headers.
    PraisonAI rebuilds its async client for each event loop (its sync entry points run one
    per call), so governing what it builds keeps that working."""

    @property
    def sync_client(self) -> Any:
        client = super().sync_client
        hooks = client._client.event_hooks["request"]
        if _add_headers not in hooks:
            hooks.append(_add_headers)
        return client

    @property
    def async_client(self) -> Any:
        client = super().async_client
        govern(client, turns=True)
        return client


def _add_headers(request: Any) -> None:
    request.headers.update(current_headers())


def _give_clients(agent: Any, base_url: str | None, api_key: str | None) -> None:
    base_url = base_url or os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL")
    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    if not hasattr(agent, "_Agent__openai_client"):
        raise RuntimeError("this praisonaiagents version keeps its client elsewhere")
    agent._Agent__openai_client = _GovernedClient(api_key=api_key, base_url=base_url)


async def aclose(agent: Any) -> None:
    """Close the clients of the agent's OpenAI client (PraisonAI has no public close)."""
    client = agent._Agent__openai_client
    if client._async_client is not None:
        await client._async_client.close()
    if client._sync_client is not None:
        client._sync_client.close()
