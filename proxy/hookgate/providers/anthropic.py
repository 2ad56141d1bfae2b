"""Anthropic's Messages API as a provider (``type: anthropic``).

Messages calls (``/v1/messages``, ``/v1/messages/count_tokens``) are sent as they are,
below ``base_url`` (default ``https://api.anthropic.com/v1``); Chat Completions calls are
translated (:mod:`hookgate.providers.translating`). The key goes in ``x-api-key``;
``anthropic-version`` is the client's when it sent one (Claude Code and the ``anthropic``
SDK do), else the configured one, and the client's ``anthropic-beta`` flags are passed
on unchanged. Everything else — streams ending at ``message_stop``, an ``error`` event
before any other counting as a failed attempt, redirects refused, the key scrubbed from
what comes back — is the :class:`~hookgate.providers.http.HttpProvider` transport, and
its models are listed from ``GET {base_url}/models`` as OpenAI's are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import aiohttp

from hookgate.config.schema import AnthropicProviderConfig
from hookgate.pipeline.types import Api
from hookgate.providers.http import HttpProvider

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"


class AnthropicProvider(HttpProvider):
    """See the module docstring."""

    kind = "anthropic"
    """``gen_ai.provider.name`` of Anthropic (OpenTelemetry GenAI conventions)."""
    native: frozenset[Api] = frozenset({"messages", "messages.count_tokens"})
    default_base_url = DEFAULT_BASE_URL
    version_segment = "v1"

    def __init__(
        self,
        name: str,
        config: AnthropicProviderConfig,
        session: Callable[[], aiohttp.ClientSession],
    ) -> None:
        super().__init__(name, config, session)
        self._version = config.anthropic_version
        self.max_tokens = config.max_tokens

    @staticmethod
    def key_headers(key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def headers(self, forwarded: Mapping[str, str]) -> dict[str, str]:
        """The client's headers (its ``anthropic-version`` kept), then the provider's."""
        return {"anthropic-version": self._version, **super().headers(forwarded)}
