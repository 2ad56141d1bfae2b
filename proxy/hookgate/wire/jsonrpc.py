"""JSON-RPC 2.0 messages as the Model Context Protocol uses them, and MCP tool results. Pure.

A message is a JSON object: a *request* (``method`` and ``id``), a *notification*
(``method``, no ``id``) or a *response* (``id`` and ``result`` or ``error``). MCP's
Streamable HTTP transport (2025-06-18 and later) sends one message per POST; batches are
refused (:data:`INVALID_REQUEST`).

A ``tools/call`` result is ``{"content": [blocks], "structuredContent"?: {...},
"isError"?: bool}``; :func:`tool_text` reads what a model reads of it (its text blocks)
and :func:`with_tool_text` writes a changed text back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000
"""Implementation-defined server errors are -32000 to -32099: an MCP server hookgate
fronts is unreachable, timed out or broke the protocol."""


class JsonRpcError(Exception):
    """A message that cannot be served, as the JSON-RPC error to answer it with."""

    def __init__(self, code: int, message: str, id: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id

    def to_message(self) -> dict[str, Any]:
        """The error response."""
        return error(self.id, self.code, self.message)


def parse(raw: bytes) -> dict[str, Any]:
    """One JSON-RPC 2.0 message from a POST body; :class:`JsonRpcError` when it is not
    JSON (:data:`PARSE_ERROR`) or not a single well-formed message
    (:data:`INVALID_REQUEST`)."""
    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise JsonRpcError(PARSE_ERROR, f"Parse error: {exc.msg} at byte {exc.pos}") from None
    if isinstance(message, list):
        raise JsonRpcError(
            INVALID_REQUEST, "Invalid Request: send one message per POST (MCP has no batches)"
        )
    if not isinstance(message, dict):
        raise JsonRpcError(INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    id = message.get("id")
    if message.get("jsonrpc") != "2.0":
        raise JsonRpcError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', id)
    if id is not None and (isinstance(id, bool) or not isinstance(id, str | int)):
        raise JsonRpcError(INVALID_REQUEST, "Invalid Request: an id is a string or a number")
    method = message.get("method")
    if method is None and not ("result" in message or "error" in message):
        raise JsonRpcError(INVALID_REQUEST, "Invalid Request: no method, result or error", id)
    if method is not None and not isinstance(method, str):
        raise JsonRpcError(INVALID_REQUEST, 'Invalid Request: "method" must be a string', id)
    params = message.get("params")
    if params is not None and not isinstance(params, dict | list):
        raise JsonRpcError(INVALID_REQUEST, 'Invalid Request: "params" must be structured', id)
    return message


def is_request(message: Mapping[str, Any]) -> bool:
    """A request expects a response: it has a method and an id."""
    return isinstance(message.get("method"), str) and message.get("id") is not None


def error(id: Any, code: int, message: str) -> dict[str, Any]:
    """An error response."""
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


def result(id: Any, value: Mapping[str, Any]) -> dict[str, Any]:
    """A success response."""
    return {"jsonrpc": "2.0", "id": id, "result": dict(value)}


def tool_call(message: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(name, arguments)`` of a ``tools/call`` request; :data:`INVALID_PARAMS` when it
    names no tool or its arguments are not an object."""
    params = message.get("params")
    name = params.get("name") if isinstance(params, Mapping) else None
    arguments = params.get("arguments", {}) if isinstance(params, Mapping) else None
    if not isinstance(name, str) or not name:
        raise JsonRpcError(
            INVALID_PARAMS, "Invalid params: tools/call needs a tool name", message.get("id")
        )
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise JsonRpcError(
            INVALID_PARAMS, "Invalid params: a tool's arguments are an object", message.get("id")
        )
    return name, dict(arguments)


def with_arguments(message: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tools/call`` request ``message`` with other arguments."""
    params = {**message.get("params", {}), "arguments": dict(arguments)}
    return {**message, "params": params}


def refused_tool_result(reason: str) -> dict[str, Any]:
    """The result of a tool call a policy refused: an error result the model can read."""
    return {"content": [{"type": "text", "text": reason}], "isError": True}


def tool_text(value: Mapping[str, Any]) -> str:
    """What a model reads of a tool result: its text blocks, joined by newlines."""
    content = value.get("content")
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(block.get("text", ""))
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text"
    )


def with_tool_text(value: Mapping[str, Any], text: str) -> dict[str, Any]:
    """``value`` with its text blocks replaced by one block of ``text``, placed where the
    first was (other blocks kept)."""
    given = value.get("content")
    content: list[Any] = given if isinstance(given, list) else []
    blocks: list[Any] = []
    placed = False
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "text":
            if not placed:
                blocks.append({"type": "text", "text": text})
                placed = True
            continue
        blocks.append(block)
    if not placed:
        blocks.insert(0, {"type": "text", "text": text})
    return {**value, "content": blocks}
