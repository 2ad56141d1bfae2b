"""Every error hookgate can hand to a client, as one tree.

Each class knows the HTTP status and the OpenAI error ``type``/``code`` it maps to, so
the server's outermost layer turns any of them into an OpenAI-format body
``{"error": {"message", "type", "param", "code"}}`` without a traceback ever leaving
the process. Policies block a request by raising one of these.

::

    HookgateError                      status  type
    ├── InvalidRequest                 400     invalid_request_error
    │   └── PolicyBlocked              400     invalid_request_error (code names the policy)
    ├── AuthenticationFailed           401     invalid_request_error (invalid_api_key, ...)
    ├── PermissionDenied               403     invalid_request_error (model_not_allowed, ...)
    ├── NotFound                       404     invalid_request_error (e.g. model_not_found)
    ├── MethodNotAllowed               405     invalid_request_error
    ├── RequestTimeout                 408     invalid_request_error (the body was too slow)
    ├── PayloadTooLarge                413     invalid_request_error
    ├── WebSocketRefused               426     invalid_request_error (WebSocket mode is off:
    │                                          the client goes on over HTTP)
    ├── BudgetExceeded                 429     insufficient_quota (code budget_exceeded)
    ├── RateLimited                    429     requests (code rate_limit_exceeded)
    ├── StoreUnavailable               503     server_error (the store cannot be reached)
    ├── StoreInUse                     503     server_error (another process keeps the
    │                                          SQLite file's budgets in its memory)
    ├── GuardrailUnavailable           503     server_error (a guardrail could not run)
    └── UpstreamError                          (raised by the provider layer and fallback)
        ├── UpstreamUnavailable        503     upstream_error   every target's circuit is open
        ├── UpstreamConnectError       502     upstream_error   could not connect
        ├── UpstreamTimeout            504     upstream_error   no byte within the timeout
        ├── UpstreamReset              502     upstream_error   connection lost mid-response,
        │                                                       or a stream cut before its end
        ├── UpstreamBadResponse        502     upstream_error   bytes that are not the protocol
        ├── UpstreamAuthFailed         502     upstream_error   the provider refused our key
        └── UpstreamStatusError        (its own) the provider answered non-2xx; its status,
                                                 body and headers are relayed unchanged
                                                 (a body that is not an OpenAI error is
                                                 replaced by one, code http_<status>)

The provider layer raises only :class:`UpstreamError` kinds: it translates aiohttp and
timeout exceptions at the boundary, so policies, metrics and the server never see a
transport library's exception types.

On Anthropic's Messages routes the same errors are rendered in Anthropic's shape,
``{"type": "error", "error": {"type", "message"}}`` (:meth:`HookgateError.to_anthropic_bytes`),
with the error type Anthropic gives that status (:func:`anthropic_type`). On the Gemini
API's routes (``/v1beta/``) they take Google's shape, ``{"error": {"code", "message",
"status"}}`` (:meth:`HookgateError.to_google_body`), with the status name Google gives
that HTTP status (:func:`google_status`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import orjson


class HookgateError(Exception):
    """Base of every client-visible error. Subclasses fix ``status`` and ``type``."""

    status: int = 500
    type: str = "server_error"
    code: str | None = None
    retry_after: float | None = None
    """Seconds the client should wait before retrying; sent as ``Retry-After``."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code

    def to_body(self) -> dict[str, Any]:
        """The OpenAI-format error body for this error."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def to_bytes(self) -> bytes:
        """:meth:`to_body` encoded as JSON."""
        return orjson.dumps(self.to_body())

    def to_anthropic_body(self) -> dict[str, Any]:
        """The error as Anthropic's Messages API writes one (its clients parse only that)."""
        return anthropic_error(self.status, self.message)

    def to_anthropic_bytes(self) -> bytes:
        """:meth:`to_anthropic_body` encoded as JSON."""
        return orjson.dumps(self.to_anthropic_body())

    def to_google_body(self) -> dict[str, Any]:
        """The error as Google's Gemini API writes one (:func:`google_error`)."""
        return google_error(self.status, self.message)

    def headers(self) -> Mapping[str, str]:
        """Extra response headers the error carries: ``Retry-After`` (whole seconds, at
        least 1) when :attr:`retry_after` is set."""
        if self.retry_after is None:
            return {}
        return {"retry-after": str(max(1, math.ceil(self.retry_after)))}


class InvalidRequest(HookgateError):
    """The client's request cannot be served as sent (malformed JSON, wrong types)."""

    status = 400
    type = "invalid_request_error"
    code = "invalid_request"


class PolicyBlocked(InvalidRequest):
    """A policy refused the request; ``code`` names the policy's reason."""

    code = "policy_blocked"


class AuthenticationFailed(HookgateError):
    """No, an unknown, a revoked or an expired key."""

    status = 401
    type = "invalid_request_error"
    code = "invalid_api_key"


class PermissionDenied(HookgateError):
    """A valid key asked for something it may not do (a model, the admin API)."""

    status = 403
    type = "invalid_request_error"
    code = "permission_denied"


class NotFound(HookgateError):
    """Unknown route or model alias."""

    status = 404
    type = "invalid_request_error"
    code = "not_found"


class MethodNotAllowed(HookgateError):
    """A method a route does not serve (e.g. ``PUT`` on a model endpoint)."""

    status = 405
    type = "invalid_request_error"
    code = "method_not_allowed"


class RequestTimeout(HookgateError):
    """The client did not finish sending its request in time."""

    status = 408
    type = "invalid_request_error"
    code = "request_timeout"


class PayloadTooLarge(HookgateError):
    """The request body is larger than ``server.max_body_bytes``."""

    status = 413
    type = "invalid_request_error"
    code = "request_too_large"


class WebSocketRefused(HookgateError):
    """A WebSocket upgrade hookgate does not serve (``server.responses_websocket: false``).
    426 is the answer on which Codex goes on over HTTP at once; it retries a 404 or a 403
    for seconds first."""

    status = 426
    type = "invalid_request_error"
    code = "websocket_disabled"


class BudgetExceeded(HookgateError):
    """A budget limit has no room for the request's worst case.

    ``retry_after`` is set when only reservations in flight fill the budget (a retry
    shortly may fit); when settled spend alone fills it there is nothing to wait for.
    """

    status = 429
    type = "insufficient_quota"
    code = "budget_exceeded"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimited(HookgateError):
    """A per-minute request or token rate is used up; says when to retry. ``kind``
    (``requests`` or ``tokens``) is the error's type, as OpenAI reports it. Without
    ``retry_after`` the request can never fit (it alone exceeds the limit)."""

    status = 429
    code = "rate_limit_exceeded"

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        retry_after: float | None,
        headers: Mapping[str, str],
    ) -> None:
        super().__init__(message)
        self.type = kind
        self.retry_after = retry_after
        self._headers = headers

    def headers(self) -> Mapping[str, str]:
        return {**self._headers, **super().headers()}


class StoreUnavailable(HookgateError):
    """The store (SQLite file, Redis) cannot be read or written."""

    status = 503
    type = "server_error"
    code = "store_unavailable"


class StoreInUse(HookgateError):
    """Another process keeps the budgets of this SQLite file in a way this one cannot share
    (see :mod:`hookgate.store.sqlite_owners`). Not an outage: a budget's ``on_error:
    continue`` does not serve the request unchecked, which would spend a budget twice."""

    status = 503
    type = "server_error"
    code = "store_in_use"


class GuardrailUnavailable(HookgateError):
    """A guardrail (the PII analyzer) failed, and its policy fails closed."""

    status = 503
    type = "server_error"
    code = "guardrail_unavailable"


class UpstreamError(HookgateError):
    """A failure talking to a provider. ``target`` is ``provider/model`` when known."""

    status = 502
    type = "upstream_error"
    code = "upstream_error"

    def __init__(self, message: str, *, target: str | None = None):
        super().__init__(message)
        self.target = target


class UpstreamUnavailable(UpstreamError):
    """No target may be tried: every circuit breaker of the alias is open."""

    status = 503
    code = "upstream_unavailable"


class UpstreamConnectError(UpstreamError):
    """The provider could not be reached (refused, DNS, TLS)."""

    code = "upstream_unreachable"


class UpstreamTimeout(UpstreamError):
    """The provider sent nothing within the configured timeout."""

    status = 504
    code = "upstream_timeout"


class UpstreamReset(UpstreamError):
    """The connection was lost mid-response, or a stream ended before its terminal event."""

    code = "upstream_reset"


class UpstreamBadResponse(UpstreamError):
    """The provider's bytes were not valid for the protocol (bad JSON, bad SSE)."""

    code = "upstream_bad_response"


class UpstreamAuthFailed(UpstreamError):
    """The provider refused the credentials hookgate sends for it (its HTTP 401).

    That is the operator's configuration, not the caller's key, so the client gets a 502
    that says so rather than a 401 it would take for its own key; the provider's body is
    not relayed (providers quote part of the key they refused)."""

    code = "upstream_auth_failed"


class UpstreamStatusError(UpstreamError):
    """The provider answered with a non-2xx status.

    The server relays ``upstream_status``, ``body`` and the relayable ``upstream_headers``
    to the client unchanged, so the client's SDK raises the same exception class it would
    raise against the provider directly. A body that is not an OpenAI error object (a load
    balancer's HTML page, say) is replaced by one saying what the upstream answered, with
    the same status: the client always gets an error it can parse.
    """

    def __init__(
        self,
        upstream_status: int,
        body: bytes,
        upstream_headers: Mapping[str, str],
        *,
        target: str | None = None,
    ):
        super().__init__(f"upstream answered HTTP {upstream_status}", target=target)
        self.status = upstream_status
        self.body = body
        self.upstream_headers = upstream_headers
        self.code = f"http_{upstream_status}"
        self._relayable = _is_openai_error(body)
        if not self._relayable:
            self.message = (
                f"{target or 'the upstream'} answered HTTP {upstream_status} with a body "
                "that is not an OpenAI error"
            )

    def to_bytes(self) -> bytes:
        return self.body if self._relayable else super().to_bytes()

    def to_anthropic_bytes(self) -> bytes:
        """An Anthropic error body is relayed as it came; any other body is rewritten in
        Anthropic's shape, keeping an OpenAI error's message."""
        if self._relayable and is_anthropic_error(self.body):
            return self.body
        return super().to_anthropic_bytes()

    def to_anthropic_body(self) -> dict[str, Any]:
        if self._relayable:
            data = orjson.loads(self.body)
            if is_anthropic_error(self.body):
                return dict(data)
            message = data["error"].get("message")
            if isinstance(message, str):
                return anthropic_error(self.status, message)
        return super().to_anthropic_body()

    def to_google_body(self) -> dict[str, Any]:
        """An OpenAI error body's message (and a Google status name in its ``code``, as
        the Gemini translation leaves one) in Google's shape."""
        if self._relayable:
            error = orjson.loads(self.body)["error"]
            message, code = error.get("message"), error.get("code")
            if isinstance(message, str):
                return google_error(self.status, message, code if isinstance(code, str) else None)
        return super().to_google_body()

    def headers(self) -> Mapping[str, str]:
        if self._relayable:
            return self.upstream_headers
        return {**self.upstream_headers, "content-type": "application/json"}


ANTHROPIC_ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""Anthropic's error type for each status it documents."""


def anthropic_type(status: int) -> str:
    """Anthropic's error type for ``status``: its documented one, else by class."""
    if status in ANTHROPIC_ERROR_TYPES:
        return ANTHROPIC_ERROR_TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """An Anthropic error body for ``status``."""
    return {"type": "error", "error": {"type": anthropic_type(status), "message": message}}


GOOGLE_STATUSES: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""Google's status name (``google.rpc.Code``) for each HTTP status, as its APIs pair them
(a 502, which Google does not send, is ``UNAVAILABLE``)."""


def google_status(status: int) -> str:
    """Google's status name for ``status``: its own, else by class."""
    if status in GOOGLE_STATUSES:
        return GOOGLE_STATUSES[status]
    return "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"


def google_error(status: int, message: str, name: str | None = None) -> dict[str, Any]:
    """A Google error body for ``status``; ``name`` is used as its status name when it is
    one of Google's (an upstream Gemini error's, carried through a translation)."""
    known = name if name is not None and name in _GOOGLE_NAMES else google_status(status)
    return {"error": {"code": status, "message": message, "status": known}}


def google_quota(body: dict[str, Any], retry_after: float | None) -> dict[str, Any]:
    """A Google 429 body of hookgate's own (a budget or a rate limit, not an upstream's)
    saying whether to retry, as Gemini CLI reads it: a ``google.rpc.RetryInfo`` with the
    wait when there is one (the CLI waits that long, or stops when it is over 5 minutes);
    when waiting cannot help (a spent budget), ``limit: 0`` in the message, which the CLI
    takes for a quota that is gone (it would otherwise retry with backoff for minutes)."""
    error = dict(body["error"])
    if retry_after is None:
        error["message"] = f"{error['message']} (quota limit: 0 left; a retry will not help)"
    else:
        delay = f"{max(1, math.ceil(retry_after))}s"
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                             "retryDelay": delay}]  # fmt: skip
    return {**body, "error": error}


_GOOGLE_NAMES = frozenset(
    {"CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
     "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
     "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
     "UNAUTHENTICATED"}
)  # fmt: skip


def is_anthropic_error(body: bytes) -> bool:
    """True for an Anthropic error body: ``{"type": "error", "error": {"type", ...}}``."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return (
        isinstance(data, dict)
        and data.get("type") == "error"
        and isinstance(data.get("error"), dict)
        and isinstance(data["error"].get("type"), str)
    )


def _is_openai_error(body: bytes) -> bool:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(data, dict) and isinstance(data.get("error"), dict)


def error_type(exc: BaseException) -> str:
    """A short, bounded name for an error: its code, or ``http_<status>`` for a relayed one."""
    if isinstance(exc, UpstreamStatusError):
        return f"http_{exc.status}"
    if isinstance(exc, HookgateError):
        return exc.code or exc.type
    return type(exc).__name__
