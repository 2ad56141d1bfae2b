"""Google's Gemini API as a provider (``type: gemini``).

Gemini speaks none of the client APIs, so every call is translated
(:mod:`hookgate.providers.translating`): a Chat Completions call becomes a
``generateContent`` call (:mod:`hookgate.wire.translate.chat_to_gemini`), and Responses and
Messages calls become Chat Completions ones first, the answers going back through both
translations. A call is sent to ``{base_url}/models/{model}:generateContent``, or to
``:streamGenerateContent?alt=sse`` when streamed, ``base_url`` defaulting to
``https://generativelanguage.googleapis.com/v1beta``; the key goes in ``x-goog-api-key``.
A stream ends at the chunk that carries a ``finishReason`` (Gemini sends no end marker);
one that stops before it is a cut stream. ``GET /v1/models`` lists the provider's models
from Gemini's ``models`` list. Everything else — timeouts, redirects refused, the key
scrubbed from what comes back — is the :class:`~hookgate.providers.http.HttpProvider`
transport.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from yarl import URL

from hookgate.pipeline.types import Api, ModelCall
from hookgate.providers.http import HttpProvider

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"


class GeminiProvider(HttpProvider):
    """See the module docstring."""

    kind = "gcp.gemini"
    """``gen_ai.provider.name`` of the Gemini API (OpenTelemetry GenAI conventions)."""
    native: frozenset[Api] = frozenset({"generate_content"})
    default_base_url = DEFAULT_BASE_URL
    version_segment = "v1beta"

    @staticmethod
    def key_headers(key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def addressed(self, call: ModelCall) -> tuple[URL, ModelCall]:
        """The model named in the path (taken out of the body, where the translation left
        it), the action by whether the call streams."""
        body = dict(call.body)
        model = str(body.pop("model", None) or call.model)
        action = "streamGenerateContent" if call.stream else "generateContent"
        path = f"/models/{quote(model, safe='')}:{action}"
        return self.url(path, "alt=sse" if call.stream else ""), call.with_body(body)

    async def models(self) -> list[dict[str, Any]]:
        """The first page of ``GET {base_url}/models`` as OpenAI model objects (``id``
        without the ``models/`` prefix)."""
        listed = await self.listed("/models", "pageSize=1000", "models")
        return [
            {"id": name.removeprefix("models/"), "object": "model", "owned_by": "google"}
            for model in listed
            if isinstance(model, dict) and isinstance(name := model.get("name"), str)
        ]
