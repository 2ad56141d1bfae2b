"""The OpenAI HTTP API as a provider (``type: openai``): OpenAI itself, vLLM, Ollama,
LiteLLM and every other server that speaks it.

Calls in its APIs (all of OpenAI's, or those configured in ``apis``) go to ``base_url`` +
the API's path with the key as a bearer token; everything else is the
:class:`~hookgate.providers.http.HttpProvider` transport.
"""

from __future__ import annotations

from hookgate.pipeline.types import Api
from hookgate.providers.base import OPENAI_APIS
from hookgate.providers.http import HttpProvider


class OpenAIProvider(HttpProvider):
    """See the module docstring."""

    kind = "openai"
    native: frozenset[Api] = frozenset(OPENAI_APIS)

    @staticmethod
    def key_headers(key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}
