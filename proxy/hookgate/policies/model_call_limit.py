"""``model_call_limit`` (SDK): at most N model calls per agent reply.

YAML::

    - model_call_limit:
        max_calls: 8          # model calls one reply may make
        on_limit: wrap_up     # wrap_up | stop

``wrap_up`` lets the last allowed call be the answer: before it, the reply is told to wrap
up (``ctx.wrap_up``: the message and ``tool_choice: none``, applied as for ``reply_budget``);
after it, the reply stops. ``stop`` ends the reply once ``max_calls`` calls were made.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from hookgate.pipeline.agent import ReplyContext
from hookgate.pipeline.hooks import Policy

LAST_CALL = (
    "This is your last model call for this reply. Do not call any tools: answer the user "
    "now with what you have."
)


class ModelCallLimitConfig(BaseModel):
    """Settings of the ``model_call_limit`` policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_calls: int = Field(ge=1)
    on_limit: Literal["wrap_up", "stop"] = "wrap_up"
    message: str = LAST_CALL


class ModelCallLimitPolicy(Policy):
    """See the module docstring."""

    name: ClassVar[str] = "model_call_limit"
    Config = ModelCallLimitConfig
    runs_in = frozenset({"sdk"})
    config: ModelCallLimitConfig

    async def should_stop_after_turn(self, ctx: ReplyContext) -> bool:
        limit = self.config.max_calls
        if self.config.on_limit == "wrap_up" and ctx.turns == limit - 1 and ctx.wrap_up is None:
            ctx.wrap_up = self.config.message
        return ctx.turns >= limit
