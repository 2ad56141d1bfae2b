"""The provider boundary: what goes wrong upstream, as :mod:`hookgate.errors` kinds.

Transport exceptions (aiohttp's, timeouts, the socket's) raised inside
:func:`as_upstream_errors` leave it as :class:`~hookgate.errors.UpstreamError` kinds, so
nothing above the providers sees aiohttp's types. Redirects are refused and error bodies
read within a limit here too.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from types import TracebackType

import aiohttp

from hookgate.errors import (
    UpstreamBadResponse,
    UpstreamConnectError,
    UpstreamError,
    UpstreamReset,
    UpstreamTimeout,
)

ERROR_BODY_LIMIT = 1024 * 1024
"""The most of an upstream error body read: an error is a short JSON object, and a
status page of megabytes is not worth buffering to relay."""


def as_upstream_errors(target: str) -> AbstractContextManager[None]:
    """Re-raise transport exceptions inside the block as the :class:`UpstreamError` kind
    each means, naming ``target``."""
    return _AsUpstreamErrors(target)


class _AsUpstreamErrors(AbstractContextManager[None]):
    """:func:`as_upstream_errors`, as a plain object: entered twice on every upstream
    call, where a generator-based context manager costs several times as much."""

    __slots__ = ("_target",)

    def __init__(self, target: str) -> None:
        self._target = target

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(exc, aiohttp.ClientError | TimeoutError | ConnectionError):
            raise _kind_of(exc, self._target) from exc


def _kind_of(exc: BaseException, target: str) -> UpstreamError:
    if isinstance(exc, aiohttp.ClientConnectorError):
        return UpstreamConnectError(f"cannot connect to {target}: {exc.os_error}", target=target)
    if isinstance(exc, TimeoutError):
        return UpstreamTimeout(f"{target} sent nothing within the timeout", target=target)
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return UpstreamReset(f"{target} closed the connection mid-response", target=target)
    if isinstance(exc, aiohttp.ClientResponseError):
        return UpstreamBadResponse(f"{target} sent an invalid HTTP response", target=target)
    if isinstance(exc, aiohttp.ClientOSError | ConnectionError):
        return UpstreamReset(f"connection to {target} failed: {exc}", target=target)
    return UpstreamBadResponse(f"{target} failed: {type(exc).__name__}", target=target)


def redirect_refused(status: int, label: str) -> UpstreamBadResponse:
    """A 502 for an upstream redirect. Never relayed: a client SDK would follow its
    ``Location`` and send the request (the prompt, unredacted) to a host the upstream
    chose, past every policy."""
    return UpstreamBadResponse(
        f"{label} answered with a redirect (HTTP {status}); the proxy does not follow or "
        "relay redirects: check the provider's base_url",
        target=label,
    )


async def read_error_body(response: aiohttp.ClientResponse, label: str) -> bytes:
    """The body of an error ``response`` (``UpstreamBadResponse`` above the limit)."""
    body = b""
    with as_upstream_errors(label):
        while len(body) <= ERROR_BODY_LIMIT and (
            chunk := await response.content.read(ERROR_BODY_LIMIT + 1 - len(body))
        ):
            body += chunk
    if len(body) > ERROR_BODY_LIMIT:
        raise UpstreamBadResponse(
            f"{label} answered HTTP {response.status} with an error body over "
            f"{ERROR_BODY_LIMIT} bytes",
            target=label,
        )
    return body
