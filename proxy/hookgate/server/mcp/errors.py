"""The gateway's own errors: a server that failed a request, a session that is gone."""

from __future__ import annotations

from hookgate.errors import HookgateError, NotFound


class McpError(HookgateError):
    """An MCP server failed a request: answered as a JSON-RPC error naming it."""

    status = 502
    type = "upstream_error"


class McpUnreachable(McpError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="mcp_unreachable")


class McpBadAnswer(McpError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="mcp_bad_answer")


def session_gone(name: str, session_id: str) -> NotFound:
    """404: the session is unknown or over (an MCP client then initializes anew)."""
    return NotFound(
        f"no live session {session_id!r} of MCP server {name!r}: initialize one",
        code="mcp_session_not_found",
    )
