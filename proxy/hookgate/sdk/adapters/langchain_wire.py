"""LangChain messages to the OpenAI wire shape the policies read, and back, faithfully.

A model request becomes a chat-completions body (system message first, then the history,
tools as OpenAI function tools); after the model-level hooks the body becomes LangChain
messages again. A message whose OpenAI form no hook changed is handed back as the very
object it was (ids, metadata, content blocks intact); a changed one keeps its id and
metadata and takes the new content and tool-call arguments. The model's answer goes the
same way: an ``AIMessage`` becomes a chat completion for ``on_response`` and the restored
text and arguments are written back into a copy of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langchain_core.utils.function_calling import convert_to_openai_tool


def openai_messages(system: SystemMessage | None, messages: Sequence[BaseMessage]) -> list[Any]:
    """The request's messages in the OpenAI shape, the system message first."""
    listed = [system, *messages] if system is not None else list(messages)
    return [convert_to_openai_messages(m) for m in listed]


def openai_tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """The request's tools as OpenAI function tools (provider-side tools as they are)."""
    return [tool if isinstance(tool, dict) else convert_to_openai_tool(tool) for tool in tools]


def tool_name(tool: Any) -> str | None:
    """The name a tool is offered under (a ``BaseTool``, or an OpenAI-shaped dict)."""
    if isinstance(tool, dict):
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        return name if isinstance(name, str) else None
    name = getattr(tool, "name", None)
    return name if isinstance(name, str) else None


def langchain_messages(
    sent: Sequence[Any],
    originals: Sequence[BaseMessage],
    before: Sequence[Any],
) -> tuple[SystemMessage | None, list[BaseMessage]]:
    """``sent`` (the OpenAI messages after the hooks) as ``(system, messages)``.

    ``originals`` are the LangChain messages ``before`` was made from, position for
    position: unchanged ones are handed back as they were, changed ones keep their id and
    metadata. When the hooks added or removed messages, every message is converted anew.
    """
    aligned = len(sent) == len(before) == len(originals)
    out: list[BaseMessage] = []
    for index, message in enumerate(sent):
        if aligned and message == before[index]:
            out.append(originals[index])
            continue
        (fresh,) = convert_to_messages([message])
        out.append(_keep_identity(originals[index], fresh) if aligned else fresh)
    if out and isinstance(out[0], SystemMessage):
        return out[0], out[1:]
    return None, out


def _keep_identity(original: BaseMessage, fresh: BaseMessage) -> BaseMessage:
    if type(original) is not type(fresh):
        return fresh
    update: dict[str, Any] = {"content": fresh.content}
    if isinstance(original, AIMessage) and isinstance(fresh, AIMessage):
        update["tool_calls"] = fresh.tool_calls
    if isinstance(original, ToolMessage) and isinstance(fresh, ToolMessage):
        update["tool_call_id"] = fresh.tool_call_id
    return original.model_copy(update=update)


def completion(message: AIMessage, model: str) -> dict[str, Any]:
    """The model's answer as a chat completion (for ``on_response``)."""
    shaped = convert_to_openai_messages(message)
    completion: dict[str, Any] = {
        "id": message.id or "langchain",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": shaped, "finish_reason": "stop"}],
    }
    usage = openai_usage(message)
    if usage is not None:  # what the model reported, for the model call's span and metrics
        completion["usage"] = usage
    return completion


def openai_usage(message: AIMessage) -> dict[str, Any] | None:
    """The usage LangChain read from the model's answer, in the chat-completions shape."""
    meta = message.usage_metadata
    if not meta:
        return None
    cached = (meta.get("input_token_details") or {}).get("cache_read") or 0
    reasoning = (meta.get("output_token_details") or {}).get("reasoning") or 0
    return {
        "prompt_tokens": meta.get("input_tokens", 0),
        "completion_tokens": meta.get("output_tokens", 0),
        "total_tokens": meta.get("total_tokens", 0),
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def restored(message: AIMessage, body: Mapping[str, Any]) -> AIMessage:
    """``message`` with the text and tool-call arguments of ``body`` (a chat completion the
    response hooks returned); the same object when they changed nothing."""
    choices = body.get("choices") or [{}]
    shaped = choices[0].get("message") or {}
    update: dict[str, Any] = {}
    content = shaped.get("content")
    if content != convert_to_openai_messages(message).get("content"):
        update["content"] = content if content is not None else ""
    arguments = {
        call.get("id"): call.get("function", {}).get("arguments")
        for call in shaped.get("tool_calls") or []
    }
    calls = []
    for call in message.tool_calls:
        text = arguments.get(call.get("id"))
        args = orjson.loads(text) if isinstance(text, str) and text else call["args"]
        calls.append({**call, "args": args} if args != call["args"] else call)
    if calls != list(message.tool_calls):
        update["tool_calls"] = calls
    return message.model_copy(update=update) if update else message
