"""The ``on_tool_call`` onion of a list of policies, each layer's decision recorded.

The decision vocabulary is the model calls' (:meth:`Observation.decide
<hookgate.pipeline.observe.Observation.decide>`), so an audit record reads the same for
a tool call as for a model call: ``block`` when the layer refused the call itself
(returned a refusal it made, or raised a :class:`~hookgate.errors.HookgateError` of its
own), ``modify`` when it ran the tool with other arguments, changed the result, or
answered without running it, else ``allow``. Pure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from hookgate.errors import HookgateError
from hookgate.pipeline.agent import NextTool, ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.compose import compose_onion
from hookgate.pipeline.hooks import Policy, implements
from hookgate.pipeline.observe import Observation

ToolLayer = Callable[[ToolCall, ReplyContext, NextTool], Awaitable[ToolResult]]


def tool_onion(
    policies: Sequence[Policy[Any]], terminal: NextTool, observation: Observation
) -> NextTool:
    """``terminal`` wrapped in the ``on_tool_call`` of every policy that has one (first
    listed outermost), each recording its decision in ``observation`` by slot."""
    layers = [_decided(p, observation) for p in policies if implements(p, "on_tool_call")]
    return compose_onion(layers, terminal)


async def approval_needed(
    policies: Sequence[Policy[Any]], call: ToolCall, ctx: ReplyContext, observation: Observation
) -> str | None:
    """Why a human must approve ``call`` before it runs: the first reason a policy's
    ``needs_approval`` gives (that policy is recorded as blocking it), or None."""
    for policy in policies:
        if implements(policy, "needs_approval"):
            reason = await policy.needs_approval(call, ctx)
            if reason:
                observation.decide(policy.slot, "block")
                return reason
    return None


async def shown_arguments(
    policies: Sequence[Policy[Any]], arguments: Mapping[str, Any], ctx: ReplyContext
) -> dict[str, Any]:
    """A paused call's arguments as its approver sees them: every policy's
    ``shown_to_approver`` in listed order (``pii``: placeholders, not values)."""
    for policy in policies:
        if implements(policy, "shown_to_approver"):
            arguments = await policy.shown_to_approver(arguments, ctx)
    return dict(arguments)


async def restored_arguments(
    policies: Sequence[Policy[Any]], arguments: Mapping[str, Any], ctx: ReplyContext
) -> dict[str, Any]:
    """An approver's edited arguments as the tool gets them: every policy's
    ``from_approver`` in reverse listed order (``pii``: its placeholders restored)."""
    for policy in reversed(policies):
        if implements(policy, "from_approver"):
            arguments = await policy.from_approver(arguments, ctx)
    return dict(arguments)


def _decided(policy: Policy[Any], observation: Observation) -> ToolLayer:
    slot, hook = policy.slot, policy.on_tool_call

    async def layer(call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        inner: list[ToolResult] = []
        changed = False

        async def watched(asked: ToolCall, ctx: ReplyContext) -> ToolResult:
            nonlocal changed
            changed = changed or asked.arguments != call.arguments
            result = await next(asked, ctx)
            inner.append(result)
            return result

        try:
            result = await hook(call, ctx, watched)
        except HookgateError as exc:
            if getattr(exc, "blocked_by", None) is None:
                exc.blocked_by = slot  # type: ignore[attr-defined]
                observation.decide(slot, "block")
            raise
        own = not inner or result is not inner[-1]
        if result.blocked and own:
            observation.decide(slot, "block")
        elif changed or (own and (not inner or result != inner[-1])):
            observation.decide(slot, "modify")
        else:
            observation.decide(slot, "allow")
        return result

    return layer
