"""The provider interface and what every provider shares.

A provider turns a :class:`~hookgate.pipeline.types.ModelCall` into a
:class:`~hookgate.pipeline.types.ModelResponse` for one target. It raises only
:class:`~hookgate.errors.UpstreamError` kinds; a non-2xx answer is
:class:`~hookgate.errors.UpstreamStatusError` carrying the provider's status, body and headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, get_args

import orjson

from hookgate.config.schema import OpenAIApi
from hookgate.errors import UpstreamBadResponse
from hookgate.pipeline.observe import UpstreamAddress
from hookgate.pipeline.types import Api, ModelCall, ModelResponse, Target

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


class Provider(Protocol):
    """Sends model calls to one configured provider."""

    name: str
    address: UpstreamAddress
    """The provider's kind (``gen_ai.provider.name``) and where it listens."""

    async def send(self, call: ModelCall, target: Target) -> ModelResponse:
        """Send ``call`` (already addressed to ``target``) and return the response.

        For a streamed call the response is returned once the upstream's status and
        headers have arrived, before any event; its ``stream`` raises
        :class:`~hookgate.errors.UpstreamReset` if the upstream ends without the
        protocol's terminal event.
        """
        ...
