"""A config's policies frozen into hook chains, and one model call run through them.

The terminal handler is wrapped once: a streamed answer's facts (usage, ids, finish
reasons) are read from the upstream's own events into ``ctx.observation.stream_facts``,
before any policy wraps or rewrites the stream, so what is later hidden from the client
(a usage chunk) still counts. Run a call observed with
:class:`~hookgate.pipeline.runner.ObservedCall`.

Each wired hook is wrapped once, at build time, to record the policy's decision for the
request in ``ctx.observation`` (metrics): ``block`` when the hook raised a
:class:`~hookgate.errors.HookgateError` of its own (not an upstream failure passing
through), ``modify`` when a transformer returned something new, else ``allow``.

In the proxy (``checks_returned_calls``) every tool call of a chat, Responses or Messages
answer is put to the policies' ``returned_tool_call`` (:meth:`Pipeline.returned_check`):
a non-streamed answer after ``on_response``, a stream after the policies' transform
(:class:`~hookgate.pipeline.runner.ObservedCall`). A refusal is the policy's ``block``,
a ``hookgate.tool_call.refused`` span event (policy and tool name, never arguments) and
one count of :data:`REFUSED_CALLS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from hookgate.errors import HookgateError, UpstreamError
from hookgate.pipeline.agent import ToolCall
from hookgate.pipeline.compose import chain_stream_transforms, compose_chain, compose_onion
from hookgate.pipeline.hooks import Next, Policy, check, implements
from hookgate.pipeline.observe import Metric
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.wire import prompts
from hookgate.wire.conversation import Conversation, conversation_of
from hookgate.wire.deltas import StreamTransform
from hookgate.wire.returned_calls import (
    CHECKED_APIS,
    Check,
    ReturnedCall,
    checked_body,
    expanded_references,
)
from hookgate.wire.usage import StreamFacts, observed

T = TypeVar("T")

_PROMPT_APIS = frozenset({"chat.completions", "responses", "messages", "messages.count_tokens"})

REFUSED_CALLS = Metric(
    "hookgate_tool_calls_refused",
    "Tool calls a model returned that a policy removed from the answer, by policy",
    ("policy",),
)


class Pipeline:
    """The hook chains of one config, built once when it loads.

    Order follows :mod:`hookgate.pipeline.hooks`: request-side hooks in listed order, the
    model-call onion with the first policy outermost, response hooks in reverse.
    """

    def __init__(
        self,
        policies: Sequence[Policy[Any]],
        terminal: Next,
        *,
        checks_returned_calls: bool = False,
    ) -> None:
        """``checks_returned_calls``: run ``returned_tool_call`` (the proxy; the SDK runs
        ``on_tool_call`` where its tools execute instead). Raises
        :class:`~hookgate.pipeline.hooks.PolicyDefinitionError` when a policy cannot run
        (see :func:`~hookgate.pipeline.hooks.check`)."""
        check(policies)
        self.policies = tuple(policies)
        listed = list(self.policies)
        backwards = list(reversed(listed))
        self._observers = tuple(
            _observed_observer(p) for p in listed if implements(p, "on_request")
        )
        self._system_prompt = compose_chain(
            [
                _observed(p.slot, p.on_system_prompt)
                for p in listed
                if implements(p, "on_system_prompt")
            ]
        )
        self._convert = compose_chain(
            [_observed(p.slot, p.convert_to_llm) for p in listed if implements(p, "convert_to_llm")]
        )
        self._call = compose_onion(
            [_observed_onion(p) for p in listed if implements(p, "on_model_call")],
            _facts_read(terminal),
        )
        self._response = compose_chain(
            [_observed(p.slot, p.on_response) for p in backwards if implements(p, "on_response")]
        )
        self._stream_policies = tuple(p for p in backwards if implements(p, "on_response_stream"))
        self._checks_returned_calls = checks_returned_calls
        self._returned = (
            tuple(p for p in listed if implements(p, "returned_tool_call"))
            if checks_returned_calls
            else ()
        )
        self.needs_usage = any(p.needs_usage for p in listed)
        """Whether a policy reads a stream's usage (:attr:`Policy.needs_usage`)."""

    @property
    def checks_returned_calls(self) -> bool:
        """Whether a policy checks the tool calls a model returns (then one may ask a
        person: :attr:`~hookgate.pipeline.types.Context.approver`)."""
        return bool(self._returned)

    async def run(self, call: ModelCall, ctx: Context) -> ModelResponse:
        """Run request hooks, the model-call onion, then the response hooks (non-streamed, 2xx)."""
        if self._checks_returned_calls and call.api == "responses":
            body = expanded_references(call.body)  # notes that replaced refused calls
            call = call if body is call.body else call.with_body(body)
        for observer in self._observers:
            await observer(call, ctx)
        client_call = call
        if call.api in _PROMPT_APIS:
            call = await self._prepare(call, ctx)
        response = await self._call(call, ctx)
        if self._response is not None and response.payload is not None and response.status < 300:
            response = await self._response(response, ctx)
        check = self.returned_check(client_call, ctx)
        if check is not None and response.payload is not None and response.status < 300:
            body = await checked_body(call.api, response.body, check)
            if body is not response.body:
                response = response.with_body(body)
        return response

    def returned_check(self, call: ModelCall, ctx: Context) -> Check | None:
        """The check of the tool calls answering ``call`` (the client's request, its
        conversation the evidence), or None when no policy asks or the API has none."""
        if not self._returned or call.api not in CHECKED_APIS:
            return None
        policies = self._returned
        read: list[Conversation] = []

        async def check(returned: ReturnedCall) -> str | None:
            if not read:
                read.append(conversation_of(call.api, call.body))
            tool = ToolCall(returned.name, returned.arguments, returned.call_id)
            observation = ctx.observation
            for policy in policies:
                try:
                    reason = await policy.returned_tool_call(tool, read[0], ctx)
                except HookgateError as exc:
                    _blocked(policy.slot, exc, ctx)
                    raise
                if reason:
                    observation.decide(policy.slot, "block")
                    observation.count(REFUSED_CALLS, policy.slot)
                    observation.event(
                        "hookgate.tool_call.refused",
                        {"hookgate.policy": policy.slot, "gen_ai.tool.name": returned.name},
                    )
                    return reason
                observation.decide(policy.slot, "allow")
            return None

        return check

    async def system_prompt(self, prompt: str, ctx: Context) -> str:
        """Only the ``on_system_prompt`` chain (the SDK's adapters use it)."""
        return prompt if self._system_prompt is None else await self._system_prompt(prompt, ctx)

    async def aclose(self) -> None:
        """Close every policy (see :meth:`Policy.aclose`)."""
        for policy in self.policies:
            await policy.aclose()

    def stream_transform(self, ctx: Context) -> StreamTransform | None:
        """The combined transform for one streamed response, or None when no policy wants one."""
        if not self._stream_policies:
            return None
        made = [p.on_response_stream(ctx) for p in self._stream_policies]
        return chain_stream_transforms([t for t in made if t is not None])

    async def _prepare(self, call: ModelCall, ctx: Context) -> ModelCall:
        if self._system_prompt is not None:
            before = prompts.system_prompt_of(call.api, call.body)
            after = await self._system_prompt(before, ctx)
            if after != before:
                call = call.with_body(prompts.with_system_prompt(call.api, call.body, after))
        if self._convert is not None:
            messages = prompts.messages_of(call.api, call.body)
            assert messages is not None
            converted = await self._convert(messages, ctx)
            if converted is not messages:
                call = call.with_body(prompts.with_messages(call.api, call.body, converted))
        return call


def _facts_read(terminal: Next) -> Next:
    async def run(call: ModelCall, ctx: Context) -> ModelResponse:
        response = await terminal(call, ctx)
        if response.stream is not None:
            observation = ctx.observation
            facts = StreamFacts(call.api, collect_text=observation.capture_output)
            observation.stream_facts = facts.facts
            response = dataclasses.replace(response, stream=observed(response.stream, facts))
        return response

    return run


def _blocked(policy: str, exc: HookgateError, ctx: Context) -> None:
    """Record a block for the first policy an error of its own passes through."""
    if isinstance(exc, UpstreamError) or getattr(exc, "blocked_by", None) is not None:
        return
    exc.blocked_by = policy  # type: ignore[attr-defined]
    ctx.observation.decide(policy, "block")


def _observed(
    policy: str, hook: Callable[[T, Context], Awaitable[T]]
) -> Callable[[T, Context], Awaitable[T]]:
    async def run(value: T, ctx: Context) -> T:
        try:
            result = await hook(value, ctx)
        except HookgateError as exc:
            _blocked(policy, exc, ctx)
            raise
        same = result is value or (isinstance(value, str) and result == value)
        ctx.observation.decide(policy, "allow" if same else "modify")
        return result

    return run


def _observed_onion(
    policy: Policy[Any],
) -> Callable[[ModelCall, Context, Next], Awaitable[ModelResponse]]:
    name, hook = policy.slot, policy.on_model_call

    async def run(call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        try:
            response = await hook(call, ctx, next)
        except HookgateError as exc:
            _blocked(name, exc, ctx)
            raise
        ctx.observation.decide(name, "allow")
        return response

    return run


def _observed_observer(policy: Policy[Any]) -> Callable[[ModelCall, Context], Awaitable[None]]:
    name, hook = policy.slot, policy.on_request

    async def run(call: ModelCall, ctx: Context) -> None:
        try:
            await hook(call, ctx)
        except HookgateError as exc:
            _blocked(name, exc, ctx)
            raise

    return run
