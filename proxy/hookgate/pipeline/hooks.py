"""The hook contract: what a policy may implement, who calls it, and how hooks compose.

A policy subclasses :class:`Policy` and overrides any subset of the hook methods. The
pipeline wires in only the methods a policy overrides, so a hook a policy does not
implement costs nothing per request. Hook shapes and their composition:

=====================  ===========  ==================================================
hook                   shape        composition (policies as listed in YAML)
=====================  ===========  ==================================================
on_request             observer     listed order, before every other hook
on_system_prompt       transformer  chained in listed order
convert_to_llm         transformer  chained in listed order
on_model_call          onion        first listed is outermost
on_response            transformer  reverse listed order (innermost first)
on_response_stream     per stream   reverse listed order, like on_response
on_reply (SDK)         onion        first listed is outermost; wraps a whole agent reply
on_tool_call (SDK+MCP) onion        first listed is outermost; wraps one tool execution
needs_approval (SDK)   predicate    before a tool call; any reason pauses it for a human
should_stop_after_turn predicate    after every model call of a reply; any True stops
tools (SDK)            declaration  every policy's tools offered to the agent, listed order
tool_offered (MCP)     predicate    a tool an MCP server lists; any False hides it
=====================  ===========  ==================================================

The first six run in the proxy and, in-process, in the SDK (:mod:`hookgate.sdk`); the next
five only in the SDK, which sees what a proxy cannot: a whole reply, each tool call, turn
boundaries, the agent's tool list — except ``on_tool_call``, which the proxy's MCP
gateway also runs around the tool calls it relays (:mod:`hookgate.server.mcp`), with
``tool_offered`` on the tools an MCP server lists. ``runs_in`` says where a policy
applies; a policy listed in a YAML file is skipped, with a log line, where it does not.

Reverse order for the response hooks makes a policy's pre- and post-steps pair up: with
``[a, b]``, ``a`` sees the request first and the response last, exactly as an onion.

Any hook may refuse the request by raising a :class:`~hookgate.errors.HookgateError`
subclass (usually :class:`~hookgate.errors.PolicyBlocked`); the server turns it into an
OpenAI-format error. Any other exception is a bug and becomes a 500 without a traceback
reaching the client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from hookgate.pipeline.agent import (
    NextReply,
    NextTool,
    PolicyTool,
    Reply,
    ReplyContext,
    ToolCall,
    ToolResult,
)
from hookgate.pipeline.observe import Metric
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.wire.deltas import StreamTransform

if TYPE_CHECKING:
    from hookgate.pipeline.services import Services

Messages = Sequence[Any]
"""Chat ``messages`` or Responses ``input`` items, exactly as the client sent them."""

Next = Callable[[ModelCall, Context], Awaitable[ModelResponse]]
"""The rest of the ``on_model_call`` onion, ending in the upstream call."""

Where = Literal["proxy", "sdk"]


class NoSettings(BaseModel):
    """Settings of a policy that has none: only ``{}`` (or nothing) is accepted."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Policy:
    """Base class of every policy. Override only the hooks you need.

    Subclasses set ``name`` (the YAML key) and ``Config`` (a strict pydantic model of the
    policy's YAML settings), and take that config in ``__init__``. One instance serves
    all requests of a pipeline, concurrently: keep per-request data in ``ctx.state``.
    """

    name: ClassVar[str] = "policy"
    Config: ClassVar[type[BaseModel]] = NoSettings
    runs_in: ClassVar[frozenset[Where]] = frozenset({"proxy", "sdk"})
    """Where the policy applies: the proxy, the in-process SDK, or both."""
    metrics: ClassVar[tuple[Metric, ...]] = ()
    """The policy's own metrics (reported with ``ctx.observation.count``/``gauge``). The
    proxy registers them when the policy is built, so each exists, at zero, from the
    start; one reported but not listed is registered when first reported."""
    needs_usage: ClassVar[bool] = False
    """True for a policy that reads a stream's usage (``budget``): in the proxy, a streamed
    chat or completions call then asks its upstream for the usage chunk, which a client
    that did not ask for it never sees (:mod:`hookgate.pipeline.runner`)."""

    def __init__(self, config: Any = None) -> None:
        self.config = config

    async def on_request(self, call: ModelCall, ctx: Context) -> None:
        """Observe a model call before any other hook runs; must not change it.

        For per-request telemetry set-up (the tracing policy starts its span here, so
        every later hook, including a refusing one, happens inside it). May refuse by
        raising. hookgate's addition to the DESIGN.md hook table: the transformer hooks
        run before ``on_model_call``, so without it a span could not cover them.
        """

    async def on_system_prompt(self, prompt: str, ctx: Context) -> str:
        """Return the system prompt the model should see.

        Called before every chat or Responses call with the current system prompt text
        ("" when the request has none; then a non-empty return adds one). Chained: the
        next policy gets what this one returns.
        """
        return prompt

    async def convert_to_llm(self, messages: Messages, ctx: Context) -> Messages:
        """Return the messages the model should see.

        Called with chat ``messages`` or Responses ``input`` items (a string input
        arrives as one user message). Return a new list, never mutate the one given;
        returning the same object means "unchanged" and keeps the fast path.
        """
        return messages

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        """Wrap the upstream call: first listed policy is outermost.

        Call ``await next(call, ctx)`` to continue (possibly with a changed call, possibly
        more than once to retry); return without calling it to short-circuit with a
        response of your own; raise a HookgateError to refuse.
        """
        return await next(call, ctx)

    async def on_response(self, response: ModelResponse, ctx: Context) -> ModelResponse:
        """Return the non-streamed response the client should get (2xx only).

        Runs innermost first. Use ``response.with_body(...)`` to change it.
        """
        return response

    def on_response_stream(self, ctx: Context) -> StreamTransform | None:
        """Return a transform for this streamed response, or None to leave it alone."""
        return None

    async def on_reply(self, reply: Reply, ctx: ReplyContext, next: NextReply) -> Any:
        """Wrap a whole agent reply (SDK only): first listed is outermost.

        Call ``await next(reply, ctx)`` to let the agent run and return what it returns
        (possibly changed); raise a HookgateError to refuse the reply. ``ctx`` lives as long
        as the reply: the place for per-reply counters (``ctx.state``).
        """
        return await next(reply, ctx)

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        """Wrap one tool execution (SDK only): first listed is outermost.

        Call ``await next(call, ctx)`` to run the tool (possibly with changed arguments via
        ``call.with_arguments``) and return its result (possibly changed). Return
        ``ToolResult.refused(reason)`` without calling ``next`` to block it: the model reads
        the reason as the call's error result. Raising a HookgateError aborts the reply.
        """
        return await next(call, ctx)

    async def needs_approval(self, call: ToolCall, ctx: ReplyContext) -> str | None:
        """Before a tool call (SDK only): a reason to pause it until a human decides, or None.

        Every policy implementing it is asked; the first reason pauses the call. The
        adapter pauses the run through its framework's own mechanism (LangChain's
        ``interrupt``, AgentScope's ``RequireUserConfirmEvent``), the reply's state goes to
        the store, and the run resumes — in any process — with a
        :class:`~hookgate.pipeline.agent.Decision`: approve, edit or reject. A call a human
        decided on is not asked about again.
        """
        return None

    async def should_stop_after_turn(self, ctx: ReplyContext) -> bool:
        """After each model call of a reply (SDK only): True ends the reply now.

        Every policy implementing it is asked; any True stops. The turn's usage is already
        in ``ctx.usage`` and ``ctx.turns``.
        """
        return False

    def tool_offered(self, name: str) -> bool:
        """Proxy (MCP gateway): whether a tool an MCP server lists is shown to the agent
        (``tools/list``); any policy answering False hides it. A hidden tool is still
        refused if called by name: that is :meth:`on_tool_call`'s to enforce."""
        return True

    def tools(self) -> Sequence[PolicyTool]:
        """The tools this policy gives the agent (SDK only): a planning tool, a tool to ask
        a human. AgentScope's ``list_tools``, LangChain's middleware ``tools``.

        Asked once, when the gate is built; the adapter offers them beside the agent's own
        tools (each framework's way: see :mod:`hookgate.sdk.adapters`) and a call runs
        inside every policy's ``on_tool_call``, as any tool's does. Names must be unique
        across a gate's policies.
        """
        return ()

    def attach(self, services: Services) -> None:
        """Receive shared services (store, prices, ledger) before the first request.

        Not a hook: called once when the pipeline is built. Most policies need none.
        """

    def status(self) -> Mapping[str, Any] | None:
        """What ``/readyz`` should show about this policy (None: nothing). Not a hook.

        A mapping with ``"ready": False`` makes ``/readyz`` answer 503.
        """
        return None

    async def aclose(self) -> None:
        """Release what the policy holds (exporters, pools). Not a hook.

        Called once when its pipeline is retired: on shutdown, and after a reload once
        requests still running on the old config have had ``server.shutdown_timeout_s``
        to finish. Must not raise.
        """


HOOK_NAMES: tuple[str, ...] = (
    "on_request",
    "on_system_prompt",
    "convert_to_llm",
    "on_model_call",
    "on_response",
    "on_response_stream",
    "on_reply",
    "on_tool_call",
    "needs_approval",
    "should_stop_after_turn",
    "tools",
)


def implements(policy: Policy, hook: str) -> bool:
    """True when ``policy``'s class overrides ``hook`` of :class:`Policy`."""
    return getattr(type(policy), hook) is not getattr(Policy, hook)
