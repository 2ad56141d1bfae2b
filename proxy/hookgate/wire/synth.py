"""Build well-formed OpenAI responses (JSON and SSE) from a small reply description.

Used by the built-in ``echo`` provider and by test upstreams, so both speak exactly the
shapes the official clients parse: chat completions and their chunks, Responses objects
and their streaming events, legacy completions, embeddings.
"""

from __future__ import annotations

import hashlib
import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hookgate.wire import sse


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
    """Into how many deltas a streamed text or argument string is split."""
    id: str = field(default_factory=lambda: f"{int(time.time() * 1e6):x}")


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
