"""A Responses API client talking to a model reached through Chat Completions: the
request becomes a chat request; the answer and its stream come back as Responses ones.

Used on its own for an OpenAI-compatible provider without the Responses API, and composed
with :mod:`.chat_to_messages` for an Anthropic one (Responses → chat → Messages, and the
answer back through both). Errors need no translation: a chat error body is OpenAI's
``{"error": {...}}``, which the Responses API shares.

Request (:func:`request`), field by field:

* translated: ``model`` (copied); ``instructions`` → a first ``system`` message;
  ``input`` (below); ``max_output_tokens`` → ``max_tokens`` (the name every
  OpenAI-compatible server takes); ``temperature``, ``top_p``, ``parallel_tool_calls``,
  ``user``, ``safety_identifier``, ``service_tier`` and ``prompt_cache_key``, copied;
  ``stream``, copied, with ``stream_options.include_usage`` when true (the Responses
  answer reports usage); ``reasoning.effort`` → ``reasoning_effort``; ``text.format`` →
  ``response_format`` (``text`` is the default and is left out; ``json_object`` as is;
  ``json_schema``'s ``name``, ``schema``, and ``strict`` and ``description`` when given,
  nested under ``json_schema``); ``text.verbosity`` → ``verbosity``; ``tools`` and
  ``tool_choice`` (below).
* dropped, as they change nothing about the answer: ``store`` (hookgate answers
  statelessly: nothing is stored, and the answer says ``store: false``), ``metadata``
  (OpenAI's dashboard tags; echoed in the answer), ``include`` (what a reasoning item
  carries is fixed here: its summary and, for hookgate's thinking, ``encrypted_content``),
  ``stream_options`` (its obfuscation is OpenAI's), ``truncation`` (nothing is truncated:
  the answer says ``disabled``), ``reasoning.summary`` and ``reasoning.generate_summary``
  (a chat model's reasoning text, when it sends any, is the summary),
  ``prompt_cache_retention`` (OpenAI's cache lifetime), ``background: false`` and
  ``top_logprobs: 0``.
* refused with :class:`~hookgate.errors.InvalidRequest` (code ``unsupported_parameter``,
  ``param`` naming the field), when set to anything but their neutral value:
  ``previous_response_id`` and ``conversation`` (hookgate keeps no stored responses for a
  translated provider: send the whole conversation in ``input``), ``background: true``,
  ``prompt`` (a stored prompt template), ``max_tool_calls``, ``top_logprobs`` > 0, and
  ``reasoning`` or ``text`` keys other than the ones above. Any other field (not null) is
  refused as unknown (code ``unknown_parameter``).

Input: a string is one user message. Items, in order:

* ``message`` items (``type`` may be absent): ``user`` stays ``user``; ``system`` and
  ``developer`` become ``system`` (the role every compatible server takes). A string
  content stays a string; ``input_text`` and ``output_text`` parts become text parts; in
  a user message, ``input_image`` (by ``image_url``) an ``image_url`` part (``detail``
  kept) and ``input_file`` (by ``file_data`` or ``file_id``) a ``file`` part; an
  assistant's ``refusal`` parts its ``refusal``. An item's ``id``, ``status`` and
  ``phase`` are dropped.
* ``function_call`` items become ``tool_calls`` of an assistant message. Consecutive
  assistant messages, function calls and reasoning items are one assistant turn, so they
  become ONE chat assistant message (its text, then its tool calls), as chat wants.
* ``function_call_output`` items become ``tool`` messages (a string output as is,
  ``input_text`` parts as text parts: a tool message takes text only).
* ``reasoning`` items: one whose ``encrypted_content`` hookgate wrote
  (:data:`THINKING_PREFIX`) holds Anthropic thinking blocks; with ``keep_thinking`` they
  become the ``thinking_blocks`` of the assistant message of their turn (the turn they
  are in, or the one that follows them; none when a user, system or tool message comes
  first), which :mod:`.chat_to_messages` sends back byte for byte. Any other reasoning
  item (OpenAI's own encrypted reasoning, a bare summary), and every one without
  ``keep_thinking``, is dropped: a chat model takes no earlier reasoning.
* refused: ``item_reference`` (it points to a stored item), and every other item type
  (hosted tool calls, ``custom_tool_call``, ``mcp_call``, ...), by name (code
  ``unsupported_value``, ``param`` ``input[i].type``); images by ``file_id`` or files by
  ``file_url`` (chat has no such references); other content parts.

Tools: ``function`` tools become chat function tools (``description``, ``parameters``
and ``strict`` when given); other tool types (``web_search``, ``file_search``, ``mcp``,
``computer_use_preview``, ``code_interpreter``, ``image_generation``, ``custom``, ...) are
refused. ``tool_choice``: ``auto``, ``none`` and ``required`` as is; a function → chat's
named function; ``allowed_tools`` of functions → chat's ``allowed_tools``; hosted tool
choices are refused.

Answers (:func:`response`, :class:`StreamTranslator`): a ``response`` object whose
``output`` is, in order, a ``reasoning`` item (when the chat message has
``reasoning_content``, its summary, or ``thinking_blocks``, written into
``encrypted_content`` so the client sends them back), a ``message`` item (text and
refusal; none without either), and a ``function_call`` item per tool call. ``status`` is
``incomplete`` for a ``length`` or ``content_filter`` finish, else ``completed``. The
request's settings are echoed as OpenAI echoes them (:func:`_echo`); usage: see
:func:`_usage`.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from hookgate.errors import InvalidRequest, UpstreamBadResponse
from hookgate.wire import sse
from hookgate.wire.prompts import SIGNED_BLOCKS
from hookgate.wire.translate.chat_chunks import read_chunk
from hookgate.wire.translate.fields import count, mapping, object_field

THINKING_PREFIX = "hookgate.thinking."
"""How a reasoning item's ``encrypted_content`` that hookgate wrote begins. What follows
is the URL-safe base64 of the JSON of the answer's Anthropic ``thinking`` and
``redacted_thinking`` blocks, signatures included (see :func:`_encode_thinking`)."""

_TRANSLATED = frozenset(
    {"model", "instructions", "input", "max_output_tokens", "temperature", "top_p",
     "parallel_tool_calls", "user", "safety_identifier", "service_tier", "prompt_cache_key",
     "stream", "reasoning", "text", "tools", "tool_choice"}
)  # fmt: skip

_COPIED = ("temperature", "top_p", "parallel_tool_calls", "user", "safety_identifier",
           "service_tier", "prompt_cache_key", "stream")  # fmt: skip

_DROPPED = frozenset(
    {"store", "metadata", "include", "stream_options", "truncation", "prompt_cache_retention"}
)

_NO_STORE = (
    "hookgate keeps no stored responses for a translated provider: send the whole "
    "conversation in 'input'"
)

_REFUSED: Mapping[str, str] = {
    "previous_response_id": _NO_STORE,
    "conversation": _NO_STORE,
    "background": "a translated call is answered while the client waits",
    "prompt": "stored prompt templates are OpenAI's: send the prompt in 'instructions'",
    "max_tool_calls": "Chat Completions has no limit on tool calls",
    "top_logprobs": "hookgate does not translate log probabilities",
}
"""Fields refused when set to a value that has an effect, and why."""

_CHAT_ROLES = {"system": "system", "developer": "system", "user": "user"}
"""The chat role of each non-assistant message role."""

_TEXT_PARTS = frozenset({"input_text", "output_text"})

_INCOMPLETE: Mapping[str, str] = {"length": "max_output_tokens", "content_filter": "content_filter"}
"""``incomplete_details.reason`` for each chat ``finish_reason`` that ends an answer early."""


def request(body: Mapping[str, Any], *, keep_thinking: bool) -> dict[str, Any]:
    """The chat-completions request for a Responses ``body`` (see the module docstring).

    ``keep_thinking`` sends the thinking blocks of hookgate's reasoning items on as the
    assistant messages' ``thinking_blocks`` (for an Anthropic model, through
    :mod:`.chat_to_messages`); without it they are dropped. Raises
    :class:`InvalidRequest` for a field, item or content that cannot be translated.
    """
    _check_fields(body)
    out: dict[str, Any] = {"model": body.get("model"), "messages": _messages(body, keep_thinking)}
    if body.get("max_output_tokens") is not None:
        out["max_tokens"] = body["max_output_tokens"]
    for name in _COPIED:
        if body.get(name) is not None:
            out[name] = body[name]
    if body.get("stream"):
        out["stream_options"] = {"include_usage": True}
    _translate_reasoning(_object(body, "reasoning"), out)
    _translate_text(_object(body, "text"), out)
    tools = body.get("tools") or []
    if tools:
        out["tools"] = [_tool(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    if body.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
    return out


def _check_fields(body: Mapping[str, Any]) -> None:
    for name, value in body.items():
        if name in _TRANSLATED or name in _DROPPED or value is None:
            continue
        if name not in _REFUSED:
            raise InvalidRequest(
                f"unknown parameter '{name}': hookgate cannot translate it from the Responses "
                "API to Chat Completions",
                param=name,
                code="unknown_parameter",
            )
        if not _is_neutral(name, value):
            _refuse_field(name, _REFUSED[name])


def _is_neutral(name: str, value: Any) -> bool:
    """Whether a refusable field's value asks for nothing (its default, or no effect)."""
    if value is False or value == {} or value == []:
        return True
    return name == "top_logprobs" and bool(value == 0)


def _refuse_field(name: str, why: str) -> None:
    raise InvalidRequest(
        f"'{name}' cannot be translated from the Responses API: {why}",
        param=name,
        code="unsupported_parameter",
    )


def _object(body: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return object_field(body, name, f"'{name}' must be an object")


def _check_keys(config: Mapping[str, Any], name: str, known: frozenset[str]) -> None:
    for key, value in config.items():
        if key not in known and value is not None:
            _refuse_field(f"{name}.{key}", "Chat Completions has no such setting")


def _translate_reasoning(reasoning: Mapping[str, Any], out: dict[str, Any]) -> None:
    _check_keys(reasoning, "reasoning", frozenset({"effort", "summary", "generate_summary"}))
    if reasoning.get("effort") is not None:
        out["reasoning_effort"] = reasoning["effort"]


def _translate_text(text: Mapping[str, Any], out: dict[str, Any]) -> None:
    _check_keys(text, "text", frozenset({"format", "verbosity"}))
    if text.get("verbosity") is not None:
        out["verbosity"] = text["verbosity"]
    fmt = _object(text, "format")
    kind = fmt.get("type")
    if kind == "json_object":
        out["response_format"] = {"type": "json_object"}
    elif kind == "json_schema":
        schema = {"name": fmt.get("name"), "schema": fmt.get("schema")}
        schema |= {k: fmt[k] for k in ("strict", "description") if fmt.get(k) is not None}
        out["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif kind not in (None, "text"):
        raise InvalidRequest(
            f"'text.format' {kind!r} cannot be translated to Chat Completions (only text, "
            "json_object and json_schema)",
            param="text.format.type",
            code="unsupported_value",
        )


# -- input ------------------------------------------------------------------------------


def _messages(body: Mapping[str, Any], keep_thinking: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise InvalidRequest("'instructions' must be a string", param="instructions")
        out.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    if items is None:
        return out
    if not isinstance(items, list):
        raise InvalidRequest("'input' must be a string or an array of items", param="input")
    turns = _Turns(keep_thinking)
    for i, item in enumerate(items):
        turns.add(item, f"input[{i}]")
    return out + turns.messages


class _Turns:
    """Chat messages built from Responses input items, one item at a time.

    The assistant items of one turn (messages, function calls, reasoning) go into one
    open assistant message; any other item closes it. Thinking blocks from reasoning items
    wait in :attr:`_thinking` for the assistant message of their turn.
    """

    def __init__(self, keep_thinking: bool) -> None:
        self.messages: list[dict[str, Any]] = []
        self._keep_thinking = keep_thinking
        self._assistant: dict[str, Any] | None = None
        self._thinking: list[dict[str, Any]] = []

    def add(self, item: Any, where: str) -> None:
        if not isinstance(item, Mapping):
            raise InvalidRequest(f"{where} must be an object", param=where)
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "assistant":
            self._assistant_content(item.get("content"), f"{where}.content")
        elif kind == "message":
            self._close()
            self.messages.append(_message(item, where))
        elif kind == "function_call":
            call = {
                "id": _string(item, "call_id", where),
                "type": "function",
                "function": {
                    "name": _string(item, "name", where),
                    "arguments": _string(item, "arguments", where),
                },
            }
            self._open().setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            self._close()
            self.messages.append(_tool_message(item, where))
        elif kind == "reasoning":
            self._reasoning(item, where)
        else:
            raise _refuse_item(kind, where)

    def _open(self) -> dict[str, Any]:
        """The assistant message of the current turn (opened when none is), holding the
        turn's thinking blocks."""
        if self._assistant is None:
            self._assistant = {"role": "assistant", "content": None}
            self.messages.append(self._assistant)
        if self._thinking:
            self._assistant.setdefault("thinking_blocks", []).extend(self._thinking)
            self._thinking = []
        return self._assistant

    def _close(self) -> None:
        """End the assistant turn; thinking waiting for it is dropped."""
        self._assistant = None
        self._thinking = []

    def _assistant_content(self, content: Any, where: str) -> None:
        message = self._open()
        if isinstance(content, str):
            message["content"] = _joined(message["content"], content)
            return
        for j, part in enumerate(_parts(content, where)):
            kind = part.get("type")
            if kind in _TEXT_PARTS:
                message["content"] = _joined(message["content"], [_text_part(part)])
            elif kind == "refusal":
                message["refusal"] = message.get("refusal", "") + str(part.get("refusal", ""))
            else:
                raise _refuse_part(kind, "an assistant", f"{where}[{j}]")

    def _reasoning(self, item: Mapping[str, Any], where: str) -> None:
        encrypted = item.get("encrypted_content")
        if not (self._keep_thinking and isinstance(encrypted, str)):
            return
        if encrypted.startswith(THINKING_PREFIX):
            self._thinking += _decode_thinking(encrypted, f"{where}.encrypted_content")
            if self._assistant is not None:  # its turn's message is open: it takes them now
                self._open()


def _string(item: Mapping[str, Any], name: str, where: str) -> str:
    value = item.get(name)
    if not isinstance(value, str):
        raise InvalidRequest(f"{where}.{name} must be a string", param=f"{where}.{name}")
    return value


def _refuse_item(kind: Any, where: str) -> InvalidRequest:
    if kind == "item_reference":
        why = "it points to a stored item, and hookgate keeps none for a translated provider"
    else:
        why = "Chat Completions has no such item"
    return InvalidRequest(
        f"{where}: an item of type {kind!r} cannot be translated to Chat Completions: {why}",
        param=f"{where}.type",
        code="unsupported_value",
    )


def _refuse_part(kind: Any, message: str, where: str, why: str = "") -> InvalidRequest:
    return InvalidRequest(
        f"{where}: a content part of type {kind!r} cannot be translated in {message} message{why}",
        param=f"{where}.type",
        code="unsupported_value",
    )


def _parts(content: Any, where: str) -> list[Mapping[str, Any]]:
    if isinstance(content, list) and all(isinstance(p, Mapping) for p in content):
        return content
    raise InvalidRequest(f"{where} must be a string or an array of content parts", param=where)


def _text_part(part: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "text", "text": part.get("text", "")}


def _joined(content: Any, more: str | list[dict[str, Any]]) -> Any:
    """An assistant message's content with ``more`` added: as given when it is the first,
    else both as text parts."""
    if content is None:
        return more
    return _as_parts(content) + _as_parts(more)


def _as_parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _message(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A user or system chat message for a message item of that role."""
    role = item.get("role")
    if role not in _CHAT_ROLES:
        raise InvalidRequest(
            f"{where}: a message of role {role!r} cannot be translated to Chat Completions",
            param=f"{where}.role",
            code="unsupported_value",
        )
    content = item.get("content")
    if isinstance(content, str):
        return {"role": _CHAT_ROLES[role], "content": content}
    where = f"{where}.content"
    parts = []
    for j, part in enumerate(_parts(content, where)):
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            parts.append(_text_part(part))
        elif role == "user" and kind == "input_image":
            parts.append(_image_part(part, f"{where}[{j}]"))
        elif role == "user" and kind == "input_file":
            parts.append(_file_part(part, f"{where}[{j}]"))
        else:
            raise _refuse_part(kind, f"a {role}", f"{where}[{j}]")
    return {"role": _CHAT_ROLES[role], "content": parts}


def _image_part(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    url = part.get("image_url")
    if not isinstance(url, str):
        why = ": chat takes images by URL, not by file_id"
        raise _refuse_part("input_image", "a user", where, why)
    image = {"url": url}
    if part.get("detail") is not None:
        image["detail"] = part["detail"]
    return {"type": "image_url", "image_url": image}


def _file_part(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    file = {k: part[k] for k in ("file_data", "file_id", "filename") if part.get(k) is not None}
    if part.get("file_url") is not None or not ("file_data" in file or "file_id" in file):
        why = ": chat takes a file's data or its file_id, not a file_url"
        raise _refuse_part("input_file", "a user", where, why)
    return {"type": "file", "file": file}


def _tool_message(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    output = item.get("output")
    content: str | list[dict[str, Any]]
    if isinstance(output, str):
        content = output
    else:
        content = []
        for j, part in enumerate(_parts(output, f"{where}.output")):
            if part.get("type") != "input_text":
                why = " (a chat tool message takes text only)"
                raise _refuse_part(part.get("type"), "a tool", f"{where}.output[{j}]", why)
            content.append(_text_part(part))
    return {"role": "tool", "tool_call_id": _string(item, "call_id", where), "content": content}


# -- thinking --------------------------------------------------------------------------


def _encode_thinking(blocks: list[Any]) -> str:
    """``encrypted_content`` for Anthropic thinking blocks: :data:`THINKING_PREFIX`, then
    the URL-safe base64 of their JSON (kept byte for byte: their signatures cover them)."""
    return THINKING_PREFIX + base64.urlsafe_b64encode(orjson.dumps(blocks)).decode()


def _decode_thinking(value: str, where: str) -> list[dict[str, Any]]:
    """The thinking blocks :func:`_encode_thinking` wrote into ``value``; InvalidRequest
    when ``value`` holds no such blocks."""
    try:
        blocks = orjson.loads(base64.urlsafe_b64decode(value.removeprefix(THINKING_PREFIX)))
    except ValueError:  # bad base64 (binascii.Error) or bad JSON (orjson.JSONDecodeError)
        blocks = None
    if not (
        isinstance(blocks, list)
        and blocks
        and all(isinstance(b, dict) and b.get("type") in SIGNED_BLOCKS for b in blocks)
    ):
        raise InvalidRequest(
            f"{where} begins with '{THINKING_PREFIX}' but does not hold the thinking "
            "blocks hookgate wrote: send it back as you received it",
            param=where,
        )
    return blocks


# -- tools -----------------------------------------------------------------------------


def _tool(tool: Any, where: str) -> dict[str, Any]:
    kind = tool.get("type") if isinstance(tool, Mapping) else None
    if not isinstance(tool, Mapping) or kind != "function":
        raise InvalidRequest(
            f"{where}: a tool of type {kind!r} cannot be translated to Chat Completions (only "
            "function tools)",
            param=f"{where}.type",
            code="unsupported_value",
        )
    function = {"name": tool.get("name")}
    function |= {
        k: tool[k] for k in ("description", "parameters", "strict") if tool.get(k) is not None
    }
    return {"type": "function", "function": function}


def _named(choice: Any, where: str) -> dict[str, Any]:
    """Chat's named function for a Responses ``{"type": "function", "name"}``."""
    kind = choice.get("type") if isinstance(choice, Mapping) else choice
    if kind != "function":
        raise InvalidRequest(
            f"'{where}' {kind!r} cannot be translated to Chat Completions (only 'auto', "
            "'none', 'required' and function tools)",
            param=where,
            code="unsupported_value",
        )
    return {"type": "function", "function": {"name": choice.get("name")}}


def _tool_choice(choice: Any) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if not (isinstance(choice, Mapping) and choice.get("type") == "allowed_tools"):
        return _named(choice, "tool_choice")
    tools = choice.get("tools") or []
    allowed = [_named(tool, f"tool_choice.tools[{j}]") for j, tool in enumerate(tools)]
    return {
        "type": "allowed_tools",
        "allowed_tools": {"mode": choice.get("mode"), "tools": allowed},
    }


# -- answers ---------------------------------------------------------------------------


def response(body: Mapping[str, Any], *, request: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses ``response`` for a ``chat.completion`` answer to ``request`` (the
    client's Responses request, whose settings the answer echoes). Raises
    :class:`UpstreamBadResponse` when the answer has no choice with a message."""
    choices = body.get("choices")
    if not (
        isinstance(choices, list)
        and choices
        and isinstance(choices[0], Mapping)
        and isinstance(choices[0].get("message"), Mapping)
    ):
        raise UpstreamBadResponse("the chat completion has no choice with a message")
    message = choices[0]["message"]
    head = _head(body)
    base = head["base"]
    text, refusal = _text(message, "content"), _text(message, "refusal")
    summary, thinking = _text(message, "reasoning_content"), message.get("thinking_blocks")
    output = []
    if summary or thinking:
        output.append(_reasoning_item(base, summary, thinking))
    if text or refusal:
        output.append(_message_item(base, [("output_text", text), ("refusal", refusal)]))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        output.append(
            _function_call_item(call.get("id"), function.get("name"), function.get("arguments"))
        )
    return _response_object(
        request, head, choices[0].get("finish_reason"), output, _usage(body.get("usage"))
    )


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    return value if isinstance(value, str) else ""


def _head(chunk: Mapping[str, Any]) -> dict[str, Any]:
    """What every response object of an answer shares, from the chat completion (or its
    first chunk): ``base`` (the chat id without ``chatcmpl-``, which item ids extend),
    ``created`` (now when absent) and ``model``."""
    created = chunk.get("created")
    return {
        "base": str(chunk.get("id") or "").removeprefix("chatcmpl-"),
        "created": created if isinstance(created, int) else int(time.time()),
        "model": chunk.get("model"),
    }


def _reasoning_item(base: str, summary: str, thinking: Any) -> dict[str, Any]:
    """A ``reasoning`` item: the summary text, and the thinking blocks (when there are
    any) as :func:`_encode_thinking`'s ``encrypted_content``."""
    return {
        "type": "reasoning",
        "id": f"rs_{base}",
        "summary": [_summary_part(summary)] if summary else [],
        "encrypted_content": _encode_thinking(thinking) if thinking else None,
    }


def _summary_part(text: str) -> dict[str, Any]:
    return {"type": "summary_text", "text": text}


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _refusal(refusal: str) -> dict[str, Any]:
    return {"type": "refusal", "refusal": refusal}


_CONTENT_PARTS = {"output_text": _output_text, "refusal": _refusal}
"""The content part of each kind a message item holds, for its text."""


def _message_item(base: str, texts: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """A ``message`` item with a content part per ``(kind, text)`` whose text is not empty,
    in order (``kind`` is ``output_text`` or ``refusal``)."""
    content = [_CONTENT_PARTS[kind](text) for kind, text in texts if text]
    return {
        "type": "message",
        "id": f"msg_{base}",
        "status": "completed",
        "role": "assistant",
        "content": content,
    }


def _function_call_item(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def _response_object(
    request: Mapping[str, Any],
    head: Mapping[str, Any],
    finish_reason: Any,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    *,
    in_progress: bool = False,
) -> dict[str, Any]:
    """The ``response`` object; its status is ``in_progress`` when ``in_progress``, else
    ``incomplete`` for a ``finish_reason`` in :data:`_INCOMPLETE`, else ``completed``."""
    reason = _INCOMPLETE.get(finish_reason) if isinstance(finish_reason, str) else None
    status = "in_progress" if in_progress else "incomplete" if reason else "completed"
    return {
        "id": f"resp_{head['base']}",
        "object": "response",
        "created_at": head["created"],
        "status": status,
        "error": None,
        "incomplete_details": {"reason": reason} if reason and not in_progress else None,
        "model": head["model"],
        "output": output,
        "usage": usage,
        **_echo(request),
    }


def _echo(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request's settings as a response reports them, with OpenAI's defaults when
    absent. ``store`` is false and ``truncation`` disabled whatever was asked: nothing is
    stored, and nothing truncated."""

    def given(name: str, default: Any) -> Any:
        value = request.get(name)
        return default if value is None else value

    return {
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "metadata": given("metadata", {}),
        "parallel_tool_calls": given("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": request.get("reasoning"),
        "store": False,
        "temperature": request.get("temperature"),
        "text": given("text", {"format": {"type": "text"}}),
        "tool_choice": given("tool_choice", "auto"),
        "tools": given("tools", []),
        "top_p": request.get("top_p"),
        "truncation": "disabled",
        "user": request.get("user"),
    }


def _usage(usage: Any) -> dict[str, Any] | None:
    """The Responses ``usage`` for a chat one (None for none): ``prompt_tokens`` →
    ``input_tokens``, of which ``cached_tokens`` were read from the prompt cache and
    ``cache_write_tokens`` written to it (what hookgate prices cache writes by);
    ``completion_tokens`` → ``output_tokens``, of which ``reasoning_tokens`` reasoned."""
    if not isinstance(usage, Mapping):
        return None
    prompt = mapping(usage.get("prompt_tokens_details"))
    completion = mapping(usage.get("completion_tokens_details"))
    input_tokens, output_tokens = count(usage, "prompt_tokens"), count(usage, "completion_tokens")
    total = usage.get("total_tokens")
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {
            "cached_tokens": count(prompt, "cached_tokens"),
            "cache_write_tokens": count(prompt, "cache_write_tokens"),
        },
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": count(completion, "reasoning_tokens")},
        "total_tokens": total if isinstance(total, int) else input_tokens + output_tokens,
    }


# -- streams ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    """An output item of a stream, open until the stream ends.

    ``texts`` holds what its deltas added, by kind, in the order each kind first came: a
    message's ``output_text`` and ``refusal`` (their order is their content indexes, and
    the order of the message's content), a
    reasoning item's ``summary_text``, a function call's ``arguments``."""

    kind: str
    index: int
    id: str
    texts: dict[str, str] = field(default_factory=dict)
    call_id: Any = None
    name: Any = None


class StreamTranslator:
    """Translate a chat-completions stream into Responses events, chunk by chunk.

    :meth:`feed` takes one chat SSE block and returns the Responses event blocks (``event:
    <type>``, ``sequence_number`` counting from 0) it makes: ``response.created`` and
    ``response.in_progress`` at the first chunk; an output item, announced by
    ``response.output_item.added`` when its first delta comes, per kind of delta: a
    ``reasoning`` item for ``reasoning_content`` (its summary part and text deltas), a
    ``message`` item for ``content`` and ``refusal`` (a content part each, and their
    deltas), a ``function_call`` item per tool call index (its argument deltas).
    ``thinking_blocks`` (which :mod:`.chat_to_messages` sends in the finishing chunk),
    ``finish_reason`` and ``usage`` are kept. At ``[DONE]`` every item is closed, in output
    order (its ``.done`` events, then ``response.output_item.done`` with the whole item),
    then ``response.completed`` (or ``response.incomplete``) carries the response object
    :func:`response` would build for the same answer.

    Items stay open until the end on purpose: thinking signatures come only with the
    finish, so a reasoning item is complete only then. Thinking without any text (only
    ``redacted_thinking``) opens its reasoning item at the end, after the others.

    An error chunk (``{"error": {...}}``) becomes an ``error`` event with that data, as
    hookgate's own mid-stream errors are sent. ``[DONE]`` and an error set
    :attr:`finished`; blocks fed after that are ignored. Blocks without data and chunks
    without ``choices`` yield nothing.
    """

    def __init__(self, *, request: Mapping[str, Any]) -> None:
        self.finished = False
        self._request = request
        self._sequence = 0
        self._head: dict[str, Any] | None = None
        self._items: list[_Item] = []
        self._calls: dict[Any, _Item] = {}  # chat tool call index → its item
        self._thinking: list[Any] = []
        self._finish_reason: Any = None
        self._usage: Any = None

    def feed(self, block: bytes) -> list[bytes]:
        """The Responses event blocks for one chat SSE block. Raises
        :class:`UpstreamBadResponse` for a chunk that is not a JSON object."""
        if self.finished:
            return []
        if sse.is_done(block):
            return self._finish()
        chunk = read_chunk(block)
        if chunk is None:
            return []
        if isinstance(chunk.get("error"), Mapping):
            self.finished = True
            return [sse.encode(chunk, event="error")]
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return []
        out = self._start(chunk)
        if choices and isinstance(choices[0], Mapping):
            out += self._choice(choices[0])
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = chunk["usage"]
        return out

    def _event(self, kind: str, **data: Any) -> bytes:
        block = sse.encode({"type": kind, "sequence_number": self._sequence, **data}, event=kind)
        self._sequence += 1
        return block

    def _response(
        self, output: list[dict[str, Any]], *, in_progress: bool = False
    ) -> dict[str, Any]:
        assert self._head is not None
        usage = None if in_progress else _usage(self._usage)
        return _response_object(
            self._request, self._head, self._finish_reason, output, usage, in_progress=in_progress
        )

    def _start(self, chunk: Mapping[str, Any]) -> list[bytes]:
        if self._head is not None:
            return []
        self._head = _head(chunk)
        response = self._response([], in_progress=True)
        return [
            self._event("response.created", response=response),
            self._event("response.in_progress", response=response),
        ]

    def _choice(self, choice: Mapping[str, Any]) -> list[bytes]:
        delta = mapping(choice.get("delta"))
        out: list[bytes] = []
        if _text(delta, "reasoning_content"):
            out += self._summary_delta(delta["reasoning_content"])
        for kind, name in (("output_text", "content"), ("refusal", "refusal")):
            if _text(delta, name):
                out += self._content_delta(kind, delta[name])
        for call in delta.get("tool_calls") or []:
            if isinstance(call, Mapping):
                out += self._arguments_delta(call)
        if isinstance(delta.get("thinking_blocks"), list):
            self._thinking += delta["thinking_blocks"]
        if choice.get("finish_reason"):
            self._finish_reason = choice["finish_reason"]
        return out

    def _open(self, added: dict[str, Any], **call: Any) -> tuple[_Item, list[bytes]]:
        """A new item, announced as ``added`` (at the next output index)."""
        item = _Item(added["type"], len(self._items), added["id"], **call)
        self._items.append(item)
        return item, [
            self._event("response.output_item.added", output_index=item.index, item=added)
        ]

    def _single(self, kind: str) -> tuple[_Item, list[bytes]]:
        """The stream's reasoning or message item, opened when it is not yet."""
        item = next((i for i in self._items if i.kind == kind), None)
        if item is not None:
            return item, []
        assert self._head is not None
        base = self._head["base"]
        if kind == "reasoning":
            return self._open(_reasoning_item(base, "", None))
        return self._open({**_message_item(base, []), "status": "in_progress"})

    def _summary_delta(self, text: str) -> list[bytes]:
        item, out = self._single("reasoning")
        at = {"item_id": item.id, "output_index": item.index, "summary_index": 0}
        if "summary_text" not in item.texts:
            item.texts["summary_text"] = ""
            out.append(
                self._event("response.reasoning_summary_part.added", **at, part=_summary_part(""))
            )
        item.texts["summary_text"] += text
        out.append(self._event("response.reasoning_summary_text.delta", **at, delta=text))
        return out

    def _content_delta(self, kind: str, text: str) -> list[bytes]:
        """A delta of the message's ``output_text`` or ``refusal`` part (its event is named
        ``response.<kind>.delta``)."""
        item, out = self._single("message")
        new = kind not in item.texts
        if new:
            item.texts[kind] = ""
        at = {
            "item_id": item.id,
            "output_index": item.index,
            "content_index": _position(item, kind),
        }
        if new:
            part = _CONTENT_PARTS[kind]("")
            out.append(self._event("response.content_part.added", **at, part=part))
        item.texts[kind] += text
        logprobs: dict[str, Any] = {"logprobs": []} if kind == "output_text" else {}
        out.append(self._event(f"response.{kind}.delta", **at, delta=text, **logprobs))
        return out

    def _arguments_delta(self, call: Mapping[str, Any]) -> list[bytes]:
        index = call.get("index", 0)
        function = mapping(call.get("function"))
        out: list[bytes] = []
        item = self._calls.get(index)
        if item is None:
            call_id = call.get("id") or f"call_{index}"
            added = {
                **_function_call_item(call_id, function.get("name"), ""),
                "status": "in_progress",
            }
            item, out = self._open(added, call_id=call_id, name=function.get("name"))
            item.texts["arguments"] = ""
            self._calls[index] = item
        if _text(function, "arguments"):
            item.texts["arguments"] += function["arguments"]
            at = {"item_id": item.id, "output_index": item.index}
            out.append(
                self._event(
                    "response.function_call_arguments.delta", **at, delta=function["arguments"]
                )
            )
        return out

    def _finish(self) -> list[bytes]:
        self.finished = True
        out = self._start({})
        if self._thinking:
            out += self._single("reasoning")[1]
        output = [self._final(item) for item in self._items]
        for item, final in zip(self._items, output, strict=True):
            out += self._close(item, final)
        response = self._response(output)
        return [*out, self._event(f"response.{response['status']}", response=response)]

    def _final(self, item: _Item) -> dict[str, Any]:
        """The item as :func:`response` builds it."""
        assert self._head is not None
        texts, base = item.texts, self._head["base"]
        if item.kind == "reasoning":
            return _reasoning_item(base, texts.get("summary_text", ""), self._thinking)
        if item.kind == "message":
            return _message_item(base, texts.items())
        return _function_call_item(item.call_id, item.name, texts["arguments"])

    def _close(self, item: _Item, final: dict[str, Any]) -> list[bytes]:
        """The events that end ``item``: each part's ``.done`` events, then
        ``response.output_item.done`` with ``final``."""
        where = {"item_id": item.id, "output_index": item.index}
        out: list[bytes] = []
        for kind, text in item.texts.items():
            if kind == "summary_text":
                at = {**where, "summary_index": 0}
                out.append(self._event("response.reasoning_summary_text.done", **at, text=text))
                out.append(
                    self._event(
                        "response.reasoning_summary_part.done", **at, part=_summary_part(text)
                    )
                )
            elif kind == "arguments":
                out.append(
                    self._event("response.function_call_arguments.done", **where, arguments=text)
                )
            else:
                at = {**where, "content_index": _position(item, kind)}
                part = _CONTENT_PARTS[kind](text)
                # output_text.done carries the text and logprobs, refusal.done the refusal
                done = {k: v for k, v in part.items() if k not in ("type", "annotations")}
                out.append(self._event(f"response.{kind}.done", **at, **done))
                out.append(self._event("response.content_part.done", **at, part=part))
        out.append(self._event("response.output_item.done", output_index=item.index, item=final))
        return out


def _position(item: _Item, kind: str) -> int:
    """The content index of a message's part of ``kind`` (the order kinds came in)."""
    return list(item.texts).index(kind)
