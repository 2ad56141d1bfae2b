"""An OpenAI-compatible HTTP provider on the app's shared aiohttp ``ClientSession``.

This module is the boundary where aiohttp and timeout exceptions become
:mod:`hookgate.errors` kinds (see :func:`translate`); nothing above it sees aiohttp's types.
"""

from __future__ import annotations

import io
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterator,
    Mapping,
)
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp.payload import TOO_LARGE_BYTES_BODY
from yarl import URL

from hookgate.config.schema import DEFAULT_MAX_TOKENS, OpenAICompatibleSettings, ProviderSettings
from hookgate.errors import (
    UpstreamAuthFailed,
    UpstreamBadResponse,
    UpstreamConnectError,
    UpstreamError,
    UpstreamReset,
    UpstreamStatusError,
    UpstreamTimeout,
)
from hookgate.pipeline.observe import UpstreamAddress
from hookgate.pipeline.types import Api, JsonBody, ModelCall, ModelResponse, Target
from hookgate.providers import translated as translation
from hookgate.providers.base import API_PATHS, OPENAI_APIS, json_object
from hookgate.providers.scrub import Scrubber, credentials
from hookgate.wire import sse
from hookgate.wire.headers import response_headers
from hookgate.wire.translate import chat_to_gemini


def translate(exc: BaseException, target: str) -> UpstreamError:
    """Map a transport exception to the :class:`UpstreamError` kind it means."""
    if isinstance(exc, UpstreamError):
        return exc
    if isinstance(exc, aiohttp.ClientConnectorError):
        return UpstreamConnectError(f"cannot connect to {target}: {exc.os_error}", target=target)
    if isinstance(exc, TimeoutError):
        return UpstreamTimeout(f"{target} sent nothing within the timeout", target=target)
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return UpstreamReset(f"{target} closed the connection mid-response", target=target)
    if isinstance(exc, aiohttp.ClientResponseError):
        return UpstreamBadResponse(f"{target} sent an invalid HTTP response", target=target)
    if isinstance(exc, aiohttp.ClientOSError | ConnectionError):
        return UpstreamReset(f"connection to {target} failed: {exc}", target=target)
    return UpstreamBadResponse(f"{target} failed: {type(exc).__name__}", target=target)


@contextmanager
def translated(target: str) -> Iterator[None]:
    """Re-raise transport exceptions inside the block as :class:`UpstreamError` kinds."""
    try:
        yield
    except (aiohttp.ClientError, TimeoutError, ConnectionError) as exc:
        raise translate(exc, target) from exc


MODEL_LIST_LIMIT = 8 * 1024 * 1024
"""The most of a provider's model list read (OpenAI's is ~50 KB)."""

ERROR_BODY_LIMIT = 1024 * 1024
"""The most of an upstream error body read: an error is a short JSON object, and a
status page of megabytes is not worth buffering to relay."""


def redirect_refused(status: int, label: str) -> UpstreamBadResponse:
    """A 502 for an upstream redirect. Never relayed: a client SDK would follow its
    ``Location`` and send the request (the prompt, unredacted) to a host the upstream
    chose, past every policy."""
    return UpstreamBadResponse(
        f"{label} answered with a redirect (HTTP {status}); the proxy does not follow or "
        "relay redirects: check the provider's base_url",
        target=label,
    )


async def read_error_body(response: aiohttp.ClientResponse, label: str) -> bytes:
    """The body of an error ``response`` (``UpstreamBadResponse`` above the limit)."""
    body = b""
    with translated(label):
        while len(body) <= ERROR_BODY_LIMIT and (
            chunk := await response.content.read(ERROR_BODY_LIMIT + 1 - len(body))
        ):
            body += chunk
    if len(body) > ERROR_BODY_LIMIT:
        raise UpstreamBadResponse(
            f"{label} answered HTTP {response.status} with an error body over "
            f"{ERROR_BODY_LIMIT} bytes",
            target=label,
        )
    return body


@dataclass(frozen=True, slots=True)
class Relayed:
    """An upstream answer to a relayed request (see :meth:`OpenAIProvider.relay`)."""

    status: int
    headers: dict[str, str]
    """Filtered (no hop-by-hop headers, no cookies) and scrubbed of the provider's key."""
    length: int | None
    """The body's length where it is known and relayed as is."""
    error: bytes | None
    """The whole body of an error answer, scrubbed; None for a success."""
    chunks: AsyncIterator[bytes]
    """The body of a success as it arrives; raises :class:`UpstreamError` kinds."""


async def _chunks(response: aiohttp.ClientResponse, label: str) -> AsyncGenerator[bytes, None]:
    with translated(label):
        async for chunk in response.content.iter_any():
            yield chunk


class OpenAIProvider:
    """Sends calls to ``base_url`` + the API's path, with the provider's key."""

    kind = "openai"
    """``gen_ai.provider.name`` of the calls it sends."""
    native: frozenset[Api] = frozenset(OPENAI_APIS)
    """The APIs it sends as they are; calls in others are translated."""
    default_base_url: str | None = None
    """Where a provider of a kind with one home (Anthropic, Gemini) is, unless configured."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    """The ``max_tokens`` of a chat call translated to Messages whose client set none (an
    Anthropic provider's own setting)."""
    reads_gemini_ids: bool = False
    """Whether what Gemini's tool call ids carry is sent on (only to Gemini, which needs
    it back); other providers refuse such ids."""

    def __init__(
        self,
        name: str,
        config: ProviderSettings,
        session: Callable[[], aiohttp.ClientSession],
    ) -> None:
        base_url = config.base_url or self.default_base_url
        assert base_url is not None
        self.name = name
        self.base_url = URL(base_url.rstrip("/"))
        self.address = UpstreamAddress(self.kind, self.base_url.host, self.base_url.port)
        self._session = session
        self._headers = dict(config.headers)
        if config.api_key is not None:
            self._headers.update(self.key_headers(config.api_key.get_secret_value()))
        self.scrub = Scrubber(credentials(self._headers))
        """Masks this provider's credentials in what it sends back."""
        if isinstance(config, OpenAICompatibleSettings) and config.apis is not None:
            self.native = frozenset(config.apis)
        self.timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=config.timeout.connect_s, sock_read=config.timeout.read_s
        )

    @staticmethod
    def key_headers(key: str) -> dict[str, str]:
        """The headers that carry the provider's key."""
        return {"authorization": f"Bearer {key}"}

    def url(self, path: str, query: str = "") -> URL:
        """The upstream URL for ``path`` (relative to ``base_url``, starting with ``/``,
        percent-encoded) and ``query`` (encoded), after any query ``base_url`` has."""
        url = self.base_url.with_path(self.base_url.path.rstrip("/") + path, encoded=True)
        joined = "&".join(q for q in (self.base_url.raw_query_string, query) if q)
        return URL(f"{url}?{joined}", encoded=True) if joined else url

    def headers(self, forwarded: Mapping[str, str]) -> dict[str, str]:
        """``forwarded`` client headers plus this provider's own (its key wins)."""
        return {**forwarded, **self._headers}

    @asynccontextmanager
    async def relay(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: AsyncIterable[bytes] | None,
    ) -> AsyncIterator[Relayed]:
        """Send one request below ``base_url`` as it came (``path`` percent-encoded and
        already checked by the caller; ``headers`` the forwarded client headers plus the
        body's own), with this provider's key, and hand its answer back streamed.

        The answer's headers are filtered and scrubbed of this provider's credentials; an
        error answer (4xx/5xx) is read whole and scrubbed (:attr:`Relayed.error`). A
        redirect is an :class:`UpstreamBadResponse`, never relayed; transport failures
        are :class:`UpstreamError` kinds, also while the body streams. The connection is
        released when the block ends.
        """
        label = f"{self.name}/{method} {path}"
        with translated(label):
            response = await self._session().request(
                method,
                self.url(path, query),
                headers=self.headers(headers),
                data=body,
                allow_redirects=False,
                timeout=self.timeout,
            )
        async with response:
            if 300 <= response.status < 400:
                raise redirect_refused(response.status, label)
            error = None
            if response.status >= 400:  # may quote the provider's key: read, mask
                error = self.scrub.body(await read_error_body(response, label))
            length = response.content_length
            if "content-encoding" in response.headers:
                length = None  # aiohttp decodes a compressed body: its encoded length is off
            yield Relayed(
                response.status,
                self.scrub.headers(response_headers(response.headers)),
                length,
                error,
                _chunks(response, label),
            )

    async def models(self) -> list[dict[str, Any]]:
        """The provider's own model objects (``GET {base_url}/models``), each with a string
        ``id``. Raises :class:`UpstreamError` kinds: a non-2xx answer, a body over
        :data:`MODEL_LIST_LIMIT` bytes, or one that is not an OpenAI model list."""
        data = await self.listed("/models", "", "data")
        return [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]

    async def listed(self, path: str, query: str, field: str) -> list[Any]:
        """The array in ``field`` of the JSON object ``GET path?query`` answers (a model
        list). Raises :class:`UpstreamError` kinds: a non-2xx answer, a body over
        :data:`MODEL_LIST_LIMIT` bytes, or one without that array."""
        label = f"{self.name}{path}"
        async with self.relay("GET", path, query, {"accept": "application/json"}, None) as got:
            if got.error is not None:
                raise UpstreamStatusError(got.status, got.error, {}, target=label)
            body = b""
            async for chunk in got.chunks:
                body += chunk
                if len(body) > MODEL_LIST_LIMIT:
                    raise UpstreamBadResponse(f"{label}: a list over {MODEL_LIST_LIMIT} bytes")
        try:
            data = orjson.loads(body).get(field)
        except (orjson.JSONDecodeError, AttributeError):
            data = None
        if not isinstance(data, list):
            raise UpstreamBadResponse(f"{label} did not answer with a model list", target=label)
        return data

    def addressed(self, call: ModelCall) -> tuple[URL, ModelCall]:
        """Where ``call`` goes, and the call as sent there (a provider whose URL names the
        model may rewrite the body's)."""
        return self.url(API_PATHS[call.api], call.query), call

    async def send(self, call: ModelCall, target: Target) -> ModelResponse:
        """Send ``call``: as it is in an API this provider speaks (:attr:`native`),
        translated to one it speaks otherwise (:mod:`hookgate.providers.translated`)."""
        if call.api in self.native:
            return await self.send_native(call, target)
        return await translation.send(self, call, target)

    async def send_native(self, call: ModelCall, target: Target) -> ModelResponse:
        """Send ``call``, in one of the :attr:`native` APIs, as it is; except that tool
        call ids carrying a Gemini function call's id and signature (a conversation Gemini
        took part in) are cut to their head for a provider other than Gemini
        (:func:`~hookgate.wire.translate.chat_to_gemini.portable_ids`)."""
        label = target.label(call.model)
        headers = self.headers(call.headers)
        headers["content-type"] = "application/json"
        url, call = self.addressed(call)
        raw = call.payload.to_bytes()
        if not self.reads_gemini_ids:
            raw = chat_to_gemini.portable_ids(raw) or raw
        with translated(label):
            response = await self._session().post(
                url,
                data=_body(raw),
                headers=headers,
                timeout=self.timeout,
                allow_redirects=False,
            )
        handed_off = False
        try:
            if 300 <= response.status < 400:
                raise redirect_refused(response.status, label)
            if response.status == 401:
                raise UpstreamAuthFailed(
                    f"{label} refused the credentials hookgate sends for provider "
                    f"{self.name!r} (HTTP 401): the proxy's configuration (its api_key or "
                    "headers) must be fixed, not the caller's key",
                    target=label,
                )
            if response.status >= 300:
                body = await read_error_body(response, label)
                raise UpstreamStatusError(
                    response.status,
                    self.scrub.body(body),
                    self.scrub.headers(response_headers(response.headers)),
                    target=label,
                )
            relayed = self.scrub.headers(response_headers(response.headers))
            if call.stream:
                if response.content_type != "text/event-stream":
                    raise UpstreamBadResponse(
                        f"{label} answered a streamed call with {response.content_type!r}, "
                        "not an event stream",
                        target=label,
                    )
                stream = _UpstreamEvents(response, label, sse.terminal_check(call.api), self.scrub)
                handed_off = True
                return ModelResponse(response.status, relayed, target, stream=stream)
            with translated(label):
                raw = await response.read()
            data = json_object(raw, label)
            if _is_error_only(data):  # some gateways answer 200 {"error": ...}
                raise UpstreamStatusError(
                    502, self.scrub.body(raw), self.scrub.headers(relayed), target=label
                )
            return ModelResponse(
                response.status, relayed, target, payload=JsonBody.parsed(raw, data)
            )
        finally:
            if not handed_off:
                response.release()


def _body(raw: bytes) -> bytes | io.BytesIO:
    """The request body as aiohttp should send it: past a megabyte, a file-like object
    it writes in chunks (raw bytes that large lock the loop, and aiohttp warns so)."""
    return raw if len(raw) <= TOO_LARGE_BYTES_BODY else io.BytesIO(raw)


def _is_error_only(data: Mapping[str, object]) -> bool:
    """An error object where a result should be: ``{"error": {...}}`` with no choices,
    output or data (a failed Responses object, with its ``output``, is a result)."""
    return (
        isinstance(data.get("error"), dict)
        and "choices" not in data
        and "output" not in data
        and "data" not in data
    )


def _error_event(block: bytes) -> bytes | None:
    """The OpenAI error body of an error event (``data: {"error": ...}``, or a Responses
    ``error`` event), else None."""
    if b"error" not in block:
        return None
    data = sse.json_of(block)
    if not isinstance(data, dict):
        return None
    if _is_error_only(data):
        return orjson.dumps(data)
    if data.get("type") == "error":  # Responses: {"type": "error", "code", "message", ...}
        fields = ("message", "type", "param", "code")
        return orjson.dumps({"error": {k: data.get(k) for k in fields} | {"type": "error"}})
    return None


class _UpstreamEvents:
    """The event blocks of one upstream stream; :meth:`aclose` always frees the connection.

    Ends at the protocol's terminal event (what follows it is not read): a stream that
    stops before it raises :class:`UpstreamReset`, so a cut stream never looks complete.
    Closing early (the client went away) closes the upstream connection, which cancels
    the upstream's work.
    """

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        label: str,
        terminal: Callable[[bytes], bool],
        scrub: Scrubber,
    ) -> None:
        self._response = response
        self._events = _events(response, label, terminal, scrub)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._events

    async def aclose(self) -> None:
        await self._events.aclose()
        self._response.close()


async def _events(
    response: aiohttp.ClientResponse,
    label: str,
    terminal: Callable[[bytes], bool],
    scrub: Scrubber,
) -> AsyncGenerator[bytes, None]:
    """The stream's event blocks, the provider's credentials masked in them (an upstream
    error event may quote the key, as its error bodies do)."""
    decoder = sse.SSEDecoder()
    finished = False
    first = True
    try:
        with translated(label):
            async for chunk in response.content.iter_any():
                try:
                    blocks = decoder.feed(chunk.removeprefix(b"\xef\xbb\xbf") if first else chunk)
                except sse.EventTooLarge as exc:
                    raise UpstreamBadResponse(f"{label}: {exc}", target=label) from None
                if not blocks:
                    continue
                if not all(sse.is_event(block) for block in blocks):
                    raise UpstreamBadResponse(f"{label} sent bytes that are not SSE", target=label)
                if first and (error := _error_event(blocks[0])) is not None:
                    # nothing has reached the client: an error now is a failed attempt
                    # (a fallback moves on), not a stream that fails after a 200
                    raise UpstreamStatusError(502, scrub.body(error), {}, target=label)
                bad = next((i for i, b in enumerate(blocks) if not sse.data_is_json(b)), None)
                if bad == 0 and first:  # nothing relayed yet: a failed attempt, as above
                    raise UpstreamBadResponse(
                        f"{label} sent a first event whose data is not JSON", target=label
                    )
                first = False
                if bad is not None:
                    blocks = blocks[:bad]
                for index, block in enumerate(blocks):
                    if terminal(block):  # nothing after it is relayed, or waited for
                        finished, blocks = True, blocks[: index + 1]
                        break
                if blocks:
                    yield scrub.body(blocks[0] if len(blocks) == 1 else b"".join(blocks))
                if finished:
                    break
                if bad is not None:  # the client gets the SSE error event instead
                    raise UpstreamBadResponse(
                        f"{label} sent an event whose data is not JSON", target=label
                    )
        if not finished:
            raise UpstreamReset(f"{label} ended the stream before its final event", target=label)
    finally:
        if finished:
            response.release()
        else:
            response.close()
