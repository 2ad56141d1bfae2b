"""What the SDK's agent-level hooks receive: a reply, a tool call, a tool result.

A *reply* is everything an agent does to answer one input: every model call ("turn") and
every tool execution until its final answer. The proxy never sees one whole; the SDK
(:mod:`hookgate.sdk`) does, and runs the ``on_reply``, ``on_tool_call`` and
``should_stop_after_turn`` hooks of :class:`~hookgate.pipeline.hooks.Policy` around them.

Pure: no framework, no I/O. Values are frozen and changed with ``with_*`` methods.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hookgate.pipeline.observe import Observation, Span
from hookgate.wire.usage import Usage


@dataclass(frozen=True, slots=True)
class Reply:
    """One agent reply about to run. ``input`` is the framework's input, as given."""

    agent: str
    input: Any = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool execution the model asked for."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str | None = None

    def with_arguments(self, arguments: Mapping[str, Any]) -> ToolCall:
        """A copy that will run with ``arguments``."""
        return dataclasses.replace(self, arguments=arguments)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool execution gives back to the model: the normalized result of the seeds
    (PraisonAI's ``NormalizedToolResult``), whichever framework ran the tool.

    ``blocked`` means the tool never ran: ``content`` is the reason, which the model reads
    as an error result of its call (so it can adapt instead of the agent failing).
    ``raw`` is the framework's own result (a LangChain ``ToolMessage`` or ``Command``, an
    AgentScope ``ToolResponse``, an MCP ``CallToolResult``, a function's return value):
    adapters give the framework back that object — with ``content`` put in its place
    when a policy changed the text — so what the text does not carry (artifacts, state
    updates, structured parts) survives.
    """

    content: str
    blocked: bool = False
    error: bool = False
    error_message: str | None = None
    """What went wrong, when the framework says so apart from ``content``."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """What the framework reported besides the text (an artifact, a response's metadata)."""
    execution_time_ms: float | None = None
    """How long the tool ran (set by the gate around the framework's tool)."""
    raw: Any = None

    @property
    def success(self) -> bool:
        """True when the tool ran and did not fail."""
        return not self.error

    @classmethod
    def refused(cls, reason: str) -> ToolResult:
        """A result for a call a policy refused; the model reads ``reason``."""
        return cls(f"Tool call refused: {reason}", blocked=True, error=True)

    def with_content(self, content: str) -> ToolResult:
        """A copy whose content the model will read instead."""
        return dataclasses.replace(self, content=content)


@dataclass(slots=True)
class ReplyContext:
    """Per-reply facts and mutable slots, shared by every hook of one reply.

    ``state`` is keyed by policy slot (one dict per policy and reply: ``state[self.slot]``),
    ``session`` by policy slot too but shared by all replies of one session. Adapters
    record turns and usage through the gate's driver; policies read them.
    """

    agent: str
    reply_id: str
    session_id: str | None = None
    state: dict[str, Any] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)
    turns: int = 0
    """Model calls completed in this reply."""
    tool_calls: int = 0
    """Tool executions started in this reply (refused ones included)."""
    usage: Usage = field(default_factory=Usage)
    """Token usage summed over this reply's model calls, as reported."""
    wrap_up: str | None = None
    """Set by a policy when the agent must answer now: the instruction it should read.
    Adapters then add it to the next model call and forbid tool calls (``tool_choice:
    none``)."""
    stop: bool = False
    """Set by a policy (or by ``should_stop_after_turn``): end the reply after this turn."""
    span: Span | None = None
    """The reply's span (set by the tracing policy); the model calls' trace parent."""
    observation: Observation | None = None
    """The telemetry of the tool call being run, where its caller records one (the MCP
    gateway: its audit record and metrics): a policy adds findings and its metrics'
    measures there. None in the SDK."""
    parent_trace: dict[str, str] = field(default_factory=dict)
    """The W3C trace context (``traceparent``, ``tracestate``) of a caller whose trace the
    reply continues, where the caller sent one: the MCP gateway's ``tools/call``. The
    tracing policy parents the reply's spans there when the reply has no span of its
    own (in the SDK, the framework's current span is their parent)."""
    key_id: str | None = None
    """Who runs the reply, where the caller is known: the MCP gateway's authenticated key
    (None in the SDK, whose caller the proxy authenticates)."""
    team: str | None = None

    def add_usage(self, usage: Usage) -> None:
        """Add one model call's reported usage."""
        u = self.usage
        self.usage = Usage(
            u.input_tokens + usage.input_tokens,
            u.output_tokens + usage.output_tokens,
            u.cached_input_tokens + usage.cached_input_tokens,
            u.reasoning_tokens + usage.reasoning_tokens,
            u.cache_write_tokens + usage.cache_write_tokens,
        )

    def headers(self) -> dict[str, str]:
        """The ``x-hookgate-*`` and W3C trace headers a model request of this reply carries."""
        headers = {"x-hookgate-reply-id": self.reply_id, "x-hookgate-agent": self.agent}
        if self.session_id:
            headers["x-hookgate-session-id"] = self.session_id
        if self.span is not None:
            headers.update(self.span.trace_headers())
        return headers


NextReply = Callable[[Reply, ReplyContext], Awaitable[Any]]
"""The rest of the ``on_reply`` onion, ending in the framework running the reply."""

NextTool = Callable[[ToolCall, ReplyContext], Awaitable[ToolResult]]
"""The rest of the ``on_tool_call`` onion, ending in the tool itself."""


@dataclass(frozen=True, slots=True)
class PolicyTool:
    """A tool a policy gives the agent (:meth:`~hookgate.pipeline.hooks.Policy.tools`).

    The model sees ``name``, ``description`` and ``parameters`` (the JSON Schema of the
    arguments, an object) beside the agent's own tools; the adapter offers it the way its
    framework takes a middleware's tools. A call runs as any tool does — inside the
    ``on_tool_call`` onion — and ends in ``run(arguments, ctx)`` with arguments that
    match ``parameters`` and the calling reply's context; ``run`` returns the text the
    model reads, or raises :class:`ToolInputError` for an error result the model reads.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    run: Callable[[Mapping[str, Any], ReplyContext], Awaitable[str]]
    read_only: bool = False
    """True when a call changes nothing outside the reply (frameworks may skip asking)."""


class ToolInputError(ValueError):
    """Raised by a :class:`PolicyTool`'s ``run``: the call cannot be done as asked; the
    model reads the message as the call's error result and can try again."""


class NotRepeatable(RuntimeError):
    """Raised by ``next`` when a layer asks to run a step a second time that the framework
    runs once, between two of its own hooks (cubeloop's ``before_tool_call`` and
    ``after_tool_call``, AgentScope's tool stream): a policy that retries (``tool_retry``)
    keeps the result it has."""


class ReplyPaused(Exception):
    """What ``next`` raises in ``on_reply`` when the reply's run stops to wait for a human
    (``needs_approval``): the reply did not finish. Its state is in the store and it
    continues when the run is resumed, in this process or another: its ``on_reply`` layers
    run again around the rest of the run, with the counts it had. The ``tracing`` policy
    ends the reply's span with ``hookgate.reply.status`` ``paused``, not as an error; a
    layer that reports finished replies lets it through."""


class ReplyAbandoned(RuntimeError):
    """What ``next`` raises in ``on_reply`` when the gate ends a reply its framework never
    ended: the run raised where no adapter hook saw it, or the gate closed
    (``Gate.aclose``) while the reply was open. The reply ends as an error."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A human's answer to a tool call a policy paused (``needs_approval``).

    ``approve`` runs the call as the model asked; ``edit`` runs it with ``arguments``;
    ``reject`` does not run it, and the model reads ``message`` as its result.
    """

    type: Literal["approve", "edit", "reject"]
    arguments: Mapping[str, Any] | None = None
    message: str | None = None

    @classmethod
    def parse(cls, value: Any) -> Decision:
        """A decision from the shape LangChain's ``HumanInTheLoopMiddleware`` resumes with:
        ``{"type": "approve"}``, ``{"type": "edit", "edited_action": {"name": ..., "args":
        {...}}}`` (or ``"args"`` at the top), ``{"type": "reject", "message": ...}``; or
        ``{"decisions": [one of those]}``. Raises ``ValueError`` on anything else."""
        if isinstance(value, Mapping) and isinstance(value.get("decisions"), list):
            if len(value["decisions"]) != 1:
                raise ValueError("one decision per paused tool call")
            value = value["decisions"][0]
        kind = value.get("type") if isinstance(value, Mapping) else None
        if kind == "approve":
            return cls("approve")
        if kind == "edit":
            action = value.get("edited_action")
            arguments = action.get("args") if isinstance(action, Mapping) else value.get("args")
            if not isinstance(arguments, Mapping):
                raise ValueError("an edit decision needs the new arguments (edited_action.args)")
            return cls("edit", arguments=dict(arguments))
        if kind == "reject":
            message = value.get("message")
            return cls("reject", message=message if isinstance(message, str) else None)
        raise ValueError(f"not a decision (approve, edit or reject): {value!r}")

    def applied(self, call: ToolCall) -> ToolCall | ToolResult:
        """The call to run (approved, or with the edited arguments), or the result the
        model reads for a rejected one."""
        if self.type == "reject":
            return ToolResult(
                self.message or f"A human rejected the call of {call.name!r}.",
                blocked=True,
                error=True,
            )
        if self.type == "edit" and self.arguments is not None:
            return call.with_arguments(self.arguments)
        return call
