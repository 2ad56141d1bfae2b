"""Model-level policies in-process, for any framework whose model talks through ``openai``.

:class:`GateTransport` is an ``httpx`` transport. Under a reply (see
:func:`hookgate.sdk.driver.current`) every model request of a client built on it — chat
completions, Responses, completions, embeddings; streamed or not — runs through the
reply's gate (:meth:`Driver.model_call <hookgate.sdk.driver.Driver.model_call>`): the same
``on_system_prompt``, ``convert_to_llm``, ``on_model_call`` and ``on_response`` hooks the
proxy runs, on the same OpenAI wire bodies, with the request to the provider as the
terminal handler. So the framework's own client translates its message types (content
parts, tool calls, images, reasoning) and hookgate reads and writes only the wire format
it already knows: prompts are redacted before they leave the process, denied tools are
not offered, placeholders are restored in the answer, its streamed deltas and tool-call
arguments, and the call gets a ``chat {model}`` span under the reply's.

Every request under a reply also carries the reply's headers (``traceparent``,
``x-hookgate-reply-id``, ...), so a proxy behind the client joins the reply's trace and
sees its budgets. Outside a reply the transport passes requests through untouched, and a
request made by a model call an adapter's own model hook already runs through the gate
(LangChain's ``wrap_model_call``) only gets the headers.

A policy's refusal, and the provider's own error status, come back as the HTTP response
the provider would have sent (an OpenAI error body with the policy's status), so the
``openai`` client raises its usual exception. A stream asks for its usage chunk (the span
and the reply's turns need it), which a client that did not ask for it never sees
(:mod:`hookgate.pipeline.runner`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

import httpx2 as httpx
import orjson

from hookgate.errors import HookgateError, UpstreamBadResponse, UpstreamStatusError
from hookgate.pipeline.types import Api, Context, JsonBody, ModelCall, ModelResponse, Target
from hookgate.providers.base import API_PATHS, OPENAI_APIS, json_object
from hookgate.sdk.driver import MODEL_CALL, Running, current
from hookgate.wire import sse
from hookgate.wire.sse import EventStream

_NOT_RELAYED = frozenset({"content-length", "content-encoding", "transfer-encoding"})
"""Headers of the provider's response that stop being true once hookgate re-encodes it."""


class GateTransport(httpx.AsyncBaseTransport):
    """See the module docstring. ``inner`` sends to the network (an ``httpx``
    ``AsyncHTTPTransport`` by default). With ``turns`` each model call is also one turn of
    its reply (:meth:`Driver.model_call`'s ``turn``): for frameworks that have no turn hook
    of their own to report a model call's end."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None, *, turns: bool = False):
        self._inner = inner or httpx.AsyncHTTPTransport()
        self._turns = turns

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        running = current()
        if running is None:
            return await self._inner.handle_async_request(request)
        request.headers.update(running.reply.headers())
        governed = MODEL_CALL.get()
        if governed is not None:  # an adapter's model hook runs this call through the gate
            if governed.observation.spans is not None:
                request.headers.update(governed.observation.spans.trace_headers())
            return await self._inner.handle_async_request(request)
        api = _api_of(request)
        if api is None:
            return await self._inner.handle_async_request(request)
        raw = await request.aread()
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict):  # not ours to judge: the provider answers it
            return await self._inner.handle_async_request(request)
        return await self._govern(running, request, api, raw, data)

    async def _govern(
        self,
        running: Running,
        request: httpx.Request,
        api: Api,
        raw: bytes,
        data: dict[str, object],
    ) -> httpx.Response:
        model = data.get("model")
        stream = data.get("stream") is True
        call = ModelCall(
            api=api,
            payload=JsonBody.parsed(raw, data),
            model=model if isinstance(model, str) else "",
            stream=stream,
            targets=(Target(request.url.host or "upstream", None),),
        )

        async def send(call: ModelCall, ctx: Context) -> ModelResponse:
            return await self._send(request, call, ctx)

        try:
            response = await running.driver.model_call(call, send, running.reply, turn=self._turns)
        except UpstreamStatusError as exc:
            return httpx.Response(
                exc.status, headers=exc.headers(), content=exc.to_bytes(), request=request
            )
        except HookgateError as exc:
            headers = {**exc.headers(), "content-type": "application/json"}
            return httpx.Response(
                exc.status, headers=headers, content=exc.to_bytes(), request=request
            )
        headers = dict(response.headers)  # the terminal's, already without _NOT_RELAYED
        if response.stream is not None:
            return httpx.Response(
                response.status,
                headers=headers,
                stream=_Body(response.stream),
                request=request,
            )
        assert response.payload is not None
        headers["content-type"] = "application/json"
        return httpx.Response(
            response.status, headers=headers, content=response.payload.to_bytes(), request=request
        )

    async def _send(self, request: httpx.Request, call: ModelCall, ctx: Context) -> ModelResponse:
        """The terminal: ``call`` sent where the client sent it, as the client sent it
        (its headers, its URL), with the model call's span as the trace parent. A call a
        policy made for another API (``context``'s summary, a chat call during a Responses
        call) goes to that API's path beside the client's."""
        target = call.targets[0]
        label = target.label(call.model)
        headers = [
            (k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"
        ]
        url = request.url
        asked = _api_of(request)
        if asked is not None and asked != call.api:
            base = url.path.rstrip("/").removesuffix(API_PATHS[asked])
            url = url.copy_with(path=base + API_PATHS[call.api])
        sent = httpx.Request(
            request.method,
            url,
            headers=headers,
            content=call.payload.to_bytes(),
            extensions=request.extensions,
        )
        if ctx.observation.spans is not None:
            sent.headers.update(ctx.observation.spans.trace_headers())
        response = await self._inner.handle_async_request(sent)
        response.request = sent
        relayed = {k: v for k, v in response.headers.items() if k.lower() not in _NOT_RELAYED}
        if response.status_code >= 300:
            body = await response.aread()
            await response.aclose()
            raise UpstreamStatusError(response.status_code, body, relayed, target=label)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return ModelResponse(
                status=response.status_code,
                headers=relayed,
                target=target,
                stream=_Events(response, label),
            )
        try:
            body = await response.aread()
        finally:
            await response.aclose()
        data = json_object(body, label)
        return ModelResponse(
            status=response.status_code,
            headers=relayed,
            target=target,
            payload=JsonBody.parsed(body, data),
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _api_of(request: httpx.Request) -> Api | None:
    if request.method != "POST":
        return None
    path = request.url.path.rstrip("/")
    return next((api for api in OPENAI_APIS if path.endswith(API_PATHS[api])), None)


class _Events:
    """A provider's event stream as whole SSE blocks (:class:`EventStream`)."""

    def __init__(self, response: httpx.Response, label: str) -> None:
        self._response = response
        self._label = label
        self._events = self._blocks()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._events

    async def _blocks(self) -> AsyncGenerator[bytes, None]:
        decoder = sse.SSEDecoder()
        async for chunk in self._response.aiter_bytes():
            try:
                blocks = decoder.feed(chunk)
            except sse.EventTooLarge as exc:
                raise UpstreamBadResponse(f"{self._label}: {exc}", target=self._label) from None
            if blocks:
                yield b"".join(blocks)
        if decoder.pending.strip():
            yield decoder.pending

    async def aclose(self) -> None:
        await self._events.aclose()
        await self._response.aclose()


class _Body(httpx.AsyncByteStream):
    """A governed event stream as the body ``httpx`` hands the ``openai`` client. A
    failure after the first event ends it with an ``error`` event carrying an OpenAI error
    object, which the ``openai`` client raises as ``APIError`` (what the proxy sends, too)."""

    def __init__(self, stream: EventStream) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for events in self._stream:
                yield events
        except HookgateError as exc:  # after the first event: as the proxy ends a stream
            yield sse.encode(exc.to_body(), event="error")

    async def aclose(self) -> None:
        await self._stream.aclose()
