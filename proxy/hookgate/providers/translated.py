"""Calls in an API a provider does not speak, translated at the provider boundary.

Policies see every call in the client's API (the body it sent, the answer it gets), so a
pipeline is the same whichever provider serves an alias, and one alias may mix providers
(Claude first, GPT second). Only here, between the pipeline and the wire, is a call
translated:

* a Chat Completions call to an Anthropic provider is sent as a Messages call, and its
  answer (JSON, stream or error) comes back as Chat Completions
  (:mod:`hookgate.wire.translate.chat_to_messages`);
* a Messages call to an OpenAI-compatible provider is sent as a Chat Completions call
  (with ``stream_options.include_usage``, so a stream reports usage), and its answer
  comes back as Messages (:mod:`hookgate.wire.translate.messages_to_chat`);
* a Messages ``count_tokens`` call to an OpenAI-compatible provider, which has no such
  endpoint, is answered here: the prompt's tokens as the budget counts them (tiktoken);
* a Responses call to a provider without the Responses API is sent as a Chat Completions
  call (:mod:`hookgate.wire.translate.responses_to_chat`), and to an Anthropic provider
  that chat call is in turn sent as a Messages call: the two translations compose, the
  answer and its stream going back through both;
* any other pair is a 400 that names both.

What cannot be translated is refused with a 400 that names the field, never dropped; the
translation modules list what they translate, refuse and leave out on purpose. The
client's query string goes only to a provider of its own API.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Callable
from typing import Any, Protocol

from hookgate.budgets import tokens
from hookgate.errors import InvalidRequest, UpstreamStatusError
from hookgate.pipeline.types import Api, JsonBody, ModelCall, ModelResponse, Target
from hookgate.wire import sse
from hookgate.wire.sse import EventStream
from hookgate.wire.translate import chat_to_messages, messages_to_chat, responses_to_chat


class NativeSender(Protocol):
    """A provider that sends calls of its own APIs as they are."""

    name: str
    native: frozenset[Api]
    max_tokens: int
    """The ``max_tokens`` of a call translated to Messages whose client set none."""

    async def send_native(self, call: ModelCall, target: Target) -> ModelResponse: ...


class StreamTranslator(Protocol):
    """Turns one upstream event block into the client's event blocks."""

    @property
    def finished(self) -> bool:
        """True once the client's stream is complete; later blocks are ignored."""
        ...

    def feed(self, block: bytes) -> list[bytes]: ...


async def send(provider: NativeSender, call: ModelCall, target: Target) -> ModelResponse:
    """Send ``call`` through ``provider`` in an API it speaks; see the module docstring."""
    if call.api == "chat.completions" and "messages" in provider.native:
        return await _to_messages(provider, call, target)
    if call.api == "responses" and "chat.completions" in provider.native:
        return await _responses_to_chat(provider, call, target)
    if call.api == "responses" and "messages" in provider.native:
        return await _responses_to_messages(provider, call, target)
    if call.api in ("messages", "messages.count_tokens") and "chat.completions" in provider.native:
        if call.api == "messages.count_tokens":
            return _counted(call, target)
        return await _to_chat(provider, call, target)
    raise InvalidRequest(
        f"the model '{call.model}' is served by provider '{provider.name}', which cannot take "
        f"{_NAMES[call.api]} requests, and hookgate does not translate them to its API",
        param="model",
        code="unsupported_api",
    )


_NAMES: dict[Api, str] = {
    "chat.completions": "Chat Completions",
    "responses": "Responses API",
    "completions": "legacy Completions",
    "embeddings": "Embeddings",
    "messages": "Anthropic Messages",
    "messages.count_tokens": "Anthropic token counting",
}


async def _to_messages(provider: NativeSender, call: ModelCall, target: Target) -> ModelResponse:
    body = chat_to_messages.request(call.body, default_max_tokens=provider.max_tokens)
    response = await _sent_as(provider, call, target, "messages", body, chat_to_messages.error)
    if response.stream is not None:
        options = call.body.get("stream_options")
        usage = isinstance(options, dict) and bool(options.get("include_usage"))
        translator = chat_to_messages.StreamTranslator(model=call.model, include_usage=usage)
        return dataclasses.replace(response, stream=_translated(response.stream, translator))
    return response.with_body(chat_to_messages.response(response.body))


async def _responses_to_chat(
    provider: NativeSender, call: ModelCall, target: Target
) -> ModelResponse:
    body = responses_to_chat.request(call.body, keep_thinking=False)
    response = await _sent_as(provider, call, target, "chat.completions", body)
    if response.stream is not None:
        translator = responses_to_chat.StreamTranslator(request=call.body)
        return dataclasses.replace(response, stream=_translated(response.stream, translator))
    return response.with_body(responses_to_chat.response(response.body, request=call.body))


async def _responses_to_messages(
    provider: NativeSender, call: ModelCall, target: Target
) -> ModelResponse:
    """Responses → chat → Messages, and the answer back through both translations. The
    thinking blocks a Responses client got back (in reasoning items) are sent again."""
    chat = responses_to_chat.request(call.body, keep_thinking=True)
    body = chat_to_messages.request(chat, default_max_tokens=provider.max_tokens)
    response = await _sent_as(provider, call, target, "messages", body, chat_to_messages.error)
    if response.stream is not None:
        translator = _Chain(
            chat_to_messages.StreamTranslator(model=call.model, include_usage=True),
            responses_to_chat.StreamTranslator(request=call.body),
        )
        return dataclasses.replace(response, stream=_translated(response.stream, translator))
    answer = chat_to_messages.response(response.body)
    return response.with_body(responses_to_chat.response(answer, request=call.body))


async def _to_chat(provider: NativeSender, call: ModelCall, target: Target) -> ModelResponse:
    body = messages_to_chat.request(call.body)
    response = await _sent_as(
        provider, call, target, "chat.completions", body, messages_to_chat.error
    )
    model = target.model or call.model
    if response.stream is not None:
        translator = messages_to_chat.StreamTranslator(model=model)
        return dataclasses.replace(response, stream=_translated(response.stream, translator))
    return response.with_body(messages_to_chat.response(response.body, model=model))


async def _sent_as(
    provider: NativeSender,
    call: ModelCall,
    target: Target,
    api: Api,
    body: dict[str, Any],
    error: Callable[[int, bytes], bytes] | None = None,
) -> ModelResponse:
    """``call`` sent in ``api`` with ``body`` (the client's query string stays behind); an
    upstream error's body rewritten by ``error`` into the client's shape (None: it is
    already in it)."""
    sent = dataclasses.replace(call, api=api, payload=JsonBody.from_data(body), query="")
    try:
        return await provider.send_native(sent, target)
    except UpstreamStatusError as exc:
        if error is None:
            raise
        raise _rewritten(exc, error) from None


def _counted(call: ModelCall, target: Target) -> ModelResponse:
    """``count_tokens`` for a provider without it: the translated prompt's tokens."""
    chat = messages_to_chat.request({**call.body, "max_tokens": 1})
    model = target.model or call.model
    count = tokens.prompt_tokens("chat.completions", model, chat)
    headers = {"content-type": "application/json", "x-hookgate-token-count": "estimated"}
    return ModelResponse(200, headers, target, payload=JsonBody.from_data({"input_tokens": count}))


def _rewritten(exc: UpstreamStatusError, error: Callable[[int, bytes], bytes]) -> Exception:
    """``exc`` with its body in the client's API's error shape."""
    return UpstreamStatusError(
        exc.status, error(exc.status, exc.body), exc.upstream_headers, target=exc.target
    )


class _Chain:
    """Two stream translations in a row: ``first``'s output is ``then``'s input."""

    def __init__(self, first: StreamTranslator, then: StreamTranslator) -> None:
        self._first = first
        self._then = then

    @property
    def finished(self) -> bool:
        return self._then.finished

    def feed(self, block: bytes) -> list[bytes]:
        return [out for middle in self._first.feed(block) for out in self._then.feed(middle)]


async def _translated(
    stream: EventStream, translator: StreamTranslator
) -> AsyncGenerator[bytes, None]:
    """The client's events for ``stream``'s, batch by batch; closes ``stream``."""
    try:
        async for events in stream:
            out = [b for block in sse.split(events) for b in translator.feed(block)]
            if out:
                yield b"".join(out)
            if translator.finished:
                break
    finally:
        await stream.aclose()
