"""What every translation reads alike: an optional object field, a tool call's JSON
arguments. Pure. Each translator keeps its own wording of a refusal (Anthropic's or
OpenAI's), so these return what they found and the caller says what is wrong."""

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
