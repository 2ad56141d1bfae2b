"""A config's policies frozen into hook chains, and one model call run through them."""

from __future__ import annotations

from collections.abc import Sequence

from proxy.pipeline.compose import chain_stream_transforms, compose_chain, compose_onion
from proxy.pipeline.hooks import Next, Policy, StreamTransform, implements
from proxy.pipeline.types import Context, ModelCall, ModelResponse
from proxy.wire import prompts

_PROMPT_APIS = frozenset({"chat.completions", "responses"})


class Pipeline:
    """The hook chains of one config, built once when it loads.

    Order follows :mod:`proxy.pipeline.hooks`: request-side hooks in listed order, the
    model-call onion with the first policy outermost, response hooks in reverse.
    """

    def __init__(self, policies: Sequence[Policy], terminal: Next) -> None:
        self.policies = tuple(policies)
        listed = [p for p in self.policies]
        backwards = list(reversed(listed))
        self._system_prompt = compose_chain(
            [p.on_system_prompt for p in listed if implements(p, "on_system_prompt")]
        )
        self._convert = compose_chain(
            [p.convert_to_llm for p in listed if implements(p, "convert_to_llm")]
        )
        self._call = compose_onion(
            [p.on_model_call for p in listed if implements(p, "on_model_call")], terminal
        )
        self._response = compose_chain(
            [p.on_response for p in backwards if implements(p, "on_response")]
        )
        self._stream_policies = tuple(p for p in backwards if implements(p, "on_response_stream"))

    async def run(self, call: ModelCall, ctx: Context) -> ModelResponse:
        """Run request hooks, the model-call onion, then the response hooks (non-streamed, 2xx)."""
        if call.api in _PROMPT_APIS:
            call = await self._prepare(call, ctx)
        response = await self._call(call, ctx)
        if self._response is not None and response.payload is not None and response.status < 300:
            response = await self._response(response, ctx)
        return response

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
