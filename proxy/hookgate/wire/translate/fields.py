"""What every translation reads alike: an optional object field, a message's content
parts, a usage count, a tool call's JSON arguments, and the fields of a chat-completions
request a translation refuses. Pure. Each translator keeps its own wording of a refusal
(Anthropic's or OpenAI's), so the readers return what they found and the caller says what
is wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from hookgate.errors import InvalidRequest


def object_field(body: Mapping[str, Any], name: str, problem: str) -> Mapping[str, Any]:
    """``body[name]`` when it is an object, ``{}`` when absent; else InvalidRequest
    saying ``problem`` (``param`` the field)."""
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidRequest(problem, param=name)
    return value


def arguments_object(arguments: Any) -> dict[str, Any] | None:
    """The object a tool call's arguments encode as JSON text ("" or None is ``{}``);
    None when they encode anything else, or are not JSON."""
    if not arguments:
        return {}
    try:
        value = orjson.loads(arguments)
    except (orjson.JSONDecodeError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def content_parts(content: Any, where: str) -> list[Mapping[str, Any]]:
    """A chat message's content as parts: a string is one text part; None is none; an
    array of objects as it is; else InvalidRequest (``param`` ``where``)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list) and all(isinstance(p, Mapping) for p in content):
        return content
    raise InvalidRequest(f"{where} must be a string or an array of content parts", param=where)


def count(data: Mapping[str, Any], name: str) -> int:
    """A usage count: ``data[name]`` when it is an integer, else 0."""
    value = data.get(name)
    return value if isinstance(value, int) else 0


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else ``{}``."""
    return value if isinstance(value, Mapping) else {}


def first_given(body: Mapping[str, Any], *fields: str) -> Any:
    """The value of the first of ``fields`` that ``body`` sets (not None), else None."""
    return next((body[f] for f in fields if body.get(f) is not None), None)


def check_chat_fields(
    body: Mapping[str, Any],
    *,
    target: str,
    translated: frozenset[str],
    dropped: frozenset[str],
    refused: Mapping[str, str],
) -> None:
    """Refuse a chat-completions ``body`` a translation for ``target`` ("an Anthropic
    model") cannot carry: a field in none of ``translated``, ``dropped`` and ``refused`` is
    unknown (code ``unknown_parameter``); one in ``refused`` set to a value with an effect
    (:func:`_is_neutral`) is unsupported (code ``unsupported_parameter``, the message
    saying ``refused[field]``, why)."""
    for field, value in body.items():
        if field in translated or field in dropped:
            continue
        if field not in refused:
            raise InvalidRequest(
                f"unknown parameter '{field}': hookgate cannot translate it for {target}",
                param=field,
                code="unknown_parameter",
            )
        if not _is_neutral(field, value):
            raise InvalidRequest(
                f"'{field}' cannot be sent to {target}: {refused[field]}",
                param=field,
                code="unsupported_parameter",
            )


def _is_neutral(field: str, value: Any) -> bool:
    """Whether a chat field's value asks for nothing (its default, or no effect)."""
    if value is None or value is False or value == {} or value == []:
        return True
    if field == "n":
        return bool(value == 1)
    if field in ("top_logprobs", "presence_penalty", "frequency_penalty"):
        return bool(value == 0)
    if field == "modalities":
        return isinstance(value, list) and "audio" not in value
    if field == "response_format":
        return isinstance(value, Mapping) and value.get("type") == "text"
    return False
