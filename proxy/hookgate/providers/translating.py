"""A provider that speaks every client API over an HTTP provider that speaks some.

Policies see every call in the client's API (the body it sent, the answer it gets), so a
pipeline is the same whichever provider serves an alias, and one alias may mix providers
(Claude first, GPT second). Only here, between the pipeline and the wire, is a call
translated, by :class:`TranslatingProvider` in front of each
:class:`~hookgate.providers.http.HttpProvider`:

* a Chat Completions call to an Anthropic provider is sent as a Messages call, and its
  answer (JSON, stream or error) comes back as Chat Completions
  (:mod:`hookgate.wire.translate.chat_to_messages`); to a Gemini provider, as a
  ``generateContent`` call (:mod:`hookgate.wire.translate.chat_to_gemini`);
* a Messages call to a provider without the Messages API is sent as a Chat Completions
  call (with ``stream_options.include_usage``, so a stream reports usage), and its answer
  comes back as Messages (:mod:`hookgate.wire.translate.messages_to_chat`);
* a Responses call to a provider without the Responses API is sent as a Chat Completions
  call (:mod:`hookgate.wire.translate.responses_to_chat`);
* those Chat Completions calls are in turn translated for a provider that does not speak
  Chat Completions either (Responses → chat → Messages for Anthropic; Messages or
  Responses → chat → ``generateContent`` for Gemini): the translations compose as
  :class:`_Leg` steps, the answer, its stream and its errors going back through each;
* a Messages ``count_tokens`` call to a provider without it is answered here: the
  prompt's tokens as the budget counts them (tiktoken);
* any other pair is a 400 that names both.

A chat answer translated back that reports no usage (a server ignoring
``include_usage``) is given hookgate's count of it: the other API must state a usage,
and zero would spend nothing.

The translated call is then fitted to its model (:mod:`hookgate.wire.translate.fit`):
a client written for one provider asks what its models take (Claude Code asks every
model for thinking and 32,000 output tokens), which another model may refuse outright.

Tool call ids the Gemini translation made carry Gemini's call id and thought signature
(:mod:`hookgate.wire.translate.chat_to_gemini`); only the Gemini leg reads them, so a
call sent in any other API has them cut to their head
(:func:`~hookgate.wire.translate.chat_to_gemini.portable_ids`): a conversation Gemini
took part in may go on with another provider. A call a Gemini API client made (the
server runs it as Chat Completions) carries what chat cannot
(:attr:`~hookgate.pipeline.types.ModelCall.gemini`); the Gemini leg puts it back
(:func:`~hookgate.wire.translate.gemini_native.restore`), every other ignores it.

What cannot be translated is refused with a 400 that names the field, never dropped; the
translation modules list what they translate, refuse and leave out on purpose. The
client's query string goes only to a provider of its own API.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import orjson

from hookgate.budgets import tokens
from hookgate.errors import InvalidRequest, UpstreamStatusError
from hookgate.pipeline.observe import Observation
from hookgate.pipeline.types import Api, JsonBody, ModelCall, ModelResponse, Target
from hookgate.providers.base import Relayed
from hookgate.providers.http import HttpProvider
from hookgate.wire import models, sse
from hookgate.wire.sse import EventStream
from hookgate.wire.translate import (
    chat_to_gemini,
    chat_to_messages,
    fit,
    gemini_native,
    messages_to_chat,
    responses_to_chat,
)

log = logging.getLogger("hookgate")


class StreamTranslator(Protocol):
    """Turns one event block of a stream in one API into blocks of another (an upstream's
    stream into the client's; the Gemini API's door uses it too)."""

    @property
    def finished(self) -> bool:
        """True once the client's stream is complete; later blocks are ignored."""
        ...

    def feed(self, block: bytes) -> list[bytes]: ...


class TranslatingProvider:
    """``inner``, taking calls in every client API: those in its native APIs
    (:attr:`~hookgate.providers.http.HttpProvider.native`) as they are, the others
    translated (see the module docstring). Relaying and model listing are ``inner``'s."""

    def __init__(self, inner: HttpProvider) -> None:
        self.name = inner.name
        self.address = inner.address
        self._inner = inner

    async def send(
        self, call: ModelCall, target: Target, observation: Observation
    ) -> ModelResponse:
        """Send ``call`` through ``inner`` in an API it speaks."""
        provider = self._inner
        if call.api in provider.native:
            return await provider.send(_portable(call), target, observation)
        legs = _legs(provider, call, target)
        counting = call.api == "messages.count_tokens"
        if legs is None and counting and _from_chat(provider, call, target) is not None:
            return _counted(call, target)
        if legs is None:
            raise InvalidRequest(
                f"the model '{call.model}' is served by provider '{provider.name}', which "
                f"cannot take {_NAMES[call.api]} requests, and hookgate does not translate "
                "them to its API",
                param="model",
                code="unsupported_api",
            )
        return await _through(provider, call, target, legs, observation)

    def relay(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: AsyncIterable[bytes] | None,
    ) -> AbstractAsyncContextManager[Relayed]:
        return self._inner.relay(method, path, query, headers, body)

    async def models(self) -> list[dict[str, Any]]:
        return await self._inner.models()


def _portable(call: ModelCall) -> ModelCall:
    """``call`` with the tool call ids the Gemini translation made cut to their head,
    unless it goes to Gemini (the one API that reads what they carry)."""
    if call.api == "generate_content":
        return call
    cut = chat_to_gemini.portable_ids(call.payload.to_bytes())
    if cut is None:
        return call
    return dataclasses.replace(call, payload=JsonBody.parsed(cut, orjson.loads(cut)))


_NAMES: dict[Api, str] = {
    "chat.completions": "Chat Completions",
    "responses": "Responses API",
    "completions": "legacy Completions",
    "embeddings": "Embeddings",
    "messages": "Anthropic Messages",
    "messages.count_tokens": "Anthropic token counting",
    "generate_content": "Gemini generateContent",
}


@dataclasses.dataclass(frozen=True, slots=True)
class _Leg:
    """One translation: a body in one API becomes a body in ``to``; the answer, its
    stream and its errors come back the other way."""

    to: Api
    request: Callable[[Mapping[str, Any]], dict[str, Any]]
    response: Callable[[Mapping[str, Any]], dict[str, Any]]
    stream: Callable[[Mapping[str, Any]], StreamTranslator]
    """The stream's translator, given the body this leg translated (its
    ``stream_options.include_usage`` says whether the client side wants usage)."""
    error: Callable[[int, bytes], bytes] | None = None
    """An upstream error body in ``to``'s shape → one in the leg's client API's shape."""


def _legs(provider: HttpProvider, call: ModelCall, target: Target) -> list[_Leg] | None:
    """The translations from the call's API to one ``provider`` speaks, client side
    first: every path goes through Chat Completions. None when there is none."""
    tail = _from_chat(provider, call, target)
    if tail is None:
        return None
    if call.api == "chat.completions" and tail:
        return tail
    if call.api == "responses":
        keep_thinking = bool(tail) and tail[0].to == "messages"
        return [_responses_to_chat(call, keep_thinking), *tail]
    if call.api == "messages":
        return [_messages_to_chat(call, target), *tail]
    return None


def _from_chat(provider: HttpProvider, call: ModelCall, target: Target) -> list[_Leg] | None:
    """How a Chat Completions body reaches ``provider``: as it is (``[]``), through one
    translation, or not at all (None)."""
    if "chat.completions" in provider.native:
        return []
    if "messages" in provider.native:
        return [_chat_to_messages(provider, call)]
    if "generate_content" in provider.native:
        return [_chat_to_gemini(call, target)]
    return None


def _include_usage(body: Mapping[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))


def _chat_to_messages(provider: HttpProvider, call: ModelCall) -> _Leg:
    return _Leg(
        to="messages",
        request=lambda body: chat_to_messages.request(body, default_max_tokens=provider.max_tokens),
        response=chat_to_messages.response,
        stream=lambda body: chat_to_messages.StreamTranslator(
            model=call.model, include_usage=_include_usage(body)
        ),
        error=chat_to_messages.error,
    )


def _chat_to_gemini(call: ModelCall, target: Target) -> _Leg:
    """The upstream model rides in the body for the provider to put in the URL. A call a
    Gemini client made gets its settings back (:mod:`~hookgate.wire.translate.gemini_native`)."""
    model = target.model or call.model
    kept = call.gemini

    def request(body: Mapping[str, Any]) -> dict[str, Any]:
        out = chat_to_gemini.request(body)
        if kept is not None:
            out = gemini_native.restore(out, body, kept)
        return {**out, "model": body.get("model", model)}

    return _Leg(
        to="generate_content",
        request=request,
        response=lambda answer: chat_to_gemini.response(answer, model=model),
        stream=lambda body: chat_to_gemini.StreamTranslator(
            model=model, include_usage=_include_usage(body)
        ),
        error=chat_to_gemini.error,
    )


def _responses_to_chat(call: ModelCall, keep_thinking: bool) -> _Leg:
    """``keep_thinking``: the thinking blocks a Responses client got back (in reasoning
    items) are sent again, for an Anthropic model."""
    return _Leg(
        to="chat.completions",
        request=lambda body: responses_to_chat.request(body, keep_thinking=keep_thinking),
        response=lambda answer: responses_to_chat.response(answer, request=call.body),
        stream=lambda _: responses_to_chat.StreamTranslator(request=call.body),
    )


def _messages_to_chat(call: ModelCall, target: Target) -> _Leg:
    model = target.model or call.model
    return _Leg(
        to="chat.completions",
        request=messages_to_chat.request,
        response=lambda answer: messages_to_chat.response(answer, model=model),
        stream=lambda _: messages_to_chat.StreamTranslator(model=model),
        error=messages_to_chat.error,
    )


async def _through(
    provider: HttpProvider,
    call: ModelCall,
    target: Target,
    legs: list[_Leg],
    observation: Observation,
) -> ModelResponse:
    """``call`` sent through ``legs`` in turn, and its answer back through them all."""
    bodies: list[Mapping[str, Any]] = [call.body]
    for leg in legs:
        bodies.append(leg.request(bodies[-1]))
    model = target.model or call.model
    limits = models.limits_of(
        model, max_output_tokens=target.max_output_tokens, reasoning=target.reasoning
    )
    sent, changed = fit.fit(legs[-1].to, bodies[-1], limits)
    if changed:
        log.debug("%s: fitted %s to what %s can do", call.model, ", ".join(changed), model)
    errors = [leg.error for leg in reversed(legs) if leg.error is not None]
    error = functools.reduce(_then, errors) if errors else None
    response = await _sent_as(provider, call, target, legs[-1].to, sent, observation, error)
    if legs[-1].to == "chat.completions":
        response = await _with_usage(response, model, sent)
    if response.stream is not None:
        translators = [leg.stream(body) for leg, body in zip(legs, bodies, strict=False)]
        translator = functools.reduce(_Chain, reversed(translators))
        return dataclasses.replace(response, stream=_translated(response.stream, translator))
    answer = response.body
    for leg in reversed(legs):
        answer = leg.response(answer)
    return response.with_body(answer)


async def _with_usage(
    response: ModelResponse, model: str, sent: Mapping[str, Any]
) -> ModelResponse:
    """A chat answer that reports no usage (a server ignoring ``include_usage``) given
    hookgate's count of it (tiktoken: the prompt sent, the text answered), so the
    translation back, which must state a usage, does not state zero and spend nothing."""
    if response.stream is not None:
        return dataclasses.replace(response, stream=_usage_kept(response.stream, model, sent))
    if "usage" in response.body:
        return response
    text = tokens.output_text("chat.completions", response.body)
    usage = await tokens.counted_usage("chat.completions", model, sent, text)
    return response.with_body({**response.body, "usage": usage})


async def _usage_kept(
    stream: EventStream, model: str, sent: Mapping[str, Any]
) -> AsyncGenerator[bytes, None]:
    """``stream``, with a usage chunk before ``[DONE]`` when it sent none."""
    reported = False
    text: list[str] = []
    try:
        async for events in stream:
            out: list[bytes] = []
            for block in sse.split(events):
                data = sse.json_of(block)
                if isinstance(data, dict):
                    reported = reported or isinstance(data.get("usage"), dict)
                    for choice in data.get("choices") or ():
                        delta = choice.get("delta") if isinstance(choice, dict) else None
                        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                            text.append(delta["content"])
                elif sse.is_done(block) and not reported:
                    usage = await tokens.counted_usage(
                        "chat.completions", model, sent, "".join(text)
                    )
                    out.append(sse.encode({"object": "chat.completion.chunk", "choices": [],
                                           "usage": usage}))  # fmt: skip
                out.append(block)
            yield b"".join(out)
    finally:
        await stream.aclose()


def _then(
    first: Callable[[int, bytes], bytes], then: Callable[[int, bytes], bytes]
) -> Callable[[int, bytes], bytes]:
    return lambda status, body: then(status, first(status, body))


async def _sent_as(
    provider: HttpProvider,
    call: ModelCall,
    target: Target,
    api: Api,
    body: dict[str, Any],
    observation: Observation,
    error: Callable[[int, bytes], bytes] | None,
) -> ModelResponse:
    """``call`` sent in ``api`` with ``body`` (the client's query string stays behind); an
    upstream error's body rewritten by ``error`` into the client's shape (None: it is
    already in it)."""
    sent = dataclasses.replace(call, api=api, payload=JsonBody.from_data(body), query="")
    try:
        return await provider.send(_portable(sent), target, observation)
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
    return ModelResponse(
        status=200,
        headers=headers,
        target=target,
        payload=JsonBody.from_data({"input_tokens": count}),
    )


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
