"""``rate_limit``: requests and tokens per minute per key, team or model; tool calls per
minute per key, team or tool.

YAML::

    - rate_limit:
        limits:
          - {scope: key, rpm: 60, tpm: 100000}
          - {scope: team, rpm: 600}
          - {scope: model, tpm: 2000000}
        tool_limits:                             # tool calls through the MCP gateway
          - {scope: key, rpm: 120}
          - {scope: tool, rpm: 10}                # each tool's own calls

A tool call over a ``tool_limits`` rate is refused with a tool result the model reads
(``Tool call refused: ...``, with when to retry), like any refused call, and the tool
does not run.

Tokens are the request's estimate (prompt tokens plus its output ceiling), charged when
it is admitted, as providers do. A request over a limit gets 429 ``rate_limit_exceeded``
with ``Retry-After``; every response carries OpenAI-style ``x-ratelimit-limit-requests``,
``x-ratelimit-remaining-requests``, ``x-ratelimit-reset-requests`` (and ``-tokens``) for
the tightest limit. Counters live in the process's memory beside a SQLite store it keeps
alone, in the SQLite file where processes share it (``--workers``, ``?shared=true``), in
Redis for replicas: exact across every process either way.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from hookgate.budgets import tokens as token_estimates
from hookgate.budgets.rates import Rate, RateCheck, RateLimiter, RateResult
from hookgate.errors import RateLimited
from hookgate.pipeline.agent import NextTool, ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.hooks import Next, Policy, PolicyConfig
from hookgate.pipeline.services import Services
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.policies.budget import REFUSALS


class RateConfig(PolicyConfig):
    """One rate limit."""

    scope: Literal["key", "team", "model"]
    """Whose requests the rate counts: each key, team or model on its own."""
    rpm: Annotated[int, Field(gt=0)] | None = None
    """Requests per minute."""
    tpm: Annotated[int, Field(gt=0)] | None = None
    """Tokens per minute (the request's estimate: prompt plus output ceiling)."""

    @model_validator(mode="after")
    def _some_rate(self) -> RateConfig:
        if self.rpm is None and self.tpm is None:
            raise ValueError("a rate limit needs rpm, tpm or both")
        return self


class ToolRateConfig(PolicyConfig):
    """One rate of tool calls."""

    scope: Literal["key", "team", "tool"]
    """Whose tool calls the rate counts: each key, team or tool on its own."""
    rpm: Annotated[int, Field(gt=0)]
    """Tool calls per minute."""


class RateLimitConfig(PolicyConfig):
    """Settings of the ``rate_limit`` policy."""

    limits: list[RateConfig] = Field(default_factory=list)
    """The YAML rates. Rates granted at run time (``/admin/keys``, ``/admin/teams``) apply
    beside them: a granted ``rpm`` (or ``tpm``) replaces the YAML ``rpm`` (or ``tpm``) of
    its scope, and leaves the other field as the YAML says."""
    default_max_output_tokens: Annotated[int, Field(gt=0)] = 4096
    """The output counted for a request that sets no maximum (``tpm``)."""
    tool_limits: list[ToolRateConfig] = Field(default_factory=list)
    """Tool calls per minute (the MCP gateway's ``tools/call``)."""


class RateLimitPolicy(Policy[RateLimitConfig]):
    """See the module docstring."""

    name = "rate_limit"
    metrics = (REFUSALS,)
    runs_in = frozenset({"proxy"})  # routes, upstreams and the shared ledger are the proxy's
    rates: RateLimiter

    def __init__(self, config: RateLimitConfig) -> None:
        super().__init__(config)
        if any(limit.tpm is not None for limit in config.limits):
            token_estimates.warm()  # the first request does not pay for loading the tokenizer

        self.rates_configured = tuple(Rate(r.scope, r.rpm, r.tpm) for r in config.limits)

    def attach(self, services: Services) -> None:
        self.rates = services.rates

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        values = {"key": ctx.identity.key_id, "team": ctx.identity.team, "model": call.model}
        requests: list[RateCheck] = []
        token_checks: list[RateCheck] = []
        estimate: int | None = None
        granted = ctx.identity.rates  # the admin API's: each field replaces the YAML one
        kept = (_beside(rate, granted) for rate in self.rates_configured)
        rates = [rate for rate in kept if rate is not None] + list(granted)
        for limit in rates:
            value = values.get(limit.scope)
            if not value:
                continue
            if limit.rpm is not None:
                requests.append(RateCheck(f"req|{limit.scope}={value}", limit.rpm, 1))
            if limit.tpm is not None:
                if estimate is None:
                    estimate = await token_estimates.off_loop(
                        len(call.payload.to_bytes()),
                        lambda: token_estimates.prompt_tokens(call.api, call.model, call.body),
                    )
                    estimate += token_estimates.max_output_tokens(
                        call.body, self.config.default_max_output_tokens
                    )
                if estimate > limit.tpm:  # it would never fit: say so, and count nothing
                    ctx.observation.count(REFUSALS, self.slot, limit.scope)
                    raise RateLimited(
                        f"Request too large for {limit.scope}={value}: it needs up to "
                        f"{estimate} tokens (prompt plus output ceiling), more than the limit "
                        f"of {limit.tpm} tokens per minute. Send a shorter prompt or set a "
                        "lower max_tokens.",
                        kind="tokens",
                        retry_after=None,
                        headers={},
                    )
                token_checks.append(RateCheck(f"tok|{limit.scope}={value}", limit.tpm, estimate))
        headers: dict[str, str] = {}
        for kind, checks in (("requests", requests), ("tokens", token_checks)):
            if not checks:
                continue
            result = await self.rates.hit(checks)
            headers.update(_headers(kind, result))
            if not result.allowed:
                assert result.check is not None
                scope = result.check.key.split("|", 1)[1]
                ctx.observation.count(REFUSALS, self.slot, scope.split("=", 1)[0])
                raise RateLimited(
                    f"Rate limit reached for {scope}: {result.check.cap} {kind} per minute. "
                    f"Retry in {result.reset_s:.1f}s.",
                    kind=kind,
                    retry_after=result.reset_s,
                    headers=headers,
                )
        ctx.response_headers.update(headers)
        return await next(call, ctx)

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        """The MCP gateway: a tool call over a ``tool_limits`` rate is refused, not run."""
        values = {"key": ctx.key_id, "team": ctx.team, "tool": call.name}
        checks = [
            RateCheck(f"tool|{limit.scope}={value}", limit.rpm, 1)
            for limit in self.config.tool_limits
            if (value := values[limit.scope])
        ]
        if checks:
            result = await self.rates.hit(checks)
            if not result.allowed:
                assert result.check is not None
                scope = result.check.key.split("|", 1)[1]
                return ToolResult.refused(
                    f"rate limit of {result.check.cap} tool calls per minute reached for "
                    f"{scope}; retry in {result.reset_s:.0f}s"
                )
        return await next(call, ctx)


def _headers(kind: str, result: RateResult) -> dict[str, str]:
    if result.check is None:
        return {}
    return {
        f"x-ratelimit-limit-{kind}": str(result.check.cap),
        f"x-ratelimit-remaining-{kind}": str(max(0, result.remaining)),
        f"x-ratelimit-reset-{kind}": f"{result.reset_s:.3f}s",
    }


def _beside(rate: Rate, granted: tuple[Rate, ...]) -> Rate | None:
    """``rate`` without the fields a granted rate of its scope replaces (None when it has
    none left)."""
    for grant in granted:
        if grant.scope == rate.scope:
            rpm = None if grant.rpm is not None else rate.rpm
            rate = Rate(rate.scope, rpm, None if grant.tpm is not None else rate.tpm)
    return rate if rate.rpm is not None or rate.tpm is not None else None
