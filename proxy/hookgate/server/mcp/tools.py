"""The tool policies in a gateway: which tools are listed, and one ``tools/call`` run
through the policies' ``on_tool_call`` onion with the server's answer as its innermost
step. Transport-free: the caller hands in how to ask the server (``exchange``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from hookgate.pipeline.agent import ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.hooks import Policy, implements
from hookgate.pipeline.observe import Observation
from hookgate.pipeline.tool_calls import approval_needed, tool_onion
from hookgate.wire import jsonrpc

Exchange = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""Send a request to the server; its response."""
Ask = Callable[[ToolCall, str, ReplyContext], Awaitable[ToolCall | ToolResult]]
"""Wait for a person's decision on a paused call (given the pausing reason): the call to
run, or the refusal the client reads."""

STRUCTURED = "\n\u241e hookgate: structuredContent \u241e\n"
"""Between a result's text and the JSON of its ``structuredContent`` in what the policies
see: a model may read either, so ``pii`` redacts both in one pass."""


def listed(message: dict[str, Any], policies: tuple[Policy, ...]) -> dict[str, Any]:
    """A ``tools/list`` response without the tools a policy hides (``tool_offered``)."""
    offering = [p for p in policies if implements(p, "tool_offered")]
    result = message.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(result, dict) or not isinstance(tools, list):
        return message
    shown = [
        tool for tool in tools
        if not isinstance(tool, Mapping)
        or all(p.tool_offered(str(tool.get("name", ""))) for p in offering)
    ]  # fmt: skip
    return {**message, "result": {**result, "tools": shown}}


def stateful(policies: tuple[Policy, ...]) -> bool:
    """Whether a policy may read or change a call's reply or session state."""
    return any(implements(p, "on_tool_call") or implements(p, "needs_approval") for p in policies)


@dataclass(frozen=True, slots=True)
class Answered:
    """What a ``tools/call`` is answered with, and how it ended for the audit log and
    the metrics (``error``: None, ``refused``, ``needs_approval``, ``tool_error``, ...)."""

    message: dict[str, Any]
    error: str | None = None


async def call_tool(
    message: dict[str, Any], name: str, arguments: Mapping[str, Any],
    policies: tuple[Policy, ...], reply: ReplyContext, exchange: Exchange, label: str,
    observation: Observation, ask: Ask,
) -> Answered:  # fmt: skip
    """Run the ``tools/call`` ``message`` through ``policies`` (``label`` names the server
    in errors), each policy's decision recorded in ``observation`` (``allow``, ``modify``
    or ``block``: :mod:`hookgate.pipeline.tool_calls`). A call that needs a person's
    approval is first decided by ``ask`` (:mod:`.approval`): rejected (or not decided),
    it is answered with the refusal and never run, the pausing policy's decision
    ``block``; approved or edited, it runs as decided through the ``on_tool_call`` onion,
    the pausing policy's decision ``allow`` or ``modify``. What a policy or ``ask``
    raises is raised."""
    id = message.get("id")
    call = ToolCall(name, arguments, call_id=None if id is None else str(id))
    pausing = Observation()  # the pausing policy blocked the call only if it never runs
    waiting = await approval_needed(policies, call, reply, pausing)
    if waiting is not None:  # never run unapproved: a person decides first
        try:
            decided = await ask(call, waiting, reply)
        except BaseException:
            observation.decisions.update(pausing.decisions)
            raise
        if isinstance(decided, ToolResult):
            observation.decisions.update(pausing.decisions)
            refusal = jsonrpc.refused_tool_result(decided.content)
            return Answered(jsonrpc.result(id, refusal), "rejected")
        for slot in pausing.decisions:
            observation.decide(slot, "allow" if decided is call else "modify")
        call = decided
    answered: dict[str, Any] = {}

    async def terminal(call: ToolCall, ctx: ReplyContext) -> ToolResult:
        final = await exchange(jsonrpc.with_arguments(message, call.arguments))
        answered["final"] = final
        found = _tool_result(final)
        answered["seen"] = found.content
        return found

    result = await tool_onion(policies, terminal, observation)(call, reply)
    final = answered.get("final")
    if result.blocked or final is None:
        return Answered(jsonrpc.result(id, jsonrpc.refused_tool_result(result.content)), "refused")
    if isinstance(final.get("result"), dict):
        value = final["result"]
        if result.content != answered["seen"]:
            value = _rewritten(value, result.content)
        return Answered({**final, "result": value}, "tool_error" if value.get("isError") else None)
    if "result" in final:
        problem = f"{label} answered tools/call with a result that is not an object"
        return Answered(jsonrpc.error(id, jsonrpc.SERVER_ERROR, problem), "mcp_bad_answer")
    return Answered(final, "jsonrpc_error")


def _tool_result(final: Mapping[str, Any]) -> ToolResult:
    """What the policies see of the server's response to a ``tools/call``: its text,
    then (after :data:`STRUCTURED`) its ``structuredContent`` as JSON."""
    if "result" not in final:
        error = final.get("error")
        text = str(error.get("message", "")) if isinstance(error, Mapping) else "error"
        return ToolResult(text, error=True, error_message=text, raw=final)
    value = final["result"] if isinstance(final["result"], Mapping) else {}
    return ToolResult(_seen(value), error=bool(value.get("isError")), raw=final)


def _seen(value: Mapping[str, Any]) -> str:
    text = jsonrpc.tool_text(value)
    if "structuredContent" not in value:
        return text
    return text + STRUCTURED + orjson.dumps(value["structuredContent"]).decode()


def _rewritten(value: Mapping[str, Any], content: str) -> dict[str, Any]:
    """A tool result whose content a policy changed (``pii``): its text and its
    ``structuredContent`` replaced by the changed ones. A structured part that is no
    longer JSON (an entity found across its syntax) is withheld with the whole result:
    leaving it out would break clients that check it against the tool's output schema,
    and keeping the original would leak."""
    text, separated, structured = content.partition(STRUCTURED)
    out = jsonrpc.with_tool_text(value, text)
    if "structuredContent" in value:
        try:
            out["structuredContent"] = orjson.loads(structured) if separated else None
        except orjson.JSONDecodeError:
            out["structuredContent"] = None
        if out["structuredContent"] is None:
            return jsonrpc.refused_tool_result(
                "the tool's structured result could not be redacted, so it was withheld"
            )
    return out
