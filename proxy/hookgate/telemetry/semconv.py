"""OpenTelemetry GenAI semantic-convention names and the pure mapping to them.

Our own constants: the semantic-conventions package keeps the GenAI attributes in its
incubating module and marks them deprecated as they move, so a span's names are fixed
here, in one place, matching the GenAI conventions as of their 1.37 release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from hookgate.pipeline.observe import AttributeValue, Outcome, UpstreamAddress
from hookgate.wire.usage import Usage

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_TOP_P = "gen_ai.request.top_p"
REQUEST_TOP_K = "gen_ai.request.top_k"
REQUEST_FREQUENCY_PENALTY = "gen_ai.request.frequency_penalty"
REQUEST_PRESENCE_PENALTY = "gen_ai.request.presence_penalty"
REQUEST_SEED = "gen_ai.request.seed"
REQUEST_STOP_SEQUENCES = "gen_ai.request.stop_sequences"
REQUEST_CHOICE_COUNT = "gen_ai.request.choice.count"
OUTPUT_TYPE = "gen_ai.output.type"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SERVER_ADDRESS = "server.address"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"

# The pii guardrail's span (``apply_guardrail pii``); counts and types only, never values.
PII_ENTITIES = "hookgate.pii.entities"
PII_ENTITY_TYPES = "hookgate.pii.entity_types"
PII_TEXTS = "hookgate.pii.texts"
PII_ANALYZED = "hookgate.pii.texts_analyzed"
PII_DECISION = "hookgate.pii.decision"
PII_SECONDS = "hookgate.pii.duration_s"
PII_ERROR = "hookgate.pii.error"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
HTTP_STATUS = "http.response.status_code"

OPERATIONS: Mapping[str, str] = {
    "chat.completions": "chat",
    "responses": "chat",
    "completions": "text_completion",
    "embeddings": "embeddings",
    "messages": "chat",
    "messages.count_tokens": "count_tokens",
    "generate_content": "chat",
}

_NUMERIC = {
    "temperature": REQUEST_TEMPERATURE,
    "top_p": REQUEST_TOP_P,
    "top_k": REQUEST_TOP_K,
    "frequency_penalty": REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": REQUEST_PRESENCE_PENALTY,
}


def span_name(api: str, model: str) -> str:
    """``{gen_ai.operation.name} {gen_ai.request.model}``."""
    return f"{OPERATIONS[api]} {model}"


def request_attributes(
    api: str,
    model: str,
    body: Mapping[str, Any],
    conversation_id: str | None,
) -> dict[str, AttributeValue]:
    """Attributes known before the call, read from the request body before any policy ran:
    so none of them is text the client wrote (see :func:`stop_sequences`)."""
    attributes: dict[str, AttributeValue] = {OPERATION_NAME: OPERATIONS[api], REQUEST_MODEL: model}
    if conversation_id:
        attributes[CONVERSATION_ID] = conversation_id
    for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        if _is_int(body.get(key)):
            attributes[REQUEST_MAX_TOKENS] = body[key]
            break
    for key, name in _NUMERIC.items():
        value = body.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[name] = float(value)
    if _is_int(body.get("seed")):
        attributes[REQUEST_SEED] = body["seed"]
    if _is_int(body.get("n")) and body["n"] != 1:
        attributes[REQUEST_CHOICE_COUNT] = body["n"]
    output_type = _output_type(body)
    if output_type is not None:
        attributes[OUTPUT_TYPE] = output_type
    return attributes


def stop_sequences(body: Mapping[str, Any]) -> list[str] | None:
    """The request's stop sequences, or None. They are text the client wrote: record them
    only as content, from the body as the model sees it (after redaction)."""
    stop = body.get("stop", body.get("stop_sequences"))  # OpenAI's, Anthropic's
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, list) and stop and all(isinstance(s, str) for s in stop):
        return list(stop)
    return None


def outcome_attributes(
    outcome: Outcome, upstream: UpstreamAddress | None
) -> dict[str, AttributeValue]:
    """Attributes known when the request is done."""
    attributes: dict[str, AttributeValue] = {HTTP_STATUS: outcome.status}
    if upstream is not None:
        attributes[PROVIDER_NAME] = upstream.provider_kind
        if upstream.host is not None:
            attributes[SERVER_ADDRESS] = upstream.host
        if upstream.port is not None:
            attributes[SERVER_PORT] = upstream.port
    if outcome.target is not None:
        attributes["hookgate.target"] = outcome.target
    if outcome.response_id:
        attributes[RESPONSE_ID] = outcome.response_id
    if outcome.response_model:
        attributes[RESPONSE_MODEL] = outcome.response_model
    if outcome.finish_reasons:
        attributes[RESPONSE_FINISH_REASONS] = list(outcome.finish_reasons)
    usage = outcome.usage
    if usage is not None:
        attributes[USAGE_INPUT_TOKENS] = usage.input_tokens
        attributes[USAGE_OUTPUT_TOKENS] = usage.output_tokens
        attributes[USAGE_CACHE_READ_INPUT_TOKENS] = usage.cached_input_tokens
        attributes[USAGE_CACHE_CREATION_INPUT_TOKENS] = usage.cache_write_tokens
        attributes[USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoning_tokens
    if outcome.error_type is not None:
        attributes[ERROR_TYPE] = outcome.error_type
    return attributes


def input_messages(messages: Sequence[Any]) -> str:
    """``gen_ai.input.messages``: role and text parts of each message, as JSON."""
    out = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role") or message.get("type") or "user"
        out.append({"role": str(role), "parts": _parts(message)})
    return orjson.dumps(out).decode()


def output_messages(text: str, finish_reasons: Sequence[str]) -> str:
    """``gen_ai.output.messages`` for one assistant text."""
    message = {
        "role": "assistant",
        "parts": [{"type": "text", "content": text}],
        "finish_reason": finish_reasons[0] if finish_reasons else "stop",
    }
    return orjson.dumps([message]).decode()


def _parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content", message.get("output"))
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append({"type": "text", "content": part["text"]})
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        parts.append(
            {
                "type": "tool_call",
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return parts


def _output_type(body: Mapping[str, Any]) -> str | None:
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping):
        kind = fmt.get("type")
        return (
            "json" if kind in ("json_object", "json_schema") else "text" if kind == "text" else None
        )
    return None


def _is_int(value: Any) -> bool:
    """An int a span attribute can hold (OTLP integers are 64-bit)."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


REPLY_STATUSES = ("ok", "error", "paused")
"""How a reply ended (``hookgate.reply.status``): it finished; it raised, or was abandoned
(its run never reported its end); it stopped to wait for a human and continues on resume."""


def reply_attributes(
    turns: int, tool_calls: int, usage: Usage, status: str
) -> dict[str, AttributeValue]:
    """What an ``invoke_agent`` span records when the reply ends (``status``: one of
    :data:`REPLY_STATUSES`)."""
    return {
        "hookgate.reply.status": status,
        "hookgate.reply.turns": turns,
        "hookgate.reply.tool_calls": tool_calls,
        USAGE_INPUT_TOKENS: usage.input_tokens,
        USAGE_OUTPUT_TOKENS: usage.output_tokens,
    }


def json_text(value: Any) -> str:
    """``value`` as compact JSON text (for span attributes that carry structures)."""
    return orjson.dumps(value, default=str).decode()
