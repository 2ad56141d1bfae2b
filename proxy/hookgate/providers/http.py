"""The shared base of the providers reached over HTTP, on the app's aiohttp ``ClientSession``.

:class:`HttpProvider` sends a call in one of its :attr:`~HttpProvider.native` APIs as it
is: below ``base_url``, with the provider's key, redirects refused, error answers read
within a limit and scrubbed of the key, streams read as whole events up to their terminal
one (:mod:`hookgate.providers.upstream_events`), and transport exceptions turned into
:mod:`hookgate.errors` kinds at this boundary
(:func:`~hookgate.providers.upstream_errors.as_upstream_errors`). It also relays requests
outside the model pipeline (the generic relay's one upstream client) and lists models.

A subclass says what differs per provider: its ``kind``, its native APIs, the header its
key goes in (:meth:`~HttpProvider.key_headers`), and, where they differ, where a call goes
(:meth:`~HttpProvider.addressed`) and how its models are listed. Calls in other APIs are
translated in front of it (:class:`~hookgate.providers.translating.TranslatingProvider`).
"""

from __future__ import annotations

import abc
import io
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
)
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson
from aiohttp.payload import TOO_LARGE_BYTES_BODY
from yarl import URL

from hookgate.budgets import tokens
from hookgate.config.schema import DEFAULT_MAX_TOKENS, OpenAICompatibleSettings, ProviderSettings
from hookgate.errors import UpstreamAuthFailed, UpstreamBadResponse, UpstreamStatusError
from hookgate.pipeline.observe import Observation, UpstreamAddress
from hookgate.pipeline.types import Api, JsonBody, ModelCall, ModelResponse, Target
from hookgate.providers.base import API_PATHS, API_VERSION, Relayed, is_error_only, json_object
from hookgate.providers.scrub import Scrubber, credentials
from hookgate.providers.upstream_errors import (
    as_upstream_errors,
    read_error_body,
    redirect_refused,
)
from hookgate.providers.upstream_events import UpstreamEvents
from hookgate.wire.headers import response_headers
from hookgate.wire.usage import usage_requested

MODEL_LIST_LIMIT = 8 * 1024 * 1024
"""The most of a provider's model list read (OpenAI's is ~50 KB)."""


class HttpProvider(abc.ABC):
    """Sends calls to ``base_url`` + the API's path, with the provider's key; see the
    module docstring."""

    kind: str
    """``gen_ai.provider.name`` of the calls it sends."""
    native: frozenset[Api]
    """The APIs it sends as they are (the only ones :meth:`send` takes)."""
    default_base_url: str | None = None
    """Where a provider of a kind with one home (Anthropic, Gemini) is, unless configured."""
    version_segment: str | None = None
    """The API version its paths sit below (``v1`` for Anthropic, ``v1beta`` for Gemini),
    added to a configured ``base_url`` whose path does not end in a version
    (``/v1``, ``/v1beta``, ``/v2alpha``...): the vendors' own SDKs take the base URL
    without it (``ANTHROPIC_BASE_URL=https://api.anthropic.com``), and both spellings
    reach the same API."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    """The ``max_tokens`` of a chat call translated to Messages whose client set none (an
    Anthropic provider's own setting)."""

    def __init__(
        self,
        name: str,
        config: ProviderSettings,
        session: Callable[[], aiohttp.ClientSession],
    ) -> None:
        base_url = config.base_url or self.default_base_url
        assert base_url is not None
        self.name = name
        self.base_url = self.versioned(URL(base_url.rstrip("/")))
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
        self._api_urls: dict[Api, URL] = {}
        """Where each API's calls without a query go (:meth:`addressed`), made once."""

    def versioned(self, base_url: URL) -> URL:
        """``base_url`` with :attr:`version_segment` added when its path ends in none."""
        last = base_url.path.rstrip("/").rpartition("/")[2]
        if self.version_segment is None or API_VERSION.fullmatch(last):
            return base_url
        return base_url.with_path(f"{base_url.path.rstrip('/')}/{self.version_segment}")

    @staticmethod
    @abc.abstractmethod
    def key_headers(key: str) -> dict[str, str]:
        """The headers that carry the provider's key."""

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
        """Send one request below ``base_url`` as it came (see
        :meth:`~hookgate.providers.base.Provider.relay`), with this provider's key, and
        hand its answer back streamed.

        The answer's headers are filtered and scrubbed of this provider's credentials; an
        error answer (4xx/5xx) is read whole and scrubbed (:attr:`Relayed.error`). A
        redirect is an :class:`UpstreamBadResponse`, never relayed; transport failures
        are :class:`UpstreamError` kinds, also while the body streams. The connection is
        released when the block ends.
        """
        label = f"{self.name}/{method} {path}"
        with as_upstream_errors(label):
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
        """The provider's own model objects (``GET {base_url}/models``, the ``data``
        array of OpenAI's and Anthropic's lists), each with a string ``id``. Raises
        :class:`UpstreamError` kinds: a non-2xx answer, a body over
        :data:`MODEL_LIST_LIMIT` bytes, or one that is not such a list."""
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
        if call.query:
            return self.url(API_PATHS[call.api], call.query), call
        url = self._api_urls.get(call.api)
        if url is None:
            url = self._api_urls[call.api] = self.url(API_PATHS[call.api])
        return url, call

    async def send(
        self, call: ModelCall, target: Target, observation: Observation
    ) -> ModelResponse:
        """Send ``call``, in one of the :attr:`native` APIs, as it is (see
        :meth:`~hookgate.providers.base.Provider.send`). A 401 is
        :class:`UpstreamAuthFailed` (the proxy's credentials are wrong, not the
        caller's); a 200 whose body is only an error object is a 502
        :class:`UpstreamStatusError`."""
        label = target.label(call.model)
        headers = self.headers(call.headers)
        headers["content-type"] = "application/json"
        url, call = self.addressed(call)
        with as_upstream_errors(label):
            response = await self._session().post(
                url,
                data=_body(call.payload.to_bytes()),
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
                stream = UpstreamEvents(
                    response, label, call.api, self.scrub, observation, _usage_count(call, target)
                )
                handed_off = True
                return ModelResponse(
                    status=response.status, headers=relayed, target=target, stream=stream
                )
            with as_upstream_errors(label):
                raw = await response.read()
            data = json_object(raw, label)
            if is_error_only(data):  # some gateways answer 200 {"error": ...}
                raise UpstreamStatusError(
                    502, self.scrub.body(raw), self.scrub.headers(relayed), target=label
                )
            return ModelResponse(
                status=response.status,
                headers=relayed,
                target=target,
                payload=JsonBody.parsed(raw, data),
            )
        finally:
            if not handed_off:
                response.release()


def _usage_count(
    call: ModelCall, target: Target
) -> Callable[[str], Awaitable[dict[str, int]]] | None:
    """For a streamed Chat Completions or Completions call that asks for the usage chunk:
    how its usage is counted when the stream ends without one (see
    :class:`~hookgate.providers.upstream_events.UpstreamEvents`)."""
    if (
        call.api not in ("chat.completions", "completions")
        or usage_requested(call.body) is not None
    ):
        return None
    api, model, body = call.api, target.model or call.model, call.body
    return lambda text: tokens.counted_usage(api, model, body, text)


def _body(raw: bytes) -> bytes | io.BytesIO:
    """The request body as aiohttp should send it: past a megabyte, a file-like object
    it writes in chunks (raw bytes that large lock the loop, and aiohttp warns so)."""
    return raw if len(raw) <= TOO_LARGE_BYTES_BODY else io.BytesIO(raw)


async def _chunks(response: aiohttp.ClientResponse, label: str) -> AsyncGenerator[bytes, None]:
    with as_upstream_errors(label):
        async for chunk in response.content.iter_any():
            yield chunk
