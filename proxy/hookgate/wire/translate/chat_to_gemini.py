"""A Chat Completions client talking to a Google Gemini model (the Gemini API's
``models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse``): the request
becomes a ``GenerateContentRequest``; the answer, its stream and its errors come back as
Chat Completions ones.

Request (:func:`request`), field by field:

* translated: ``messages`` → ``contents`` and ``systemInstruction`` (below);
  ``max_completion_tokens``, else ``max_tokens``, else the provider's default (when it
  has one) → ``generationConfig.maxOutputTokens`` (thinking counts toward it, as
  reasoning counts toward OpenAI's ``max_completion_tokens``, so it is not raised for a
  thinking budget); ``temperature`` → ``temperature`` (the same 0 to 2 range);
  ``top_p`` → ``topP``; ``stop`` (a string or a list) → ``stopSequences``; ``seed`` →
  ``seed``; ``presence_penalty`` and ``frequency_penalty`` → ``presencePenalty`` and
  ``frequencyPenalty`` (left out at 0, their neutral value: not every Gemini model takes
  penalties); ``response_format`` ``json_object`` → ``responseMimeType:
  "application/json"``, ``json_schema`` → that and ``responseJsonSchema`` (its
  ``schema``; its ``name`` and ``strict`` are dropped), ``text`` → nothing;
  ``reasoning_effort`` → ``thinkingConfig`` with ``thinkingBudget`` by
  :data:`THINKING_BUDGETS` (``none`` → 0) and, unless ``none``, ``includeThoughts: true``
  so the thought summaries come back as ``reasoning_content`` (a model that cannot turn
  thinking off, or takes no budget that large, answers 400, translated by :func:`error`);
  ``tools`` and ``tool_choice`` (below).
* not in the request, as the caller puts them elsewhere: ``model`` (in the URL) and
  ``stream`` (the endpoint).
* dropped, as they change nothing about the answer or Gemini has no field for them:
  ``store`` and ``metadata`` (OpenAI's stored completions and their dashboard tags),
  ``service_tier`` (OpenAI's capacity tiers), ``stream_options`` (read by
  :class:`StreamTranslator`'s ``include_usage``), ``prompt_cache_key``,
  ``prompt_cache_retention`` and ``prompt_cache_options`` (OpenAI's cache routing; Gemini
  caches implicitly), ``user`` and ``safety_identifier`` (Gemini takes no end-user id),
  and ``parallel_tool_calls`` (Gemini has no switch for parallel function calls).
* refused with :class:`~hookgate.errors.InvalidRequest` (code ``unsupported_parameter``,
  ``param`` naming the field), when set to anything but their neutral value: ``n`` > 1
  (one candidate is translated: the answer and the stream carry one choice),
  ``logprobs`` and ``top_logprobs`` (Gemini's log probabilities are not translated),
  ``audio``, ``modalities`` with audio, ``prediction``, ``logit_bias``, ``verbosity``,
  ``web_search_options``, ``moderation``, and the legacy ``functions``/``function_call``.
  Any other field is refused as unknown (code ``unknown_parameter``).

Messages: ``system`` and ``developer`` messages, wherever they are, become the parts of
``systemInstruction``, in order. ``user`` messages become ``user`` turns and
``assistant`` messages ``model`` turns. Text parts become ``{"text"}`` parts. In a user
message, an ``image_url`` with a base64 ``data:`` URL becomes ``inlineData`` (the
``detail`` hint is dropped); an http(s) image URL is refused, as Gemini's API does not
fetch images from URLs (the client must send the bytes); an ``input_audio`` part becomes
``inlineData`` of type ``audio/wav`` or ``audio/mp3`` (Gemini's names for OpenAI's two
formats); a ``file`` part with ``file_data`` (a base64 ``data:`` URL) becomes
``inlineData`` (its ``filename`` is dropped), one with only a ``file_id`` is refused (an
OpenAI file id means nothing to Gemini). An assistant message becomes its text (and
``refusal``) as text parts, then its ``tool_calls`` as ``functionCall`` parts (the
arguments parsed: they must be a JSON object); its ``reasoning_content`` is dropped
(thinking cannot be replayed to Gemini as text). A ``tool`` message becomes a
``functionResponse`` part in a user turn (as Gemini's documentation sends them), named
after the tool call of that ``tool_call_id`` in an earlier assistant message (refused
when there is none: Gemini matches results to calls by name); its ``response`` is the
content when that is a JSON object, else ``{"output": <the text>}`` (the key Gemini
documents for a function's output). Consecutive messages of one role are merged into
one turn, so consecutive tool results and the user message after them are one user
turn, results first. A message's ``name`` is dropped (Gemini has no participant names);
empty text is left out.

Tool call ids carry what Gemini needs back. An id a client gets is ``call_<24 hex>``,
then :data:`ID_MARK` and Gemini's own ``functionCall.id`` when Gemini sent one, then
:data:`SIGNATURE_MARK` and the part's ``thoughtSignature`` when it had one. Clients
send tool call ids back unchanged, so when the request is translated back each
``functionCall`` part gets its ``id`` and its ``thoughtSignature`` again, byte for byte,
and each ``functionResponse`` the ``id`` of its call (Gemini 3 refuses a request whose
function calls of the current turn lack their signatures). Signatures on text parts are
dropped (Gemini needs them only on function calls). Ids without the marks (from another
model) send nothing more.

Tools: function tools become one ``{"functionDeclarations": [...]}`` tool of ``{"name",
"description", "parametersJsonSchema"}`` (the ``parameters`` as full JSON Schema; an
absent schema is left out; ``strict`` is dropped: Gemini has no strict mode); other tool
types are refused. ``tool_choice`` ``auto``/``none``/``required``/a named function →
``toolConfig.functionCallingConfig`` mode ``AUTO``/``NONE``/``ANY``/``ANY`` with
``allowedFunctionNames: [name]``; ``allowed_tools`` and custom choices are refused.

Answers (:func:`response`, :class:`StreamTranslator`), from the first candidate: text
parts joined → ``content`` (None when there is none and there are tool calls);
``thought`` parts → ``reasoning_content``; ``functionCall`` parts → ``tool_calls`` (ids
as above, the arguments compact JSON; each part holds a complete call, streamed or
not). Other parts (inline images, code execution) are skipped. ``finishReason`` → see
:data:`_FINISH_REASONS`; ``stop`` becomes ``tool_calls`` when there were function calls.
A prompt Gemini blocked (no candidates, a ``promptFeedback.blockReason``) is one choice
with ``content`` None and ``finish_reason`` ``content_filter``. ``id`` is Gemini's
``responseId`` prefixed ``chatcmpl-`` (a random one when there is none); ``model`` is
the caller's ``model`` argument (Gemini's ``modelVersion`` is not used), in answers and
streams alike. Usage: see :func:`_chat_usage`. Errors: :func:`error`. What Google's own
tools report (:data:`CANDIDATE_FIELDS`: ``groundingMetadata``, ``urlContextMetadata``)
rides on the choice as it is, under :data:`CANDIDATE_KEY` (in a stream, on a chunk of
its own with an empty ``delta``, for each Gemini chunk that carries it), for a Gemini
client's door to put back; only a Gemini client's call can ask for those tools.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from typing import Any

import orjson

from hookgate.errors import InvalidRequest, UpstreamBadResponse
from hookgate.wire import sse
from hookgate.wire.translate.chat_chunks import ChatChunks
from hookgate.wire.translate.fields import (
    arguments_object,
    check_chat_fields,
    content_parts,
    count,
    first_given,
    mapping,
    object_field,
)

SIGNATURE_MARK = "~ts~"
"""In a tool call id, what precedes the ``thoughtSignature`` of its ``functionCall``
part (the id's last field: a signature is base64, which has no ``~``)."""

ID_MARK = "~id~"
"""In a tool call id, what precedes the ``id`` Gemini gave its ``functionCall`` (before
:data:`SIGNATURE_MARK`, when there is a signature too)."""

THINKING_BUDGETS: Mapping[str, int] = {
    "none": 0,
    "minimal": 1024,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
    "max": 32768,
}
"""``thinkingBudget`` for each OpenAI ``reasoning_effort``: ``low``, ``medium`` and
``high`` as Google's own OpenAI compatibility layer maps them; ``minimal`` is Gemini's
smallest useful budget, and ``xhigh``/``max`` its largest (Gemini 2.5 Pro's 32768);
``none`` turns thinking off where the model allows it."""

_TRANSLATED = frozenset(
    {"model", "messages", "max_tokens", "max_completion_tokens", "stop", "temperature",
     "top_p", "seed", "presence_penalty", "frequency_penalty", "response_format", "stream",
     "tools", "tool_choice", "reasoning_effort"}
)  # fmt: skip

_DROPPED = frozenset(
    {"store", "metadata", "service_tier", "stream_options", "prompt_cache_key",
     "prompt_cache_retention", "prompt_cache_options", "user", "safety_identifier",
     "parallel_tool_calls"}
)  # fmt: skip

_REFUSED: Mapping[str, str] = {
    "n": "hookgate translates one candidate",
    "logprobs": "hookgate does not translate its log probabilities",
    "top_logprobs": "hookgate does not translate its log probabilities",
    "audio": "hookgate does not translate audio output",
    "modalities": "hookgate does not translate audio output",
    "prediction": "it takes no predicted output",
    "logit_bias": "it takes no logit bias",
    "verbosity": "it has no verbosity setting",
    "web_search_options": "hookgate does not translate its search tool",
    "moderation": "it has no moderation setting",
    "functions": "use 'tools'",
    "function_call": "use 'tool_choice'",
}
"""Fields refused when set to a value that has an effect (see
:func:`~hookgate.wire.translate.fields.check_chat_fields`), and
why they cannot be honoured."""

CANDIDATE_FIELDS = ("groundingMetadata", "urlContextMetadata")
"""A Gemini candidate's fields chat has none for, which a chat choice carries as they are
(under :data:`CANDIDATE_KEY`): what Google's own tools (Search, URL context) read, which
a Gemini API client calling through hookgate gets back on its candidate
(:mod:`~hookgate.wire.translate.gemini_to_chat`). Only a Gemini client can ask for those
tools, so only its calls are answered with them."""

CANDIDATE_KEY = "gemini_candidate"
"""The chat choice's field holding :data:`CANDIDATE_FIELDS`."""

_CONTENT_FILTER = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
     "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "LANGUAGE"}
)  # fmt: skip

_FINISH_REASONS: Mapping[str, str] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    **dict.fromkeys(_CONTENT_FILTER, "content_filter"),
}
"""Chat ``finish_reason`` for each Gemini ``finishReason``: ``MAX_TOKENS`` → ``length``,
the safety, recitation, blocklist and language stops → ``content_filter``; any other
(``STOP``, ``MALFORMED_FUNCTION_CALL``, ``OTHER``, ``FINISH_REASON_UNSPECIFIED``, an
unknown one) → ``stop``, as OpenAI has nothing nearer."""

_AUDIO_TYPES: Mapping[str, str] = {"wav": "audio/wav", "mp3": "audio/mp3"}

_ERROR_TYPES: Mapping[str, str] = {
    "INVALID_ARGUMENT": "invalid_request_error",
    "FAILED_PRECONDITION": "invalid_request_error",
    "OUT_OF_RANGE": "invalid_request_error",
    "UNAUTHENTICATED": "invalid_request_error",
    "PERMISSION_DENIED": "invalid_request_error",
    "NOT_FOUND": "invalid_request_error",
    "ALREADY_EXISTS": "invalid_request_error",
    "ABORTED": "invalid_request_error",
    "CANCELLED": "invalid_request_error",
    "RESOURCE_EXHAUSTED": "requests",
    "INTERNAL": "server_error",
    "UNKNOWN": "server_error",
    "UNAVAILABLE": "server_error",
    "DEADLINE_EXCEEDED": "server_error",
    "DATA_LOSS": "server_error",
    "UNIMPLEMENTED": "server_error",
}
"""OpenAI's error ``type`` nearest to each Google status (OpenAI reports 401, 403 and
404 as ``invalid_request_error`` too; the SDK picks its exception by HTTP status)."""


def request(body: Mapping[str, Any], *, default_max_tokens: int | None = None) -> dict[str, Any]:
    """The Gemini ``GenerateContentRequest`` for a chat-completions ``body`` (see the
    module docstring). ``model`` and ``stream`` are not in it: the model goes in the URL
    and streaming is the endpoint, so the caller reads them from ``body`` itself.

    ``default_max_tokens`` is used when the body sets no limit (None: none is sent).
    Raises :class:`InvalidRequest` for a field or content the model cannot take.
    """
    check_chat_fields(
        body, target="a Gemini model", translated=_TRANSLATED, dropped=_DROPPED, refused=_REFUSED
    )
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise InvalidRequest("'messages' must be an array", param="messages")
    system, contents = _conversation(messages)
    out: dict[str, Any] = {"contents": contents}
    if system:
        out["systemInstruction"] = {"parts": system}
    _translate_tools(body, out)
    config = _generation_config(body, default_max_tokens)
    if config:
        out["generationConfig"] = config
    return out


def _generation_config(body: Mapping[str, Any], default_max_tokens: int | None) -> dict[str, Any]:
    config: dict[str, Any] = {}
    max_tokens = first_given(body, "max_completion_tokens", "max_tokens")
    if max_tokens is None:
        max_tokens = default_max_tokens
    if max_tokens is not None:
        config["maxOutputTokens"] = max_tokens
    for field, name in (("temperature", "temperature"), ("top_p", "topP"), ("seed", "seed")):
        if body.get(field) is not None:
            config[name] = body[field]
    for field, name in (
        ("presence_penalty", "presencePenalty"),
        ("frequency_penalty", "frequencyPenalty"),
    ):
        if body.get(field):
            config[name] = body[field]
    stop = body.get("stop")
    if isinstance(stop, str):
        config["stopSequences"] = [stop]
    elif isinstance(stop, list):
        config["stopSequences"] = list(stop)
    elif stop is not None:
        raise InvalidRequest("'stop' must be a string or an array of strings", param="stop")
    config.update(_response_format(body))
    thinking = _thinking_config(body.get("reasoning_effort"))
    if thinking is not None:
        config["thinkingConfig"] = thinking
    return config


def _response_format(body: Mapping[str, Any]) -> dict[str, Any]:
    response_format = object_field(body, "response_format", "'response_format' must be an object")
    kind = response_format.get("type")
    if kind in (None, "text"):
        return {}
    if kind == "json_object":
        return {"responseMimeType": "application/json"}
    if kind == "json_schema":
        schema = object_field(
            response_format,
            "json_schema",
            "'response_format.json_schema' must be an object",
        ).get("schema")
        out: dict[str, Any] = {"responseMimeType": "application/json"}
        if schema is not None:
            out["responseJsonSchema"] = schema
        return out
    raise InvalidRequest(
        f"'response_format' of type {kind!r} cannot be sent to a Gemini model",
        param="response_format.type",
        code="unsupported_value",
    )


def _thinking_config(effort: Any) -> dict[str, Any] | None:
    if effort is None:
        return None
    budget = THINKING_BUDGETS.get(effort) if isinstance(effort, str) else None
    if budget is None:
        raise InvalidRequest(
            f"'reasoning_effort' {effort!r} has no Gemini thinking budget (one of "
            f"{', '.join(THINKING_BUDGETS)})",
            param="reasoning_effort",
            code="unsupported_value",
        )
    if budget == 0:
        return {"thinkingBudget": 0}
    return {"thinkingBudget": budget, "includeThoughts": True}


# -- tool call ids ---------------------------------------------------------------------


def _call_id(gemini_id: Any, signature: Any) -> str:
    """The chat id of a ``functionCall`` (see the module docstring)."""
    out = f"call_{secrets.token_hex(12)}"
    if isinstance(gemini_id, str) and gemini_id:
        out += ID_MARK + gemini_id
    if isinstance(signature, str) and signature:
        out += SIGNATURE_MARK + signature
    return out


_CARRIED = re.compile(rb'(call_[0-9a-f]{24})(?:~id~|~ts~)(?:[^"\\]|\\.)*')
"""A tool call id this module made, with what it carries after its ``call_<hex>`` head,
to the end of its JSON string (an escape such as ``\\/`` included)."""


def portable_ids(raw: bytes) -> bytes | None:
    """A request body (in any client API) with the tool call ids this module made cut to
    their ``call_<24 hex>`` head, for a model that is not Gemini: the signature means
    nothing to it, and other providers refuse such ids (OpenAI's are at most 40
    characters, Anthropic's allow no ``~``). Ids and their results are cut alike, so they
    still pair. None when the body has none."""
    if b"~ts~" not in raw and b"~id~" not in raw:
        return None
    cut = _CARRIED.sub(rb"\1", raw)
    return None if cut == raw else cut


def id_fields(call_id: Any) -> tuple[str | None, str | None]:
    """``(Gemini's functionCall id, thoughtSignature)`` a chat tool call id carries."""
    if not isinstance(call_id, str):
        return None, None
    rest, _, signature = call_id.partition(SIGNATURE_MARK)
    _, _, gemini_id = rest.partition(ID_MARK)
    return gemini_id or None, signature or None


# -- messages --------------------------------------------------------------------------


class _Turns:
    """The ``contents`` being built, and the tool calls seen so far (id → name)."""

    def __init__(self) -> None:
        self.contents: list[dict[str, Any]] = []
        self.calls: dict[str, str] = {}

    def append(self, role: str, parts: list[dict[str, Any]]) -> None:
        """Add ``parts`` as a turn of ``role``, into the last turn when it has that role."""
        if not parts:
            return
        if self.contents and self.contents[-1]["role"] == role:
            self.contents[-1]["parts"] += parts
        else:
            self.contents.append({"role": role, "parts": parts})


def _conversation(messages: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(systemInstruction parts, contents)`` of chat ``messages``; see the module
    docstring."""
    system: list[dict[str, Any]] = []
    turns = _Turns()
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise InvalidRequest(f"{where} must be an object", param=where)
        role = message.get("role")
        if role in ("system", "developer"):
            system += _text_parts(message.get("content"), f"{where}.content")
        elif role == "user":
            turns.append("user", _user_parts(message.get("content"), f"{where}.content"))
        elif role == "assistant":
            turns.append("model", _model_parts(message, where, turns.calls))
        elif role == "tool":
            turns.append("user", [_function_response(message, where, turns.calls)])
        else:
            raise InvalidRequest(
                f"{where}: role {role!r} cannot be sent to a Gemini model",
                param=f"{where}.role",
                code="unsupported_value",
            )
    return system, turns.contents


def _text_part(text: Any) -> list[dict[str, Any]]:
    """A text as a Gemini part; none for empty text."""
    return [{"text": text}] if text else []


def _refuse_part(kind: Any, where: str) -> InvalidRequest:
    return InvalidRequest(
        f"{where}: a content part of type {kind!r} cannot be sent to a Gemini model",
        param=f"{where}.type",
        code="unsupported_value",
    )


def _text_parts(content: Any, where: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content_parts(content, where)):
        if part.get("type") != "text":
            raise _refuse_part(part.get("type"), f"{where}[{j}]")
        parts += _text_part(part.get("text"))
    return parts


def _user_parts(content: Any, where: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content_parts(content, where)):
        kind = part.get("type")
        at = f"{where}[{j}]"
        if kind == "text":
            parts += _text_part(part.get("text"))
        elif kind == "image_url":
            parts.append(_image(part, at))
        elif kind == "input_audio":
            parts.append(_audio(part, at))
        elif kind == "file":
            parts.append(_file(part, at))
        else:
            raise _refuse_part(kind, at)
    return parts


def _image(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str):
        raise InvalidRequest(f"{where}.image_url.url must be a string", param=where)
    param = f"{where}.image_url.url"
    if url.startswith(("http://", "https://")):
        raise InvalidRequest(
            f"{where}: an image URL cannot be sent to a Gemini model: Gemini's API does not "
            "fetch images from http(s) URLs; send the image as a base64 data: URL",
            param=param,
            code="unsupported_value",
        )
    return _inline_data(url, param, "an image URL must be a base64 data: URL")


def _inline_data(url: str, param: str, problem: str) -> dict[str, Any]:
    """An ``inlineData`` part for a base64 ``data:`` URL; else InvalidRequest."""
    header, comma, data = url.partition(",")
    mime_type, _, encoding = header.removeprefix("data:").partition(";")
    if not url.startswith("data:") or not comma or not mime_type or encoding != "base64":
        raise InvalidRequest(f"{param}: {problem}", param=param, code="unsupported_value")
    return {"inlineData": {"mimeType": mime_type, "data": data}}


def _audio(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    audio = mapping(part.get("input_audio"))
    audio_format = audio.get("format")
    mime_type = _AUDIO_TYPES.get(audio_format) if isinstance(audio_format, str) else None
    if mime_type is None:
        raise InvalidRequest(
            f"{where}.input_audio.format must be one of {', '.join(_AUDIO_TYPES)}",
            param=f"{where}.input_audio.format",
            code="unsupported_value",
        )
    data = audio.get("data")
    if not isinstance(data, str) or not data:
        raise InvalidRequest(
            f"{where}.input_audio.data must be base64 audio", param=f"{where}.input_audio.data"
        )
    return {"inlineData": {"mimeType": mime_type, "data": data}}


def _file(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    data = mapping(part.get("file")).get("file_data")
    if not isinstance(data, str):
        raise InvalidRequest(
            f"{where}: a file cannot be sent to a Gemini model by 'file_id' (an OpenAI file "
            "means nothing to Gemini); send its bytes in 'file_data' as a base64 data: URL",
            param=f"{where}.file",
            code="unsupported_value",
        )
    return _inline_data(data, f"{where}.file.file_data", "'file_data' must be a base64 data: URL")


def _model_parts(
    message: Mapping[str, Any], where: str, calls: dict[str, str]
) -> list[dict[str, Any]]:
    for field in ("audio", "function_call"):
        if message.get(field) is not None:
            raise InvalidRequest(
                f"{where}: an assistant '{field}' cannot be sent to a Gemini model",
                param=f"{where}.{field}",
                code="unsupported_parameter",
            )
    parts: list[dict[str, Any]] = []
    content = f"{where}.content"
    for j, part in enumerate(content_parts(message.get("content"), content)):
        kind = part.get("type")
        if kind not in ("text", "refusal"):
            raise _refuse_part(kind, f"{content}[{j}]")
        parts += _text_part(part.get("text" if kind == "text" else "refusal"))
    if isinstance(message.get("refusal"), str):
        parts += _text_part(message["refusal"])
    tool_calls = message.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise InvalidRequest(f"{where}.tool_calls must be an array", param=f"{where}.tool_calls")
    for k, call in enumerate(tool_calls):
        parts.append(_function_call(call, f"{where}.tool_calls[{k}]", calls))
    return parts


def _function_call(call: Any, where: str, calls: dict[str, str]) -> dict[str, Any]:
    if not isinstance(call, Mapping) or call.get("type", "function") != "function":
        kind = call.get("type") if isinstance(call, Mapping) else None
        raise InvalidRequest(
            f"{where}: a tool call of type {kind!r} cannot be sent to a Gemini model",
            param=f"{where}.type",
            code="unsupported_value",
        )
    function = call.get("function") or {}
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequest(f"{where}.function.name must be a string", param=f"{where}.function")
    arguments = f"{where}.function.arguments"
    args = arguments_object(function.get("arguments"))
    if args is None:
        raise InvalidRequest(f"{arguments} must be a JSON object, as a string", param=arguments)
    gemini_id, signature = id_fields(call.get("id"))
    function_call: dict[str, Any] = {"name": name, "args": args}
    if gemini_id is not None:
        function_call["id"] = gemini_id
    part: dict[str, Any] = {"functionCall": function_call}
    if signature is not None:
        part["thoughtSignature"] = signature
    if isinstance(call.get("id"), str):
        calls[call["id"]] = name
    return part


def _function_response(
    message: Mapping[str, Any], where: str, calls: Mapping[str, str]
) -> dict[str, Any]:
    call_id = message.get("tool_call_id")
    name = calls.get(call_id) if isinstance(call_id, str) else None
    if name is None:
        raise InvalidRequest(
            f"{where}: 'tool_call_id' {call_id!r} is not the id of a tool call in an earlier "
            "assistant message (a Gemini model needs the name of the function it answers)",
            param=f"{where}.tool_call_id",
        )
    content = message.get("content")
    text = "".join(p["text"] for p in _text_parts(content, f"{where}.content"))
    value = arguments_object(text) if text else None
    response: dict[str, Any] = {
        "name": name,
        "response": {"output": text} if value is None else value,
    }
    gemini_id, _ = id_fields(call_id)
    if gemini_id is not None:
        response["id"] = gemini_id
    return {"functionResponse": response}


# -- tools -----------------------------------------------------------------------------


def _translate_tools(body: Mapping[str, Any], out: dict[str, Any]) -> None:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise InvalidRequest("'tools' must be an array", param="tools")
    if tools:
        declarations = [_declaration(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
        out["tools"] = [{"functionDeclarations": declarations}]
    config = _tool_choice(body.get("tool_choice"))
    if config is not None:
        out["toolConfig"] = {"functionCallingConfig": config}


def _declaration(tool: Any, where: str) -> dict[str, Any]:
    kind = tool.get("type") if isinstance(tool, Mapping) else None
    if kind != "function":
        raise InvalidRequest(
            f"{where}: a tool of type {kind!r} cannot be sent to a Gemini model (only "
            "function tools)",
            param=f"{where}.type",
            code="unsupported_value",
        )
    function = tool.get("function") or {}
    out: dict[str, Any] = {"name": function.get("name")}
    if function.get("description") is not None:
        out["description"] = function["description"]
    if function.get("parameters") is not None:
        out["parametersJsonSchema"] = function["parameters"]
    return out


def _tool_choice(choice: Any) -> dict[str, Any] | None:
    if choice is None:
        return None
    modes = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
    if isinstance(choice, str) and choice in modes:
        return {"mode": modes[choice]}
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        return {"mode": "ANY", "allowedFunctionNames": [name]}
    kind = choice.get("type") if isinstance(choice, Mapping) else choice
    raise InvalidRequest(
        f"'tool_choice' {kind!r} cannot be sent to a Gemini model",
        param="tool_choice",
        code="unsupported_value",
    )


# -- answers ---------------------------------------------------------------------------


def response(body: Mapping[str, Any], *, model: str) -> dict[str, Any]:
    """The ``chat.completion`` for a Gemini ``GenerateContentResponse`` (see the module
    docstring). Raises :class:`UpstreamBadResponse` when ``body`` is not one."""
    if not isinstance(body, Mapping):
        raise UpstreamBadResponse("the Gemini answer is not a JSON object")
    candidate = _first_candidate(body)
    if candidate is None:
        if _block_reason(body) is None:
            raise UpstreamBadResponse("the Gemini answer has no candidates")
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        finish_reason = "content_filter"
    else:
        message, finish_reason = _message(candidate)
    choice = {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
    return {
        "id": _completion_id(body.get("responseId")),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{**choice, **_candidate_fields(candidate or {})}],
        "usage": _chat_usage(mapping(body.get("usageMetadata"))),
    }


def _message(candidate: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The chat message of a candidate, and its finish reason."""
    parts = _parts_of(candidate)
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    thoughts = [p["text"] for p in parts if isinstance(p.get("text"), str) and p.get("thought")]
    calls = [_tool_call(p) for p in parts if isinstance(p.get("functionCall"), Mapping)]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts or not calls else None,
        "refusal": None,
    }
    if calls:
        message["tool_calls"] = calls
    if thoughts:
        message["reasoning_content"] = "".join(thoughts)
    return message, _finish_reason(candidate.get("finishReason"), bool(calls))


def _first_candidate(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first candidate of a Gemini answer (None for none). Raises
    :class:`UpstreamBadResponse` when ``candidates`` is not an array of objects."""
    candidates = body.get("candidates")
    if candidates is None:
        return None
    if not isinstance(candidates, list) or not all(isinstance(c, Mapping) for c in candidates):
        raise UpstreamBadResponse("the Gemini answer's 'candidates' is not an array of objects")
    return candidates[0] if candidates else None


def _parts_of(candidate: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A candidate's parts (none when it has no content, as when a safety stop cut it)."""
    content = candidate.get("content")
    if content is None:
        return []
    if not isinstance(content, Mapping):
        raise UpstreamBadResponse("a Gemini candidate's content is not an object")
    parts = content.get("parts")
    if parts is None:
        return []
    if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
        raise UpstreamBadResponse("a Gemini candidate's parts are not an array of objects")
    return parts


def _candidate_fields(candidate: Mapping[str, Any]) -> dict[str, Any]:
    """``{CANDIDATE_KEY: ...}`` with the candidate's :data:`CANDIDATE_FIELDS`, or nothing."""
    fields = {k: candidate[k] for k in CANDIDATE_FIELDS if candidate.get(k) is not None}
    return {CANDIDATE_KEY: fields} if fields else {}


def _block_reason(body: Mapping[str, Any]) -> str | None:
    """``promptFeedback.blockReason``: why Gemini refused the prompt (None when it did not)."""
    reason = mapping(body.get("promptFeedback")).get("blockReason")
    return reason if isinstance(reason, str) and reason else None


def _tool_call(part: Mapping[str, Any]) -> dict[str, Any]:
    call = part["functionCall"]
    return {
        "id": _call_id(call.get("id"), part.get("thoughtSignature")),
        "type": "function",
        "function": {
            "name": call.get("name"),
            "arguments": orjson.dumps(call.get("args") or {}).decode(),
        },
    }


def _finish_reason(reason: Any, has_calls: bool) -> str:
    finish = _FINISH_REASONS.get(reason, "stop") if isinstance(reason, str) else "stop"
    return "tool_calls" if has_calls and finish == "stop" else finish


def _completion_id(response_id: Any) -> str:
    if isinstance(response_id, str) and response_id:
        return response_id if response_id.startswith("chatcmpl-") else f"chatcmpl-{response_id}"
    return f"chatcmpl-{secrets.token_hex(12)}"


def _chat_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """A chat ``usage`` for Gemini's ``usageMetadata``: ``prompt_tokens`` is
    ``promptTokenCount`` (plus ``toolUsePromptTokenCount``, billed as input), of which
    ``cachedContentTokenCount`` → ``prompt_tokens_details.cached_tokens``;
    ``completion_tokens`` is ``candidatesTokenCount`` plus ``thoughtsTokenCount`` (Gemini
    counts thoughts apart, OpenAI within), the thoughts →
    ``completion_tokens_details.reasoning_tokens``; ``total_tokens`` their sum."""
    prompt = count(usage, "promptTokenCount") + count(usage, "toolUsePromptTokenCount")
    thoughts = count(usage, "thoughtsTokenCount")
    completion = count(usage, "candidatesTokenCount") + thoughts
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": count(usage, "cachedContentTokenCount")},
        "completion_tokens_details": {"reasoning_tokens": thoughts},
    }


# -- errors ----------------------------------------------------------------------------


def error(status: int, body: bytes) -> bytes:
    """An OpenAI error body for a Google one, ``{"error": {"code", "message", "status",
    "details"}}`` (or that object alone in an array, as the streaming endpoint may
    answer): ``code`` is Google's status (``INVALID_ARGUMENT``, ``RESOURCE_EXHAUSTED``...)
    and ``type`` OpenAI's nearest (:data:`_ERROR_TYPES`; an unknown status is
    ``server_error`` at ``status`` ≥ 500, else ``invalid_request_error``); ``details`` are
    dropped. A body of any other shape is returned unchanged."""
    google = _google_error(body)
    if google is None:
        return body
    return orjson.dumps(_openai_error(google, status))


def _google_error(body: bytes) -> Mapping[str, Any] | None:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("status"), str):
        return error
    return None


def _openai_error(error: Mapping[str, Any], status: int) -> dict[str, Any]:
    kind = error.get("status")
    fallback = "server_error" if status >= 500 else "invalid_request_error"
    return {
        "error": {
            "message": str(error.get("message", "")),
            "type": _ERROR_TYPES.get(kind, fallback) if isinstance(kind, str) else fallback,
            "param": None,
            "code": kind if isinstance(kind, str) else None,
        }
    }


# -- streams ---------------------------------------------------------------------------


class StreamTranslator:
    """Translate a Gemini ``alt=sse`` stream into chat-completion chunks, block by block.

    Gemini's stream is a sequence of ``data: <GenerateContentResponse>`` blocks, each with
    the next parts of the candidate, and no ``[DONE]``. :meth:`feed` takes one block and
    returns the chat SSE blocks it makes: the first block → the first chunk (``role:
    assistant``, empty ``content``), then for each part a ``content`` delta (text), a
    ``reasoning_content`` delta (a thought) or one ``tool_calls`` delta with the whole call
    (index by order of appearance, id, name and the complete arguments); the block with a
    ``finishReason`` (or a ``promptFeedback.blockReason``) → the chunk with
    ``finish_reason``, the usage chunk (``choices: []``, from the last ``usageMetadata``,
    which Gemini reports cumulatively) when ``include_usage``, and ``data: [DONE]``. A
    block holding an ``error`` → a chat error chunk, ``{"error": {...}}`` as :func:`error`
    writes it. Both set :attr:`finished`; blocks fed after that are ignored.
    """

    def __init__(self, *, model: str, include_usage: bool) -> None:
        self._finished = False
        self._chunks = ChatChunks(model)
        self._include_usage = include_usage
        self._started = False
        self._usage: Mapping[str, Any] = {}
        self._tool_calls = 0

    @property
    def finished(self) -> bool:
        """True once the client's stream is complete (after the terminal block)."""
        return self._finished

    def feed(self, block: bytes) -> list[bytes]:
        """The chat SSE blocks for one Gemini event block. Raises
        :class:`UpstreamBadResponse` for a block whose data is not a GenerateContentResponse."""
        if self._finished:
            return []
        try:
            data = sse.object_of(block)
        except ValueError:
            raise UpstreamBadResponse("a Gemini stream event is not a JSON object") from None
        if data is None:
            return []
        error = data.get("error")
        if isinstance(error, Mapping):
            self._finished = True
            code = error.get("code")
            return [sse.encode(_openai_error(error, code if isinstance(code, int) else 500))]
        out: list[bytes] = []
        if not self._started:
            self._started = True
            self._chunks.id = _completion_id(data.get("responseId"))
            out.append(self._chunks.delta({"role": "assistant", "content": ""}))
        if isinstance(data.get("usageMetadata"), Mapping):
            self._usage = data["usageMetadata"]
        candidate = _first_candidate(data)
        if candidate is None:
            if _block_reason(data) is not None:
                out += self._stop("content_filter")
            return out
        for part in _parts_of(candidate):
            out += self._part(part)
        fields = _candidate_fields(candidate)
        if fields:
            choice = {"index": 0, "delta": {}, "finish_reason": None, "logprobs": None}
            out.append(self._chunks.chunk([{**choice, **fields}]))
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason:
            out += self._stop(_finish_reason(reason, self._tool_calls > 0))
        return out

    def _part(self, part: Mapping[str, Any]) -> list[bytes]:
        text = part.get("text")
        if isinstance(text, str) and text:
            field = "reasoning_content" if part.get("thought") else "content"
            return [self._chunks.delta({field: text})]
        if isinstance(part.get("functionCall"), Mapping):
            call = {"index": self._tool_calls, **_tool_call(part)}
            self._tool_calls += 1
            return [self._chunks.delta({"tool_calls": [call]})]
        return []

    def _stop(self, finish_reason: str) -> list[bytes]:
        self._finished = True
        out = [self._chunks.delta({}, finish_reason)]
        if self._include_usage:
            out.append(self._chunks.chunk([], usage=_chat_usage(self._usage)))
        out.append(sse.DONE)
        return out
