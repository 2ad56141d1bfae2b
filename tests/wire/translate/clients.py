"""The real ``openai`` and ``anthropic`` clients, answered by fixed bytes instead of a
server, so the tests parse translated answers exactly as those SDKs do (their SSE
decoders, stream accumulators and error handling)."""

from __future__ import annotations

import anthropic
import httpx2
import openai

JSON = {"content-type": "application/json"}
SSE = {"content-type": "text/event-stream"}


def _transport(status: int, body: bytes, headers: dict[str, str]) -> httpx2.Client:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, headers=headers, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(answer))


def openai_client(body: bytes, *, status: int = 200, stream: bool = True) -> openai.OpenAI:
    """An OpenAI client whose every call is answered with ``body`` (SSE when ``stream``)."""
    return openai.OpenAI(
        api_key="sk-test",
        base_url="http://upstream.test/v1",
        max_retries=0,
        http_client=_transport(status, body, SSE if stream else JSON),
    )


def anthropic_client(body: bytes, *, status: int = 200, stream: bool = True) -> anthropic.Anthropic:
    """An Anthropic client whose every call is answered with ``body`` (SSE when ``stream``)."""
    return anthropic.Anthropic(
        api_key="sk-ant-test",
        base_url="http://upstream.test",
        max_retries=0,
        http_client=_transport(status, body, SSE if stream else JSON),
    )
