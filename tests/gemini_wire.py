"""Gemini API answers for the fake upstream (tests/fakes.py), as Google's
``generateContent`` and ``streamGenerateContent?alt=sse`` send them, built from a
``synth.Reply``; and the fake's default agent reading a Gemini request.

Shapes (v1beta): a ``GenerateContentResponse`` is ``{"candidates": [{"content": {"role":
"model", "parts": [...]}, "finishReason", "index"}], "usageMetadata", "modelVersion",
"responseId"}``; a part is ``{"text"}``, ``{"text", "thought": true}`` or ``{"functionCall":
{"name", "args"}}``, and a reply with ``thinking`` carries its ``signature`` as the
``thoughtSignature`` of its first function call (else of its first text part), as Gemini 3
does. ``promptTokenCount`` includes the cached tokens (``cachedContentTokenCount``). A
stream is one chunk per text piece, the function calls in one chunk, and a last chunk with
``finishReason`` and the usage; there is no end marker.
"""

from __future__ import annotations

from typing import Any

import orjson

from hookgate.wire import synth


def _parts(reply: synth.Reply) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if reply.thinking is not None:
        parts.append({"text": reply.thinking, "thought": True})
    if reply.text:
        parts.append({"text": reply.text})
    parts += [
        {"functionCall": {"name": call.name, "args": orjson.loads(call.arguments or "{}")}}
        for call in reply.tool_calls
    ]
    if reply.thinking is not None:
        signed = next((p for p in parts if "functionCall" in p), None)
        signed = signed or next((p for p in parts if "text" in p and not p.get("thought")), None)
        if signed is not None:
            signed["thoughtSignature"] = reply.signature
    return parts


def _usage(reply: synth.Reply) -> dict[str, Any]:
    prompt = reply.input_tokens + reply.cache_read_tokens
    usage = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": reply.output_tokens,
        "totalTokenCount": prompt + reply.output_tokens,
    }
    if reply.cache_read_tokens:
        usage["cachedContentTokenCount"] = reply.cache_read_tokens
    return usage


def _chunk(
    model: str, reply: synth.Reply, parts: list[dict[str, Any]], **candidate: Any
) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, **candidate}],
        "modelVersion": model,
        "responseId": f"gem-{reply.id}",
    }


def response(model: str, reply: synth.Reply, **candidate: Any) -> dict[str, Any]:
    """The ``generateContent`` answer; ``candidate``: more fields of its candidate (a
    search's ``groundingMetadata``)."""
    return {
        **_chunk(model, reply, _parts(reply), finishReason="STOP", **candidate),
        "usageMetadata": _usage(reply),
    }


def stream(model: str, reply: synth.Reply, **candidate: Any) -> list[bytes]:
    """The ``streamGenerateContent?alt=sse`` event blocks; ``candidate``: more fields of
    the last chunk's candidate (where Gemini sends a search's ``groundingMetadata``)."""
    chunks: list[dict[str, Any]] = []
    parts = _parts(reply)
    for part in parts:
        if "text" in part:
            pieces = _split(part["text"], reply.pieces)
            for index, piece in enumerate(pieces):
                chunk_part = {**part, "text": piece}
                if index:
                    chunk_part.pop("thoughtSignature", None)
                chunks.append(_chunk(model, reply, [chunk_part]))
    calls = [p for p in parts if "functionCall" in p]
    if calls:
        chunks.append(_chunk(model, reply, calls))
    last = _chunk(model, reply, [{"text": ""}], finishReason="STOP", **candidate)
    chunks.append({**last, "usageMetadata": _usage(reply)})
    return [b"data: " + orjson.dumps(chunk) + b"\r\n\r\n" for chunk in chunks]


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def agent_reply(body: dict[str, Any]) -> synth.Reply:
    """The fake's default agent on a Gemini request: text quoting the function responses
    of the last user turn (their ``output``), else a call of the first declared function
    (arguments from its schema), else a greeting."""
    contents = body.get("contents") or []
    users = [c for c in contents if isinstance(c, dict) and c.get("role") == "user"]
    last = users[-1].get("parts") or [] if users else []
    results = [
        _result_text(p["functionResponse"].get("response"))
        for p in last
        if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
    ]
    if results:
        return synth.Reply(text=f"The tool said: {' '.join(results)}")
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            schema = declaration.get("parametersJsonSchema") or declaration.get("parameters") or {}
            properties = schema.get("properties") or {}
            values = {"string": "Paris", "integer": 2, "number": 2, "boolean": True}
            arguments = {k: values.get(str(v.get("type")), "Paris") for k, v in properties.items()}
            call = synth.ToolCall("unused", declaration["name"], orjson.dumps(arguments).decode())
            return synth.Reply(tool_calls=[call])
    return synth.Reply(text="Hello from the fake upstream.")


def _result_text(response: Any) -> str:
    """A function response's text: its ``output`` (Google's key for a text result), else
    the response as JSON."""
    if isinstance(response, dict) and isinstance(response.get("output"), str):
        return str(response["output"])
    return orjson.dumps(response).decode()


def user_text(body: dict[str, Any], index: int) -> str:
    """The text parts of one user turn (``index`` over the user turns), joined."""
    contents = body.get("contents") or []
    users = [c for c in contents if isinstance(c, dict) and c.get("role") == "user"]
    if not users:
        return ""
    return "".join(str(p.get("text", "")) for p in users[index].get("parts") or [])
