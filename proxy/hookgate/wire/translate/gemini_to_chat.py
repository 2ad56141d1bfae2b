"""A Gemini API client (Gemini CLI, the ``google-genai`` SDKs) talking through hookgate:
its ``generateContent`` request becomes a Chat Completions request, which the pipeline
runs like any other (and which reaches a Gemini upstream through
:mod:`hookgate.wire.translate.chat_to_gemini`, an Anthropic one through
:mod:`hookgate.wire.translate.chat_to_messages`); the chat answer, its stream and its
errors come back as Gemini ones.

Request (:func:`request`), field by field:

* translated: ``contents`` and ``systemInstruction`` (below); ``tools`` and
  ``toolConfig`` (below); in ``generationConfig``: ``maxOutputTokens`` → ``max_tokens``,
  ``temperature``, ``topP`` → ``top_p``, ``stopSequences`` → ``stop``, ``seed``,
  ``presencePenalty`` and ``frequencyPenalty`` → ``presence_penalty`` and
  ``frequency_penalty``, ``responseMimeType: application/json`` → ``response_format``
  ``json_object``, and with ``responseJsonSchema`` (or ``responseSchema``, its OpenAPI
  types lowered to JSON Schema's) ``json_schema``; the model (from the URL) → ``model``;
  the endpoint → ``stream`` with ``stream_options.include_usage`` (so the stream
  reports the usage the last Gemini chunk carries).
* ``generationConfig.thinkingConfig`` → ``reasoning_effort`` when the caller says every
  model that may serve the call reasons (``reasoning``): ``thinkingLevel`` as it is
  (lowered), else ``thinkingBudget`` 0 → ``none``, up to 1024 → ``low``, up to 8192 →
  ``medium``, more → ``high`` (``-1``, Gemini's dynamic budget, → the model's default).
  Otherwise it is left out: a model that does not reason, or might not, refuses
  ``reasoning_effort``, and the Gemini CLI sends a budget on every call.
* not in the chat request, as a chat model has no field for them (the Gemini CLI sends
  ``topK`` on every call): ``generationConfig.topK`` (a sampling hint),
  ``safetySettings`` (Gemini's own content filters), ``generationConfig.responseModalities``
  of text only, ``generationConfig.mediaResolution`` (a hint for Gemini's image
  tokenizer), ``candidateCount`` 1, ``responseLogprobs`` false, and
  ``systemInstruction.role``. A Gemini target gets them back, with the client's exact
  ``thinkingConfig``, tools and ``toolConfig``
  (:mod:`hookgate.wire.translate.gemini_native`, which the server keeps beside the chat
  request); no other target sees them. ``labels`` (Vertex AI's billing labels) go to no
  target: Gemini's API, the one hookgate calls, refuses them.
* refused with :class:`~hookgate.errors.InvalidRequest` (``param`` naming the field):
  ``cachedContent`` (a Gemini cache), ``candidateCount`` above 1, log probabilities,
  audio or image output (``responseModalities``, ``speechConfig``, ``imageConfig``),
  tools other than function declarations (code execution, Maps, file search, ...; and
  Google Search and URL context unless every model that may serve the call is a Gemini
  model: ``google_tools``, :data:`GOOGLE_TOOLS`), and any unknown field (code
  ``unknown_parameter``).
* Google Search and URL context (``google_tools``): left out of the chat request, so the
  policies see the call without them, and given back to the Gemini model by
  :mod:`~hookgate.wire.translate.gemini_native`.

Contents: ``systemInstruction`` text parts become one leading ``system`` message (its
content a string, or text parts when there are several). A ``user`` turn (or one
without a role, or Gemini's older ``function`` role) becomes a ``tool`` message per
``functionResponse`` part, then one ``user`` message with the rest: text parts as text
parts, ``inlineData`` as an ``image_url`` (an image), ``input_audio`` (WAV or MP3) or
``file`` part (any other type), each as a base64 ``data:`` URL. A ``model`` turn becomes
an ``assistant`` message: its text (a string, or text parts when there are several;
``thought`` parts are dropped: thinking cannot be replayed to another model as text, and
a Gemini model needs only the signatures, which ride on the call ids) and its
``functionCall`` parts as ``tool_calls``. A part's ``thoughtSignature`` (on a text part),
``videoMetadata`` and ``mediaResolution`` are left out, and given back to a Gemini
target (:mod:`~hookgate.wire.translate.gemini_native`).
Refused: ``fileData`` (a file by URI, which hookgate does not fetch), executable code and
its results, and any other part.

What of the contents a Gemini model gets as the client sent them, through this module
and :mod:`~hookgate.wire.translate.chat_to_gemini` (the texts as the policies left
them): every turn of a conversation whose roles alternate, as the Gemini CLI's do, its
text, inline data and function calls (ids, arguments, signatures) and responses, and
the parts' metadata. Not quite: ``thought`` parts (above); text after a function call
in a model turn (before it); empty text parts (left out); consecutive turns of one role
(one turn); a ``functionCall`` without ``args`` (``args: {}``); ``audio/mpeg`` data
(``audio/mp3``); a ``functionResponse``'s fields but ``id``, ``name`` and ``response``.

Tool call ids: a ``functionCall`` in the history gets the chat id ``call_<24 hex>`` (a
digest of its place in the conversation, so a call keeps its id as the conversation
grows), then the marks of :mod:`~hookgate.wire.translate.chat_to_gemini` with its Gemini
``id`` and ``thoughtSignature``: a Gemini upstream gets both back byte for byte, any
other the head alone. A ``functionResponse`` answers the call with its ``id``, else the
earliest unanswered call of its ``name`` (refused when there is none); its ``response``
becomes the tool message's content: the text of ``{"output": <text>}`` (the shape the
Gemini CLI sends, and the one ``chat_to_gemini`` writes back) unless that text is itself
a JSON object, else the object as JSON (so a Gemini model gets the same object back).

Tools: ``functionDeclarations`` become function tools (``parametersJsonSchema`` → the
``parameters``, else ``parameters`` with its OpenAPI types lowered; ``response`` and
``responseJsonSchema``, a function's output schema, are dropped: chat has no field for
them, so no policy reads their text, and a Gemini target does not get them back
either). ``toolConfig.functionCallingConfig.mode`` ``AUTO`` and ``VALIDATED`` →
``auto``, ``NONE`` → ``none``, ``ANY`` → ``required``, or the named function when
``allowedFunctionNames`` names one (several are refused); ``toolConfig.retrievalConfig``
(the user's location, for Google's Maps and Search tools: personal data no policy reads)
is dropped.

Answers (:func:`response`, :class:`StreamTranslator`): ``reasoning_content`` → a
``thought`` part, ``content`` and ``refusal`` → text parts, ``tool_calls`` →
``functionCall`` parts (the arguments parsed; ``id`` and ``thoughtSignature`` as a chat
id made by the Gemini translation carries them, none when it carries none, as Gemini
sent none; another provider's chat id as ``id``).
``finish_reason`` → ``finishReason`` (:data:`_FINISH_REASONS`). What Google's tools
reported (``groundingMetadata``, ``urlContextMetadata``), which a Gemini model's chat
choice carries (:data:`~hookgate.wire.translate.chat_to_gemini.CANDIDATE_KEY`, as the
pipeline left it: pii restores its placeholders), goes back on the candidate (in a
stream, on the last chunk, where Gemini sends it), each grounding segment a restored
value moved placed on its text again (:func:`_placed`). Usage: see
:func:`usage_metadata`. Errors are written in Google's shape by the server
(:meth:`~hookgate.errors.HookgateError.to_google_body`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import orjson

from hookgate.errors import InvalidRequest, UpstreamBadResponse, google_error
from hookgate.wire import sse
from hookgate.wire.translate.chat_chunks import read_chunk
from hookgate.wire.translate.chat_to_gemini import CANDIDATE_KEY, ID_MARK, SIGNATURE_MARK, id_fields
from hookgate.wire.translate.fields import arguments_object, count, mapping

_TRANSLATED = frozenset({"contents", "systemInstruction", "tools", "toolConfig",
                         "generationConfig", "model"})  # fmt: skip
_DROPPED = frozenset({"safetySettings", "labels"})
_REFUSED: Mapping[str, str] = {"cachedContent": "a Gemini cache means nothing to it"}

_CONFIG_TRANSLATED = frozenset(
    {"maxOutputTokens", "temperature", "topP", "stopSequences", "seed", "presencePenalty",
     "frequencyPenalty", "responseMimeType", "responseJsonSchema", "responseSchema",
     "_responseJsonSchema"}
)  # fmt: skip
_CONFIG_DROPPED = frozenset({"topK", "thinkingConfig", "mediaResolution"})

GOOGLE_TOOLS = frozenset({"googleSearch", "urlContext"})
"""Google's own tools a Gemini model may be given through hookgate: Gemini runs them and
answers in text, with what it read in the candidate's ``groundingMetadata`` and
``urlContextMetadata`` (:data:`~hookgate.wire.translate.chat_to_gemini.CANDIDATE_FIELDS`),
which the chat answer carries back. The others are refused: code execution answers in
parts chat cannot carry (``executableCode``, ``codeExecutionResult``), Maps needs the
user's location, file search Gemini-side stores, computer use its own action loop."""

_FINISH_REASONS: Mapping[str, str] = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "function_call": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
"""Gemini ``finishReason`` for each chat ``finish_reason`` (an unknown one is ``OTHER``)."""

_AUDIO_FORMATS: Mapping[str, str] = {"audio/wav": "wav", "audio/mp3": "mp3", "audio/mpeg": "mp3"}


def request(
    body: Mapping[str, Any],
    *,
    model: str,
    stream: bool,
    reasoning: bool,
    google_tools: bool = False,
) -> dict[str, Any]:
    """The chat-completions request for a Gemini ``GenerateContentRequest`` ``body`` to
    ``model`` (named in the URL), streamed or not; ``reasoning``: every model that may
    serve it reasons; ``google_tools``: every model that may serve it is a Gemini model,
    so Google's own tools (:data:`GOOGLE_TOOLS`) are left out of the chat request rather
    than refused (see the module docstring). Raises :class:`InvalidRequest` for a field or
    content that cannot be translated."""
    _check_fields(body)
    contents = body.get("contents")
    if not isinstance(contents, list):
        raise InvalidRequest("contents: a list of Content is required", param="contents")
    messages = _system(body.get("systemInstruction"))
    messages += _Conversation().messages(contents)
    out: dict[str, Any] = {"model": model, "messages": messages}
    config = mapping(body.get("generationConfig"))
    _translate_config(config, out)
    effort = _effort(mapping(config.get("thinkingConfig"))) if reasoning else None
    if effort is not None:
        out["reasoning_effort"] = effort
    _translate_tools(body, out, google_tools=google_tools)
    if stream:
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    return out


def _refuse(field: str, why: str, code: str = "unsupported_parameter") -> InvalidRequest:
    return InvalidRequest(f"'{field}' cannot be translated for this model: {why}",
                          param=field, code=code)  # fmt: skip


def _check_fields(body: Mapping[str, Any]) -> None:
    for field, value in body.items():
        if field in _TRANSLATED or field in _DROPPED or value is None:
            continue
        if field in _REFUSED:
            raise _refuse(field, _REFUSED[field])
        raise InvalidRequest(
            f"unknown field '{field}': hookgate cannot translate it", param=field,
            code="unknown_parameter",
        )  # fmt: skip
    config = body.get("generationConfig")
    if config is not None and not isinstance(config, Mapping):
        raise InvalidRequest("generationConfig must be an object", param="generationConfig")
    for field, value in (config or {}).items():
        where = f"generationConfig.{field}"
        if field in _CONFIG_TRANSLATED or field in _CONFIG_DROPPED or value is None:
            continue
        if field == "candidateCount" and value == 1:
            continue
        if field == "responseModalities" and value in (["TEXT"], []):
            continue
        if field in ("responseLogprobs", "logprobs") and not value:
            continue
        if field == "candidateCount":
            raise _refuse(where, "hookgate translates one candidate")
        if field in ("responseLogprobs", "logprobs"):
            raise _refuse(where, "hookgate does not translate log probabilities")
        if field in ("responseModalities", "speechConfig", "imageConfig"):
            raise _refuse(where, "hookgate translates text output only")
        raise InvalidRequest(
            f"unknown field '{where}': hookgate cannot translate it", param=where,
            code="unknown_parameter",
        )  # fmt: skip


def _translate_config(config: Mapping[str, Any], out: dict[str, Any]) -> None:
    names = {"maxOutputTokens": "max_tokens", "temperature": "temperature", "topP": "top_p",
             "seed": "seed", "presencePenalty": "presence_penalty",
             "frequencyPenalty": "frequency_penalty"}  # fmt: skip
    for field, name in names.items():
        if config.get(field) is not None:
            out[name] = config[field]
    if config.get("stopSequences"):
        out["stop"] = list(config["stopSequences"])
    schema = next(
        (config[f] for f in ("responseJsonSchema", "_responseJsonSchema") if config.get(f)),
        None,
    )
    if schema is None and config.get("responseSchema"):
        schema = json_schema(config["responseSchema"])
    if schema is not None:
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": schema},
        }
    elif config.get("responseMimeType") == "application/json":
        out["response_format"] = {"type": "json_object"}


def _effort(thinking: Mapping[str, Any]) -> str | None:
    """The ``reasoning_effort`` of a ``thinkingConfig`` (None: the model's default). Its
    keys in either spelling Gemini's API reads (``google-genai`` writes ``thinking_budget``)."""
    level = thinking.get("thinkingLevel", thinking.get("thinking_level"))
    if isinstance(level, str) and level.lower() in ("minimal", "low", "medium", "high"):
        return level.lower()
    budget = thinking.get("thinkingBudget", thinking.get("thinking_budget"))
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        return None
    if budget == 0:
        return "none"
    return "low" if budget <= 1024 else "medium" if budget <= 8192 else "high"


def json_schema(schema: Any) -> Any:
    """A Gemini OpenAPI ``Schema`` as JSON Schema: ``type`` names lowered (``OBJECT`` →
    ``object``), ``nullable: true`` as a ``null`` type, everything else as it is."""
    if isinstance(schema, list):
        return [json_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key == "nullable":
            continue
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {name: json_schema(s) for name, s in value.items()}
        elif key in ("items", "anyOf"):
            out[key] = json_schema(value)
        else:
            out[key] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


# -- contents --------------------------------------------------------------------------


def _texts(content: Any, where: str) -> list[str]:
    """The texts of a text-only ``Content`` (its ``parts``; a string is one text)."""
    if isinstance(content, str):
        return [content]
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list):
        raise InvalidRequest(f"{where}.parts must be a list", param=f"{where}.parts")
    texts = []
    for j, part in enumerate(parts):
        if not (isinstance(part, Mapping) and isinstance(part.get("text"), str)):
            raise InvalidRequest(f"{where}.parts[{j}]: only text parts are translated here",
                                 param=f"{where}.parts[{j}]", code="unsupported_value")  # fmt: skip
        texts.append(part["text"])
    return texts


def _system(instruction: Any) -> list[dict[str, Any]]:
    if instruction is None:
        return []
    texts = [t for t in _texts(instruction, "systemInstruction") if t]
    return [{"role": "system", "content": _content(texts)}] if texts else []


def _content(texts: list[str]) -> str | list[dict[str, Any]]:
    """Chat content of texts: one as a string, several as text parts (one Gemini part
    each, when translated back)."""
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts]


class _Conversation:
    """The chat messages of Gemini ``contents``; remembers the calls made so far, to
    pair each ``functionResponse`` with its call."""

    def __init__(self) -> None:
        self._by_id: dict[str, str] = {}
        self._open: list[tuple[str, str]] = []
        """Calls not answered yet: (name, chat id), in order."""

    def messages(self, contents: list[Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i, content in enumerate(contents):
            where = f"contents[{i}]"
            if not isinstance(content, Mapping):
                raise InvalidRequest(f"{where} must be an object", param=where)
            parts = content.get("parts")
            if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
                raise InvalidRequest(f"{where}.parts must be a list of parts",
                                     param=f"{where}.parts")  # fmt: skip
            role = content.get("role") or "user"
            if role == "model":
                out += self._model(i, parts, where)
            elif role in ("user", "function"):
                out += self._user(parts, where)
            else:
                raise InvalidRequest(f"{where}.role must be 'user' or 'model', not {role!r}",
                                     param=f"{where}.role", code="unsupported_value")  # fmt: skip
        return out

    def _model(self, turn: int, parts: list[Mapping[str, Any]], where: str) -> list[Any]:
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for j, part in enumerate(parts):
            at = f"{where}.parts[{j}]"
            if isinstance(part.get("functionCall"), Mapping):
                calls.append(self._call(turn, j, part, at))
            elif isinstance(part.get("text"), str):
                if part["text"] and not part.get("thought"):
                    texts.append(part["text"])
            else:
                raise _refuse_part(part, at)
        if not texts and not calls:
            return []
        message: dict[str, Any] = {
            "role": "assistant",
            "content": _content(texts) if texts else None,
        }
        if calls:
            message["tool_calls"] = calls
        return [message]

    def _call(self, turn: int, j: int, part: Mapping[str, Any], where: str) -> dict[str, Any]:
        call = part["functionCall"]
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidRequest(f"{where}.functionCall.name must be a string",
                                 param=f"{where}.functionCall.name")  # fmt: skip
        digest = hashlib.sha256(f"{turn}:{j}".encode()).hexdigest()[:24]
        chat_id = f"call_{digest}"
        gemini_id = call.get("id")
        if isinstance(gemini_id, str) and gemini_id:
            chat_id += ID_MARK + gemini_id
            self._by_id[gemini_id] = chat_id
        signature = part.get("thoughtSignature")
        if isinstance(signature, str) and signature:
            chat_id += SIGNATURE_MARK + signature
            if isinstance(gemini_id, str) and gemini_id:
                self._by_id[gemini_id] = chat_id
        self._open.append((name, chat_id))
        args = call.get("args")
        return {
            "id": chat_id,
            "type": "function",
            "function": {"name": name, "arguments": orjson.dumps(args or {}).decode()},
        }

    def _user(self, parts: list[Mapping[str, Any]], where: str) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        rest: list[dict[str, Any]] = []
        for j, part in enumerate(parts):
            at = f"{where}.parts[{j}]"
            if isinstance(part.get("functionResponse"), Mapping):
                tools.append(self._result(part["functionResponse"], at))
            elif isinstance(part.get("text"), str):
                if part["text"] and not part.get("thought"):
                    rest.append({"type": "text", "text": part["text"]})
            elif isinstance(part.get("inlineData"), Mapping):
                rest.append(_inline(part["inlineData"], f"{at}.inlineData"))
            else:
                raise _refuse_part(part, at)
        if not rest:
            return tools
        if all(p["type"] == "text" for p in rest):
            return [*tools, {"role": "user", "content": "".join(p["text"] for p in rest)
                             if len(rest) == 1 else rest}]  # fmt: skip
        return [*tools, {"role": "user", "content": rest}]

    def _result(self, result: Mapping[str, Any], where: str) -> dict[str, Any]:
        name, gemini_id = result.get("name"), result.get("id")
        chat_id = self._by_id.get(gemini_id) if isinstance(gemini_id, str) else None
        if chat_id is None:
            chat_id = next((c for n, c in self._open if n == name), None)
        if chat_id is None:
            raise InvalidRequest(
                f"{where}.functionResponse answers no earlier functionCall (name {name!r}, "
                f"id {gemini_id!r})",
                param=f"{where}.functionResponse",
            )
        self._open = [(n, c) for n, c in self._open if c != chat_id]
        response = result.get("response")
        text = _plain_output(response)  # read back as {"output": text} (chat_to_gemini)
        if text is None:
            text = orjson.dumps(response if response is not None else {}).decode()
        return {"role": "tool", "tool_call_id": chat_id, "content": text}


def _plain_output(response: Any) -> str | None:
    """The text of a function's ``response`` ``{"output": <text>}``, unless that text is
    itself a JSON object (which a Gemini model would get back as that object)."""
    if not (isinstance(response, Mapping) and list(response) == ["output"]):
        return None
    output = response["output"]
    if isinstance(output, str) and (not output or arguments_object(output) is None):
        return output
    return None


def _refuse_part(part: Mapping[str, Any], where: str) -> InvalidRequest:
    kind = next((k for k in part if k not in ("thought", "thoughtSignature")), None)
    return InvalidRequest(
        f"{where}: a part of kind {kind!r} cannot be translated for this model",
        param=f"{where}.{kind}" if kind else where,
        code="unsupported_value",
    )


def _inline(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    mime_type, payload = data.get("mimeType"), data.get("data")
    if not (isinstance(mime_type, str) and isinstance(payload, str)):
        raise InvalidRequest(f"{where} needs a mimeType and base64 data", param=where)
    if mime_type in _AUDIO_FORMATS:
        return {"type": "input_audio",
                "input_audio": {"data": payload, "format": _AUDIO_FORMATS[mime_type]}}  # fmt: skip
    url = f"data:{mime_type};base64,{payload}"
    if mime_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "file", "file": {"file_data": url}}


# -- tools -----------------------------------------------------------------------------


def _translate_tools(body: Mapping[str, Any], out: dict[str, Any], *, google_tools: bool) -> None:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise InvalidRequest("tools must be a list", param="tools")
    functions: list[dict[str, Any]] = []
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, Mapping):
            raise InvalidRequest(f"{where} must be an object", param=where)
        for kind, value in tool.items():
            if kind in GOOGLE_TOOLS and google_tools:
                continue
            if kind in GOOGLE_TOOLS:
                raise _refuse(
                    f"{where}.{kind}",
                    "Google's own tools go only to a model "
                    "every target of which is a Gemini provider",
                    "unsupported_value",
                )
            if kind != "functionDeclarations":
                raise _refuse(f"{where}.{kind}", "only function declarations (and, for a "
                              "Gemini model, googleSearch and urlContext) are translated",
                              code="unsupported_value")  # fmt: skip
            if not isinstance(value, list):
                raise InvalidRequest(f"{where}.{kind} must be a list", param=f"{where}.{kind}")
            functions += [_function(d, f"{where}.{kind}[{k}]") for k, d in enumerate(value)]
    if functions:
        out["tools"] = functions
    choice = _tool_choice(mapping(mapping(body.get("toolConfig")).get("functionCallingConfig")))
    if choice is not None and functions:
        out["tool_choice"] = choice


def _function(declaration: Any, where: str) -> dict[str, Any]:
    if not (isinstance(declaration, Mapping) and isinstance(declaration.get("name"), str)):
        raise InvalidRequest(f"{where} needs a name", param=where)
    function: dict[str, Any] = {"name": declaration["name"]}
    if declaration.get("description") is not None:
        function["description"] = declaration["description"]
    if declaration.get("parametersJsonSchema") is not None:
        function["parameters"] = declaration["parametersJsonSchema"]
    elif declaration.get("parameters") is not None:
        function["parameters"] = json_schema(declaration["parameters"])
    return {"type": "function", "function": function}


def _tool_choice(config: Mapping[str, Any]) -> Any:
    mode = config.get("mode")
    names = config.get("allowedFunctionNames") or []
    if mode in (None, "MODE_UNSPECIFIED"):
        return None
    if mode in ("AUTO", "VALIDATED"):
        return "auto"
    if mode == "NONE":
        return "none"
    if mode == "ANY" and not names:
        return "required"
    if mode == "ANY" and isinstance(names, list) and len(names) == 1:
        return {"type": "function", "function": {"name": names[0]}}
    raise _refuse("toolConfig.functionCallingConfig", f"mode {mode!r} with allowedFunctionNames "
                  f"{names!r} (one name at most)", code="unsupported_value")  # fmt: skip


# -- answers ---------------------------------------------------------------------------


_MADE = re.compile(r"call_[0-9a-f]{24}(?:$|~)")
"""The head of a chat tool call id the Gemini translation made."""


def function_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """The ``functionCall`` part of a complete chat tool call (see the module docstring).
    Raises :class:`UpstreamBadResponse` when its arguments are not a JSON object."""
    function = mapping(call.get("function"))
    args = arguments_object(function.get("arguments") or "{}")
    if args is None:
        raise UpstreamBadResponse("a tool call's arguments are not a JSON object")
    chat_id = call.get("id")
    gemini_id, signature = id_fields(chat_id)
    out: dict[str, Any] = {"name": function.get("name"), "args": args}
    if gemini_id is not None:
        out["id"] = gemini_id
    elif isinstance(chat_id, str) and chat_id and not _MADE.match(chat_id):
        out["id"] = chat_id  # another provider's id; one the Gemini translation made has none
    part: dict[str, Any] = {"functionCall": out}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def response(body: Mapping[str, Any], *, model: str) -> dict[str, Any]:
    """The ``GenerateContentResponse`` for a ``chat.completion`` answer, reporting
    ``model`` (the model the client named). Raises :class:`UpstreamBadResponse` when the
    answer has no choice."""
    choices = body.get("choices")
    if not (isinstance(choices, list) and choices and isinstance(choices[0], Mapping)):
        raise UpstreamBadResponse("the chat completion has no choice")
    message = mapping(choices[0].get("message"))
    parts: list[dict[str, Any]] = []
    if isinstance(message.get("reasoning_content"), str) and message["reasoning_content"]:
        parts.append({"text": message["reasoning_content"], "thought": True})
    for field in ("content", "refusal"):
        if isinstance(message.get(field), str) and message[field]:
            parts.append({"text": message[field]})
    parts += [function_call(c) for c in message.get("tool_calls") or () if isinstance(c, Mapping)]
    candidate = {
        "content": {"role": "model", "parts": parts},
        "finishReason": finish_reason(choices[0].get("finish_reason")),
        "index": 0,
        **_placed(_gemini_fields(choices[0]), _text(message.get("content"))),
    }
    return {
        "candidates": [candidate],
        "usageMetadata": usage_metadata(mapping(body.get("usage"))),
        "modelVersion": model,
        "responseId": str(body.get("id") or ""),
    }


def _gemini_fields(choice: Mapping[str, Any]) -> dict[str, Any]:
    """The Gemini candidate's own fields a chat choice carries from a Gemini model
    (:data:`~hookgate.wire.translate.chat_to_gemini.CANDIDATE_KEY`), as they are."""
    return dict(mapping(choice.get(CANDIDATE_KEY)))


def _text(content: Any) -> str:
    """The text of a chat message's ``content`` (a string or text parts)."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else ()
    return "".join(str(mapping(p).get("text") or "") for p in parts)


def _placed(fields: dict[str, Any], text: str) -> dict[str, Any]:
    """``fields`` with each grounding support's segment placed where its ``text`` is in
    ``text``, the answer's: a segment's offsets (UTF-8 bytes) no longer point at its text
    when ``pii`` restored a value before it that is longer or shorter than its
    placeholder. A segment whose offsets still span its text is left as it is; else
    the occurrence nearest the model's offsets is taken (none: left as it is)."""
    grounding = mapping(fields.get("groundingMetadata"))
    supports = grounding.get("groundingSupports")
    if not isinstance(supports, list):
        return fields
    data = text.encode()
    placed = [_segment_placed(support, data) for support in supports]
    return {**fields, "groundingMetadata": {**grounding, "groundingSupports": placed}}


def _segment_placed(support: Any, data: bytes) -> Any:
    segment = mapping(mapping(support).get("segment"))
    quoted = segment.get("text")
    if not (isinstance(quoted, str) and quoted):
        return support
    needle = quoted.encode()
    start, end = segment.get("startIndex", 0), segment.get("endIndex")
    start = start if isinstance(start, int) else 0
    if end == start + len(needle) and data[start:end] == needle:
        return support
    found = [m.start() for m in re.finditer(re.escape(needle), data)]
    if not found:
        return support
    at = min(found, key=lambda i: abs(i - start))
    placed = {**segment, "startIndex": at, "endIndex": at + len(needle)}
    if not at and "startIndex" not in segment:
        del placed["startIndex"]  # Gemini leaves a 0 out
    return {**support, "segment": placed}


def finish_reason(reason: Any) -> str:
    """The Gemini ``finishReason`` of a chat ``finish_reason``."""
    return _FINISH_REASONS.get(reason, "OTHER") if isinstance(reason, str) else "STOP"


def usage_metadata(usage: Mapping[str, Any]) -> dict[str, int]:
    """Gemini's ``usageMetadata`` for a chat ``usage``: ``promptTokenCount`` the prompt
    tokens (of which ``cachedContentTokenCount`` were cached), ``thoughtsTokenCount`` the
    reasoning tokens and ``candidatesTokenCount`` the rest of the completion (Gemini counts
    thoughts apart, OpenAI within), ``totalTokenCount`` their sum."""
    prompt = count(usage, "prompt_tokens")
    completion = count(usage, "completion_tokens")
    thoughts = count(mapping(usage.get("completion_tokens_details")), "reasoning_tokens")
    cached = count(mapping(usage.get("prompt_tokens_details")), "cached_tokens")
    out = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": max(0, completion - thoughts),
        "totalTokenCount": prompt + completion,
    }
    if thoughts:
        out["thoughtsTokenCount"] = thoughts
    if cached:
        out["cachedContentTokenCount"] = cached
    return out


class StreamTranslator:
    """Translate a chat-completions stream into Gemini's ``alt=sse`` stream, chunk by chunk.

    :meth:`feed` takes one chat SSE block and returns the Gemini blocks (``data:
    <GenerateContentResponse>``) it makes: one per ``content`` delta (a text part) and per
    ``reasoning_content`` delta (a ``thought`` part), as they arrive. A tool call's pieces
    are gathered and sent whole, as Gemini sends a ``functionCall``, in the last chunk,
    which carries the ``finishReason``, the usage and what Google's tools reported: it
    is written when the usage chunk after the ``finish_reason`` arrives, or at
    ``[DONE]``. An error chunk becomes
    ``data: {"error": {"code", "message", "status"}}``. Both set :attr:`finished`; blocks
    fed after that are ignored.
    """

    def __init__(self, *, model: str) -> None:
        self.finished = False
        self._model = model
        self._id = ""
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: Any = None
        self._usage: Mapping[str, Any] = {}
        self._gemini: dict[str, Any] = {}
        self._text: list[str] = []

    def feed(self, block: bytes) -> list[bytes]:
        """The Gemini event blocks for one chat SSE block. Raises
        :class:`UpstreamBadResponse` for a chunk that is not a JSON object."""
        if self.finished:
            return []
        if sse.is_done(block):
            return self._stop()
        chunk = read_chunk(block)
        if chunk is None:
            return []
        if isinstance(chunk.get("error"), Mapping):
            self.finished = True
            inner = chunk["error"]
            message = inner.get("message")
            code = inner.get("code")
            status = 400 if inner.get("type") == "invalid_request_error" else 500
            return [sse.encode(google_error(
                status, message if isinstance(message, str) else "the upstream stream failed",
                code if isinstance(code, str) else None,
            ))]  # fmt: skip
        self._id = self._id or str(chunk.get("id") or "")
        out: list[bytes] = []
        choices = chunk.get("choices") or []
        if choices and isinstance(choices[0], Mapping):
            delta = mapping(choices[0].get("delta"))
            for field, thought in (("reasoning_content", True), ("content", False),
                                   ("refusal", False)):  # fmt: skip
                if isinstance(delta.get(field), str) and delta[field]:
                    part: dict[str, Any] = {"text": delta[field]}
                    if thought:
                        part["thought"] = True
                    elif field == "content":
                        self._text.append(delta[field])
                    out.append(self._chunk([part]))
            for call in delta.get("tool_calls") or ():
                if isinstance(call, Mapping):
                    self._gather(call)
            self._gemini.update(_gemini_fields(choices[0]))
            if choices[0].get("finish_reason"):
                self._finish = choices[0]["finish_reason"]
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = chunk["usage"]
            if self._finish is not None:
                out += self._stop()
        return out

    def _gather(self, call: Mapping[str, Any]) -> None:
        index = call.get("index", 0)
        gathered = self._calls.setdefault(index if isinstance(index, int) else 0,
                                          {"id": None, "name": "", "arguments": ""})  # fmt: skip
        function = mapping(call.get("function"))
        if call.get("id"):
            gathered["id"] = call["id"]
        if isinstance(function.get("name"), str):
            gathered["name"] += function["name"]
        if isinstance(function.get("arguments"), str):
            gathered["arguments"] += function["arguments"]

    def _chunk(self, parts: list[dict[str, Any]], **last: Any) -> bytes:
        candidate = {"content": {"role": "model", "parts": parts}, "index": 0, **last}
        data: dict[str, Any] = {"candidates": [candidate], "modelVersion": self._model,
                                "responseId": self._id}  # fmt: skip
        if last:
            data["usageMetadata"] = usage_metadata(self._usage)
        return sse.encode(data)

    def _stop(self) -> list[bytes]:
        self.finished = True
        parts = [
            function_call({"id": c["id"], "function": {"name": c["name"],
                                                       "arguments": c["arguments"]}})
            for _, c in sorted(self._calls.items())
        ]  # fmt: skip
        return [self._chunk(parts or [{"text": ""}], finishReason=finish_reason(self._finish),
                            **_placed(self._gemini, "".join(self._text)))]  # fmt: skip
