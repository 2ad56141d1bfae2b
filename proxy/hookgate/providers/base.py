"""The provider interface and what every provider shares.

A provider turns a :class:`~hookgate.pipeline.types.ModelCall` into a
:class:`~hookgate.pipeline.types.ModelResponse` for one target, relays a request outside
the model pipeline (the generic ``/v1/*`` relay) and lists its own models (``GET
/v1/models`` behind ``"*"``). It raises only :class:`~hookgate.errors.UpstreamError`
kinds (and :class:`~hookgate.errors.NotFound` for what it does not serve); a non-2xx
answer is :class:`~hookgate.errors.UpstreamStatusError` carrying the provider's status,
body and headers. Callers hold a :class:`Provider` and never ask which class it is.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, get_args

import orjson

from hookgate.config.schema import OpenAIApi
from hookgate.errors import UpstreamBadResponse
from hookgate.pipeline.observe import Observation, UpstreamAddress
from hookgate.pipeline.types import Api, ModelCall, ModelResponse, Target

API_VERSION = re.compile(r"v\d+(?:alpha|beta)?\d*")
"""A URL path segment that names an API version (``v1``, ``v1beta``, ``v2alpha``...);
match it whole (``fullmatch``)."""

API_PATHS: Mapping[Api, str] = {
    "chat.completions": "/chat/completions",
    "responses": "/responses",
    "completions": "/completions",
    "embeddings": "/embeddings",
    "messages": "/messages",
    "messages.count_tokens": "/messages/count_tokens",
}
"""Each API's path below a provider's ``base_url`` (chat first: its path ends like the
completions one)."""

OPENAI_APIS: tuple[Api, ...] = get_args(OpenAIApi)
"""The APIs an OpenAI client calls (``/messages`` is also the tail of OpenAI's
Assistants ``/threads/{id}/messages``, which is not a model call)."""


def json_object(raw: bytes, label: str) -> dict[str, Any]:
    """A provider's JSON body as an object; :class:`UpstreamBadResponse` naming ``label``
    when it is not JSON, or not an object."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise UpstreamBadResponse(f"{label} sent a body that is not JSON", target=label) from None
    if not isinstance(data, dict):
        raise UpstreamBadResponse(f"{label} sent JSON that is not an object", target=label)
    return data


def is_error_only(data: Mapping[str, object]) -> bool:
    """An error object where a result should be: ``{"error": {...}}`` with no choices,
    output or data (a failed Responses object, with its ``output``, is a result)."""
    return (
        isinstance(data.get("error"), dict)
        and "choices" not in data
        and "output" not in data
        and "data" not in data
    )


@dataclass(frozen=True, slots=True)
class Relayed:
    """An upstream answer to a relayed request (see :meth:`Provider.relay`)."""

    status: int
    headers: dict[str, str]
    """Filtered (no hop-by-hop headers, no cookies) and scrubbed of the provider's key."""
    length: int | None
    """The body's length where it is known and relayed as is."""
    error: bytes | None
    """The whole body of an error answer, scrubbed; None for a success."""
    chunks: AsyncIterator[bytes]
    """The body of a success as it arrives; raises :class:`UpstreamError` kinds."""


class Provider(Protocol):
    """One configured provider: what the terminal handler, the generic relay and the
    model catalogue call."""

    name: str
    address: UpstreamAddress
    """The provider's kind (``gen_ai.provider.name``) and where it listens."""

    async def send(
        self, call: ModelCall, target: Target, observation: Observation
    ) -> ModelResponse:
        """Send ``call`` (already addressed to ``target``) and return the response.

        For a streamed call the response is returned once the upstream's status and
        headers have arrived, before any event; its ``stream`` ends with the protocol's
        terminal event (hookgate's own when the upstream stopped after its finish reason
        without one) and raises :class:`~hookgate.errors.UpstreamReset` if the upstream
        stops before its finish reason. What the stream drops (a malformed event) is
        reported to ``observation``, the request's.
        """
        ...

    def relay(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: AsyncIterable[bytes] | None,
    ) -> AbstractAsyncContextManager[Relayed]:
        """Send one request outside the model pipeline (files, batches, a model's
        details) as it came, and hand its answer back streamed while the block runs.

        ``path`` is below the provider's API root (``/files``, percent-encoded, already
        checked by the caller), ``query`` encoded, ``headers`` the forwarded client
        headers plus the body's own. Raises :class:`~hookgate.errors.NotFound` when the
        provider has nowhere to relay to (it answers locally).
        """
        ...

    async def models(self) -> list[dict[str, Any]]:
        """The provider's own models as OpenAI model objects, each with a string ``id``
        (empty for a provider without a list of its own). Raises
        :class:`~hookgate.errors.UpstreamError` kinds when the list cannot be had."""
        ...
