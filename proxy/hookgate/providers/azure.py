"""Azure OpenAI: the OpenAI HTTP API under Azure's URL schemes and key header.

Two schemes, chosen per provider (``azure_path``):

* ``deployments`` (the default): ``{base_url}/openai/deployments/{deployment}/chat/completions
  ?api-version={api_version}``, the deployment named in the path (Azure ignores the body's
  model); the Responses API is ``{base_url}/openai/responses?api-version=...`` with the
  deployment as the body's model (Azure serves it only there, from api-version
  ``2025-03-01-preview``); other paths (files, batches, the generic relay) are
  ``{base_url}/openai{path}`` with the same ``api-version``;
* ``v1``: ``{base_url}/openai/v1{path}``, no ``api-version``, the deployment as the body's
  ``model``.

A call's deployment is ``deployments[model]`` for the model name it is sent with (the
target's ``model``, else the client's), or that name itself. The key goes in an
``api-key`` header; no ``Authorization`` header is sent. Everything else — streaming, error
handling, scrubbing the key from what comes back — is the OpenAI provider's (it is one).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import aiohttp
from yarl import URL

from hookgate.config.schema import AzureProviderConfig
from hookgate.pipeline.types import ModelCall
from hookgate.providers.base import API_PATHS
from hookgate.providers.openai import OpenAIProvider


class AzureProvider(OpenAIProvider):
    """See the module docstring."""

    kind = "azure.ai.openai"
    """``gen_ai.provider.name`` of Azure OpenAI (OpenTelemetry GenAI conventions)."""

    def __init__(
        self,
        name: str,
        config: AzureProviderConfig,
        session: Callable[[], aiohttp.ClientSession],
    ) -> None:
        super().__init__(name, config, session)
        self._v1 = config.azure_path == "v1"
        self._version = f"api-version={quote(config.api_version, safe='')}"
        self._deployments = config.deployments

    @staticmethod
    def key_headers(key: str) -> dict[str, str]:
        return {"api-key": key}

    def url(self, path: str, query: str = "") -> URL:
        if self._v1:
            return super().url(f"/openai/v1{path}", query)
        return super().url(f"/openai{path}", "&".join(q for q in (query, self._version) if q))

    def addressed(self, call: ModelCall) -> tuple[URL, ModelCall]:
        model = str(call.body.get("model") or call.model)  # the target's upstream name
        deployment = self._deployments.get(model, model)
        if self._v1 or call.api == "responses":  # Responses: beside the deployments
            if deployment != model:
                call = call.with_body({**call.body, "model": deployment})
            return self.url(API_PATHS[call.api], call.query), call
        path = f"/deployments/{quote(deployment, safe='')}{API_PATHS[call.api]}"
        return self.url(path, call.query), call
