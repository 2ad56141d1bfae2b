"""A Chat Completions client talking to an Anthropic model: the request becomes a Messages
request; the answer, its stream and its errors come back as Chat Completions ones.

Request (:func:`request`), field by field:

* translated: ``model`` (copied); ``messages`` (below); ``max_completion_tokens``, else
  ``max_tokens``, else the provider's default → ``max_tokens``; ``stop`` (a string or a
  list) → ``stop_sequences``; ``temperature`` (Anthropic's range is 0 to 1: a higher
  value is refused) and ``top_p``, copied; ``safety_identifier``, else ``user`` →
  ``metadata.user_id``; ``stream``, copied; ``tools``, ``tool_choice`` and
  ``parallel_tool_calls`` (below); ``reasoning_effort`` → ``thinking``, by
  :data:`THINKING_BUDGETS` (``none`` → ``{"type": "disabled"}``), and ``max_tokens`` is
  raised to the budget plus :data:`THINKING_HEADROOM` when it leaves less room (thinking
  counts toward Anthropic's ``max_tokens``, as reasoning counts toward OpenAI's
  ``max_completion_tokens``).
* dropped, as they change nothing about the answer: ``store`` and ``metadata`` (OpenAI's
  stored completions and their dashboard tags), ``service_tier`` (OpenAI's capacity
  tiers), ``stream_options`` (read by :class:`StreamTranslator`'s ``include_usage``),
  ``prompt_cache_key``, ``prompt_cache_retention`` and ``prompt_cache_options`` (OpenAI's
  cache routing; Anthropic caches at ``cache_control`` breakpoints, which are kept), and
  ``seed`` (best effort at OpenAI too, which promises no determinism).
* refused with :class:`~hookgate.errors.InvalidRequest` (code ``unsupported_parameter``,
  ``param`` naming the field), when set to anything but their neutral value: ``n`` > 1,
  ``logprobs``, ``top_logprobs``, ``audio``, ``modalities`` with audio, ``response_format``
  of type ``json_schema`` or ``json_object``, ``prediction``, ``logit_bias``,
  ``presence_penalty``, ``frequency_penalty``, ``verbosity``, ``web_search_options``,
  ``moderation``, and the legacy ``functions``/``function_call``. Any other field is
  refused as unknown (code ``unknown_parameter``).

Messages: ``system`` and ``developer`` messages, wherever they are, become the top-level
``system`` text blocks, in order. User text parts become text blocks and ``image_url``
parts image blocks (a ``data:`` URL a base64 source, an http(s) URL a url source; the
``detail`` hint is dropped); ``file`` and ``input_audio`` parts are refused. An assistant
message becomes, in order: its ``thinking_blocks`` (LiteLLM's field: the Anthropic
``thinking``/``redacted_thinking`` blocks, signatures included) exactly as given, its text
(and ``refusal``) as text blocks, and its ``tool_calls`` as ``tool_use`` blocks (the
arguments parsed: they must be a JSON object). ``reasoning_content`` without
``thinking_blocks`` is dropped: thinking without its signature cannot be sent back. A
``tool`` message becomes a ``tool_result`` block. Consecutive messages of one role are
merged into one turn (Anthropic requires alternating roles), so consecutive tool results
and the user message after them are one user turn, results first. ``cache_control`` on a
content part is kept; a message's ``name`` is dropped (Anthropic has no participant
names); empty text is left out (Anthropic refuses empty text blocks).

Tools: function tools become ``{"name", "description", "input_schema", "strict"}`` (an
absent schema is an empty object schema); other tool types are refused. ``tool_choice``
``auto``/``required``/``none``/a named function → ``auto``/``any``/``none``/``tool``;
``allowed_tools`` and custom choices are refused. ``parallel_tool_calls: false`` (with
tools) → ``disable_parallel_tool_use`` in ``tool_choice`` (``auto`` when none is given).

Answers (:func:`response`, :class:`StreamTranslator`): text blocks joined → ``content``;
``tool_use`` → ``tool_calls``; thinking text → ``reasoning_content``, and the thinking
blocks verbatim → ``thinking_blocks`` (in a stream, all of them in the finishing chunk's
delta), so a client that sends the assistant message back keeps their signatures. Other
block types (which only server tools, refused above, produce) are skipped. Usage: see
:func:`_chat_usage`. Errors: :func:`error`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import orjson

from hookgate.errors import InvalidRequest, UpstreamBadResponse, is_anthropic_error
from hookgate.wire import sse
from hookgate.wire.prompts import SIGNED_BLOCKS
from hookgate.wire.translate.chat_chunks import ChatChunks
from hookgate.wire.translate.fields import (
    arguments_object,
    check_chat_fields,
    content_parts,
    count,
    first_given,
)

THINKING_BUDGETS: Mapping[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
    "max": 49152,
}
"""``budget_tokens`` of Anthropic's extended thinking for each OpenAI ``reasoning_effort``
(1024 is Anthropic's minimum budget)."""

THINKING_HEADROOM = 1024
"""Tokens left for the answer after a full thinking budget: ``max_tokens`` is raised to
``budget_tokens`` plus this when it is smaller."""

_TRANSLATED = frozenset(
    {"model", "messages", "max_tokens", "max_completion_tokens", "stop", "temperature",
     "top_p", "user", "safety_identifier", "stream", "tools", "tool_choice",
     "parallel_tool_calls", "reasoning_effort"}
)  # fmt: skip

_DROPPED = frozenset(
    {"store", "metadata", "service_tier", "stream_options", "prompt_cache_key",
     "prompt_cache_retention", "prompt_cache_options", "seed"}
)  # fmt: skip

_REFUSED: Mapping[str, str] = {
    "n": "it answers with one choice",
    "logprobs": "it reports no log probabilities",
    "top_logprobs": "it reports no log probabilities",
    "audio": "it produces no audio",
    "modalities": "it produces no audio",
    "response_format": "it has no JSON mode: describe the format in the prompt, or use a tool",
    "prediction": "it takes no predicted output",
    "logit_bias": "it takes no logit bias",
    "presence_penalty": "it has no presence penalty",
    "frequency_penalty": "it has no frequency penalty",
    "verbosity": "it has no verbosity setting",
    "web_search_options": "hookgate does not translate its web search tool",
    "moderation": "it has no moderation setting",
    "functions": "use 'tools'",
    "function_call": "use 'tool_choice'",
}
"""Fields refused when set to a value that has an effect (see
:func:`~hookgate.wire.translate.fields.check_chat_fields`), and
why the model cannot honour them."""

_FINISH_REASONS: Mapping[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
"""Chat ``finish_reason`` for each Anthropic ``stop_reason`` (an unknown one is ``stop``)."""

_ERROR_TYPES: Mapping[str, str] = {
    "invalid_request_error": "invalid_request_error",
    "authentication_error": "invalid_request_error",
    "permission_error": "invalid_request_error",
    "not_found_error": "invalid_request_error",
    "request_too_large": "invalid_request_error",
    "rate_limit_error": "requests",
    "billing_error": "insufficient_quota",
    "api_error": "server_error",
    "overloaded_error": "server_error",
    "timeout_error": "server_error",
}
"""OpenAI's error ``type`` nearest to each Anthropic error type."""


def request(body: Mapping[str, Any], *, default_max_tokens: int) -> dict[str, Any]:
    """The Messages request for a chat-completions ``body`` (see the module docstring).

    ``default_max_tokens`` is used when the body sets no limit (Anthropic requires one).
    Raises :class:`InvalidRequest` for a field or content the model cannot take.
    """
    check_chat_fields(
        body,
        target="an Anthropic model",
        translated=_TRANSLATED,
        dropped=_DROPPED,
        refused=_REFUSED,
    )
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise InvalidRequest("'messages' must be an array", param="messages")
    system, turns = _conversation(messages)
    out: dict[str, Any] = {"model": body.get("model"), "messages": turns}
    if system:
        out["system"] = system
    max_tokens = first_given(body, "max_completion_tokens", "max_tokens")
    out["max_tokens"] = default_max_tokens if max_tokens is None else max_tokens
    _translate_sampling(body, out)
    _translate_tools(body, out)
    _translate_reasoning(body.get("reasoning_effort"), out)
    return out


def _translate_sampling(body: Mapping[str, Any], out: dict[str, Any]) -> None:
    temperature = body.get("temperature")
    if isinstance(temperature, int | float) and temperature > 1:
        raise InvalidRequest(
            f"'temperature' {temperature} cannot be sent to an Anthropic model: its range "
            "is 0 to 1",
            param="temperature",
            code="unsupported_value",
        )
    for field in ("temperature", "top_p", "stream"):
        if body.get(field) is not None:
            out[field] = body[field]
    stop = body.get("stop")
    if stop is not None:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    user = first_given(body, "safety_identifier", "user")
    if user is not None:
        out["metadata"] = {"user_id": user}


def _translate_reasoning(effort: Any, out: dict[str, Any]) -> None:
    if effort is None:
        return
    if effort == "none":
        out["thinking"] = {"type": "disabled"}
        return
    budget = THINKING_BUDGETS.get(effort) if isinstance(effort, str) else None
    if budget is None:
        raise InvalidRequest(
            f"'reasoning_effort' {effort!r} has no Anthropic thinking budget (one of "
            f"none, {', '.join(THINKING_BUDGETS)})",
            param="reasoning_effort",
            code="unsupported_value",
        )
    out["thinking"] = {"type": "enabled", "budget_tokens": budget}
    out["max_tokens"] = max(out["max_tokens"], budget + THINKING_HEADROOM)


# -- messages --------------------------------------------------------------------------


def _conversation(messages: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system blocks, turns)`` of chat ``messages``; see the module docstring."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise InvalidRequest(f"{where} must be an object", param=where)
        role = message.get("role")
        if role in ("system", "developer"):
            system += _text_blocks(message.get("content"), f"{where}.content")
        elif role == "user":
            _append(turns, "user", _user_blocks(message.get("content"), f"{where}.content"))
        elif role == "assistant":
            _append(turns, "assistant", _assistant_blocks(message, where))
        elif role == "tool":
            _append(turns, "user", [_tool_result(message, where)])
        else:
            raise InvalidRequest(
                f"{where}: role {role!r} cannot be sent to an Anthropic model",
                param=f"{where}.role",
                code="unsupported_value",
            )
    return system, turns


def _append(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Add ``blocks`` as a turn of ``role``, into the last turn when it has that role."""
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"] += blocks
    else:
        turns.append({"role": role, "content": blocks})


def _text_block(part: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A text part as a text block (keeping ``cache_control``); none for empty text."""
    text = part.get("text")
    if not text:
        return []
    block: dict[str, Any] = {"type": "text", "text": text}
    if part.get("cache_control") is not None:
        block["cache_control"] = part["cache_control"]
    return [block]


def _refuse_part(kind: Any, where: str) -> InvalidRequest:
    return InvalidRequest(
        f"{where}: a content part of type {kind!r} cannot be sent to an Anthropic model",
        param=f"{where}.type",
        code="unsupported_value",
    )


def _text_blocks(content: Any, where: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for j, part in enumerate(content_parts(content, where)):
        if part.get("type") != "text":
            raise _refuse_part(part.get("type"), f"{where}[{j}]")
        blocks += _text_block(part)
    return blocks


def _user_blocks(content: Any, where: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for j, part in enumerate(content_parts(content, where)):
        kind = part.get("type")
        if kind == "text":
            blocks += _text_block(part)
        elif kind == "image_url":
            blocks.append(_image_block(part, f"{where}[{j}]"))
        else:
            raise _refuse_part(kind, f"{where}[{j}]")
    return blocks


def _image_block(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str):
        raise InvalidRequest(f"{where}.image_url.url must be a string", param=where)
    block: dict[str, Any] = {"type": "image", "source": _image_source(url, where)}
    if part.get("cache_control") is not None:
        block["cache_control"] = part["cache_control"]
    return block


def _image_source(url: str, where: str) -> dict[str, Any]:
    if url.startswith(("http://", "https://")):
        return {"type": "url", "url": url}
    header, comma, data = url.partition(",")
    media_type, _, encoding = header.removeprefix("data:").partition(";")
    if not url.startswith("data:") or not comma or encoding != "base64":
        raise InvalidRequest(
            f"{where}: an image URL must be http(s) or a base64 data: URL",
            param=f"{where}.image_url.url",
            code="unsupported_value",
        )
    return {"type": "base64", "media_type": media_type, "data": data}


def _assistant_blocks(message: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    for field in ("audio", "function_call"):
        if message.get(field) is not None:
            raise InvalidRequest(
                f"{where}: an assistant '{field}' cannot be sent to an Anthropic model",
                param=f"{where}.{field}",
                code="unsupported_parameter",
            )
    blocks = _thinking_blocks(message.get("thinking_blocks"), f"{where}.thinking_blocks")
    content = f"{where}.content"
    for j, part in enumerate(content_parts(message.get("content"), content)):
        kind = part.get("type")
        if kind not in ("text", "refusal"):
            raise _refuse_part(kind, f"{content}[{j}]")
        blocks += _text_block(part if kind == "text" else {"text": part.get("refusal")})
    if isinstance(message.get("refusal"), str):
        blocks += _text_block({"text": message["refusal"]})
    calls = message.get("tool_calls") or []
    blocks += [_tool_use(call, f"{where}.tool_calls[{k}]") for k, call in enumerate(calls)]
    return blocks


def _thinking_blocks(blocks: Any, where: str) -> list[dict[str, Any]]:
    if blocks is None:
        return []
    if not isinstance(blocks, list) or not all(
        isinstance(b, Mapping) and b.get("type") in SIGNED_BLOCKS for b in blocks
    ):
        raise InvalidRequest(
            f"{where} must be an array of Anthropic thinking or redacted_thinking blocks",
            param=where,
        )
    return [dict(b) for b in blocks]


def _tool_use(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, Mapping) or call.get("type", "function") != "function":
        kind = call.get("type") if isinstance(call, Mapping) else None
        raise InvalidRequest(
            f"{where}: a tool call of type {kind!r} cannot be sent to an Anthropic model",
            param=f"{where}.type",
            code="unsupported_value",
        )
    function = call.get("function") or {}
    return {
        "type": "tool_use",
        "id": call.get("id"),
        "name": function.get("name"),
        "input": _arguments(function.get("arguments"), f"{where}.function.arguments"),
    }


def _arguments(arguments: Any, where: str) -> dict[str, Any]:
    value = arguments_object(arguments)
    if value is None:
        raise InvalidRequest(f"{where} must be a JSON object, as a string", param=where)
    return value


def _tool_result(message: Mapping[str, Any], where: str) -> dict[str, Any]:
    content = message.get("content")
    return {
        "type": "tool_result",
        "tool_use_id": message.get("tool_call_id"),
        "content": content
        if isinstance(content, str)
        else _text_blocks(content, f"{where}.content"),
    }


# -- tools -----------------------------------------------------------------------------


def _translate_tools(body: Mapping[str, Any], out: dict[str, Any]) -> None:
    tools = body.get("tools") or []
    if tools:
        out["tools"] = [_tool(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    choice = _tool_choice(body.get("tool_choice"))
    if body.get("parallel_tool_calls") is False and tools:
        choice = choice or {"type": "auto"}
        if choice["type"] != "none":
            choice["disable_parallel_tool_use"] = True
    if choice is not None:
        out["tool_choice"] = choice


def _tool(tool: Any, where: str) -> dict[str, Any]:
    kind = tool.get("type") if isinstance(tool, Mapping) else None
    if kind != "function":
        raise InvalidRequest(
            f"{where}: a tool of type {kind!r} cannot be sent to an Anthropic model (only "
            "function tools)",
            param=f"{where}.type",
            code="unsupported_value",
        )
    function = tool.get("function") or {}
    out: dict[str, Any] = {
        "name": function.get("name"),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if function.get("description") is not None:
        out["description"] = function["description"]
    if function.get("strict") is not None:
        out["strict"] = function["strict"]
    return out


def _tool_choice(choice: Any) -> dict[str, Any] | None:
    if choice is None:
        return None
    named = {"auto": "auto", "required": "any", "none": "none"}
    if isinstance(choice, str) and choice in named:
        return {"type": named[choice]}
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        return {"type": "tool", "name": (choice.get("function") or {}).get("name")}
    kind = choice.get("type") if isinstance(choice, Mapping) else choice
    raise InvalidRequest(
        f"'tool_choice' {kind!r} cannot be sent to an Anthropic model",
        param="tool_choice",
        code="unsupported_value",
    )


# -- answers ---------------------------------------------------------------------------


def response(body: Mapping[str, Any]) -> dict[str, Any]:
    """The ``chat.completion`` for an Anthropic ``message`` answer (see the module
    docstring). Raises :class:`UpstreamBadResponse` when ``body`` has no content list."""
    content = body.get("content")
    if not isinstance(content, list):
        raise UpstreamBadResponse("the Anthropic answer has no 'content' array")
    blocks = [b for b in content if isinstance(b, Mapping)]
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "refusal": None,
    }
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    if calls:
        message["tool_calls"] = [_tool_call(b) for b in calls]
    message.update(_reasoning([b for b in blocks if b.get("type") in SIGNED_BLOCKS]))
    return {
        "id": f"chatcmpl-{body.get('id', '')}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _finish_reason(body.get("stop_reason")),
                "logprobs": None,
            }
        ],
        "usage": _chat_usage(body.get("usage") or {}),
    }


def _tool_call(block: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": block.get("id"),
        "type": "function",
        "function": {
            "name": block.get("name"),
            "arguments": orjson.dumps(block.get("input") or {}).decode(),
        },
    }


def _reasoning(blocks: list[Mapping[str, Any]]) -> dict[str, Any]:
    """``reasoning_content`` and ``thinking_blocks`` for thinking blocks (none for none)."""
    if not blocks:
        return {}
    return {
        "reasoning_content": "".join(str(b.get("thinking", "")) for b in blocks),
        "thinking_blocks": [dict(b) for b in blocks],
    }


def _finish_reason(stop_reason: Any) -> str:
    return _FINISH_REASONS.get(stop_reason, "stop") if isinstance(stop_reason, str) else "stop"


def _chat_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """A chat ``usage`` for an Anthropic one: ``prompt_tokens`` is every input token
    (Anthropic's ``input_tokens`` counts only those after the last cache breakpoint, so the
    cache reads and writes are added), of which ``prompt_tokens_details.cached_tokens``
    were read from the cache and ``cache_write_tokens`` written to it (OpenAI's own field);
    ``output_tokens_details.thinking_tokens`` → ``completion_tokens_details.reasoning_tokens``.
    """
    read = count(usage, "cache_read_input_tokens")
    written = count(usage, "cache_creation_input_tokens")
    prompt = count(usage, "input_tokens") + read + written
    completion = count(usage, "output_tokens")
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
    }
    details = usage.get("output_tokens_details")
    if isinstance(details, Mapping):
        out["completion_tokens_details"] = {"reasoning_tokens": count(details, "thinking_tokens")}
    return out


def error(status: int, body: bytes) -> bytes:
    """An OpenAI error body for an Anthropic one, ``{"type": "error", "error": {"type",
    "message"}}``: ``code`` is Anthropic's error type and ``type`` OpenAI's nearest
    (:data:`_ERROR_TYPES`; an unknown type is ``server_error`` at ``status`` ≥ 500, else
    ``invalid_request_error``). A body of any other shape is returned unchanged."""
    if not is_anthropic_error(body):
        return body
    return orjson.dumps(_openai_error(orjson.loads(body)["error"], status))


def _openai_error(error: Mapping[str, Any], status: int) -> dict[str, Any]:
    kind = str(error.get("type"))
    fallback = "server_error" if status >= 500 else "invalid_request_error"
    return {
        "error": {
            "message": str(error.get("message", "")),
            "type": _ERROR_TYPES.get(kind, fallback),
            "param": None,
            "code": kind,
        }
    }


class StreamTranslator:
    """Translate an Anthropic Messages stream into chat-completion chunks, event by event.

    :meth:`feed` takes one Anthropic event block and returns the chat SSE blocks it makes:
    ``message_start`` → the first chunk (``role: assistant``); text, tool-call and thinking
    deltas → ``content``, ``tool_calls`` (indexed by order of appearance) and
    ``reasoning_content`` deltas; ``message_delta`` is kept (stop reason, usage);
    ``message_stop`` → the chunk with ``finish_reason`` (its delta carries the complete
    ``thinking_blocks`` when there were any), the usage chunk (``choices: []``) when
    ``include_usage``, and ``data: [DONE]``. An ``error`` event → a chat error chunk,
    ``{"error": {...}}`` as :func:`error` writes it. Both set :attr:`finished`; events fed
    after that are ignored. Pings, ``signature_delta`` and unknown events yield nothing.
    """

    def __init__(self, *, model: str, include_usage: bool) -> None:
        self.finished = False
        self._chunks = ChatChunks(model)
        self._include_usage = include_usage
        self._usage: dict[str, Any] = {}
        self._stop_reason: Any = None
        # Anthropic block index → chat tool call index, and → the thinking block so far.
        self._tool_calls: dict[int, int] = {}
        self._thinking: dict[int, dict[str, Any]] = {}

    def feed(self, block: bytes) -> list[bytes]:
        """The chat SSE blocks for one Anthropic event block. Raises
        :class:`UpstreamBadResponse` for an event whose data is not a JSON object."""
        if self.finished:
            return []
        try:
            data = sse.object_of(block)
        except ValueError:
            raise UpstreamBadResponse("an Anthropic stream event is not a JSON object") from None
        if data is None:
            return []
        kind = data.get("type")
        if kind == "message_start":
            return self._start(data.get("message") or {})
        if kind == "content_block_start":
            return self._block_start(data.get("index"), data.get("content_block") or {})
        if kind == "content_block_delta":
            return self._block_delta(data.get("index"), data.get("delta") or {})
        if kind == "message_delta":
            self._stop_reason = (data.get("delta") or {}).get("stop_reason")
            usage = data.get("usage") or {}
            self._usage.update({k: v for k, v in usage.items() if v is not None})
            return []
        if kind == "message_stop":
            return self._stop()
        if kind == "error":
            self.finished = True
            return [sse.encode(_openai_error(data.get("error") or {}, 500))]
        return []

    def _start(self, message: Mapping[str, Any]) -> list[bytes]:
        self._chunks.id = f"chatcmpl-{message.get('id', '')}"
        self._usage = dict(message.get("usage") or {})
        return [self._chunks.delta({"role": "assistant", "content": ""})]

    def _block_start(self, index: Any, block: Mapping[str, Any]) -> list[bytes]:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            return [self._chunks.delta({"content": block["text"]})]
        if kind == "tool_use":
            call = self._tool_calls[index] = len(self._tool_calls)
            function = {"name": block.get("name"), "arguments": ""}
            delta = {"index": call, "id": block.get("id"), "type": "function", "function": function}
            return [self._chunks.delta({"tool_calls": [delta]})]
        if kind in SIGNED_BLOCKS:
            self._thinking[index] = dict(block)
        return []

    def _block_delta(self, index: Any, delta: Mapping[str, Any]) -> list[bytes]:
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            return [self._chunks.delta({"content": delta["text"]})]
        if kind == "input_json_delta" and delta.get("partial_json") and index in self._tool_calls:
            arguments = {"arguments": delta["partial_json"]}
            call = {"index": self._tool_calls[index], "function": arguments}
            return [self._chunks.delta({"tool_calls": [call]})]
        thinking = self._thinking.get(index)
        if thinking is None:
            return []
        if kind == "signature_delta":
            thinking["signature"] = delta.get("signature")
        elif kind == "thinking_delta" and delta.get("thinking"):
            thinking["thinking"] = thinking.get("thinking", "") + delta["thinking"]
            return [self._chunks.delta({"reasoning_content": delta["thinking"]})]
        return []

    def _stop(self) -> list[bytes]:
        self.finished = True
        delta = {"thinking_blocks": list(self._thinking.values())} if self._thinking else {}
        out = [self._chunks.delta(delta, _finish_reason(self._stop_reason))]
        if self._include_usage:
            out.append(self._chunks.chunk([], usage=_chat_usage(self._usage)))
        out.append(sse.DONE)
        return out
