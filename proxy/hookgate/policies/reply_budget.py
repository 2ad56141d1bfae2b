"""``reply_budget`` (SDK): a weighted token budget per agent reply.

YAML::

    - reply_budget:
        tokens: 20000                       # weighted tokens one reply may use
        weights: {input: 1.0, output: 4.0, cached_input: 0.1, reasoning: 4.0}
        message: "Your budget for this reply is spent. ..."   # what the agent is told
        grace_turns: 1                      # model calls allowed after the wrap-up

Usage is what the provider reported for each model call of the reply (adapters pass it to
:meth:`Driver.after_turn <hookgate.sdk.driver.Driver.after_turn>`). When the budget is
spent the reply is told to wrap up: ``ctx.wrap_up`` is set, so the next model call carries
the message and ``tool_choice: none`` (applied by :meth:`Driver.model_call
<hookgate.sdk.driver.Driver.model_call>` in-process, or natively by the framework's
adapter). After ``grace_turns`` more model calls the reply is stopped.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from hookgate.pipeline.agent import ReplyContext
from hookgate.pipeline.hooks import Policy, PolicyConfig
from hookgate.wire.usage import Usage

WRAP_UP = (
    "Your budget for this reply is spent. Do not call any more tools: answer the user now "
    "with what you have, and say briefly what is left undone."
)


class Weights(PolicyConfig):
    """Weight of each kind of token (cached input is part of input; reasoning of output)."""

    input: float = Field(1.0, ge=0)
    """Weight of an input token not read from the prompt cache."""
    output: float = Field(4.0, ge=0)
    """Weight of a visible output token."""
    cached_input: float = Field(0.1, ge=0)
    """Weight of an input token read from the prompt cache."""
    reasoning: float = Field(4.0, ge=0)
    """Weight of a reasoning token."""

    def cost(self, usage: Usage) -> float:
        """Weighted tokens of ``usage``."""
        fresh_input = usage.input_tokens - usage.cached_input_tokens
        visible_output = usage.output_tokens - usage.reasoning_tokens
        return (
            fresh_input * self.input
            + usage.cached_input_tokens * self.cached_input
            + visible_output * self.output
            + usage.reasoning_tokens * self.reasoning
        )


class ReplyBudgetConfig(PolicyConfig):
    """Settings of the ``reply_budget`` policy."""

    tokens: float = Field(gt=0)
    """Weighted tokens one agent reply may use."""
    weights: Weights = Field(default_factory=Weights)
    """How much each kind of token counts."""
    message: str = WRAP_UP
    """What the agent is told when the budget is spent (with ``tool_choice: none``)."""
    grace_turns: int = Field(1, ge=0)
    """Model calls allowed after the wrap-up before the reply is stopped."""


class ReplyBudgetPolicy(Policy[ReplyBudgetConfig]):
    """See the module docstring."""

    name: ClassVar[str] = "reply_budget"
    runs_in = frozenset({"sdk"})

    async def should_stop_after_turn(self, ctx: ReplyContext) -> bool:
        state = ctx.state.setdefault(self.slot, {})
        spent = self.config.weights.cost(ctx.usage)
        state["spent"] = spent
        if spent < self.config.tokens:
            return False
        if "wrapped_at" not in state:
            state["wrapped_at"] = ctx.turns
            ctx.wrap_up = self.config.message
            return False
        return bool(ctx.turns - state["wrapped_at"] > self.config.grace_turns)
