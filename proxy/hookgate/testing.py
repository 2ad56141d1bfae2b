"""Run policies on model calls in-process, with a scripted model: no server, no network.

The kit a policy author tests with. A :class:`Harness` builds the same
:class:`~hookgate.pipeline.pipeline.Pipeline` the proxy builds (so a policy that cannot
run fails here as it would at start-up) and answers every model call with a scripted
reply in the call's own API shape — chat completions, Responses or Anthropic Messages,
streamed or not — through the very code the proxy's built-in ``echo`` provider uses::

    from hookgate.testing import Harness, chat

    async def test_the_word_is_refused() -> None:
        async with Harness(NoSecrets(NoSecretsConfig(word="ruby"))) as harness:
            result = await harness.call(chat("tell me about ruby"))
        assert result.status == 400 and result.error_code == "word_blocked"
        assert result.sent == []  # the model never saw it

Calls run through the proxy's own runner (:class:`~hookgate.pipeline.runner.ObservedCall`):
the usage chunk a budget needs is asked for and hidden, a stream's transforms apply, the
outcome is settled. A :class:`CallResult` holds what the client got (``status``, ``body``
or ``events``, ``text``), what the model was sent (``sent``: one body per upstream
attempt), how the call ended (``outcome``) and what the policies did (``decisions``,
``ctx.state``, ``ctx.response_headers``). A refusal is
a result, never an exception: ``error`` holds the :class:`~hookgate.errors.HookgateError`
and ``body``/``status`` the error exactly as the proxy would answer it. A stream a policy
ends mid-way ends with the proxy's ``error`` event.

:meth:`Harness.tool_call` runs one tool call through the policies' ``needs_approval`` and
``on_tool_call`` as the MCP gateway runs it, with a scripted tool.

A harness keeps its services (a SQLite store in a temporary folder, the budget ledger,
the rate limiter) across calls, so budgets and limits accumulate as in the proxy; use it
as an ``async with`` block, or call :meth:`Harness.aclose`.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hookgate.budgets.pricing import Price, Pricing
from hookgate.errors import HookgateError
from hookgate.pipeline.agent import ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.hooks import Policy
from hookgate.pipeline.observe import Observation, Outcome
from hookgate.pipeline.pipeline import Pipeline
from hookgate.pipeline.runner import ObservedCall
from hookgate.pipeline.services import Services
from hookgate.pipeline.tool_calls import approval_needed, tool_onion
from hookgate.pipeline.types import (
    ANONYMOUS,
    Api,
    Context,
    Identity,
    JsonBody,
    ModelCall,
    ModelResponse,
    Target,
)
from hookgate.store.open import open_budgets, open_store
from hookgate.wire import sse, synth
from hookgate.wire.synth import Reply
from hookgate.wire.synth import ToolCall as ModelToolCall
from hookgate.wire.usage import StreamFacts, facts_of

__all__ = [
    "CallResult",
    "Harness",
    "ModelToolCall",
    "Reply",
    "Request",
    "Script",
    "ToolCallResult",
    "ToolScript",
    "chat",
    "messages",
    "responses",
]

MODEL = "test-model"
TARGET = Target("scripted", None)

Script = Reply | str | HookgateError | ModelResponse | Callable[[ModelCall], Any]
"""One scripted answer of the model: a :class:`Reply` (text, tool calls, usage), a plain
string (a text reply), an error the upstream raises (an
:class:`~hookgate.errors.UpstreamError` to test a retry or fallback), a ready
:class:`~hookgate.pipeline.types.ModelResponse`, or a function of the call returning any
of these (to answer by target, model or content)."""


@dataclass(frozen=True, slots=True)
class Request:
    """A client's request: its API and its JSON body (``stream`` read from the body)."""

    api: Api
    body: Mapping[str, Any]


def chat(
    text: str, *, system: str | None = None, stream: bool = False, model: str = MODEL, **extra: Any
) -> Request:
    """A chat-completions request with one user message (and a system prompt)."""
    history = [{"role": "system", "content": system}] if system is not None else []
    body = {"model": model, "messages": [*history, {"role": "user", "content": text}]}
    return Request("chat.completions", {**body, "stream": stream, **extra})


def responses(
    text: str,
    *,
    instructions: str | None = None,
    stream: bool = False,
    model: str = MODEL,
    **extra: Any,
) -> Request:
    """A Responses request whose ``input`` is one user message (and ``instructions``)."""
    body: dict[str, Any] = {"model": model, "input": [{"role": "user", "content": text}]}
    if instructions is not None:
        body["instructions"] = instructions
    return Request("responses", {**body, "stream": stream, **extra})


def messages(
    text: str,
    *,
    system: str | None = None,
    stream: bool = False,
    model: str = MODEL,
    max_tokens: int = 1024,
    **extra: Any,
) -> Request:
    """An Anthropic Messages request with one user message (and a ``system`` prompt)."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": text}],
    }
    if system is not None:
        body["system"] = system
    return Request("messages", {**body, "stream": stream, **extra})


@dataclass(slots=True)
class CallResult:
    """What one call through the policies came to (see the module docstring)."""

    status: int
    ctx: Context
    sent: list[Mapping[str, Any]]
    """The body of every call that reached the model, in order (empty when refused
    before it)."""
    outcome: Outcome
    """How the call ended, as the proxy's metrics, spans and audit record report it:
    status, target, usage, error kind, time to first event."""
    body: Mapping[str, Any] | None = None
    """The JSON body the client got (a refusal's error body too); None for a stream."""
    stream: bytes = b""
    """A streamed answer's bytes as the client got them (empty when not streamed)."""
    error: HookgateError | None = None
    """The refusal or failure the client got, as an HTTP error or a stream's last event."""

    @property
    def text(self) -> str:
        """The answer's text (text deltas joined, for a stream), in any API's shape."""
        api = self.ctx.api
        if self.body is not None:
            return "".join(facts_of(api, self.body, collect_text=True).text)
        facts = StreamFacts(api, collect_text=True)
        facts.feed(self.stream)
        return "".join(facts.facts.text)

    @property
    def events(self) -> list[sse.Event]:
        """A streamed answer's events, parsed (see :class:`~hookgate.wire.sse.Event`)."""
        return [sse.parse(block) for block in sse.split(self.stream)]

    @property
    def error_code(self) -> str | None:
        """The refusal's machine-readable ``code`` (``budget_exceeded``, ...), if any."""
        return None if self.error is None else self.error.code

    @property
    def decisions(self) -> Mapping[str, str]:
        """Each policy's decision by slot: ``allow``, ``modify`` or ``block``."""
        return dict(self.ctx.observation.decisions)


ToolScript = str | ToolResult | Callable[[ToolCall], "str | ToolResult"]
"""What a scripted tool answers: a text, a :class:`ToolResult` (an error result, say), or
a function of the call as it reached the tool."""


@dataclass(frozen=True, slots=True)
class ToolCallResult:
    """What one tool call through the policies came to."""

    result: ToolResult | None
    """What the model reads (a refusal's too); None when it waits for a human."""
    ran: list[ToolCall]
    """The calls that reached the tool, with the arguments it got (empty when refused)."""
    reply: ReplyContext
    """The reply the call belonged to: its ``state``, ``session`` and counts."""
    decisions: Mapping[str, str]
    """Each tool-call policy's decision by slot: ``allow``, ``modify`` or ``block``."""
    needs_approval: str | None = None
    """The reason a policy gave to wait for a human; the call did not run."""
    findings: Mapping[str, int] = field(default_factory=dict)
    """What the policies found, as the MCP gateway's audit record has it (counts by
    name, never values)."""


class Harness:
    """Policies built into a pipeline whose upstream is a scripted model."""

    def __init__(
        self,
        *policies: Policy[Any],
        services: Services | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        """Build the pipeline (raising
        :class:`~hookgate.pipeline.hooks.PolicyDefinitionError` as the proxy would) and
        attach ``services`` — by default a fresh SQLite store and in-memory budgets, with
        ``prices`` per model for the budget policy."""
        self.pipeline = Pipeline(policies, self._upstream, checks_returned_calls=True)
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        if services is None:
            self._folder = tempfile.TemporaryDirectory(prefix="hookgate-testing-")
            store = open_store(f"sqlite:///{self._folder.name}/hookgate.db")
            ledger, rates = open_budgets(store)
            services = Services(
                store=store, pricing=Pricing(dict(prices or {})), ledger=ledger, rates=rates
            )
        self.services = services
        for policy in policies:
            policy.attach(services)
        self._script: Iterator[Script] = iter(())
        self._sent: list[Mapping[str, Any]] = []
        self._ids = itertools.count(1)

    async def call(
        self,
        request: Request,
        reply: Script | Sequence[Script] = "ok",
        *,
        targets: Sequence[Target] = (TARGET,),
        identity: Identity = ANONYMOUS,
        agent: str | None = None,
        session_id: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> CallResult:
        """Run ``request`` through the policies; the model answers with ``reply`` (a
        sequence: one per upstream attempt, the last one repeated)."""
        script = [reply] if not isinstance(reply, Sequence) or isinstance(reply, str) else reply
        self._script = itertools.chain(script, itertools.repeat(script[-1]))
        sent: list[Mapping[str, Any]] = []
        self._sent = sent
        ctx = Context(
            request_id=f"req_test_{next(self._ids)}",
            api=request.api,
            identity=identity,
            agent=agent,
            session_id=session_id,
        )
        call = ModelCall(
            api=request.api,
            payload=JsonBody.from_data(request.body),
            model=str(request.body.get("model", MODEL)),
            stream=bool(request.body.get("stream")),
            targets=tuple(targets),
            headers=dict(headers or {}),
        )
        observed = ObservedCall(ctx)
        try:
            response = await observed.run(self.pipeline, call, usage=self.pipeline.needs_usage)
        except HookgateError as exc:
            await observed.end()
            body = _error_body(request.api, exc)
            return CallResult(exc.status, ctx, sent, observed.outcome, body=body, error=exc)
        result = CallResult(response.status, ctx, sent, observed.outcome)
        if response.stream is None:
            await observed.end()
            result.body = response.body
            return result
        chunks: list[bytes] = []
        try:
            async for block in response.stream:
                chunks.append(block)
        except HookgateError as exc:  # after the first event: the proxy's error event
            result.error = exc
            chunks.append(sse.encode(_error_body(request.api, exc), event="error"))
        finally:
            await response.stream.aclose()
        result.stream = b"".join(chunks)
        return result

    async def tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        result: ToolScript = "ok",
        *,
        reply: ReplyContext | None = None,
    ) -> ToolCallResult:
        """Run one tool call through the policies' ``needs_approval`` and ``on_tool_call``
        as the MCP gateway does: a call a policy wants a human for is not run; otherwise
        the tool answers with ``result`` (a text, a :class:`ToolResult`, or a function of
        the call as it reached the tool). ``reply`` carries the per-reply and per-session
        state between calls (one is made when not given)."""
        ctx = reply or ReplyContext(agent="agent", reply_id=f"reply_test_{next(self._ids)}")
        call = ToolCall(name, arguments, call_id=f"call_test_{next(self._ids)}")
        observation = Observation()
        ctx.observation = observation
        ran: list[ToolCall] = []
        ctx.tool_calls += 1
        policies = self.pipeline.policies
        if reason := await approval_needed(policies, call, ctx, observation):
            return ToolCallResult(
                None, ran, ctx, observation.decisions, reason, observation.findings
            )

        async def tool(asked: ToolCall, ctx: ReplyContext) -> ToolResult:
            ran.append(asked)
            made = result(asked) if callable(result) else result
            return ToolResult(made) if isinstance(made, str) else made

        done = await tool_onion(policies, tool, observation)(call, ctx)
        return ToolCallResult(done, ran, ctx, observation.decisions, findings=observation.findings)

    async def aclose(self) -> None:
        """Close every policy and the default services' store."""
        await self.pipeline.aclose()
        if self._folder is not None:
            await self.services.store.close()
            self._folder.cleanup()

    async def __aenter__(self) -> Harness:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _upstream(self, call: ModelCall, ctx: Context) -> ModelResponse:
        self._sent.append(call.body)
        answer: Any = next(self._script)
        if callable(answer) and not isinstance(answer, HookgateError):
            answer = answer(call)
        if isinstance(answer, HookgateError):
            raise answer
        if isinstance(answer, ModelResponse):
            return answer
        reply = Reply(text=answer) if isinstance(answer, str) else answer
        return _answer(call, reply)


def _answer(call: ModelCall, reply: Reply) -> ModelResponse:
    """``reply`` in the call's API shape, streamed when the call asks for a stream."""
    target, model = call.targets[0] if call.targets else TARGET, call.model
    kind = "text/event-stream" if call.stream else "application/json"
    headers = {"content-type": kind}
    if call.stream:
        blocks = list(synth.answer_stream(call.api, call.body, reply, model))
        return ModelResponse(status=200, headers=headers, target=target, stream=_stream(blocks))
    data = synth.answer_object(call.api, reply, model)
    return ModelResponse(
        status=200, headers=headers, target=target, payload=JsonBody.from_data(data)
    )


class _stream:
    """An :class:`~hookgate.wire.sse.EventStream` over prepared event blocks."""

    def __init__(self, blocks: list[bytes]) -> None:
        self._blocks = iter(blocks)

    def __aiter__(self) -> _stream:
        return self

    async def __anext__(self) -> bytes:
        try:
            return next(self._blocks)
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._blocks = iter(())


def _error_body(api: str, exc: HookgateError) -> Mapping[str, Any]:
    return exc.to_anthropic_body() if api == "messages" else exc.to_body()
