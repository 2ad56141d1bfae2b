"""Build well-formed model responses (JSON and SSE) from a small reply description.

Used by the built-in ``echo`` provider and by test upstreams, so both speak exactly the
shapes the official clients parse. OpenAI: chat completions and their chunks, Responses
objects and their streaming events, legacy completions, embeddings. Anthropic: Messages
API ``message`` objects and their streaming events, and ``count_tokens`` answers.
"""

from __future__ import annotations

import hashlib
import struct
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from hookgate.wire import sse

THINKING_SIGNATURE = (
    "EqQBCkYIBxgCKkCtx6fEjzZeZrx9N7Qi40vReeIqNPfqMwkDXZeQsSUE88NSjtqXZhHTxw6C31oYdc7XYIwcbT3q"
    "WaQ8mrDDTKF2EgywHTcvWAq4zMo9Xb8aDL0C1UqUp0WlJEVnySI+98hVf/rHPNAHw1qy3LV6Z35DJCov3XivYH8M"
    "G8lNt3setIbTOl5qnVYdaE7jH1Th73PhxwSKjAgKMDdIHLk="
)
"""The default ``signature`` of a synthetic thinking block: opaque base64, shaped like the
ones Anthropic's API sends (which clients must pass back byte for byte)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call the model makes."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reply:
    """What a synthetic model answers: text, tool calls, or both."""

    text: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    input_tokens: int = 10
    output_tokens: int = 5
    pieces: int = 3
    """Into how many deltas a streamed text, thinking or argument string is split."""
    id: str = field(default_factory=lambda: f"{int(time.time() * 1e6):x}")
    thinking: str | None = None
    """A thinking block the model writes before its text and tool calls (Messages API
    only; the OpenAI shapes leave it out)."""
    signature: str = THINKING_SIGNATURE
    """The thinking block's opaque signature."""
    cache_creation_tokens: int = 0
    """Input tokens written to the prompt cache (Messages API usage only)."""
    cache_read_tokens: int = 0
    """Input tokens read from the prompt cache (Messages API usage only). Like Anthropic's
    ``input_tokens``, :attr:`input_tokens` does not include either cache count."""
    stop_sequence: str | None = None
    """The custom stop sequence the model stopped at (Messages API only); the stop reason
    is then ``stop_sequence`` unless the reply calls tools."""


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _chat_usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def chat_completion(model: str, reply: Reply) -> dict[str, Any]:
    """A ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in reply.tool_calls
        ]
    return {
        "id": f"chatcmpl-{reply.id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": _chat_usage(reply),
    }


def chat_chunks(model: str, reply: Reply, *, include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed reply (without ``[DONE]``)."""
    head = {
        "id": f"chatcmpl-{reply.id}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            **head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            out["usage"] = None
        return out

    chunks = [chunk({"role": "assistant", "content": "" if reply.text is not None else None})]
    chunks += [chunk({"content": piece}) for piece in _split(reply.text or "", reply.pieces)]
    for index, call in enumerate(reply.tool_calls):
        first = {"index": index, "id": call.id, "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**first, "function": {"name": call.name, "arguments": ""}}]})
        )
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in _split(call.arguments, reply.pieces)
        ]
    chunks.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    if include_usage:
        chunks.append({**head, "choices": [], "usage": _chat_usage(reply)})
    return chunks


def chat_stream(model: str, reply: Reply, *, include_usage: bool) -> Iterator[bytes]:
    """SSE blocks of a streamed chat reply, ``[DONE]`` included."""
    for chunk in chat_chunks(model, reply, include_usage=include_usage):
        yield sse.encode(chunk)
    yield sse.DONE


def _response_items(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text is not None:
        items.append(
            {
                "type": "message",
                "id": f"msg_{reply.id}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    items += [
        {
            "type": "function_call",
            "id": f"fc_{c.id}",
            "call_id": c.id,
            "name": c.name,
            "arguments": c.arguments,
            "status": "completed",
        }
        for c in reply.tool_calls
    ]
    return items


def response_object(
    model: str, reply: Reply, *, status: str = "completed", output: list[Any] | None = None
) -> dict[str, Any]:
    """A Responses API ``response`` object."""
    done = status == "completed"
    return {
        "id": f"resp_{reply.id}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "model": model,
        "output": _response_items(reply) if output is None else output,
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "usage": {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        if done
        else None,
    }


def response_events(model: str, reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs of a streamed Responses reply, in protocol order."""
    events: list[tuple[str, dict[str, Any]]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **data}))

    emit(
        "response.created", response=response_object(model, reply, status="in_progress", output=[])
    )
    emit(
        "response.in_progress",
        response=response_object(model, reply, status="in_progress", output=[]),
    )
    for index, item in enumerate(_response_items(reply)):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            for piece in _split(text, reply.pieces):
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part={**part, "text": text},
            )
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for piece in _split(item["arguments"], reply.pieces):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response_object(model, reply))
    return events


def response_stream(model: str, reply: Reply) -> Iterator[bytes]:
    """SSE blocks of a streamed Responses reply."""
    for kind, data in response_events(model, reply):
        yield sse.encode(data, event=kind)


def completion(model: str, reply: Reply) -> dict[str, Any]:
    """A legacy ``text_completion`` object."""
    return {
        "id": f"cmpl-{reply.id}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "text": reply.text or "", "logprobs": None, "finish_reason": "stop"}
        ],
        "usage": _chat_usage(reply),
    }


def completion_stream(model: str, reply: Reply) -> Iterator[bytes]:
    """SSE blocks of a streamed legacy completion, ``[DONE]`` included."""
    head = {
        "id": f"cmpl-{reply.id}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
    }
    for piece in _split(reply.text or "", reply.pieces):
        yield sse.encode(
            {
                **head,
                "choices": [{"index": 0, "text": piece, "logprobs": None, "finish_reason": None}],
            }
        )
    yield sse.encode(
        {**head, "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "stop"}]}
    )
    yield sse.DONE


def embedding_vector(text: str, dimensions: int = 8) -> list[float]:
    """A deterministic unit-scale vector derived from ``text`` (for echo and tests)."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = struct.unpack(f"{len(digest) // 4}I", digest)
    return [(raw[i % len(raw)] / 2**32) * 2 - 1 for i in range(dimensions)]


def embeddings(model: str, inputs: Sequence[str], dimensions: int = 8) -> dict[str, Any]:
    """A ``list`` of embeddings, one per input."""
    return {
        "object": "list",
        "model": model,
        "data": [
            {"object": "embedding", "index": i, "embedding": embedding_vector(text, dimensions)}
            for i, text in enumerate(inputs)
        ],
        "usage": {
            "prompt_tokens": sum(len(t.split()) for t in inputs),
            "total_tokens": sum(len(t.split()) for t in inputs),
        },
    }


def count_tokens_object(input_tokens: int) -> dict[str, Any]:
    """The answer of Anthropic's ``POST /v1/messages/count_tokens``."""
    return {"input_tokens": input_tokens}


def _tool_input(call: ToolCall) -> dict[str, Any]:
    """The ``input`` object of a ``tool_use`` block: the call's arguments parsed ("" is
    ``{}``). Raises ``ValueError`` when they are not a JSON object."""
    if not call.arguments.strip():
        return {}
    value = orjson.loads(call.arguments)
    if not isinstance(value, dict):
        raise ValueError(f"tool call {call.id}: arguments are not a JSON object")
    return value


def _message_content(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.thinking is not None:
        blocks.append(
            {"type": "thinking", "thinking": reply.thinking, "signature": reply.signature}
        )
    if reply.text is not None:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c)}
        for c in reply.tool_calls
    ]
    return blocks


def _message_stop(reply: Reply) -> tuple[str, str | None]:
    """``(stop_reason, stop_sequence)`` of a finished reply."""
    if reply.tool_calls:
        return "tool_use", None
    if reply.stop_sequence is not None:
        return "stop_sequence", reply.stop_sequence
    return "end_turn", None


def _message_usage(reply: Reply, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "cache_creation_input_tokens": reply.cache_creation_tokens,
        "cache_read_input_tokens": reply.cache_read_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": reply.cache_creation_tokens,
            "ephemeral_1h_input_tokens": 0,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def message_object(model: str, reply: Reply) -> dict[str, Any]:
    """An Anthropic Messages API ``message`` object (the non-streamed answer).

    ``content`` holds, in order: a ``thinking`` block (with ``signature``) when
    ``reply.thinking`` is set, a ``text`` block when ``reply.text`` is set, and a
    ``tool_use`` block per tool call whose ``input`` is the parsed ``arguments`` (a JSON
    object; ``ValueError`` otherwise). ``stop_reason`` is ``tool_use`` when the reply calls
    tools, else ``stop_sequence`` when ``reply.stop_sequence`` is set, else ``end_turn``.
    ``usage.input_tokens`` is ``reply.input_tokens`` and excludes the cache counts, which
    are given apart, as Anthropic reports them.
    """
    stop_reason, stop_sequence = _message_stop(reply)
    return {
        "id": f"msg_{reply.id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _message_content(reply),
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": _message_usage(reply, reply.output_tokens),
    }


def message_events(model: str, reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs of a streamed Messages reply, in protocol order.

    ``message_start`` (the message with empty ``content``, ``stop_reason`` null and
    ``usage.output_tokens`` 1), then per content block of :func:`message_object`, at its
    index: ``content_block_start`` (the block with empty ``thinking``/``signature``,
    ``text`` or ``input``), its ``content_block_delta`` events (the string split into
    ``reply.pieces``; a thinking block ends with one ``signature_delta``; a tool_use block
    starts with an empty ``input_json_delta`` and streams the arguments' JSON text), and
    ``content_block_stop``. A ``ping`` follows the first ``content_block_start`` (or
    ``message_start`` when there is no block), where Anthropic sends it. Then
    ``message_delta`` with the stop reason and the cumulative usage (``output_tokens`` and
    the input and cache counts), and ``message_stop``. The blocks accumulate to exactly
    :func:`message_object`'s content.
    """
    events: list[tuple[str, dict[str, Any]]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, **data}))

    start = {
        **message_object(model, reply),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _message_usage(reply, min(1, reply.output_tokens)),
    }
    emit("message_start", message=start)
    blocks = _message_content(reply)
    calls = iter(reply.tool_calls)
    for index, block in enumerate(blocks):
        deltas: list[dict[str, Any]]
        if block["type"] == "thinking":
            emit(
                "content_block_start",
                index=index,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            )
            deltas = [
                {"type": "thinking_delta", "thinking": piece}
                for piece in _split(block["thinking"], reply.pieces)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "text":
            emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
            deltas = [
                {"type": "text_delta", "text": piece}
                for piece in _split(block["text"], reply.pieces)
            ]
        else:
            call = next(calls)
            emit("content_block_start", index=index, content_block={**block, "input": {}})
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in ["", *_split(call.arguments, reply.pieces)]
            ]
        if index == 0:
            emit("ping")
        for delta in deltas:
            emit("content_block_delta", index=index, delta=delta)
        emit("content_block_stop", index=index)
    if not blocks:
        emit("ping")
    stop_reason, stop_sequence = _message_stop(reply)
    usage = _message_usage(reply, reply.output_tokens)
    emit(
        "message_delta",
        delta={"stop_reason": stop_reason, "stop_sequence": stop_sequence},
        usage={
            key: usage[key]
            for key in (
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
            )
        },
    )
    emit("message_stop")
    return events


def message_stream(model: str, reply: Reply) -> Iterator[bytes]:
    """SSE blocks of a streamed Messages reply: each an ``event:`` line naming the event's
    type, then its ``data:`` (see :func:`message_events`)."""
    for kind, data in message_events(model, reply):
        yield sse.encode(data, event=kind)


def answer_stream(api: str, body: Mapping[str, Any], reply: Reply, model: str) -> Iterator[bytes]:
    """``reply`` as the event stream of ``api`` (chat, completions, Responses or Messages;
    a chat stream ends with the usage chunk when ``body`` asked for it)."""
    if api == "messages":
        return message_stream(model, reply)
    if api == "responses":
        return response_stream(model, reply)
    if api == "completions":
        return completion_stream(model, reply)
    options = body.get("stream_options")
    usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
    return chat_stream(model, reply, include_usage=usage)


def answer_object(api: str, reply: Reply, model: str) -> dict[str, Any]:
    """``reply`` as the JSON answer of ``api`` (chat, completions, Responses or Messages)."""
    if api == "messages":
        return message_object(model, reply)
    if api == "responses":
        return response_object(model, reply)
    if api == "completions":
        return completion(model, reply)
    return chat_completion(model, reply)
