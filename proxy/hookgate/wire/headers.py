"""Which headers cross the proxy, in each direction. Pure functions over mappings.

Requests: an allow-list. Only headers that matter to a provider go upstream (SDK
telemetry, OpenAI routing headers, Anthropic's ``anthropic-version`` and
``anthropic-beta``, idempotency, W3C trace context, and the agents' own identity
headers, :data:`AGENT_IDENTITY`), plus any the config adds. The client's credential never
does: the provider's key replaces it. An allow-list rather than a deny-list means no
client header can reach, or redirect, an upstream unless an operator chose so.

Agents name their session in headers of their own (:data:`AGENT_SESSION`); the server
reads the first of them as the session where the client sends no
``x-hookgate-session-id``.

Responses: a deny-list. Everything the provider says comes back (``x-request-id``,
``openai-processing-ms``, ``x-ratelimit-*``, ``retry-after``) except hop-by-hop headers,
framing the proxy recomputes, and cookies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

_FORWARD_EXACT = frozenset(
    {
        "user-agent",
        "accept",
        "anthropic-beta",
        "anthropic-version",
        "content-type",
        "idempotency-key",
        "openai-beta",
        "openai-organization",
        "openai-project",
        "traceparent",
        "tracestate",
    }
)
AGENT_IDENTITY = (
    # Codex CLI
    "session-id", "thread-id", "originator", "x-client-request-id", "x-codex-*",
    # opencode
    "x-session-id", "x-session-affinity", "x-parent-session-id",
    # Claude Code
    "x-claude-code-session-id",
)  # fmt: skip
"""The headers agents name themselves, their session and their requests with, forwarded
by default (a trailing ``*`` is a prefix): what the agent sends its provider directly
(Codex's ``x-codex-turn-state`` routes a conversation to one backend), never a
credential."""

AGENT_SESSION = (
    "session-id", "x-session-id", "x-claude-code-session-id", "thread-id", "x-session-affinity"
)  # fmt: skip
"""Where an agent names its session (Codex CLI, opencode, Claude Code), in the order the
server reads them when the client sends no ``x-hookgate-session-id``."""

_FORWARD_PREFIXES = ("x-stainless-",)

_RESPONSE_DROP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "content-encoding",
        "date",
        "server",
        "set-cookie",
        "alt-svc",
    }
)


class RequestHeaderFilter:
    """Selects the client headers to forward upstream: the built-in allow-list,
    :data:`AGENT_IDENTITY` and ``extra`` (``server.forward_headers``); built once per
    config."""

    __slots__ = ("_exact", "_prefixes")

    def __init__(self, extra: Iterable[str] = ()) -> None:
        extra_lower = [h.lower() for h in (*AGENT_IDENTITY, *extra)]
        self._exact = _FORWARD_EXACT | {h for h in extra_lower if not h.endswith("*")}
        self._prefixes = _FORWARD_PREFIXES + tuple(h[:-1] for h in extra_lower if h.endswith("*"))

    def __call__(self, headers: Mapping[str, str]) -> dict[str, str]:
        """The forwardable subset of ``headers`` (names lower-cased). A list-valued header
        sent on several lines (:data:`LISTS`: two ``anthropic-beta`` lines) is joined into
        one comma-separated value, as RFC 9110 §5.3 allows; of any other, the last line
        is kept. A header the client lists in ``Connection`` is hop-by-hop (RFC 9110
        §7.6.1): never forwarded."""
        hop = _connection_listed(headers)
        out: dict[str, str] = {}
        for name, value in headers.items():
            lower = name.lower()
            if (lower in self._exact or lower.startswith(self._prefixes)) and lower not in hop:
                joined = lower in out and lower in LISTS
                out[lower] = f"{out[lower]}, {value}" if joined else value
        return out


LISTS = frozenset({"anthropic-beta"})
"""Forwarded headers whose value is a comma-separated list (joined when sent twice);
others (``traceparent``, ``idempotency-key``, ...) must stay single-valued."""


def _connection_listed(headers: Mapping[str, str]) -> frozenset[str]:
    return frozenset(
        token.strip().lower() for value in _all(headers, "connection") for token in value.split(",")
    )


def response_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The upstream response headers to relay to the client (names lower-cased)."""
    connection_listed = _connection_listed(headers)
    return {
        lower: value
        for name, value in headers.items()
        if (lower := name.lower()) not in _RESPONSE_DROP and lower not in connection_listed
    }


def _all(headers: Mapping[str, str], name: str) -> list[str]:
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return list(getall(name, []))
    value = headers.get(name)
    return [value] if value is not None else []
