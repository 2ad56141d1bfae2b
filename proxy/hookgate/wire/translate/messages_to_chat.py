"""An Anthropic Messages client (Claude Code, the ``anthropic`` SDK) talking to an
OpenAI-compatible model: the request becomes a Chat Completions request; the answer, its
stream and its errors come back as Messages ones.

Request (:func:`request`), field by field:

* translated: ``model`` (copied); ``system`` and ``messages`` (below); ``max_tokens`` →
  ``max_tokens`` (not ``max_completion_tokens``: every OpenAI-compatible server takes
  ``max_tokens``; OpenAI's own reasoning models, which want the other name, get it when
  the call is fitted to its model, :mod:`hookgate.wire.translate.fit`);
  ``stop_sequences`` → ``stop``; ``temperature`` and ``top_p``, copied;
  ``metadata.user_id`` → ``user`` (an id longer than :data:`MAX_USER_LENGTH`, like Claude
  Code's JSON one, is sent as its SHA-256 hex digest: stable, opaque and short enough);
  ``stream`` → ``stream`` with ``stream_options.include_usage`` (so the stream reports
  usage); ``tools``, ``tool_choice`` (below); ``output_config.effort`` →
  ``reasoning_effort`` (the same words); ``output_config.format`` (a JSON schema) →
  ``response_format`` ``json_schema``, ``strict`` (Anthropic constrains the output to the
  schema; strict mode is OpenAI's equivalent); ``thinking`` → ``reasoning_effort`` when
  ``output_config.effort`` does not set it: ``enabled`` by ``budget_tokens`` (< 2048
  ``low``, < 16384 ``medium``, else ``high``), ``adaptive`` and ``between_tools`` leave the
  model's default; ``disabled`` sends no ``reasoning_effort`` at all, even with an effort.
* dropped, as they change nothing about the answer or mean nothing to another provider:
  ``cache_control`` anywhere (a caching hint: OpenAI-compatible servers cache prefixes
  on their own), ``service_tier`` and ``speed`` (Anthropic's capacity and speed modes),
  ``diagnostics`` (Anthropic's cache-miss report), ``workspace_id`` and
  ``user_profile_id`` (attribution in Anthropic's console), ``context_management`` whose
  edits only clear thinking (thinking blocks are never sent on, below).
* refused with :class:`~hookgate.errors.InvalidRequest` (``param`` naming the field):
  ``top_k`` (OpenAI has no top-k), ``container`` and ``mcp_servers`` (Anthropic-hosted
  features), ``inference_geo`` (a data-residency requirement no other provider can be held
  to), other ``context_management`` edits, other ``output_config`` keys, and any unknown
  field (code ``unknown_parameter``).

Messages: ``system`` (a string or text blocks, joined by a blank line) becomes one leading
``system`` message, with a string content (every OpenAI-compatible server takes that); a
``role: system`` message in ``messages`` (Claude Code sends one mid-conversation) becomes a
``system`` message at its place. User text blocks become text parts (one text block alone,
a string); image blocks ``image_url`` parts (a base64 source as a ``data:`` URL); a
``document`` with a plain-text source a text part (its ``title`` and ``context``, when
given, on lines of their own above the text); ``tool_result`` blocks ``role: tool``
messages, placed before the rest of their user message (their text joined by a blank line;
``is_error`` has no OpenAI field: the result's text says what failed). Assistant text
blocks become ``content`` (joined), ``tool_use`` blocks ``tool_calls`` (the input as
compact JSON); ``thinking`` and ``redacted_thinking`` blocks are dropped: their signed
content is for Anthropic's models only, and an OpenAI model cannot read it. Refused:
documents of other sources (PDF, files), images in tool results, server tool blocks
(``server_tool_use``, ``web_search_tool_result``, ...) and any other block type.

Tools: custom tools (``type`` absent or ``custom``) become function tools
(``input_schema`` → ``parameters``; ``strict`` kept; ``cache_control``,
``defer_loading``, ``input_examples``, ``eager_input_streaming`` and ``allowed_callers``,
hints for Anthropic's own tool machinery, are dropped); Anthropic's server and client
tool types (``bash_*``, ``text_editor_*``, ``web_search_*``, ...) are refused.
``tool_choice`` ``auto``/``any``/``tool``/``none`` → ``auto``/``required``/a named
function/``none``; ``disable_parallel_tool_use`` (with tools) → ``parallel_tool_calls:
false``.

Answers (:func:`response`, :class:`StreamTranslator`): ``content`` → a text block,
``refusal`` → a text block and stop reason ``refusal``, ``tool_calls`` → ``tool_use``
blocks; ``reasoning_content`` (some servers' reasoning text) is dropped, as a thinking
block without Anthropic's signature could not be sent back to a Claude model. Usage: see
:func:`_messages_usage`. Errors: :func:`error`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from hookgate.errors import InvalidRequest, UpstreamBadResponse, anthropic_error
from hookgate.wire import sse
from hookgate.wire.prompts import SIGNED_BLOCKS
from hookgate.wire.translate.chat_chunks import read_chunk
from hookgate.wire.translate.fields import arguments_object, count, object_field

MAX_USER_LENGTH = 64
"""The longest ``user`` sent as it is (OpenAI's limit); a longer id is hashed."""

_TRANSLATED = frozenset(
    {"model", "messages", "system", "max_tokens", "stop_sequences", "temperature", "top_p",
     "metadata", "stream", "tools", "tool_choice", "thinking", "output_config",
     "context_management"}
)  # fmt: skip

_DROPPED = frozenset(
    {"cache_control", "service_tier", "speed", "diagnostics", "workspace_id", "user_profile_id"}
)

_REFUSED: Mapping[str, str] = {
    "top_k": "it has no top-k sampling",
    "container": "containers are Anthropic's",
    "mcp_servers": "hookgate does not run Anthropic's MCP connector",
    "inference_geo": "hookgate cannot hold it to a region",
}

_STOP_REASONS: Mapping[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
"""Anthropic ``stop_reason`` for each chat ``finish_reason`` (an unknown one is
``end_turn``)."""


def request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat-completions request for a Messages ``body`` (see the module docstring).

    Raises :class:`InvalidRequest` for a field or content the model cannot take.
    """
    _check_fields(body)
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise InvalidRequest("messages: Input should be a valid list", param="messages")
    out: dict[str, Any] = {"model": body.get("model"), "messages": _conversation(body)}
    for field in ("max_tokens", "temperature", "top_p"):
        if body.get(field) is not None:
            out[field] = body[field]
    if body.get("stop_sequences"):
        out["stop"] = list(body["stop_sequences"])
    user = _object(body, "metadata").get("user_id")
    if isinstance(user, str) and user:
        out["user"] = _short_user(user)
    if body.get("stream"):
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    _translate_tools(body, out)
    _translate_output(body, out)
    return out


def _check_fields(body: Mapping[str, Any]) -> None:
    for field, value in body.items():
        if field in _TRANSLATED or field in _DROPPED or value is None:
            continue
        if field in _REFUSED:
            raise InvalidRequest(
                f"'{field}' cannot be sent to an OpenAI-compatible model: {_REFUSED[field]}",
                param=field,
                code="unsupported_parameter",
            )
        raise InvalidRequest(
            f"unknown parameter '{field}': hookgate cannot translate it for an "
            "OpenAI-compatible model",
            param=field,
            code="unknown_parameter",
        )
    edits = _object(body, "context_management").get("edits") or []
    for i, edit in enumerate(edits):
        kind = edit.get("type") if isinstance(edit, Mapping) else None
        if not (isinstance(kind, str) and kind.startswith("clear_thinking_")):
            raise InvalidRequest(
                f"context_management edit {kind!r} cannot be applied to an OpenAI-compatible "
                "model (only clear_thinking edits, as thinking is never sent to one)",
                param=f"context_management.edits[{i}].type",
                code="unsupported_parameter",
            )


def _object(body: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    return object_field(body, field, f"{field}: Input should be a valid dictionary")


def _short_user(user: str) -> str:
    if len(user) <= MAX_USER_LENGTH:
        return user
    return hashlib.sha256(user.encode()).hexdigest()


def _translate_output(body: Mapping[str, Any], out: dict[str, Any]) -> None:
    """``reasoning_effort`` and ``response_format`` from ``thinking`` and ``output_config``."""
    config = _object(body, "output_config")
    for key in config:
        if key not in ("effort", "format") and config[key] is not None:
            raise InvalidRequest(
                f"'output_config.{key}' cannot be sent to an OpenAI-compatible model",
                param=f"output_config.{key}",
                code="unsupported_parameter",
            )
    output_format = config.get("format")
    if output_format is not None:
        out["response_format"] = _response_format(output_format)
    thinking = _object(body, "thinking")
    kind = thinking.get("type")
    if kind not in (None, "enabled", "disabled", "adaptive", "between_tools"):
        raise InvalidRequest(
            f"thinking type {kind!r} cannot be sent to an OpenAI-compatible model",
            param="thinking.type",
            code="unsupported_value",
        )
    effort = config.get("effort")
    if kind == "enabled" and effort is None:
        effort = _effort_of_budget(thinking.get("budget_tokens"))
    if effort is not None and kind != "disabled":
        out["reasoning_effort"] = effort


def _effort_of_budget(budget: Any) -> str:
    if not isinstance(budget, int) or budget < 2048:
        return "low"
    return "medium" if budget < 16384 else "high"


def _response_format(output_format: Any) -> dict[str, Any]:
    if not (isinstance(output_format, Mapping) and output_format.get("type") == "json_schema"):
        raise InvalidRequest(
            "output_config.format must be a json_schema format",
            param="output_config.format",
            code="unsupported_value",
        )
    schema = output_format.get("schema")
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }


# -- messages --------------------------------------------------------------------------


def _conversation(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if body.get("system"):
        out.append({"role": "system", "content": _system_text(body["system"], "system")})
    for i, message in enumerate(body["messages"]):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise InvalidRequest(f"{where}: Input should be a valid dictionary", param=where)
        role, content = message.get("role"), message.get("content")
        if role == "system":
            out.append({"role": "system", "content": _system_text(content, f"{where}.content")})
        elif role == "user":
            out += _user_messages(content, f"{where}.content")
        elif role == "assistant":
            out += _assistant_message(content, f"{where}.content")
        else:
            raise InvalidRequest(f"{where}.role: unexpected role {role!r}", param=f"{where}.role")
    return out


def _blocks(content: Any, where: str) -> list[Mapping[str, Any]]:
    """A message's content as blocks: a string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list) and all(isinstance(b, Mapping) for b in content):
        return content
    raise InvalidRequest(f"{where}: Input should be a string or a list of blocks", param=where)


def _refuse(block: Mapping[str, Any], where: str, detail: str = "") -> InvalidRequest:
    return InvalidRequest(
        f"{where}: a block of type {block.get('type')!r}{detail} cannot be sent to an "
        "OpenAI-compatible model",
        param=f"{where}.type",
        code="unsupported_value",
    )


def _texts(content: Any, where: str) -> list[str]:
    """The texts of text-only content (a string, or text blocks)."""
    texts = []
    for j, block in enumerate(_blocks(content, where)):
        if block.get("type") != "text":
            raise _refuse(block, f"{where}[{j}]")
        texts.append(str(block.get("text", "")))
    return texts


def _system_text(content: Any, where: str) -> str:
    return "\n\n".join(_texts(content, where))


def _user_messages(content: Any, where: str) -> list[dict[str, Any]]:
    """A user message's chat messages: a ``tool`` message per ``tool_result``, then a
    ``user`` message with the rest (none when nothing is left)."""
    tools: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for j, block in enumerate(_blocks(content, where)):
        at, kind = f"{where}[{j}]", block.get("type")
        if kind == "tool_result":
            tools.append(_tool_message(block, at))
        elif kind == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif kind == "image":
            parts.append(_image_part(block, at))
        elif kind == "document" and (block.get("source") or {}).get("type") == "text":
            parts.append({"type": "text", "text": _document_text(block)})
        elif kind == "document":
            source = (block.get("source") or {}).get("type")
            raise _refuse(block, at, f" with a {source!r} source")
        else:
            raise _refuse(block, at)
    if not parts:
        return tools
    if len(parts) == 1 and parts[0]["type"] == "text":
        return [*tools, {"role": "user", "content": parts[0]["text"]}]
    return [*tools, {"role": "user", "content": parts}]


def _image_part(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    source = block.get("source") or {}
    url: Any
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif source.get("type") == "url":
        url = source.get("url")
    else:
        raise _refuse(block, where, f" with a {source.get('type')!r} source")
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_message(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    content = block.get("content")
    texts = [] if content is None else _texts(content, f"{where}.content")
    return {
        "role": "tool",
        "tool_call_id": block.get("tool_use_id"),
        "content": "\n\n".join(texts),
    }


def _assistant_message(content: Any, where: str) -> list[dict[str, Any]]:
    """The assistant message (none when only thinking is left)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(_blocks(content, where)):
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            calls.append(_tool_call(block))
        elif kind not in SIGNED_BLOCKS:
            raise _refuse(block, f"{where}[{j}]")
    text = "".join(texts)
    if not text and not calls:
        return []
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return [message]


def _tool_call(block: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": block.get("id"),
        "type": "function",
        "function": {
            "name": block.get("name"),
            "arguments": orjson.dumps(block.get("input") or {}).decode(),
        },
    }


# -- tools -----------------------------------------------------------------------------


def _translate_tools(body: Mapping[str, Any], out: dict[str, Any]) -> None:
    tools = body.get("tools") or []
    if tools:
        out["tools"] = [_tool(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    choice = _object(body, "tool_choice")
    if not choice:
        return
    kind = choice.get("type")
    named = {"auto": "auto", "any": "required", "none": "none"}
    if kind in named:
        out["tool_choice"] = named[kind]
    elif kind == "tool":
        out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    else:
        raise InvalidRequest(
            f"tool_choice type {kind!r} cannot be sent to an OpenAI-compatible model",
            param="tool_choice.type",
            code="unsupported_value",
        )
    if choice.get("disable_parallel_tool_use") and tools:
        out["parallel_tool_calls"] = False


def _tool(tool: Any, where: str) -> dict[str, Any]:
    if not isinstance(tool, Mapping):
        raise InvalidRequest(f"{where}: Input should be a valid dictionary", param=where)
    kind = tool.get("type")
    if kind not in (None, "custom"):
        raise InvalidRequest(
            f"{where}: the Anthropic tool type {kind!r} cannot be sent to an "
            "OpenAI-compatible model (only custom tools, with an input_schema)",
            param=f"{where}.type",
            code="unsupported_value",
        )
    function: dict[str, Any] = {"name": tool.get("name"), "parameters": tool.get("input_schema")}
    if tool.get("description") is not None:
        function["description"] = tool["description"]
    if tool.get("strict") is not None:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


# -- answers ---------------------------------------------------------------------------


def response(body: Mapping[str, Any], *, model: str) -> dict[str, Any]:
    """The Messages ``message`` for a ``chat.completion`` answer, reporting ``model`` (the
    model the client asked for). Raises :class:`UpstreamBadResponse` when the answer has
    no choice, or a tool call whose arguments are not a JSON object."""
    choices = body.get("choices")
    if not (isinstance(choices, list) and choices and isinstance(choices[0], Mapping)):
        raise UpstreamBadResponse("the chat completion has no choice")
    message = choices[0].get("message") or {}
    content: list[dict[str, Any]] = []
    for field in ("content", "refusal"):
        if isinstance(message.get(field), str) and message[field]:
            content.append({"type": "text", "text": message[field]})
    calls = message.get("tool_calls") or []
    content += [_tool_use(call) for call in calls]
    return {
        "id": f"msg_{body.get('id', '')}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _stop_reason(choices[0].get("finish_reason"), bool(message.get("refusal"))),
        "stop_sequence": None,
        "usage": _messages_usage(body.get("usage") or {}),
    }


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "type": "tool_use",
        "id": call.get("id"),
        "name": function.get("name"),
        "input": _arguments(function.get("arguments")),
    }


def _arguments(arguments: Any) -> dict[str, Any]:
    value = arguments_object(arguments)
    if value is None:
        raise UpstreamBadResponse("a tool call's arguments are not a JSON object")
    return value


def _stop_reason(finish_reason: Any, refused: bool) -> str:
    if refused:
        return "refusal"
    if isinstance(finish_reason, str):
        return _STOP_REASONS.get(finish_reason, "end_turn")
    return "end_turn"


def _messages_usage(usage: Mapping[str, Any]) -> dict[str, int]:
    """A Messages ``usage`` for a chat one: ``input_tokens`` are the prompt tokens not read
    from the cache (Anthropic counts cache reads apart), ``cache_read_input_tokens`` the
    cached ones; the prompt cache writes nothing OpenAI reports, so
    ``cache_creation_input_tokens`` is 0."""
    details = usage.get("prompt_tokens_details")
    cached = count(details, "cached_tokens") if isinstance(details, Mapping) else 0
    return {
        "input_tokens": max(0, count(usage, "prompt_tokens") - cached),
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
        "output_tokens": count(usage, "completion_tokens"),
    }


def error(status: int, body: bytes) -> bytes:
    """An Anthropic error body for an OpenAI one, ``{"error": {"message", ...}}``: the
    message kept, the type Anthropic gives ``status`` (:func:`hookgate.errors.anthropic_type`:
    400 invalid_request_error, 401 authentication_error, 403 permission_error, 404
    not_found_error, 413 request_too_large, 429 rate_limit_error, 529 overloaded_error,
    other 5xx api_error, ...). A body of any other shape is returned unchanged."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    if not (isinstance(data, dict) and isinstance(data.get("error"), dict)):
        return body
    message = data["error"].get("message")
    text = message if isinstance(message, str) else f"the upstream answered HTTP {status}"
    return orjson.dumps(anthropic_error(status, text))


class StreamTranslator:
    """Translate a chat-completions stream into Anthropic Messages events, chunk by chunk.

    :meth:`feed` takes one chat SSE block and returns the Messages event blocks (``event:
    <type>``) it makes: ``message_start`` before the first (its usage all zero: the input
    count comes only at the end); a text block for ``content`` (and ``refusal``) deltas; a
    ``tool_use`` block per tool call, its arguments as ``input_json_delta``; each block is
    closed (``content_block_stop``) before the next starts and at the finish. The stream
    ends with ``message_delta`` (stop reason, full usage as :func:`_messages_usage`) and
    ``message_stop`` when a chunk with usage arrives after (or with) the ``finish_reason``,
    or at ``[DONE]``. An error chunk (``{"error": {...}}``) becomes an ``error`` event
    (``invalid_request_error`` when the upstream said so, else ``api_error``). Both set
    :attr:`finished`; blocks fed after that are ignored. ``reasoning_content`` deltas are
    dropped (see the module docstring).
    """

    def __init__(self, *, model: str) -> None:
        self.finished = False
        self._model = model
        self._started = False
        self._blocks = 0
        # The open block: its chat tool call index, -1 for text, None when none is open.
        self._open: int | None = None
        self._calls: set[int] = set()
        self._message_id = ""
        self._finish_reason: Any = None
        self._refused = False
        self._usage: Mapping[str, Any] = {}

    def feed(self, block: bytes) -> list[bytes]:
        """The Messages event blocks for one chat SSE block. Raises
        :class:`UpstreamBadResponse` for a chunk that is not a JSON object, or a tool
        call's arguments arriving after another block started."""
        if self.finished:
            return []
        if sse.is_done(block):
            return self._stop()
        chunk = read_chunk(block)
        if chunk is None:
            return []
        if isinstance(chunk.get("error"), Mapping):
            self.finished = True
            return [_event(_stream_error(chunk["error"]))]
        out = self._start(chunk)
        choices = chunk.get("choices") or []
        if choices and isinstance(choices[0], Mapping):
            out += self._choice(choices[0])
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = chunk["usage"]
            if self._finish_reason is not None:
                out += self._stop()
        return out

    def _start(self, chunk: Mapping[str, Any]) -> list[bytes]:
        if self._started:
            return []
        self._started = True
        self._message_id = f"msg_{chunk.get('id', '')}"
        message: dict[str, Any] = {
            "id": self._message_id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [_event({"type": "message_start", "message": message})]

    def _choice(self, choice: Mapping[str, Any]) -> list[bytes]:
        delta = choice.get("delta") or {}
        out: list[bytes] = []
        for field in ("content", "refusal"):
            if isinstance(delta.get(field), str) and delta[field]:
                self._refused |= field == "refusal"
                out += self._text(delta[field])
        for call in delta.get("tool_calls") or []:
            out += self._tool_call(call)
        if choice.get("finish_reason"):
            self._finish_reason = choice["finish_reason"]
            out += self._close()
        return out

    def _text(self, text: str) -> list[bytes]:
        out = []
        if self._open != -1:
            out = self._open_block(-1, {"type": "text", "text": ""})
        return [*out, self._delta({"type": "text_delta", "text": text})]

    def _tool_call(self, call: Mapping[str, Any]) -> list[bytes]:
        index = call.get("index", 0)
        function = call.get("function") or {}
        out: list[bytes] = []
        if index not in self._calls:
            self._calls.add(index)
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{self._message_id}_{index}",
                "name": function.get("name"),
                "input": {},
            }
            out = self._open_block(index, block)
        elif index != self._open:
            raise UpstreamBadResponse(
                f"tool call {index}'s arguments arrived after another content block started"
            )
        if function.get("arguments"):
            out.append(
                self._delta({"type": "input_json_delta", "partial_json": function["arguments"]})
            )
        return out

    def _delta(self, delta: dict[str, Any]) -> bytes:
        """A delta of the open block (the last one started)."""
        return _event({"type": "content_block_delta", "index": self._blocks - 1, "delta": delta})

    def _open_block(self, key: int, block: dict[str, Any]) -> list[bytes]:
        out = self._close()
        out.append(
            _event({"type": "content_block_start", "index": self._blocks, "content_block": block})
        )
        self._open = key
        self._blocks += 1
        return out

    def _close(self) -> list[bytes]:
        if self._open is None:
            return []
        self._open = None
        return [_event({"type": "content_block_stop", "index": self._blocks - 1})]

    def _stop(self) -> list[bytes]:
        out = self._start({})
        out += self._close()
        self.finished = True
        delta = {
            "stop_reason": _stop_reason(self._finish_reason, self._refused),
            "stop_sequence": None,
        }
        out.append(
            _event({"type": "message_delta", "delta": delta, "usage": _messages_usage(self._usage)})
        )
        out.append(_event({"type": "message_stop"}))
        return out


def _event(data: Mapping[str, Any]) -> bytes:
    return sse.encode(data, event=str(data["type"]))


def _stream_error(error: Mapping[str, Any]) -> dict[str, Any]:
    kind = "invalid_request_error" if error.get("type") == "invalid_request_error" else "api_error"
    message = error.get("message")
    text = message if isinstance(message, str) else "the upstream stream failed"
    return {"type": "error", "error": {"type": kind, "message": text}}


def _document_text(block: Mapping[str, Any]) -> str:
    """A plain-text document as one text: its title and context above its data."""
    fields = (block.get("title"), block.get("context"), block["source"].get("data"))
    return "\n\n".join(str(f) for f in fields if f)
