"""``openai`` clients whose requests run through the current reply's gate.

Inside a reply (:meth:`Gate.reply <hookgate.sdk.Gate.reply>`, or a framework adapter's)
every model request of such a client runs through the gate's model-level policies
in-process (:class:`~hookgate.sdk.transport.GateTransport`) and carries ``traceparent``
(the model call's span: a proxy's spans become its children), ``x-hookgate-reply-id``
(the proxy's per-reply budgets see the reply), ``x-hookgate-session-id`` and
``x-hookgate-agent``. The reply comes from a context variable, so concurrent replies never
mix and nothing is global. Outside a reply requests pass through untouched.

The synchronous client only carries the headers: its requests are not run through the
policies (frameworks' synchronous paths are governed by their adapters' model hooks).
"""

from __future__ import annotations

from typing import Any, TypeVar

from hookgate.sdk.driver import current_reply

C = TypeVar("C")


def current_headers() -> dict[str, str]:
    """The headers for a model request made now (empty outside a reply)."""
    ctx = current_reply()
    return ctx.headers() if ctx is not None else {}


def http_client(*, asynchronous: bool = True, turns: bool = False) -> Any:
    """An HTTP client for ``openai.OpenAI``/``AsyncOpenAI(http_client=...)`` (the SDK's
    own default client type, with its connection limits), governed as the module
    docstring says. ``turns``: see :class:`~hookgate.sdk.transport.GateTransport`."""
    import httpx2
    import openai

    if asynchronous:
        from hookgate.sdk.transport import GateTransport

        inner = httpx2.AsyncHTTPTransport(limits=openai.DEFAULT_CONNECTION_LIMITS)
        return openai.DefaultAsyncHttpxClient(transport=GateTransport(inner, turns=turns))

    def add_sync(request: Any) -> None:
        request.headers.update(current_headers())

    return openai.DefaultHttpxClient(event_hooks={"request": [add_sync]})


def govern(client: Any, *, turns: bool = False) -> None:
    """Govern an ``openai.AsyncOpenAI`` client in place, as :func:`http_client` does: its
    HTTP transports (and proxy mounts) are wrapped in a
    :class:`~hookgate.sdk.transport.GateTransport`, so its own connection settings stay.
    For adapters whose framework builds the client itself; doing it twice changes nothing.
    Outside a reply the client behaves exactly as before."""
    import httpx2

    from hookgate.sdk.transport import GateTransport

    http = client._client  # the openai client's httpx2.AsyncClient
    transport = getattr(http, "_transport", None)
    if not isinstance(transport, httpx2.AsyncBaseTransport):
        raise TypeError(f"hookgate cannot govern {type(client).__name__}: no httpx2 transport")
    if isinstance(transport, GateTransport):
        return
    http._transport = GateTransport(transport, turns=turns)
    http._mounts = {
        pattern: GateTransport(mounted, turns=turns) if mounted is not None else None
        for pattern, mounted in http._mounts.items()
    }


def instrument(client: C, *, turns: bool = False) -> C:
    """A copy of an ``openai`` client (sync or async) governed as :func:`http_client`."""
    import openai

    asynchronous = isinstance(client, openai.AsyncOpenAI)
    made = http_client(asynchronous=asynchronous, turns=turns)
    copy: C = client.with_options(http_client=made)  # type: ignore[attr-defined]
    return copy
