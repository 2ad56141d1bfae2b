"""``budget``: USD and token limits per key, team, user, agent, reply or model — never overspent.

YAML::

    - budget:
        limits:
          - {scope: team, window: day, usd: 50}
          - {scope: reply, tokens: 20000}          # window defaults to total
          - {scope: key, window: month, usd: 10, tokens: 2000000}
        default_max_output_tokens: 4096   # worst case when a request sets no max
        image_tokens: 1600                # prompt tokens reserved per image part
        on_unpriced: error                # a model without a price: refuse the request
                                          #   (400), or continue (only token limits apply)
        on_error: error                   # store down: refuse the request (503), or
                                          #   continue unchecked

Before the call the worst case — estimated prompt tokens (tiktoken) plus the output
ceiling, priced at the dearest of the alias's targets — is reserved against every
applicable limit, all or nothing; a request that does not fit gets 429
``budget_exceeded`` naming the scope (with ``Retry-After`` when only reservations in
flight fill it). After the call the reservation is replaced by the provider's reported
usage, written to the store before the response completes; a call that fails before
any output releases it (a stream that sent only its opening events too: a failed
attempt is never billed), and a stream cut short after its first output (a client that
hangs up, an upstream that fails mid-way) is charged for what was produced. Listed after
``fallback``, each attempt of a stream continued mid-way is charged so, and the request
reports the sum.
The promise rests on the estimate being an upper bound: tiktoken's count plus chat
framing; a provider that counts more prompt tokens is logged, and its spend recorded.
Streams: the policy :attr:`~hookgate.pipeline.hooks.Policy.needs_usage`, so the usage
chunk is asked for upstream when the client did not ask for it, and removed from what
the client sees (:mod:`hookgate.pipeline.runner`); a stream that ends without usage is
charged by counting its text. Responses carry
``x-hookgate-budget-remaining-usd`` and ``-tokens`` (after this request's reservation).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Annotated, Literal

from pydantic import Field, model_validator

from hookgate.budgets import tokens as token_estimates
from hookgate.budgets.ledger import Ledger, Refusal, UsageRow
from hookgate.budgets.limits import Counter, Limit, counters
from hookgate.budgets.pricing import Pricing
from hookgate.errors import BudgetExceeded, InvalidRequest, StoreUnavailable
from hookgate.ids import UniqueIds
from hookgate.pipeline.hooks import Next, Policy, PolicyConfig
from hookgate.pipeline.observe import Metric
from hookgate.pipeline.services import Services
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.policies.vocabulary import OnFailure
from hookgate.wire import sse
from hookgate.wire.sse import EventStream
from hookgate.wire.usage import Charge, Usage, usage_of

log = logging.getLogger("hookgate")

REFUSALS = Metric(
    "hookgate_refusals",
    "Requests refused by the budget or rate_limit policy, by scope",
    ("policy", "scope"),
)
REMAINING = Metric(
    "hookgate_budget_remaining_usd",
    "USD left in a budget window after the last reservation (value: the model; the team "
    "or key id with server.metric_labels)",
    ("scope", "window", "value"),
    kind="gauge",
)

BUSY_RETRY_AFTER_S = 1.0
MAX_KEPT_BYTES = 8 * 1024 * 1024


class LimitConfig(PolicyConfig):
    """One limit."""

    scope: Literal["key", "team", "user", "agent", "reply", "model"]
    """Whose spend the limit counts: each key, team, user, agent, agent reply or model on its
    own."""
    window: Literal["minute", "hour", "day", "month", "total"] = "total"
    """The period the spend is counted over (calendar periods in UTC; ``total``: ever)."""
    usd: Annotated[float, Field(gt=0)] | None = None
    """The most USD the scope may spend in the window."""
    tokens: Annotated[int, Field(gt=0)] | None = None
    """The most tokens (input plus output) the scope may use in the window."""

    @model_validator(mode="after")
    def _some_cap(self) -> LimitConfig:
        if self.usd is None and self.tokens is None:
            raise ValueError("a limit needs usd, tokens or both")
        return self


class BudgetConfig(PolicyConfig):
    """Settings of the ``budget`` policy."""

    limits: list[LimitConfig] = Field(default_factory=list)
    """The YAML limits. Limits granted at run time (``/admin/keys``, ``/admin/teams``)
    apply beside them, each replacing the YAML limit of its scope and window; with none
    here, the policy enforces only those."""
    default_max_output_tokens: Annotated[int, Field(gt=0)] = 4096
    """The output reserved for a request that sets no maximum (its worst case)."""
    image_tokens: Annotated[int, Field(ge=0)] = token_estimates.IMAGE_TOKENS
    """Prompt tokens reserved per image part (see ``hookgate.budgets.tokens.IMAGE_TOKENS``;
    raise it for models that weight image tokens, e.g. ~50000 for gpt-4o-mini)."""
    on_unpriced: OnFailure = "error"
    """A model the price table lacks: ``error`` refuses the request (400
    ``model_unpriced``); ``continue`` serves it, bound by token limits only."""
    on_error: OnFailure = "error"
    """When the store cannot be read to check a limit: ``error`` refuses the request (503,
    fail closed); ``continue`` serves it unchecked (fail open: logged, and the response
    says so)."""


class BudgetPolicy(Policy[BudgetConfig]):
    """See the module docstring."""

    name = "budget"
    metrics = (REFUSALS, REMAINING)
    runs_in = frozenset({"proxy"})  # routes, upstreams and the shared ledger are the proxy's
    needs_usage = True
    ledger: Ledger
    pricing: Pricing

    def __init__(self, config: BudgetConfig) -> None:
        super().__init__(config)
        self.limits = tuple(Limit(c.scope, c.window, c.usd, c.tokens) for c in config.limits)
        self._reservation_ids = UniqueIds()
        token_estimates.warm()  # the first request does not pay for loading the tokenizer

    def attach(self, services: Services) -> None:
        self.ledger = services.ledger
        self.pricing = services.pricing
        self.metric_labels = services.metric_labels

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        identity = ctx.identity
        values = {"key": identity.key_id, "team": identity.team, "user": identity.user,
                  "agent": ctx.agent, "reply": ctx.reply_id, "model": call.model}  # fmt: skip
        now = time.time()
        granted = counters(identity.limits, values, now)  # the admin API's, by window
        replaced = {c.key for c in granted}
        charged = [c for c in counters(self.limits, values, now) if c.key not in replaced]
        charged += granted
        if not charged or call.api == "messages.count_tokens":  # counting tokens is free
            return await next(call, ctx)
        if call.api == "responses" and call.body.get("background") is True:
            # answered "queued": its usage is only known later, from a GET the relay
            # serves with no policy, so it could never be settled
            raise InvalidRequest(
                "a background response cannot be budgeted: its usage arrives later, outside "
                "the proxy. Send it without background: true, or from a key no budget covers.",
                param="background",
                code="background_not_budgetable",
            )
        size = len(call.payload.to_bytes())
        usd, tokens = await token_estimates.off_loop(size, lambda: self._worst_case(call))
        reservation = self._reservation_ids.next()
        observation = ctx.observation
        try:
            await self.ledger.load(charged)
            refusal = await self.ledger.reserve(reservation, charged, usd, tokens)
        except StoreUnavailable as exc:
            if self.config.on_error == "error":
                raise StoreUnavailable(
                    f"The budget cannot be checked, so the request was refused (budget "
                    f"on_error: error): {exc.message}"
                ) from exc
            log.warning(
                "budget: store unavailable, request %s served unchecked (on_error: "
                "continue): %s", ctx.request_id, exc.message,
            )  # fmt: skip
            observation.attributes["hookgate.budget.decision"] = "unchecked"
            ctx.response_headers["x-hookgate-budget"] = "unchecked: store unavailable"
            return await next(call, ctx)
        observation.attributes["hookgate.budget.reserved_usd"] = usd
        observation.attributes["hookgate.budget.reserved_tokens"] = tokens
        if refusal is not None:
            scope = refusal.counter.limit.scope
            observation.attributes["hookgate.budget.decision"] = f"refused:{scope}"
            observation.count(REFUSALS, self.slot, scope)
            raise _refused(refusal, usd, tokens)
        observation.attributes["hookgate.budget.decision"] = "reserved"
        ctx.state[self.slot] = (tokens, charged)
        await self._remaining_headers(ctx, charged)
        try:
            response = await next(call, ctx)
        except BaseException:
            await self.ledger.release(reservation)
            raise
        if response.stream is not None:
            metered = _metered(self, response, call, ctx, reservation)
            return dataclasses.replace(response, stream=metered)
        if response.status >= 300:
            await self.ledger.release(reservation)
            return response
        usage = usage_of(response.body.get("usage"))
        text = "" if usage is not None else token_estimates.output_text(call.api, response.body)
        model = response.target.model or call.model
        await self._settle(reservation, call, ctx, model, usage, text)
        return response

    def _worst_case(self, call: ModelCall) -> tuple[float, int]:
        prompt = token_estimates.prompt_tokens(
            call.api, call.model, call.body, self.config.image_tokens
        )
        output = (
            0  # an embedding is all input
            if call.api == "embeddings"
            else token_estimates.max_output_tokens(call.body, self.config.default_max_output_tokens)
        )
        worst = Usage(input_tokens=prompt, output_tokens=output)
        costs = [self.pricing.cost(t.model or call.model, worst) for t in call.targets]
        if any(c is None for c in costs) and self.config.on_unpriced == "error":
            raise InvalidRequest(
                f"model '{call.model}' has no price, so its spend cannot be budgeted; add it "
                "to `pricing:` (or set the budget policy's on_unpriced: continue)",
                param="model",
                code="model_unpriced",
            )
        return max((c for c in costs if c is not None), default=0.0), prompt + output

    def _estimate_usage(self, call: ModelCall, text: str) -> Usage:
        prompt = token_estimates.prompt_tokens(
            call.api, call.model, call.body, self.config.image_tokens
        )
        return Usage(input_tokens=prompt, output_tokens=token_estimates.count(call.model, text))

    async def _settle(
        self,
        reservation: str,
        call: ModelCall,
        ctx: Context,
        model: str,
        usage: Usage | None,
        text: str = "",
        started: Usage | None = None,
    ) -> None:
        """Charge ``usage`` (the response's own), else an estimate: the prompt's tokens and
        those of ``text``, the output seen; with ``started`` (the usage a stream's start
        reported, when it was cut before its final one) its input counts as reported."""
        estimated = usage is None
        if usage is None:
            size = len(call.payload.to_bytes()) + len(text)
            usage = await token_estimates.off_loop(size, lambda: self._estimate_usage(call, text))
            if started is not None:  # (a translated stream's start reports zeros)
                usage = dataclasses.replace(
                    started,
                    input_tokens=max(started.input_tokens, usage.input_tokens),
                    output_tokens=max(started.output_tokens, usage.output_tokens),
                )
        priced = self.pricing.cost(model, usage)
        cost = priced or 0.0
        ctx.observation.charge = Charge(usage, priced, estimated).plus(ctx.observation.charge)
        reserved, charged = ctx.state[self.slot]
        if usage.input_tokens + usage.output_tokens > reserved:
            log.warning(
                "request %s used %d tokens, more than the %d reserved (the provider counted "
                "more prompt tokens than estimated); a limit may be exceeded by the difference",
                ctx.request_id, usage.input_tokens + usage.output_tokens, reserved,
            )  # fmt: skip
        identity = ctx.identity
        row = UsageRow(
            ts=time.time(), request_id=ctx.request_id, model=call.model,
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=cost,
            key_id=identity.key_id, team=identity.team, user=identity.user, agent=ctx.agent,
            reply=ctx.reply_id, target=model, session=ctx.session_id,
        )  # fmt: skip
        try:
            await self.ledger.settle(reservation, charged, row)
        except StoreUnavailable as exc:
            # The call happened and the client gets its answer; the spend counts in memory
            # but is not durable. Loud, never silent.
            log.error(
                "budget: the spend of request %s (%d tokens, $%.6f) was not written: %s",
                ctx.request_id, usage.input_tokens + usage.output_tokens, cost, exc.message,
            )  # fmt: skip

    async def _remaining_headers(self, ctx: Context, charged: list[Counter]) -> None:
        """Report each counter's room (metrics) and the least of them (headers)."""
        usd: float | None = None
        tokens: int | None = None
        for counter in charged:
            left_usd, left_tokens = await self.ledger.remaining([counter])
            limit = counter.limit
            if left_usd is not None and (
                limit.scope == "model" or limit.scope in self.metric_labels
            ):
                ctx.observation.gauge(REMAINING, limit.scope, limit.window, counter.value,
                                      value=left_usd)  # fmt: skip
            if left_usd is not None:
                usd = left_usd if usd is None else min(usd, left_usd)
            if left_tokens is not None:
                tokens = left_tokens if tokens is None else min(tokens, left_tokens)
        if usd is not None:
            ctx.response_headers["x-hookgate-budget-remaining-usd"] = f"{usd:.6f}"
        if tokens is not None:
            ctx.response_headers["x-hookgate-budget-remaining-tokens"] = str(tokens)


def _refused(refusal: Refusal, usd: float, tokens: int) -> BudgetExceeded:
    limit = refusal.counter.limit
    where = f"{limit.scope} '{refusal.counter.value}'"
    window = "" if limit.window == "total" else f" per {limit.window}"
    cap = f"${limit.usd:g}" if refusal.unit == "usd" else f"{limit.tokens} tokens"
    asked = f"${usd:.6g}" if refusal.unit == "usd" else f"{tokens} tokens"
    capacity = limit.usd if refusal.unit == "usd" else limit.tokens
    if capacity is not None and (usd if refusal.unit == "usd" else tokens) > capacity:
        return BudgetExceeded(
            f"Budget exceeded: this request's worst case ({asked}: its prompt plus its "
            f"max_tokens, or the budget's default_max_output_tokens) is more than the whole "
            f"{cap}{window} of {where}; ask for fewer output tokens."
        )
    if refusal.exhausted:
        return BudgetExceeded(f"Budget exceeded: {where} has spent its {cap}{window}.")
    return BudgetExceeded(
        f"Budget busy: requests in flight for {where} hold its {cap}{window}; retry shortly.",
        retry_after=BUSY_RETRY_AFTER_S,
    )


async def _metered(
    policy: BudgetPolicy,
    response: ModelResponse,
    call: ModelCall,
    ctx: Context,
    reservation: str,
) -> AsyncGenerator[bytes, None]:
    """Pass the stream through; settle before its terminal event reaches the client.

    A stream cut short after its first output — the client hung up, the upstream failed
    mid-way — is settled too, with what was produced: the upstream was generating and
    bills for it, and a client must not be able to read a whole answer and leave before
    the last event to be charged nothing. A stream that ended before any output (no
    event, or only its opening: a role chunk, ``message_start``; an attempt the
    ``fallback`` policy gave up on at its first-token limit) releases its reservation.
    """
    stream: EventStream | None = response.stream
    assert stream is not None
    seen: list[bytes] = []
    kept = 0
    settled = False
    produced = False
    terminal = sse.terminal_check(call.api)

    async def settle() -> None:
        facts = ctx.observation.stream_facts
        usage = facts.usage if facts else None
        started = None
        if facts is not None and facts.usage_partial:  # cut before its final usage
            started, usage = usage, None
        text = (
            ""
            if usage is not None
            else await token_estimates.off_loop(kept, lambda: _streamed_text(call.api, seen))
        )
        model = response.target.model or call.model
        await policy._settle(reservation, call, ctx, model, usage, text, started)

    try:
        async for events in stream:
            if kept < MAX_KEPT_BYTES:  # to count the text if no usage arrives
                seen.append(events)
                kept += len(events)
            produced = produced or sse.carries_output(call.api, events)
            if any(terminal(b) for b in sse.split(events)):
                # settled once: a client that leaves meanwhile cancels the wait, not the
                # charge (the finally clause must not charge it again)
                settled = True
                await asyncio.shield(settle())
            yield events
    finally:
        try:
            # shielded: the client's cancellation must not cancel the charge (or the
            # release) as well
            if settled:
                pass
            elif produced:
                await asyncio.shield(settle())
            else:
                await asyncio.shield(policy.ledger.release(reservation))
        finally:
            await stream.aclose()


def _streamed_text(api: str, seen: list[bytes]) -> str:
    """What the model wrote in the events seen (text, tool-call arguments, ...)."""
    return "".join(
        token_estimates.output_text(api, data)
        for block in sse.split(b"".join(seen))
        if isinstance(data := sse.json_of(block), Mapping)
    )
