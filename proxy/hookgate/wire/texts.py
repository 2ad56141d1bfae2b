"""Where the model reads text in a request, and where it writes text in a response.

The one walker over the texts of every message shape a hook meets: chat ``messages``,
Responses ``input`` items and Anthropic Messages ``messages``. :func:`texts_of` reads
them; :func:`map_messages` rewrites them (both exported by :mod:`hookgate`).

:func:`map_messages` applies a function to every string the model will read in chat
``messages`` or Responses ``input`` items, whatever the role: string content and the text
of content-part arrays (and a file's name), refusals, tool-call arguments in the history,
custom tool inputs and an assistant's ``reasoning_content``; in Anthropic Messages, every
content block's prose (text, tool inputs and results, a text document's ``data``). A
Responses item that is not a
message (a function, MCP, search, code-interpreter, computer or shell call, its output, a
reasoning item) is mapped whole, every string but ids, names, enums, URLs and opaque
payloads (:data:`_NOT_PROSE`): an item type added to the API later is covered without a
change here. :func:`map_fields`
covers the rest of a request body (tool and schema descriptions, ``stop``, ``user``,
``prompt_cache_key``, ...). Left alone on purpose: texts whose meaning a placeholder would
change, the model reading them as rules rather than prose (a JSON schema ``pattern``, a
custom tool's grammar ``definition``). Tool-call arguments are JSON:
their string leaves are mapped one by one and the JSON is re-encoded, so an entity is
always a decoded value and the result stays valid JSON. Message ``name`` fields are left
alone (the API allows only ``[a-zA-Z0-9_-]`` there). Anthropic ``thinking`` and
``redacted_thinking`` blocks are never touched, in requests or responses: their
``signature`` covers their exact text, and the model wrote them from what it was sent.

:func:`map_response` applies a function to every string of a response body, telling it
whether the string is JSON (an ``arguments`` field).

Both return their argument itself when nothing changed, so a caller can tell by identity
that no text was touched (and an upstream answer keeps its bytes). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from hookgate.wire.prompts import SIGNED_BLOCKS

TextFn = Callable[[str], str]
"""Maps one text; must return the same object when it changes nothing."""

_NOT_PROSE = frozenset({
    "type", "id", "call_id", "status", "role", "name", "approval_request_id", "server_label",
    "file_id", "container_id", "vector_store_ids", "url", "server_url", "image_url", "file_url",
    "file_data", "data", "encrypted_content", "headers", "pattern", "format",
    "tool_use_id", "signature", "media_type", "cache_control",
})  # fmt: skip
"""Keys whose values are never prose in a history item or a tool: ids, enums, names, URLs,
patterns, credentials and opaque payloads (base64 images, encrypted reasoning)."""
_OPAQUE_ITEMS = frozenset({"image_generation_call", "item_reference"})
"""History items with no prose: a base64 image, a reference by id."""
_JSON_FIELDS = frozenset({"arguments"})


def map_messages(messages: Sequence[Any], fn: TextFn) -> Sequence[Any]:
    """``messages`` with ``fn`` applied to every text the model reads (see module doc)."""
    out: list[Any] | None = None
    for i, message in enumerate(messages):
        mapped = _entry(message, fn)
        if mapped is not message:
            if out is None:
                out = list(messages)
            out[i] = mapped
    return messages if out is None else out


def texts_of(messages: Sequence[Any]) -> list[str]:
    """Every text the model reads in ``messages`` (any of the three shapes), in order:
    exactly the strings :func:`map_messages` would hand its function."""
    found: list[str] = []

    def collect(text: str) -> str:
        found.append(text)
        return text

    map_messages(messages, collect)
    return found


def map_prompt(prompt: Any, fn: TextFn) -> Any:
    """A legacy completions ``prompt`` or embeddings ``input``: a string or list of strings.

    Token arrays (lists of integers) are returned unchanged.
    """
    if isinstance(prompt, str):
        return fn(prompt)
    if isinstance(prompt, list):
        mapped = [fn(p) if isinstance(p, str) else p for p in prompt]
        return prompt if all(a is b for a, b in zip(mapped, prompt, strict=True)) else mapped
    return prompt


def map_fields(body: Mapping[str, Any], fn: TextFn) -> Mapping[str, Any]:
    """``body`` with ``fn`` applied to the texts outside the messages that reach the
    upstream: what the model reads of tool definitions and output schemas (descriptions,
    titles, enums, examples), ``prediction``, ``stop``, a completions ``suffix``, a
    Responses ``prompt``'s variables and ``instructions`` given as items; and what
    identifies a person to the provider (``user``, ``safety_identifier``, ``metadata``
    values). Property names, tool names and ``type`` fields are left alone."""
    changes: dict[str, Any] = {}

    def put(field: str, mapped: Any) -> None:
        if mapped is not body[field]:
            changes[field] = mapped

    for field in ("tools", "functions"):
        if isinstance(body.get(field), list):
            put(field, _each(body[field], lambda tool: _tool(tool, fn)))
    if "system" in body:  # Anthropic Messages: a string or text blocks
        put("system", _content(body["system"], fn))
    for field in ("response_format", "text"):  # chat output schema; Responses text.format
        if isinstance(body.get(field), Mapping):
            put(field, _schema(body[field], fn))
    prediction = body.get("prediction")
    if isinstance(prediction, Mapping) and "content" in prediction:
        content = _content(prediction["content"], fn)
        put("prediction", prediction if content is prediction["content"] else
            {**prediction, "content": content})  # fmt: skip
    for field in ("stop", "suffix", "user", "safety_identifier", "prompt_cache_key"):
        if field in body:
            put(field, map_prompt(body[field], fn))
    if isinstance(body.get("metadata"), Mapping):
        put("metadata", map_leaves(body["metadata"], fn))
    prompt = body.get("prompt")  # a Responses prompt template (completions: a string)
    if isinstance(prompt, Mapping) and isinstance(prompt.get("variables"), Mapping):
        variables = map_leaves(prompt["variables"], fn)
        put("prompt", prompt if variables is prompt["variables"] else
            {**prompt, "variables": variables})  # fmt: skip
    if isinstance(body.get("instructions"), list):
        put("instructions", map_messages(body["instructions"], fn))
    if isinstance(body.get("web_search_options"), Mapping):  # chat: the user's location
        put("web_search_options", _prose(body["web_search_options"], fn))
    return {**body, **changes} if changes else body


_SCHEMA_TEXT = frozenset({"description", "title", "enum", "examples", "default", "const"})


def _schema(value: Any, fn: TextFn) -> Any:
    """The texts a model reads in a JSON schema (or a tool or format wrapping one)."""
    if isinstance(value, list):
        return _each(value, lambda item: _schema(item, fn))
    if not isinstance(value, Mapping):
        return value
    fields = {
        key: map_leaves(item, fn) if key in _SCHEMA_TEXT else _schema(item, fn)
        for key, item in value.items()
    }
    return value if all(fields[k] is value[k] for k in value) else fields


_TOOL_TEXT = frozenset({"description", "server_description"})  # server_description: MCP


def _tool(tool: Any, fn: TextFn) -> Any:
    """A chat, Responses or legacy tool definition: its descriptions and schema texts."""
    if not isinstance(tool, Mapping):
        return tool
    fields = {
        key: _schema(item, fn)
        if key in ("function", "custom", "parameters", "schema", "input_schema")
        else fn(item) if key in _TOOL_TEXT and isinstance(item, str)
        else _prose(item, fn) if key in ("filters", "user_location")  # file/web search
        else item
        for key, item in tool.items()
    }  # fmt: skip
    return tool if all(fields[k] is tool[k] for k in tool) else fields


def _each(items: list[Any], fn: Callable[[Any], Any]) -> list[Any]:
    mapped = [fn(item) for item in items]
    return items if all(a is b for a, b in zip(mapped, items, strict=True)) else mapped


def _entry(entry: Any, fn: TextFn) -> Any:
    """A chat message or a Responses input item. Items other than messages (tool calls
    and their outputs: function, custom, MCP, web and file search, code interpreter,
    computer, shell, ...) have every prose string mapped, so a new item type is covered
    the day it appears rather than leaking until someone lists its fields."""
    if not isinstance(entry, Mapping):
        return entry
    kind = entry.get("type")
    if kind in _OPAQUE_ITEMS:
        return entry
    if isinstance(kind, str) and kind != "message" and "role" not in entry:
        return _prose(entry, fn)
    return _message(entry, fn)


def _prose(value: Any, fn: TextFn) -> Any:
    """``fn`` on every string leaf except under :data:`_NOT_PROSE` keys; a JSON
    ``arguments`` string is mapped by value (it stays valid JSON), and an Anthropic
    ``tool_use`` block's ``input`` object in every leaf (its keys are the tool's
    parameters, which may be called ``name`` or ``url``)."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return _each(value, lambda item: _prose(item, fn))
    if not isinstance(value, Mapping) or _named(value, SIGNED_BLOCKS):
        return value
    fields = {
        key: item if key in _NOT_PROSE and not (key == "data" and _is_text_source(value))
        else _json_text(item, fn) if key == "arguments" and isinstance(item, str)
        else map_leaves(item, fn) if key == "input" and isinstance(item, Mapping)
        else _prose(item, fn)
        for key, item in value.items()
    }  # fmt: skip
    return value if all(fields[k] is value[k] for k in value) else fields


def _named(value: Mapping[str, Any], types: frozenset[str]) -> bool:
    kind = value.get("type")
    return isinstance(kind, str) and kind in types


def _is_text_source(value: Mapping[str, Any]) -> bool:
    """An Anthropic document's plain-text source, whose ``data`` is the document's text."""
    return value.get("type") == "text" and isinstance(value.get("data"), str)


def _message(message: Mapping[str, Any], fn: TextFn) -> Mapping[str, Any]:
    changes: dict[str, Any] = {}

    def put(field: str, mapped: Any) -> None:
        if mapped is not message[field]:
            changes[field] = mapped

    for field in ("content", "output", "summary"):  # messages; tool outputs; reasoning
        if field in message:
            put(field, _content(message[field], fn))
    # assistant refusal; custom tool call input; an assistant's reasoning sent back as
    # history (``reasoning_content``, ``reasoning``: providers with OpenAI-style reasoning)
    for field in ("refusal", "input", "reasoning_content", "reasoning"):
        if isinstance(message.get(field), str):
            put(field, fn(message[field]))
    if isinstance(message.get("arguments"), str):  # Responses function_call item
        put("arguments", _json_text(message["arguments"], fn))
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        mapped_calls = [_tool_call(call, fn) for call in calls]
        if any(a is not b for a, b in zip(mapped_calls, calls, strict=True)):
            changes["tool_calls"] = mapped_calls
    if isinstance(message.get("function_call"), Mapping):  # legacy function calling
        put("function_call", _function(message["function_call"], fn))
    return {**message, **changes} if changes else message


def _content(content: Any, fn: TextFn) -> Any:
    """Message content: a string, or parts. Every part is walked like a history item (its
    text, a refusal, a file's name; never a URL or base64 data), whatever its type says,
    so a part of a type not listed anywhere, or a malformed one (no type, a bare string,
    an object for an array) does not reach the provider raw: it would refuse the request
    only after receiving the text."""
    if isinstance(content, str):
        return fn(content)
    if isinstance(content, list | Mapping):
        return _prose(content, fn)
    return content


def _tool_call(call: Any, fn: TextFn) -> Any:
    if not isinstance(call, Mapping):
        return call
    function = call.get("function")
    if isinstance(function, Mapping):
        mapped = _function(function, fn)
        return call if mapped is function else {**call, "function": mapped}
    custom = call.get("custom")  # custom tool calls carry free text input
    if isinstance(custom, Mapping) and isinstance(custom.get("input"), str):
        text = fn(custom["input"])
        return call if text is custom["input"] else {**call, "custom": {**custom, "input": text}}
    return call


def _function(function: Mapping[str, Any], fn: TextFn) -> Mapping[str, Any]:
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return function
    mapped = _json_text(arguments, fn)
    return function if mapped is arguments else {**function, "arguments": mapped}


def _json_text(text: str, fn: TextFn) -> str:
    """Map the string leaves of a JSON document (not its keys); plain text if not JSON."""
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError:
        return fn(text)
    mapped = map_leaves(document, fn)
    return text if mapped is document else orjson.dumps(mapped).decode()


def map_leaves(value: Any, fn: TextFn) -> Any:
    """``fn`` applied to the string leaves of a JSON-like value (not to mapping keys); the
    same object when nothing changed."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        items = [map_leaves(v, fn) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, Mapping):
        fields = {k: map_leaves(v, fn) for k, v in value.items()}
        return value if all(fields[k] is value[k] for k in value) else fields
    return value


ResponseFn = Callable[[str, bool], str]
"""Maps one response string; the flag is True inside a JSON ``arguments`` string."""


def map_response(body: Any, fn: ResponseFn, *, json: bool = False) -> Any:
    """``body`` with ``fn`` applied to every string; unchanged containers are kept."""
    if isinstance(body, str):
        return fn(body, json)
    if isinstance(body, list):
        items = [map_response(v, fn) for v in body]
        return body if all(a is b for a, b in zip(items, body, strict=True)) else items
    if isinstance(body, Mapping):
        if _named(body, SIGNED_BLOCKS):
            return body
        fields = {k: map_response(v, fn, json=k in _JSON_FIELDS) for k, v in body.items()}
        return body if all(fields[k] is body[k] for k in body) else fields
    return body


def map_answer(body: Any, fn: TextFn) -> Any:
    """``body`` (a chat, legacy completions, Responses or Messages response) with ``fn``
    applied to the text the model wrote for its reader: chat ``message.content`` (a string
    or text parts) and ``refusal``, completions ``text``, Responses ``output_text`` and
    ``refusal`` parts, Messages ``text`` blocks. Not tool-call arguments (a tool needs the
    real values), thinking, ids, names or enums. The same object when nothing changed."""
    if not isinstance(body, Mapping):
        return body
    if body.get("type") == "message" and isinstance(body.get("content"), list):
        return _replaced(body, "content", _each(body["content"], lambda b: _text_block(b, fn)))
    if isinstance(body.get("choices"), list):
        return _replaced(body, "choices", _each(body["choices"], lambda c: _choice(c, fn)))
    if isinstance(body.get("output"), list):
        return _replaced(body, "output", _each(body["output"], lambda i: _output_item(i, fn)))
    return body


def _choice(choice: Any, fn: TextFn) -> Any:
    if not isinstance(choice, Mapping):
        return choice
    if isinstance(choice.get("text"), str):
        return _replaced(choice, "text", fn(choice["text"]))
    message = choice.get("message")
    if not isinstance(message, Mapping):
        return choice
    mapped = message
    if isinstance(message.get("refusal"), str):
        mapped = _replaced(mapped, "refusal", fn(message["refusal"]))
    mapped = _replaced(mapped, "content", _content(mapped.get("content"), fn))
    return _replaced(choice, "message", mapped)


def _text_block(block: Any, fn: TextFn) -> Any:
    if not isinstance(block, Mapping) or block.get("type") != "text":
        return block
    text = block.get("text")
    return _replaced(block, "text", fn(text)) if isinstance(text, str) else block


def _output_item(item: Any, fn: TextFn) -> Any:
    if not isinstance(item, Mapping) or item.get("type") != "message":
        return item
    content = item.get("content")
    if not isinstance(content, list):
        return item

    def part(p: Any) -> Any:
        if not isinstance(p, Mapping):
            return p
        kind = p.get("type")
        field = "text" if kind == "output_text" else "refusal" if kind == "refusal" else ""
        if not field or not isinstance(p.get(field), str):
            return p
        return _replaced(p, field, fn(p[field]))

    return _replaced(item, "content", _each(content, part))


def _replaced(mapping: Mapping[str, Any], key: str, value: Any) -> Mapping[str, Any]:
    """``mapping`` with ``key`` set to ``value``; ``mapping`` itself when it is already."""
    if key not in mapping or mapping[key] is value:
        return mapping
    return {**mapping, key: value}
