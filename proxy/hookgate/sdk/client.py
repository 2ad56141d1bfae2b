"""Make an agent's ``openai`` client carry the current reply to the proxy.

Inside :meth:`Gate.reply <hookgate.sdk.Gate.reply>` every request of an instrumented client
carries ``traceparent`` (the reply's span: the proxy's model-call spans become its
children), ``x-hookgate-reply-id`` (the proxy's per-reply budgets see the reply),
``x-hookgate-session-id`` and ``x-hookgate-agent``. The values come from a context
variable, so concurrent replies never mix and nothing is global. Outside a reply nothing
is added.
"""

from __future__ import annotations

from typing import Any, TypeVar

from hookgate.sdk.gate import current_reply

C = TypeVar("C")


def current_headers() -> dict[str, str]:
    """The headers for a model request made now (empty outside a reply)."""
    ctx = current_reply()
    return ctx.headers() if ctx is not None else {}


def http_client(*, asynchronous: bool = True) -> Any:
    """An HTTP client for ``openai.OpenAI``/``AsyncOpenAI(http_client=...)`` that adds
    :func:`current_headers` to every request (the SDK's own default client type)."""
    import openai

    if asynchronous:

        async def add(request: Any) -> None:
            request.headers.update(current_headers())

        return openai.DefaultAsyncHttpxClient(event_hooks={"request": [add]})

    def add_sync(request: Any) -> None:
        request.headers.update(current_headers())

    return openai.DefaultHttpxClient(event_hooks={"request": [add_sync]})


def instrument(client: C) -> C:
    """A copy of an ``openai`` client (sync or async) that sends :func:`current_headers`."""
    import openai

    asynchronous = isinstance(client, openai.AsyncOpenAI)
    copy: C = client.with_options(http_client=http_client(asynchronous=asynchronous))  # type: ignore[attr-defined]
    return copy
