"""The ``fallback`` policy's mid-stream continuation: a stream that fails after bytes
reached the client is continued from a next attempt, so the client reads one answer.

:func:`continued` relays a stream and keeps what the client was handed, read (into a
:data:`~hookgate.wire.continuation.Transcript`) only when the stream fails: a stream that
does not fail pays no parsing. When it fails (cut, stalled, malformed) and the answer is
not finished, it asks :class:`Resume` for the rest:

* **when**: the stream raised a failure, or sent an error event (not relayed: read as a 502
  from its target, :func:`~hookgate.wire.continuation.error_event`);
* **where**: the target that failed first when the fault looks transient (a cut, a
  malformed or an error event; a stall or a timeout moves on at once) and it had not
  failed mid-stream before in this request, then the alias's targets after it, one attempt
  each, never past the policy's attempts (every target's tries) or its deadline, skipping
  open breakers;
* **how**: by prefill where the target continues a final assistant message
  (:attr:`~hookgate.wire.models.Limits.prefill`, the shipped model table or the target's
  ``prefill``) and the client has only text; else by replay: the request asked again,
  relayed from where the client is only if the answer repeats what it has. A prefill the
  target refuses (an HTTP 4xx) is asked again as a replay on the same target: the refusal
  is never the error the client reads;
* **what the client gets**: the next attempt's events spliced on
  (:data:`~hookgate.wire.continuation.Splice`): one role chunk and one ``[DONE]`` (one
  ``message_start`` and ``message_stop``, one ``response.created`` and
  ``response.completed``), one id, the text once, usage stating what was
  delivered;
* **or the original failure**, when no attempt continues it, a replay diverges, or the API
  is not continued (completions). Responses streams are continued by replay only.

The seam is visible in the trace (the failed attempt's span carries the failure, the call's
span ``hookgate.stream.continuations``) and in :data:`CONTINUATIONS`, never in the text; a
response header cannot carry it, since headers are sent before the first event. Spend: each
attempt passes through the policies listed after ``fallback`` (a ``budget`` there charges
each attempt for what it produced).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from hookgate.budgets import tokens
from hookgate.errors import UpstreamError, UpstreamStatusError, error_type
from hookgate.pipeline.observe import Metric
from hookgate.pipeline.types import Context, ModelCall, ModelResponse, Target
from hookgate.resilience.classify import reason
from hookgate.wire.continuation import (
    Diverged,
    Mode,
    Splice,
    Transcript,
    error_event,
    transcript_for,
)
from hookgate.wire.models import limits_of
from hookgate.wire.sse import EventStream

CONTINUATIONS = Metric(
    "hookgate_stream_continuations",
    "Streams that failed after their first event: continued by a target (prefill or replay), "
    "or ended with their failure (result failed or diverged)",
    ("target", "mode", "result"),
)

TRANSIENT = frozenset({"reset", "bad_response", "http_502"})
"""Mid-stream faults worth a continuation from the same target first: a cut connection,
malformed events, an error event (overloaded, say: read as a 502). A stall or a timeout
moves to the next target at once."""

Attempt = Callable[[ModelCall], Awaitable[ModelResponse]]
"""One attempt at ``call.targets[0]`` as the policy makes it (breaker, first event peeked,
stall guarded); raises :class:`~hookgate.errors.UpstreamError` kinds."""


@dataclass(frozen=True, slots=True)
class Resume:
    """How a failed stream of one request may be continued (see the module docstring)."""

    call: ModelCall
    """The call as the policy received it (the client's API, before any target's model)."""
    ctx: Context
    plan: Sequence[Target]
    """The alias's targets in the order the policy tries them."""
    attempt: Attempt
    allowed: Callable[[Target], bool]
    """Whether a target may be tried now (its breaker) — checked before each attempt."""
    failed: Callable[[Target, UpstreamError], None]
    """A target's stream failed mid-way (its breaker counts it)."""
    max_attempts: int
    deadline: float


KEPT_BYTES = 16 * 1024 * 1024
"""The most of a stream kept to continue it; a longer answer is not continued."""


def continuable(response: ModelResponse, resume: Resume) -> ModelResponse:
    """``response`` with its stream continued on failure, where its API can be (one
    choice: ``n`` above 1 is not continued)."""
    several = resume.call.body.get("n") not in (None, 1)
    if response.stream is None or transcript_for(resume.call.api) is None or several:
        return response
    stream = continued(response.stream, response.target, resume)
    return dataclasses.replace(response, stream=stream)


async def continued(
    stream: EventStream, target: Target, resume: Resume
) -> AsyncGenerator[bytes, None]:
    """Relay ``stream`` (from ``target``); on a failure after its first event, the rest
    from next attempts, or the first failure. What the client was handed is kept as it
    went out and read only on a failure, so a stream that does not fail costs no parsing."""
    splice: Splice | None = None
    original: UpstreamError | None = None
    failures: Counter[Target] = Counter()  # mid-stream failures per target
    kept: list[bytes] = []
    size = 0
    try:
        while True:
            try:
                async for events in stream:
                    out = events if splice is None else splice.feed(events)
                    if (failed_by := error_event(out)) is not None:
                        out, body, said = failed_by
                        label = _label(resume, target)
                        failure = UpstreamStatusError(502, body, {}, target=label)
                        failure.message = f"{label} failed mid-stream: {said}"
                    if out:
                        if size <= KEPT_BYTES:
                            kept.append(out)
                            size += len(out)
                        yield out
                    if failed_by is not None:
                        raise failure
                return
            except UpstreamError as exc:
                original = original or exc
                failed, stream = stream, _nothing()
                await failed.aclose()
                _failed_midstream(resume, target, exc)
                resume.failed(target, exc)
                transcript = transcript_for(resume.call.api)
                if transcript is None or size > KEPT_BYTES:
                    raise original from None
                transcript.feed(b"".join(kept))
                if not transcript.continuable:
                    raise original from None
                failures[target] += 1
                again = failures[target] == 1 and reason(exc) in TRANSIENT
                found = await _next(resume, target, transcript, again=again)
                if found is None:
                    _count(resume, target, "none", "failed")
                    raise original from None
                target, stream, splice = found
            except Diverged:
                _count(resume, target, "replay", "diverged")
                assert original is not None  # a splice is only made after a failure
                raise original from None
    finally:
        await stream.aclose()


async def _next(
    resume: Resume, failed: Target, transcript: Transcript, *, again: bool
) -> tuple[Target, EventStream, Splice] | None:
    """The first attempt that answers, as (target, its stream, its splice): ``failed``
    first when ``again``, then the targets after it; None when none does within the
    policy's attempts and deadline."""
    loop = asyncio.get_running_loop()
    ctx, call = resume.ctx, resume.call
    plan = list(resume.plan)
    after = plan[plan.index(failed) + 1 :] if failed in plan else plan
    candidates = ([failed] if again else []) + after
    refused = 0  # prefills refused: asked again at once, generating nothing
    for target in candidates:
        modes: list[Mode] = ["replay"]
        if transcript.prefillable and transcript.text.strip() and _prefills(target, call.model):
            modes.insert(0, "prefill")
        for mode in modes:
            if len(ctx.observation.attempts) - refused >= resume.max_attempts:
                return None
            if loop.time() >= resume.deadline or not resume.allowed(target):
                break
            body = transcript.request(call.body, mode)
            try:
                response = await resume.attempt(call.with_body(body).with_targets((target,)))
            except UpstreamError as failure:
                if mode == "prefill" and _refused_prefill(failure):
                    refused += 1
                    continue  # asked again as a replay, on the same target
                break
            if response.stream is None:  # cannot happen for a streamed call
                break
            prefix = 0
            if mode == "prefill":
                prefix = await _tokens(target.model or call.model, transcript.text)
            _count(resume, target, mode, "continued")
            observation = ctx.observation
            done = observation.attributes.get("hookgate.stream.continuations")
            observation.attributes["hookgate.stream.continuations"] = (
                done + 1 if isinstance(done, int) else 1
            )
            observation.attributes["hookgate.stream.continued_by"] = mode
            return target, response.stream, transcript.splice(mode, prefix)
    return None


async def _tokens(model: str, text: str) -> int:
    return await tokens.off_loop(len(text), lambda: tokens.count(model, text))


def _prefills(target: Target, model: str) -> bool:
    return limits_of(target.model or model, prefill=target.prefill).prefill is True


def _refused_prefill(exc: UpstreamError) -> bool:
    """A 4xx other than a rate limit: the target refused the prefill itself."""
    return isinstance(exc, UpstreamStatusError) and 400 <= exc.status < 500 and exc.status != 429


def _failed_midstream(resume: Resume, target: Target, exc: UpstreamError) -> None:
    """Record on the attempt whose stream failed (recorded ``ok`` when its headers came)
    how it ended, so the trace shows the seam."""
    attempts = resume.ctx.observation.attempts
    label = target.label(resume.call.model)
    for i in range(len(attempts) - 1, -1, -1):
        if attempts[i].target == label and attempts[i].outcome == "ok":
            attempts[i] = dataclasses.replace(
                attempts[i], outcome=error_type(exc), message=f"mid-stream: {exc.message}"
            )
            return


def _count(resume: Resume, target: Target, mode: str, result: str) -> None:
    resume.ctx.observation.count(CONTINUATIONS, _label(resume, target), mode, result)


def _label(resume: Resume, target: Target) -> str:
    return target.label(resume.call.model)


async def _nothing() -> AsyncGenerator[bytes, None]:
    return
    yield  # an empty stream, closed like any
