"""``model_call_limit`` (SDK): at most N model calls per agent reply, and per session.

YAML::

    - model_call_limit:
        max_per_reply: 8      # model calls one reply may make (LangChain's run_limit)
        max_per_session: 50   # model calls all replies of a session may make (thread_limit)
        on_limit: wrap_up     # wrap_up | end | error

``wrap_up`` lets the last allowed call be the answer: before it, the reply is told to wrap
up (``ctx.wrap_up``: the message and ``tool_choice: none``, applied as for ``reply_budget``);
after it, the reply ends. ``end`` (LangChain's ``end``) ends the reply once its calls are
used. ``error`` aborts the reply with a 429 ``model_call_limit`` error once they are. A
session's count carries over from reply to reply (the session is the framework's thread or
conversation id); a reply's allowance is whichever of the two limits leaves it fewer calls.
A reply that begins with its session's calls used makes none: with ``error`` it is refused
(429) before it starts; otherwise it is stopped from the start, and its model calls are
answered by hookgate, without the model, with a final message that says so.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from hookgate.errors import HookgateError
from hookgate.pipeline.agent import NextReply, Reply, ReplyContext
from hookgate.pipeline.hooks import Policy, PolicyConfig

LAST_CALL = (
    "This is your last model call for this reply. Do not call any tools: answer the user "
    "now with what you have."
)


class ModelCallLimitExceeded(HookgateError):
    """A reply or session used its model calls (``on_limit: error``)."""

    status = 429
    type = "rate_limit_error"
    code = "model_call_limit"


class ModelCallLimitConfig(PolicyConfig):
    """Settings of the ``model_call_limit`` policy."""

    max_per_reply: int | None = Field(None, ge=1)
    """Model calls one agent reply may make."""
    max_per_session: int | None = Field(None, ge=1)
    """Model calls all replies of a session may make."""
    on_limit: Literal["wrap_up", "end", "error"] = "wrap_up"
    """At the limit: ``wrap_up`` (the last allowed call is told to answer), ``end`` (the reply ends)
    or ``error`` (a 429 ``model_call_limit``)."""
    message: str = LAST_CALL
    """What the agent is told on its last allowed call (``wrap_up``)."""

    @model_validator(mode="after")
    def _some_limit(self) -> ModelCallLimitConfig:
        if self.max_per_reply is None and self.max_per_session is None:
            raise ValueError("set max_per_reply, max_per_session, or both")
        return self


class ModelCallLimitPolicy(Policy[ModelCallLimitConfig]):
    """See the module docstring."""

    name: ClassVar[str] = "model_call_limit"
    runs_in = frozenset({"sdk"})

    async def on_reply(self, reply: Reply, ctx: ReplyContext, next: NextReply) -> Any:
        limit = self.config.max_per_session
        if limit is not None and self._session(ctx)["calls"] >= limit:
            if self.config.on_limit == "error":
                raise ModelCallLimitExceeded("model call limit reached for this session")
            ctx.stop = True  # its model calls get hookgate's final message instead
        return await next(reply, ctx)

    async def should_stop_after_turn(self, ctx: ReplyContext) -> bool:
        session = self._session(ctx)
        session["calls"] += 1
        limits = self.config
        in_reply = None if limits.max_per_reply is None else limits.max_per_reply - ctx.turns
        in_session = (
            None if limits.max_per_session is None else limits.max_per_session - session["calls"]
        )
        remaining = min(left for left in (in_reply, in_session) if left is not None)
        if remaining <= 0:
            if limits.on_limit == "error":
                scope = "reply" if in_reply is not None and in_reply <= 0 else "session"
                raise ModelCallLimitExceeded(f"model call limit reached for this {scope}")
            return True
        if limits.on_limit == "wrap_up" and remaining == 1 and ctx.wrap_up is None:
            ctx.wrap_up = limits.message
        return False

    def _session(self, ctx: ReplyContext) -> dict[str, int]:
        """The session's count of model calls (``{"calls": n}``)."""
        counted: dict[str, int] = ctx.session.setdefault(self.slot, {"calls": 0})
        return counted
