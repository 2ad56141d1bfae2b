"""``tool_guard`` (SDK): which tools an agent may run, with which arguments, how often.

YAML (every key optional)::

    - tool_guard:
        allow: ["search_*", get_weather]   # when set, only these tools (shell-style globs)
        deny: ["delete_*"]                 # never these (deny wins over allow)
        arguments:                         # a call whose JSON arguments match is refused
          - {tool: run_shell, pattern: "rm\\\\s+-rf"}
        approval: pause                    # human in the loop for the tools in `approve`
        approve: [send_email]              #   (default: all): `pause` the run until a human
                                           #   approves, edits or rejects the call, or a
                                           #   function `mypkg.hitl:ask` called as
                                           #   fn(call, ctx) -> bool | str (a refusal reason)
                                           #   | awaitable
        approval_timeout_s: 300            # MCP gateway: how long a paused tools/call
                                           #   waits for a person's decision
        max_per_reply: 10                  # tool calls per reply
        max_per_session: 100               # tool calls per session (x-hookgate-session-id)
        on_limit: continue                 # continue | end | error
        limits:                            # per tool (LangChain's ToolCallLimit tool_name):
          - {tool: "search_*", max_per_reply: 3, max_per_session: 20, on_limit: end}

With ``approval: pause`` the run pauses through the framework's own mechanism (LangChain's
``interrupt``; AgentScope's ``RequireUserConfirmEvent``) and resumes, in any process, with
approve, edit or reject (see :meth:`~hookgate.pipeline.hooks.Policy.needs_approval`). A call
waiting for a human is not counted against the limits until it runs.

In the MCP gateway a paused ``tools/call`` waits for a person's decision in the admin API
or the web UI (``/admin/approvals``), up to ``approval_timeout_s``, then is refused with a
JSON-RPC error; approved it runs, edited it runs with the approver's arguments, rejected
the client reads the approver's message (see :mod:`hookgate.server.mcp.approval`). What
the approver sees of the arguments is what the set's ``pii`` policy lets a model see.

In the SDK a refused call does not run: the model reads ``Tool call refused: <reason>`` as
its result and can adapt. In the proxy the policy works on tool *definitions* and on the
tool calls a model *returns*. Returned calls (:meth:`ToolGuardPolicy.returned_tool_call`,
chat, Responses and Messages, streamed or not): a call of a tool ``allow``/``deny``
exclude, of a tool the request did not offer, or whose arguments an ``arguments`` rule
matches never reaches the agent as a call — it is removed from the answer and the
agent reads ``hookgate refused a call of <tool>: <reason>`` in the assistant's text
instead (see :mod:`hookgate.wire.returned_calls`); limits and approvals act where tools
run (the SDK, the MCP gateway). Definitions: tools that
``allow``/``deny`` exclude are removed from each request — function and custom tools by
name, built-in tools by type (``web_search_preview``, ``code_interpreter``), legacy
``functions`` too — and a ``tool_choice``/``function_call`` naming one is dropped (an
``allowed_tools`` choice is narrowed), so the model is never offered them. Globs match
case-insensitively; a tool is judged by every name it carries; an MCP server's
``allowed_tools`` is narrowed (a server without that list exposes whatever it serves, which
the proxy cannot see: list its tools, or deny ``mcp``).

On a limit, ``continue`` refuses further calls and lets the agent go on; ``end`` also ends
the reply after the current turn; ``error`` aborts the reply with a 429 ``tool_call_limit``
error (LangChain's ``exit_behavior``). A per-tool limit counts the calls of the tools its
glob matches, and uses the policy's ``on_limit`` unless it sets its own; every limit that
applies to a call is checked.
"""

from __future__ import annotations

import fnmatch
import importlib
import inspect
import re
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import orjson
from pydantic import Field, field_validator

from hookgate.errors import HookgateError
from hookgate.pipeline.agent import NextTool, ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.hooks import Next, Policy, PolicyConfig
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.policies.globs import listed
from hookgate.wire.conversation import Conversation, tool_names

Approver = Callable[[ToolCall, ReplyContext], Any]


class ToolLimitExceeded(HookgateError):
    """A reply or session made more tool calls than ``tool_guard`` allows (``on_limit: error``)."""

    status = 429
    type = "rate_limit_error"
    code = "tool_call_limit"


class ArgumentRule(PolicyConfig):
    """Refuse calls of ``tool`` (a glob) whose JSON arguments match ``pattern``."""

    tool: str = "*"
    """The tools (a glob) the rule applies to."""
    pattern: str
    """A regular expression searched in the call's JSON arguments: a match refuses the call."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value)
        return value


OnLimit = Literal["continue", "end", "error"]


class ToolLimit(PolicyConfig):
    """Calls of the tools matching ``tool`` (a glob) per reply and per session."""

    tool: str
    """The tools (a glob) whose calls this limit counts."""
    max_per_reply: int | None = Field(None, ge=0)
    """Calls of those tools per agent reply."""
    max_per_session: int | None = Field(None, ge=0)
    """Calls of those tools per session."""
    on_limit: OnLimit | None = None
    """What a call over this limit does; default: the policy's ``on_limit``."""


class ToolGuardConfig(PolicyConfig):
    """Settings of the ``tool_guard`` policy."""

    allow: tuple[str, ...] | None = None
    """When set, only these tools (shell-style globs, case-insensitive)."""
    deny: tuple[str, ...] = ()
    """Never these tools (globs; deny wins over allow)."""
    arguments: tuple[ArgumentRule, ...] = ()
    """Calls refused by their arguments."""
    approval: str | None = Field(None, pattern=r"^(pause|[\w.]+:\w+)$")
    """``pause``, or ``package.module:function`` asked before a call runs (see the module
    docstring)."""
    approve: tuple[str, ...] = ("*",)
    """The tools (globs) ``approval`` asks about."""
    approval_timeout_s: float = Field(300.0, gt=0)
    """MCP gateway: how long a paused ``tools/call`` waits for a person's decision."""
    max_per_reply: int | None = Field(None, ge=0)
    """Tool calls per agent reply."""
    max_per_session: int | None = Field(None, ge=0)
    """Tool calls per session."""
    on_limit: OnLimit = "continue"
    """A call over a limit: ``continue`` refuses it and the agent goes on, ``end`` also ends the
    reply after the turn, ``error`` aborts it (429 ``tool_call_limit``)."""
    limits: tuple[ToolLimit, ...] = ()
    """Limits per tool (glob), each checked beside the overall ones."""


class ToolGuardPolicy(Policy[ToolGuardConfig]):
    """See the module docstring. ``approver`` may also be set in code."""

    name: ClassVar[str] = "tool_guard"

    def __init__(self, config: ToolGuardConfig, approver: Approver | None = None) -> None:
        super().__init__(config)
        self._rules = [(r.tool, re.compile(r.pattern)) for r in config.arguments]
        self.pauses = config.approval == "pause"
        named = config.approval if config.approval and not self.pauses else None
        self.approver = approver or (_import(named) if named else None)

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        reason = self._name_refusal(call.name) or self._argument_refusal(call)
        if reason is None:
            reason = self._limit_refusal(call.name, ctx)
        if reason is None and self.approver is not None and listed(call.name, self.config.approve):
            reason = await self._approval(call, ctx)
        if reason is not None:
            return ToolResult.refused(reason)
        return await next(call, ctx)

    async def needs_approval(self, call: ToolCall, ctx: ReplyContext) -> str | None:
        if not self.pauses or not listed(call.name, self.config.approve):
            return None
        if self._name_refusal(call.name) or self._argument_refusal(call):
            return None  # refused anyway, by on_tool_call: no human is asked
        return f"the call of {call.name!r} needs a human's approval"

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        """Offer the model only the tools it may call (proxy, and in-process model calls).

        Every shape a request can offer a tool in is filtered: ``tools`` (chat, Responses
        and Anthropic Messages; function, custom and built-in tools, the last matched by their
        type, e.g.
        ``web_search_preview``), the legacy ``functions``, and a ``tool_choice`` or
        ``function_call`` naming a removed tool (an ``allowed_tools`` choice is narrowed)."""
        body = call.body
        changed: dict[str, list[Any]] = {}
        for field in ("tools", "functions"):
            offered = body.get(field)
            if isinstance(offered, list) and offered:
                kept = [k for t in offered if (k := self._offered(t)) is not None]
                if kept != offered:  # a tool dropped, or an MCP server's list narrowed
                    changed[field] = kept
        if not changed:
            return await next(call, ctx)
        new = {**body, **changed}
        names = {_tool_name(t) for field in ("tools", "functions") for t in _list(new, field)}
        for field, choice_field in (("tools", "tool_choice"), ("functions", "function_call")):
            if field in changed and not changed[field]:
                new.pop(field)
                new.pop(choice_field, None)
                if field == "tools":
                    new.pop("parallel_tool_calls", None)
            elif choice_field in new:
                choice = _narrowed(new[choice_field], names)
                if choice is None:
                    new.pop(choice_field)
                else:
                    new[choice_field] = choice
        return await next(call.with_body(new), ctx)

    def _offered(self, tool: Any) -> Any:
        """``tool`` as it may be offered, or None. Every name it carries must pass (a
        Responses tool with a decoy ``function.name`` is judged by both); an MCP server's
        ``allowed_tools`` is narrowed to the tools that pass, and a server left with none
        is dropped."""
        if any(self._name_refusal(name) is not None for name in tool_names(tool)):
            return None
        if not isinstance(tool, dict) or tool.get("type") != "mcp":
            return tool
        listed = tool.get("allowed_tools")
        names = listed.get("tool_names") if isinstance(listed, dict) else listed
        if not isinstance(names, list):
            return tool  # every tool of the server: only its type and label were checked
        kept = [n for n in names if isinstance(n, str) and self._name_refusal(n) is None]
        if len(kept) == len(names):
            return tool
        if not kept:
            return None
        narrowed = {**listed, "tool_names": kept} if isinstance(listed, dict) else kept
        return {**tool, "allowed_tools": narrowed}

    async def returned_tool_call(
        self, call: ToolCall, conversation: Conversation, ctx: Context
    ) -> str | None:
        """Proxy: refuse a returned call of a tool the policy denies, of a tool the request
        did not offer, or whose arguments an ``arguments`` rule matches."""
        reason = self._name_refusal(call.name)
        if reason is None and call.name not in conversation.offered:
            reason = f"the tool {call.name!r} was not offered"
        return reason or self._argument_refusal(call)

    def tool_offered(self, name: str) -> bool:
        """MCP ``tools/list``: a tool ``allow``/``deny`` exclude is not shown."""
        return self._name_refusal(name) is None

    def _name_refusal(self, name: str) -> str | None:
        if listed(name, self.config.deny):
            return f"the tool {name!r} is not allowed"
        if self.config.allow is not None and not listed(name, self.config.allow):
            return f"the tool {name!r} is not allowed"
        return None

    def _argument_refusal(self, call: ToolCall) -> str | None:
        text = orjson.dumps(call.arguments, default=str).decode()
        for tool, pattern in self._rules:
            if fnmatch.fnmatchcase(call.name, tool) and pattern.search(text):
                return f"these arguments are not allowed for {call.name!r}"
        return None

    def _limit_refusal(self, tool: str, ctx: ReplyContext) -> str | None:
        """Count this call against every limit that applies; the first one it exceeds
        decides (refuse, end the reply, or raise)."""
        everything = ToolLimit(
            tool="*",
            max_per_reply=self.config.max_per_reply,
            max_per_session=self.config.max_per_session,
        )
        applying = [(everything, "tool calls")] + [
            (limit, f"calls of {limit.tool!r}")
            for limit in self.config.limits
            if listed(tool, (limit.tool,))
        ]
        over: tuple[str, OnLimit] | None = None
        for limit, what in applying:
            key = "calls" if limit is everything else f"calls:{limit.tool}"
            in_reply = _bump(ctx.state.setdefault(self.slot, {}), key)
            in_session = _bump(ctx.session.setdefault(self.slot, {}), key)
            on_limit = limit.on_limit or self.config.on_limit
            if over is None and limit.max_per_reply is not None and in_reply > limit.max_per_reply:
                over = (f"at most {limit.max_per_reply} {what} per reply", on_limit)
            elif (
                over is None
                and limit.max_per_session is not None
                and in_session > limit.max_per_session
            ):
                over = (f"at most {limit.max_per_session} {what} per session", on_limit)
        if over is None:
            return None
        text, on_limit = over
        if on_limit == "error":
            raise ToolLimitExceeded(f"tool call limit reached: {text}")
        if on_limit == "end":
            ctx.stop = True
        return f"the tool call limit is reached ({text}); answer with what you have"

    async def _approval(self, call: ToolCall, ctx: ReplyContext) -> str | None:
        assert self.approver is not None
        verdict = self.approver(call, ctx)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if verdict is True:
            return None
        if isinstance(verdict, str) and verdict:
            return verdict
        return f"a human did not approve the call of {call.name!r}"


def _tool_name(tool: Any) -> str:
    """The name of a chat or Responses tool, a legacy function, or a tool choice: a
    function's or custom tool's name, else a built-in tool's type; "" if none."""
    if not isinstance(tool, dict):
        return ""
    for key in ("function", "custom"):
        inner = tool.get(key)
        if isinstance(inner, dict):
            name = inner.get("name")
            return name if isinstance(name, str) else ""
    name = tool.get("name")
    if isinstance(name, str):
        return name
    kind = tool.get("type")
    return kind if isinstance(kind, str) and kind not in ("function", "custom") else ""


def _list(body: dict[str, Any], field: str) -> list[Any]:
    value = body.get(field)
    return value if isinstance(value, list) else []


_ANTHROPIC_CHOICES = frozenset({"auto", "any", "none"})


def _narrowed(choice: Any, names: set[str]) -> Any:
    """``choice`` (a ``tool_choice`` or ``function_call``) kept to the tools still offered;
    None when it names only removed ones. Strings (``auto``, ``required``) and Anthropic's
    choices that name no tool (``{"type": "auto" | "any" | "none"}``) stay."""
    if not isinstance(choice, dict) or choice.get("type") in _ANTHROPIC_CHOICES:
        return choice
    if choice.get("type") == "allowed_tools":
        inner = choice.get("allowed_tools")  # chat nests it; Responses does not
        holder = inner if isinstance(inner, dict) else choice
        listed = holder.get("tools")
        if not isinstance(listed, list):
            return choice
        kept = [t for t in listed if _tool_name(t) in names]
        if not kept:
            return None
        if holder is choice:
            return {**choice, "tools": kept}
        return {**choice, "allowed_tools": {**holder, "tools": kept}}
    name = _tool_name(choice)
    return None if name and name not in names else choice


def _bump(counts: dict[str, int], key: str) -> int:
    counts[key] = counts.get(key, 0) + 1
    return counts[key]


def _import(path: str) -> Approver:
    module, _, attribute = path.partition(":")
    approver: Approver = getattr(importlib.import_module(module), attribute)
    return approver
