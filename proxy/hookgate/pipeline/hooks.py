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
returned_tool_call     predicate    proxy: each tool call in a model's answer, listed
                                    order; the first reason removes the call
=====================  ===========  ==================================================

The first six run in the proxy and, in-process, in the SDK (:mod:`hookgate.sdk`); the next
five only in the SDK, which sees what a proxy cannot: a whole reply, each tool call, turn
boundaries, the agent's tool list — except ``on_tool_call``, which the proxy's MCP
gateway also runs around the tool calls it relays (:mod:`hookgate.server.mcp`), with
``tool_offered`` on the tools an MCP server lists. ``returned_tool_call`` runs only in
the proxy, on the tool calls of every chat, Responses and Messages answer before its
client gets them (:mod:`hookgate.wire.returned_calls`). ``runs_in`` says where a policy
applies; a policy listed in a YAML file is skipped, with a log line, where it does not.

Reverse order for the response hooks makes a policy's pre- and post-steps pair up: with
``[a, b]``, ``a`` sees the request first and the response last, exactly as an onion.

Any hook may refuse the request by raising a :class:`~hookgate.errors.HookgateError`
subclass (usually :class:`~hookgate.errors.PolicyBlocked`); the server turns it into an
OpenAI-format error. Any other exception is a bug and becomes a 500 without a traceback
reaching the client.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

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
from hookgate.wire.conversation import Conversation
from hookgate.wire.deltas import StreamTransform

if TYPE_CHECKING:
    from hookgate.pipeline.services import Services

Messages = Sequence[Any]
"""What ``convert_to_llm`` receives and returns, exactly as the client sent it, in one of
three shapes: chat ``messages``, Responses ``input`` items (a string input arrives as one
user message), or Anthropic Messages ``messages`` (content blocks). To read or rewrite
every text the model reads in any of them, use :func:`hookgate.wire.texts.map_messages`
(exported as ``hookgate.map_messages``) rather than walking one shape by hand."""

Next = Callable[[ModelCall, Context], Awaitable[ModelResponse]]
"""The rest of the ``on_model_call`` onion, ending in the upstream call."""

Where = Literal["proxy", "sdk"]


class PolicyConfig(BaseModel):
    """Base of a policy's settings: an unknown key is an error, and values are frozen.

    Subclass it for a policy's ``Config``; hookgate validates the YAML entry against it
    when the config loads, so a typo is a config error with a line number, never a
    setting silently ignored. A field's docstring is its description in the docs'
    configuration reference (docs/reference.md).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoSettings(PolicyConfig):
    """Settings of a policy that has none: only ``{}`` (or nothing) is accepted."""


ConfigT = TypeVar("ConfigT", bound=BaseModel, default=NoSettings)


class PolicyDefinitionError(TypeError):
    """Policies that cannot make a pipeline: a hook of the wrong kind, a missing name,
    one instance listed twice. ``problems`` pairs each policy's label (its ``name``,
    else its class) with what is wrong; the message lists them all."""

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"policy {who}: {what}" for who, what in self.problems))


class Policy(Generic[ConfigT]):
    """Base class of every policy. Override only the hooks you need.

    Declare the settings as a :class:`PolicyConfig` subclass and name it as the type
    argument: ``class NoSecrets(Policy[NoSecretsConfig])``; ``Config`` is then that
    class and ``self.config`` an instance of it (a policy without settings subclasses
    plain ``Policy``). Set ``name``: the label of the policy's decisions in metrics,
    spans and audit records (a built-in policy's YAML key; a custom policy is listed in
    YAML by ``package.module:Class`` and reported by this name).

    One instance serves all requests of a pipeline, concurrently: keep per-request data
    in ``ctx.state[self.slot]`` (per model call) or the reply context's ``state``
    (per agent reply: SDK and MCP gateway). ``slot`` is ``name``, or ``name#2``,
    ``name#3`` for a second and third policy of the same name in one list, so two
    instances never share state.

    Hook kinds are fixed (:data:`HOOKS`): ``on_response_stream``, ``tool_offered``,
    ``tools``, ``attach`` and ``status`` are plain methods, every other hook and
    ``aclose`` is ``async``. Building a pipeline checks every policy (:func:`check`): an
    override of the wrong kind or arity is a config error naming the policy, never a
    coroutine at run time.
    """

    name: ClassVar[str] = ""
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

    config: ConfigT
    slot: str
    """Where the policy keeps its per-request and per-reply state (see above)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):
            if get_origin(base) is Policy:
                (settings,) = get_args(base)
                if isinstance(settings, type) and issubclass(settings, BaseModel):
                    cls.Config = settings

    def __init__(self, config: ConfigT | None = None) -> None:
        """Take validated settings; ``None`` builds the defaults of ``Config``."""
        self.config = type(self).Config() if config is None else config  # type: ignore[assignment]
        self.slot = type(self).name
        self._slot_given = False

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

        Called for chat, Responses and Anthropic Messages calls (``messages`` and
        ``messages.count_tokens``) with the request's messages in the client's own shape
        (see :data:`Messages`; ``ctx.api`` says which). Return a new list, never mutate
        the one given; returning the same object means "unchanged" and keeps the fast
        path.
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
        decided on is not asked about again. In the MCP gateway the ``tools/call`` waits
        for a person's decision (:mod:`hookgate.server.mcp`).
        """
        return None

    async def shown_to_approver(
        self, arguments: Mapping[str, Any], ctx: ReplyContext
    ) -> Mapping[str, Any]:
        """A paused call's arguments as the person deciding it may see them (the ``pii``
        policy's placeholders instead of values, kept in ``ctx`` to restore an edit's).

        Chained in listed order; what the last returns is stored and shown. Raising
        fails the pause (nothing is shown or stored)."""
        return arguments

    async def from_approver(
        self, arguments: Mapping[str, Any], ctx: ReplyContext
    ) -> Mapping[str, Any]:
        """An approver's edited arguments as the tool must get them (placeholders that
        :meth:`shown_to_approver` made restored to their values). Chained in reverse
        listed order."""
        return arguments

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

    async def returned_tool_call(
        self, call: ToolCall, conversation: Conversation, ctx: Context
    ) -> str | None:
        """Proxy: a reason to remove ``call`` — a tool call the model returned — from the
        answer before the client gets it, or None to let it through.

        Asked for every tool call of a chat, Responses or Anthropic Messages answer,
        streamed or not, once the call is complete (its arguments whole, after
        ``on_response``/``on_response_stream``, so ``pii`` placeholders are already
        restored); policies in listed order, the first reason wins and the later ones are
        not asked. ``conversation`` is the client's request as evidence
        (:class:`~hookgate.wire.conversation.Conversation`: trusted texts, tool results
        by tool and call id, the tools offered). The client gets, for a refused call, a
        note the model reads on its next turn (see :mod:`hookgate.wire.returned_calls`).
        Raising a HookgateError refuses the whole answer (a stream ends with it)."""
        return None

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


HOOKS: Mapping[str, tuple[bool, int]] = {
    "on_request": (True, 2),
    "on_system_prompt": (True, 2),
    "convert_to_llm": (True, 2),
    "on_model_call": (True, 3),
    "on_response": (True, 2),
    "on_response_stream": (False, 1),
    "on_reply": (True, 3),
    "on_tool_call": (True, 3),
    "needs_approval": (True, 2),
    "shown_to_approver": (True, 2),
    "from_approver": (True, 2),
    "should_stop_after_turn": (True, 1),
    "tool_offered": (False, 1),
    "returned_tool_call": (True, 3),
    "tools": (False, 0),
    "attach": (False, 1),
    "status": (False, 0),
    "aclose": (True, 0),
}
"""Every method a policy may override: whether it is ``async``, and how many arguments
it takes besides ``self``. :func:`check` holds every override to it."""


def implements(policy: Policy[Any], hook: str) -> bool:
    """True when ``policy``'s class overrides ``hook`` of :class:`Policy`."""
    return getattr(type(policy), hook) is not getattr(Policy, hook)


def label(policy: Policy[Any]) -> str:
    """How problems name a policy: its ``name``, else its class's import path."""
    cls = type(policy)
    return cls.name or f"{cls.__module__}:{cls.__qualname__}"


def definition_problems(policy: Policy[Any]) -> list[str]:
    """What is wrong with a policy: a missing or malformed ``name``, an override of the
    wrong kind (``async`` or not) or arity, a ``config`` that is not a ``Config``."""
    cls = type(policy)
    problems: list[str] = []
    if not cls.name:
        problems.append('sets no name (the label of its decisions): add `name = "..."`')
    elif "#" in cls.name or not cls.name.isprintable() or cls.name.strip() != cls.name:
        problems.append(f"name {cls.name!r} must be printable, without '#' or edge spaces")
    for hook, (is_async, arity) in HOOKS.items():
        if not implements(policy, hook):
            continue
        method = getattr(cls, hook)
        if inspect.iscoroutinefunction(method) != is_async:
            want = "an `async def`" if is_async else "a plain `def` (not async)"
            problems.append(f"{hook} must be {want}")
            continue
        try:
            inspect.signature(method).bind(None, *range(arity))
        except TypeError:
            problems.append(f"{hook} must take {arity} argument(s) besides self")
    if not isinstance(getattr(policy, "config", None), cls.Config):
        problems.append(f"config is not a {cls.Config.__name__} (call super().__init__(config))")
    return problems


def slots_of(names: Sequence[str]) -> list[str]:
    """The state slot of each policy of a list, by name: ``name`` for the first,
    ``name#2``, ``name#3``... for later ones of the same name."""
    seen: dict[str, int] = {}
    slots: list[str] = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        slots.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return slots


def check(policies: Sequence[Policy[Any]]) -> None:
    """Check the policies of one list and give each its state slot.

    Raises :class:`PolicyDefinitionError` listing every problem: each class's own
    (:func:`definition_problems`), one instance listed twice, an instance that already
    serves another list under another slot. A policy keeps the first slot it is given,
    so checking a sublist of a checked list (the proxy's or the SDK's share of it)
    changes nothing.
    """
    problems: list[tuple[str, str]] = []
    seen: set[int] = set()
    for policy in policies:
        problems += [(label(policy), p) for p in definition_problems(policy)]
        if id(policy) in seen:
            problems.append((label(policy), "the same instance is listed twice"))
        seen.add(id(policy))
    if problems:
        raise PolicyDefinitionError(problems)
    slots = slots_of([type(p).name for p in policies])
    for policy, slot in zip(policies, slots, strict=True):
        if policy._slot_given and policy.slot != slot:
            why = f"already serves another list as {policy.slot!r}: use one instance per list"
            problems.append((label(policy), why))
    if problems:
        raise PolicyDefinitionError(problems)
    for policy, slot in zip(policies, slots, strict=True):
        policy.slot, policy._slot_given = slot, True
