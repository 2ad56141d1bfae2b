"""``fallback``: retries, fallback across targets, timeouts, circuit breakers, load balancing.

YAML (every key optional)::

    - fallback:
        retries: 2                # extra tries of the same target before moving on
        backoff_base_s: 0.25      # full jitter: before retry n (from 1) wait
                                  #   U(0, min(backoff_max_s, base * 2**(n-1)))
        backoff_max_s: 8
        retry_after_max_s: 30     # honour Retry-After / retry-after-ms up to this; asked
                                  # for longer, the next target is tried at once
        attempt_timeout_s: 60     # until the first byte: a stream's response headers, a
                                  #   non-streamed call's whole answer
        first_token_timeout_s: 10 # streams: from the request to the first output (text,
                                  #   reasoning or tool-call delta; not the opening events)
        reasoning_timeout_s: 300  # a model that reasons: its first token (streams), its
                                  #   whole answer (non-streamed, if longer than the above)
        stall_timeout_s: 30       # streams: longest gap between events after the first output
        deadline_s: 900           # the whole request, every retry and wait included
        continue_streams: true    # a stream that fails after its first output is continued
                                  #   from a next attempt (false: it ends with an error event)
        retry_on: [connect, timeout, reset, bad_response, stall, "408", "409", "429", "5xx"]
        fallback_on: [timeout]    # of those, the ones that go to the next target at once
        fallback_on_content_policy: false
        balance: weighted         # or least_inflight, among targets of equal priority
        circuit: {failures: 5, failure_rate: 0.5, window_s: 30, min_requests: 10,
                  open_s: 5, open_max_s: 20}

Targets come from the alias (``models:``), tried by ascending ``priority`` (default:
list order). A failure listed in ``retry_on`` is retried on the same target, then moves
to the next; one listed in ``fallback_on`` moves to the next at once. Any other failure
(400, 403, 404, 422, ...) is returned at once, since it would fail everywhere — except a
context-length error, which moves to the next target whose context window is larger
(its ``context_window``, else the shipped model table's; a target whose window neither
knows is tried), a provider refusing hookgate's own credentials (its 401: the next target
has others), and a content-policy refusal when configured (it is never retried on the
same target). A target whose breaker is open is skipped; the breaker stays open
``open_s`` at first, twice as long after each failed probe (up to ``open_max_s``), and
closes on the first probe that succeeds. Nothing waits past ``deadline_s``.

A model reasons when its target says ``reasoning: true`` or the shipped model table
(:mod:`hookgate.wire.models`) says so; ``reasoning_timeout_s`` then replaces
``first_token_timeout_s``, since such a model may think for minutes before its first
token. Its response headers still come at once: ``attempt_timeout_s`` still bounds them.

Streams fall back before their first output reaches the client: the policy holds the
opening events (a role chunk, ``response.created``, ``message_start``) until the first
output arrives, then answers. After it, a stream that fails (cut, stalled, malformed) is
continued from a next attempt, so the client reads one whole answer
(:mod:`hookgate.policies.continuation`); when none continues it, the stream ends with an
error event (the client's SDK raises it), never a quiet truncation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import random
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from itertools import groupby
from typing import Annotated, Any, Literal

from pydantic import Field

from hookgate.errors import UpstreamError, UpstreamStatusError, UpstreamTimeout, UpstreamUnavailable
from hookgate.pipeline.hooks import Next, Policy, PolicyConfig
from hookgate.pipeline.observe import CANCELLED, Metric
from hookgate.pipeline.types import Context, ModelCall, ModelResponse, Target
from hookgate.policies.continuation import CONTINUATIONS, Resume, continuable
from hookgate.resilience.backoff import full_jitter, retry_after
from hookgate.resilience.breaker import STATE_VALUES, BreakerSettings, CircuitBreaker
from hookgate.resilience.classify import (
    DEFAULT_FALLBACK_ON,
    DEFAULT_RETRY_ON,
    StallError,
    matches,
    reason,
)
from hookgate.wire.models import context_window_of, limits_of
from hookgate.wire.sse import EventStream, carries_output

RETRIES = Metric("hookgate_retries", "Retries of the same target, by reason", ("target", "reason"))
FALLBACKS = Metric(
    "hookgate_fallbacks",
    "Moves from a target to the next, by reason (circuit_open when skipped)",
    ("target", "reason"),
)
CIRCUIT_STATE = Metric(
    "hookgate_circuit_state",
    "Breaker per target: 0 closed, 1 half-open, 2 open",
    ("target",),
    kind="gauge",
    merge="max",  # with workers, each has its own breakers: the worst of them
)


class CircuitConfig(PolicyConfig):
    """Circuit breaker settings (per target)."""

    failures: Annotated[int, Field(gt=0)] = 5
    """Consecutive failures that open a target's breaker."""
    failure_rate: Annotated[float, Field(gt=0, le=1)] = 0.5
    """The failed share of requests over ``window_s`` that opens it."""
    window_s: Annotated[float, Field(gt=0)] = 30.0
    """The window ``failure_rate`` is measured over."""
    min_requests: Annotated[int, Field(gt=0)] = 10
    """Requests in the window before ``failure_rate`` counts."""
    open_s: Annotated[float, Field(gt=0)] = 5.0
    """How long the breaker stays open the first time."""
    open_max_s: Annotated[float, Field(gt=0)] = 20.0
    """The longest it stays open: each failed probe doubles the interval up to this (at
    or below ``open_s``, the interval never grows)."""


class FallbackConfig(PolicyConfig):
    """Settings of the ``fallback`` policy."""

    retries: Annotated[int, Field(ge=0, le=10)] = 2
    """Extra tries of the same target before moving on to the next."""
    backoff_base_s: Annotated[float, Field(ge=0)] = 0.25
    """Full jitter: before retry n (from 1) wait U(0, min(``backoff_max_s``, base * 2**(n-1)))."""
    backoff_max_s: Annotated[float, Field(ge=0)] = 8.0
    """The longest backoff wait."""
    retry_after_max_s: Annotated[float, Field(ge=0)] = 30.0
    """``Retry-After`` / ``retry-after-ms`` honoured up to this; asked for longer, the next target
    is tried at once."""
    attempt_timeout_s: Annotated[float, Field(gt=0)] = 60.0
    """Until the first byte: a stream's response headers, a non-streamed call's whole answer."""
    first_token_timeout_s: Annotated[float, Field(gt=0)] = 10.0
    """Streams: from the request to the first output (text, reasoning or tool-call delta; not the
    opening events)."""
    reasoning_timeout_s: Annotated[float, Field(gt=0)] = 300.0
    """A model that reasons: its first token (streams), its whole answer (non-streamed, if longer
    than ``attempt_timeout_s``)."""
    stall_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    """Streams: the longest gap between events after the first output."""
    deadline_s: Annotated[float, Field(gt=0)] = 900.0
    """The whole request, every retry and wait included (then 504)."""
    continue_streams: bool = True
    """Continue a stream that fails after its first output from a next attempt
    (:mod:`hookgate.policies.continuation`); False ends it with an error event."""
    retry_on: list[str] = Field(default_factory=lambda: list(DEFAULT_RETRY_ON))
    """Failures retried on the same target, then on the next: ``connect``, ``timeout``, ``reset``,
    ``bad_response``, ``stall``, a status (``"429"``) or class (``"5xx"``)."""
    fallback_on: list[str] = Field(default_factory=lambda: list(DEFAULT_FALLBACK_ON))
    """Of ``retry_on``'s failures, those that go to the next target at once."""
    fallback_on_content_policy: bool = False
    """A content-policy refusal moves to the next target (never retried on the same one); off: the
    client gets the provider's 400."""
    balance: Literal["weighted", "least_inflight"] = "weighted"
    """Among targets of equal priority: ``weighted`` (random by ``weight``) or ``least_inflight``
    (fewest requests in flight first)."""
    circuit: CircuitConfig = Field(default_factory=CircuitConfig)
    """The circuit breaker of each target."""


class FallbackPolicy(Policy[FallbackConfig]):
    """See the module docstring."""

    name = "fallback"
    metrics = (RETRIES, FALLBACKS, CIRCUIT_STATE, CONTINUATIONS)
    runs_in = frozenset({"proxy"})  # routes, upstreams and the shared ledger are the proxy's

    def __init__(self, config: FallbackConfig) -> None:
        super().__init__(config)
        self._settings = BreakerSettings(**config.circuit.model_dump())
        self._breakers: dict[str, CircuitBreaker] = {}
        self._in_flight: Counter[str] = Counter()
        self._rng = random.Random()
        self._retry_on = frozenset(config.retry_on)
        self._fallback_on = frozenset(config.fallback_on)
        self._reported: dict[str, int] = {}
        """The breaker state last reported per target (a gauge needs no repeat)."""

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.deadline_s
        observation = ctx.observation
        last: UpstreamError | None = None
        last_reason = ""
        window: int | None = None
        plan = self._plan(call.targets, call.model)
        for target in plan:
            label = target.label(call.model)
            if last_reason == "context_length" and not _larger(_window(target, call), window):
                continue
            breaker = self._breaker(label)
            if not breaker.allow():
                self._report(ctx, label, breaker)
                observation.count(FALLBACKS, label, "circuit_open")
                continue
            attempted = call if call.targets == (target,) else call.with_targets((target,))
            try:
                response = await self._try_target(attempted, ctx, next, deadline, label=label)
            except UpstreamError as exc:
                last, last_reason = exc, reason(exc)
                if last_reason == "context_length":
                    window = _largest(window, _window(target, call))
                self._report(ctx, label, breaker)
                if not self._moves_on(last_reason) or loop.time() >= deadline:
                    raise
                observation.count(FALLBACKS, label, last_reason)
            else:
                if response.stream is None or not self.config.continue_streams:
                    return response  # only a stream is continued (see continuable)
                return continuable(response, self._resume(call, ctx, next, plan, deadline))
        if last is not None:
            raise last
        raise UpstreamUnavailable(
            f"no upstream for model {call.model!r} is available (every circuit is open)"
        )

    def _resume(
        self, call: ModelCall, ctx: Context, next: Next, plan: list[Target], deadline: float
    ) -> Resume:
        """How a stream of ``call`` that fails mid-way is continued: one attempt per
        target, within the request's attempts and deadline."""

        async def attempt(continuation: ModelCall) -> ModelResponse:
            return await self._try_target(continuation, ctx, next, deadline, retries=0)

        return Resume(
            call=call,
            ctx=ctx,
            plan=plan,
            attempt=attempt,
            allowed=lambda target: self._breaker(target.label(call.model)).allow(),
            failed=lambda target, exc: self._failed_midstream(target.label(call.model), exc),
            max_attempts=len(plan) * (self.config.retries + 1),
            deadline=deadline,
        )

    def _failed_midstream(self, label: str, exc: UpstreamError) -> None:
        """A stream of ``label`` failed after its first event: a failure for its breaker."""
        if matches(reason(exc), self._retry_on):
            self._breaker(label).failure()

    async def _try_target(
        self,
        call: ModelCall,
        ctx: Context,
        next: Next,
        deadline: float,
        retries: int | None = None,
        *,
        label: str | None = None,
    ) -> ModelResponse:
        """One target: the first try and its retries (``retries``, default the policy's).
        ``label``: the target's, when the caller has it already."""
        loop = asyncio.get_running_loop()
        target = call.targets[0]
        if label is None:
            label = target.label(call.model)
        breaker = self._breaker(label)
        retries = self.config.retries if retries is None else retries
        for attempt in range(retries + 1):
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise UpstreamTimeout(
                    f"deadline of {self.config.deadline_s}s exceeded", target=label
                )
            self._in_flight[label] += 1
            held = True  # a stream keeps its target busy until it ends
            try:
                response = await self._attempt(call, ctx, next, remaining, deadline, label)
                if response.stream is not None:
                    held = False
                    response = dataclasses.replace(
                        response, stream=_counted(response.stream, self._in_flight, label)
                    )
            except UpstreamError as exc:
                failure = reason(exc)
                retried = matches(failure, self._retry_on)
                moves_on_now = matches(failure, self._fallback_on)
                if retried or moves_on_now:
                    breaker.failure()
                self._report(ctx, label, breaker)
                if attempt == retries or not retried or moves_on_now:
                    raise
                delay = self._delay(exc, attempt)
                if delay is None or loop.time() + delay >= deadline or not breaker.allow():
                    raise
                ctx.observation.count(RETRIES, label, failure)
                await asyncio.sleep(delay)
                continue
            finally:
                if held:
                    self._in_flight[label] -= 1
            breaker.success()
            self._report(ctx, label, breaker)
            return response
        raise AssertionError("unreachable")

    async def _attempt(
        self,
        call: ModelCall,
        ctx: Context,
        next: Next,
        remaining: float,
        deadline: float,
        label: str,
    ) -> ModelResponse:
        """One attempt at ``call.targets[0]`` (``label``), bounded until its first byte; a
        stream is held until its first output (see the module docstring for which limit
        applies)."""
        target = call.targets[0]
        config = self.config
        reasons = _reasons(target.model or call.model, target.reasoning)
        first_token_s = config.reasoning_timeout_s if reasons else config.first_token_timeout_s
        if call.stream:
            budget = min(config.attempt_timeout_s, first_token_s, remaining)
        elif reasons:
            budget = min(max(config.attempt_timeout_s, config.reasoning_timeout_s), remaining)
        else:
            budget = min(config.attempt_timeout_s, remaining)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(budget):  # no task per attempt, unlike wait_for
                response = await next(call, ctx)
        except TimeoutError:
            _relabel(ctx, label, CANCELLED, "no first byte in time")
            waited_for = "its response headers" if call.stream else "a whole answer"
            raise UpstreamTimeout(
                f"{label} did not send {waited_for} within {budget:.3g}s", target=label
            ) from None
        if response.stream is None:
            return response
        stream = response.stream
        events = aiter(stream)
        opening: list[bytes] = []
        first_token_at = min(started + first_token_s, deadline)
        try:
            async with asyncio.timeout_at(first_token_at):
                while not opening or not carries_output(call.api, opening[-1]):
                    opening.append(await anext(events))
        except TimeoutError:
            await stream.aclose()
            _relabel(ctx, label, "ok", "no first output in time")  # "ok" at its headers
            waited = first_token_at - started
            what = "no first event" if not opening else "no output after its opening events"
            raise UpstreamTimeout(
                f"{label} sent {what} within {waited:.3g}s", target=label
            ) from None
        except StopAsyncIteration:
            await stream.aclose()
            raise UpstreamTimeout(f"{label} sent an empty stream", target=label) from None
        except BaseException:
            await stream.aclose()
            raise
        guarded = _guarded(opening, events, stream, label, config.stall_timeout_s, deadline)
        return dataclasses.replace(response, stream=guarded)

    def _delay(self, exc: UpstreamError, attempt: int) -> float | None:
        """Seconds to wait before retrying the same target; None when the upstream asked
        for longer than ``retry_after_max_s`` (move on to the next target instead)."""
        if isinstance(exc, UpstreamStatusError):
            asked = retry_after(exc.upstream_headers)
            if asked is not None:
                return asked if asked <= self.config.retry_after_max_s else None
        return full_jitter(
            attempt, self.config.backoff_base_s, self.config.backoff_max_s, self._rng
        )

    def _report(self, ctx: Context, label: str, breaker: CircuitBreaker) -> None:
        """Report ``label``'s breaker state to its gauge, unless already reported: a
        gauge keeps its last value, so a request whose attempt left the state as it was
        has nothing to say."""
        value = STATE_VALUES[breaker.state]
        if self._reported.get(label) != value:
            self._reported[label] = value
            ctx.observation.gauge(CIRCUIT_STATE, label, value=value)

    def _moves_on(self, failure: str) -> bool:
        if failure in ("context_length", "auth"):  # another target may fit, or have a key
            return True
        if failure == "content_policy":
            return self.config.fallback_on_content_policy
        return matches(failure, self._retry_on) or matches(failure, self._fallback_on)

    def _plan(self, targets: Sequence[Target], model: str) -> list[Target]:
        """Targets in the order to try: by priority, balanced within a priority."""
        if len(targets) == 1:
            return list(targets)
        plan: list[Target] = []
        for _, group in groupby(
            sorted(targets, key=lambda t: t.priority), key=lambda t: t.priority
        ):
            plan += self._balance(list(group), model)
        return plan

    def _balance(self, group: list[Target], model: str) -> list[Target]:
        if len(group) == 1:
            return group
        if self.config.balance == "least_inflight":
            self._rng.shuffle(group)
            return sorted(group, key=lambda t: self._in_flight[t.label(model)])
        ordered: list[Target] = []
        pool = list(group)
        while pool:
            pick = self._rng.choices(range(len(pool)), weights=[t.weight for t in pool])[0]
            ordered.append(pool.pop(pick))
        return ordered

    def _breaker(self, label: str) -> CircuitBreaker:
        breaker = self._breakers.get(label)
        if breaker is None:
            breaker = self._breakers[label] = CircuitBreaker(self._settings)
        return breaker

    def status(self) -> Mapping[str, Any]:
        """Breaker states for ``/readyz``; not ready when every known breaker is open."""
        states = {label: breaker.state for label, breaker in self._breakers.items()}
        ready = not states or any(state != "open" for state in states.values())
        return {"ready": ready, "circuits": states}


async def _counted(
    stream: EventStream, in_flight: Counter[str], label: str
) -> AsyncGenerator[bytes, None]:
    """Pass ``stream`` through; the target counts as in flight until the stream ends."""
    try:
        async for events in stream:
            yield events
    finally:
        in_flight[label] -= 1
        await stream.aclose()


def _relabel(ctx: Context, label: str, recorded: str, message: str) -> None:
    """The attempt our timeout ended was recorded as ``recorded`` (cancelled, or ok when
    its headers came); it timed out."""
    attempts = ctx.observation.attempts
    if attempts and attempts[-1].target == label and attempts[-1].outcome == recorded:
        attempts[-1] = dataclasses.replace(
            attempts[-1], outcome="upstream_timeout", message=message
        )


@functools.lru_cache(maxsize=1024)
def _reasons(model: str, reasoning: bool | None) -> bool | None:
    """Whether ``model`` reasons (a target's ``reasoning``, else the shipped table's),
    looked up once per model name and setting: every attempt asks."""
    return limits_of(model, reasoning=reasoning).reasoning


def _window(target: Target, call: ModelCall) -> int | None:
    """The target's context window: its own ``context_window``, else the shipped table's."""
    return context_window_of(target.model or call.model, context_window=target.context_window)


def _largest(known: int | None, window: int | None) -> int | None:
    """The largest window that was already too small (None while none is known)."""
    if known is None or window is None:
        return window if known is None else known
    return max(known, window)


def _larger(window: int | None, too_small: int | None) -> bool:
    """Whether a target of ``window`` may fit a call too long for ``too_small``: unless
    both are known and it is no larger, it is worth a try."""
    return window is None or too_small is None or window > too_small


async def _guarded(
    opening: list[bytes],
    events: AsyncIterator[bytes],
    stream: EventStream,
    label: str,
    stall_s: float,
    deadline: float,
) -> AsyncGenerator[bytes, None]:
    """Re-yield the ``opening`` events then the rest, failing on a stall or past the deadline."""
    loop = asyncio.get_running_loop()
    try:
        for held in opening:
            yield held
        while True:
            remaining = deadline - loop.time()
            wait = min(stall_s, remaining)
            try:
                # Armed only around the read, never across the yield below: the timeout
                # cancels the consumer's task, which must not be hit while it writes.
                async with asyncio.timeout(max(0.0, wait)):
                    chunk = await anext(events)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if remaining <= stall_s:
                    raise UpstreamTimeout(
                        f"deadline reached while streaming from {label}", target=label
                    ) from None
                raise StallError(
                    f"{label} sent nothing for {stall_s:.3g}s mid-stream", target=label
                ) from None
            yield chunk
    finally:
        await stream.aclose()
