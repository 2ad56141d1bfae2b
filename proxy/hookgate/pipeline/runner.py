"""One model call run through a :class:`~hookgate.pipeline.pipeline.Pipeline`, observed:
the one runner of the proxy (:mod:`hookgate.server.routes`) and the SDK
(:mod:`hookgate.sdk.gate`).

An :class:`ObservedCall` is made when a call starts and ends exactly once, whatever
happens in between (an error before the pipeline runs, a refusal, an upstream failure, a
stream that fails after its first event or that its consumer leaves):

* **the usage chunk**, in one place: a streamed chat or completions call asks its upstream
  for the usage chunk (``stream_options.include_usage``) when the client did not and the
  caller asks for usage (the proxy when a policy of the pipeline :attr:`needs_usage
  <hookgate.pipeline.hooks.Policy.needs_usage>`, the SDK always: its spans and turns need
  it); the chunk is then removed from the stream before the client sees it. The stream's
  facts are read from the upstream's own events (:class:`~hookgate.pipeline.pipeline.Pipeline`
  wraps its terminal), so the hidden chunk still counts;
* **the stream**: the response policies' transform is applied to its events (placeholders
  restored in text and tool-call argument deltas), the time spent waiting on the events is
  upstream time, then, in the proxy, the tool calls it returns are checked
  (:func:`~hookgate.wire.returned_calls.gate_for`: each call held back until complete,
  then sent or replaced), the time to the first event the consumer took is ``ttft_s``, a failure is
  the call's error, a consumer that closes it before its end went away
  (``client_disconnected``);
* **the outcome**: status, target, error, usage and the response's facts; where a budget
  charged the call and the answer reported no usage, the usage it charged (marked
  ``hookgate.usage.estimated``), so every report agrees with the ledger (:func:`finish`);
* **the end**: the call's duration and upstream time, then :func:`finish` — the
  ``on_finish`` callbacks of ``ctx.observation`` (the tracing policy ends the call's span
  there; telemetry never fails a call: a callback's error is logged) — run by the caller's
  ``ended`` (see :data:`Ended`);
* **the audit record** (:func:`audit_record`), with the decision vocabulary of
  :meth:`~hookgate.pipeline.observe.Observation.decide`: policy → ``allow``, ``modify`` or
  ``block``.

Pure: no aiohttp, no OpenTelemetry. Writing the stream to a client (an HTTP response, an
``httpx`` body) and turning a failure after its first event into an ``error`` event is the
transport's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

import orjson

from hookgate.budgets.pricing import Pricing
from hookgate.errors import HookgateError
from hookgate.pipeline.observe import Outcome
from hookgate.pipeline.pipeline import Pipeline
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.store.base import AuditRecord
from hookgate.wire import sse
from hookgate.wire.returned_calls import gate_for
from hookgate.wire.sse import EventStream
from hookgate.wire.stream_rewrite import EventRewriter, rewriter_for
from hookgate.wire.usage import ResponseFacts, Usage, facts_of, is_usage_chunk, usage_requested

log = logging.getLogger("hookgate")

USAGE_APIS = frozenset({"chat.completions", "completions"})
"""The APIs whose streams report usage only when asked (``stream_options.include_usage``)."""

CLIENT_DISCONNECTED = "client_disconnected"
"""The error of a call its client left: cancelled, or its stream closed before its end."""

Ended = Callable[[Context, Outcome], Awaitable[None]]
"""How the caller ends a call: it calls :func:`finish`, at once or scheduled, with what it
reports beside it (the proxy schedules it after the response is written, with its metrics
and audit record; the SDK finishes at once, then counts the reply's turn). Called while
the proxy's request may be being cancelled: it must not wait on anything there."""


class ObservedCall:
    """One model call from its start to its end; see the module docstring.

    ``ctx`` may be replaced until :meth:`run` (the proxy learns the caller's identity and
    policy set after the call started); :meth:`failed` records an error raised outside
    :meth:`run`; :meth:`end` ends the call unless the stream :meth:`run` handed out is still
    open (that stream ends it when it closes). Ending twice does nothing.
    """

    def __init__(self, ctx: Context, *, ended: Ended | None = None) -> None:
        self.ctx = ctx
        self.outcome = Outcome(status=500, stream=False, target=None)
        self.started = time.perf_counter()
        self._ended = ended
        self._streaming = False
        self._done = False

    async def run(
        self, pipeline: Pipeline, call: ModelCall, *, usage: bool = False
    ) -> ModelResponse:
        """Run ``call`` through ``pipeline``. With ``usage``, a stream asks for its usage
        chunk (see the module docstring). A streamed answer comes back as an
        :class:`ObservedStream`, which the caller must consume or ``aclose``."""
        ctx, outcome = self.ctx, self.outcome
        outcome.stream = call.stream
        hide_usage = False
        if usage and call.stream and call.api in USAGE_APIS:
            asked = usage_requested(call.body)
            if asked is not None:  # the client did not ask: ask, and hide the chunk again
                call, hide_usage = call.with_body(asked), True
        try:
            response = await pipeline.run(call, ctx)
        except BaseException as exc:
            self.failed(exc)
            raise
        outcome.status = response.status
        outcome.target = response.target.label(call.model)
        if response.stream is None:
            collect = ctx.observation.capture_output
            outcome.take(facts_of(call.api, response.body, collect_text=collect),
                         collect_text=collect)  # fmt: skip
            return response
        self._streaming = True
        rewriters: list[EventRewriter] = []
        transform = pipeline.stream_transform(ctx)
        if transform is not None:
            rewriters.append(rewriter_for(call.api, transform))
        check = pipeline.returned_check(call, ctx)
        gate = gate_for(call.api, check) if check is not None else None
        if gate is not None:
            rewriters.append(gate)
        stream = ObservedStream(self, response.stream, rewriters, hide_usage)
        return dataclasses.replace(response, stream=stream)

    def failed(self, exc: BaseException) -> None:
        """Record the error the call ended with: a hookgate error's status and target, a
        cancellation as a client gone (499), anything else as a 500 of its type."""
        outcome = self.outcome
        if isinstance(exc, asyncio.CancelledError):
            outcome.status, outcome.error_type = 499, CLIENT_DISCONNECTED
            return
        outcome.failed(exc)
        if isinstance(exc, HookgateError):
            outcome.status = exc.status
            outcome.target = outcome.target or getattr(exc, "target", None)

    async def end(self) -> None:
        """End the call now, unless a stream it handed out is still open."""
        if not self._streaming:
            await self._end()

    async def _end(self) -> None:
        if self._done:
            return
        self._done = True
        outcome = self.outcome
        outcome.duration_s = time.perf_counter() - self.started
        outcome.upstream_s = self.ctx.observation.upstream_s
        if self._ended is None:
            finish(self.ctx, outcome)
        else:
            await self._ended(self.ctx, outcome)


def finish(ctx: Context, outcome: Outcome) -> None:
    """Settle a call that has ended: where a budget charged it and the answer reported no
    usage, the usage it charged (marked ``hookgate.usage.estimated``); then hand the
    outcome to the ``on_finish`` callbacks. A callback's error is logged, never raised."""
    observation = ctx.observation
    charge = observation.charge
    if charge is not None and charge.estimated and outcome.usage is None:
        outcome.usage = charge.usage
        observation.attributes["hookgate.usage.estimated"] = True
    for callback in observation.on_finish:
        try:
            callback(outcome)
        except Exception:
            log.exception("a finish callback failed (model call %s)", ctx.request_id)


class ObservedStream:
    """The stream of an :class:`ObservedCall` as its consumer reads it (an
    :class:`~hookgate.wire.sse.EventStream`); see the module docstring. Closing it (or
    reading it to its end) ends the call."""

    def __init__(
        self,
        call: ObservedCall,
        stream: EventStream,
        rewriters: list[EventRewriter],
        hide_usage: bool,
    ) -> None:
        """``rewriters`` apply in order: the policies' transform, then the check of
        returned tool calls."""
        self._call = call
        self._stream = stream
        self._rewriters = tuple(rewriters)
        self._hide_usage = hide_usage
        self._iterator = aiter(stream)
        self._first: bytes | None = None
        self._started = False
        self._closed = False
        self._events = self._observed()

    async def start(self) -> None:
        """Wait for the upstream's first event (nothing is transformed yet), so that a
        failure before it is raised here, before the caller has answered its client (the
        proxy's relay then still sends an HTTP error status)."""
        if not self._started:
            self._started = True
            try:
                self._first = await self._next()
            except BaseException as exc:
                self._call.failed(exc)
                raise

    def __aiter__(self) -> AsyncGenerator[bytes, None]:
        return self._events

    async def aclose(self) -> None:
        """Close the stream (and the upstream's) and end the call."""
        try:
            await self._events.aclose()
        finally:
            await self._close()

    async def _close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._stream.aclose()
        await self._call._end()

    async def _next(self) -> bytes | None:
        observation = self._call.ctx.observation
        waiting = time.perf_counter()
        try:
            return await anext(self._iterator)
        except StopAsyncIteration:
            return None
        finally:
            observation.upstream_s += time.perf_counter() - waiting

    async def _observed(self) -> AsyncGenerator[bytes, None]:
        call = self._call
        outcome = call.outcome
        observation = call.ctx.observation
        rewriters = self._rewriters
        ended = False
        try:
            if not self._started:
                await self.start()
            events = self._first
            while events is not None:
                if self._hide_usage and (b'"choices":[]' in events or b'"choices": []' in events):
                    events = b"".join(b for b in sse.split(events) if not is_usage_chunk(b))
                if not rewriters:
                    if events:
                        yield events
                        self._taken()
                else:  # what was rewritten before a refusal goes out first
                    async for rewritten in _through(rewriters, events):
                        if rewritten:
                            yield rewritten
                            self._taken()
                events = await self._next()
            ended = True
        except GeneratorExit:
            raise
        except asyncio.CancelledError as exc:
            call.failed(exc)
            raise
        except BaseException as exc:  # after the answer's status: the error, not a status
            outcome.failed(exc)
            raise
        finally:
            if not ended and outcome.error_type is None:  # its consumer left before its end
                outcome.error_type = CLIENT_DISCONNECTED
            outcome.take(observation.stream_facts or ResponseFacts(),
                         collect_text=observation.capture_output)  # fmt: skip
            await self._close()

    def _taken(self) -> None:
        """The consumer took an event and asks for the next: it has written the first."""
        outcome = self._call.outcome
        if outcome.ttft_s is None:
            outcome.ttft_s = time.perf_counter() - self._call.started


async def _through(rewriters: tuple[EventRewriter, ...], events: bytes) -> AsyncGenerator[bytes]:
    """``events`` through each rewriter in turn; what one gave before it raised still
    goes through the rest and out."""
    first, rest = rewriters[0], rewriters[1:]
    async for piece in first.rewrite(events):
        if not rest:
            yield piece
        elif piece:
            async for out in _through(rest, piece):
                yield out


def cost(outcome: Outcome, ctx: Context, pricing: Pricing) -> float | None:
    """The call's cost in USD, None when unknown: what a budget charged, else its usage
    priced by the target that served it."""
    charge = ctx.observation.charge
    if charge is not None:
        return charge.cost_usd
    if outcome.usage is not None and outcome.target is not None:
        return pricing.cost(outcome.target.split("/", 1)[1], outcome.usage)
    return None


def audit_record(
    ctx: Context, outcome: Outcome, *, api: str, model: str, cost_usd: float | None
) -> AuditRecord:
    """The audit record of a finished model call: who, what, how much, how it ended, each
    policy's decision (``allow``, ``modify`` or ``block``) and the guardrails' finding
    counts — never content."""
    usage = outcome.usage or Usage()
    identity = ctx.identity
    observation = ctx.observation
    return AuditRecord(
        ts=time.time(), request_id=ctx.request_id, api=api, model=model, status=outcome.status,
        latency_ms=round(outcome.duration_s * 1000, 3), target=outcome.target,
        error=outcome.error_type, key_id=identity.key_id, team=identity.team, user=identity.user,
        agent=ctx.agent, session=ctx.session_id, reply=ctx.reply_id,
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
        cached_tokens=usage.cached_input_tokens, reasoning_tokens=usage.reasoning_tokens,
        cost_usd=cost_usd, attempts=len(observation.attempts),
        decisions=_json(observation.decisions), findings=_json(observation.findings),
        policy_set=ctx.policy_set,
    )  # fmt: skip


def _json(value: Mapping[str, Any]) -> str:
    return orjson.dumps(value).decode()
