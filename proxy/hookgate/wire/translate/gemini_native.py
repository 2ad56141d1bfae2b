"""What a Gemini API client sent that Chat Completions cannot carry, kept beside the chat
call the server translated its request to (:attr:`~hookgate.pipeline.types.ModelCall.gemini`),
so a Gemini target gets it back: a Gemini client talking to a Gemini model is sent what it
sent, apart from what the policies changed.

The door (:mod:`hookgate.wire.translate.gemini_to_chat`) writes the policies a chat
request; :func:`of` keeps, beside it, the client's own settings (:class:`GeminiRequest`)
and the chat values the door made of them. The Gemini leg
(:mod:`hookgate.providers.translating`) translates the chat request the pipeline passed
on (:mod:`hookgate.wire.translate.chat_to_gemini`), then :func:`restore` puts the client's
settings back, group by group (:data:`_CONFIG_GROUPS`, :data:`_GROUPS`): a group whose
chat fields are as the door wrote them is sent as the client sent it (its exact
``thinkingConfig`` rather than the budget ``reasoning_effort`` buckets it to, ``parameters``
in OpenAPI types rather than lowered to ``parametersJsonSchema``, ``toolConfig`` mode
``VALIDATED`` rather than ``AUTO``, penalties of 0, ``responseSchema``), and one a policy
changed (``pii`` redacting a tool description, a budget lowering ``max_tokens``) is sent
as translated from the chat request, which holds the change. Settings chat has no field
for are always the client's: ``generationConfig.topK``, ``mediaResolution``,
``responseModalities``, ``candidateCount``, ``responseLogprobs``, ``safetySettings``, and
``systemInstruction.role``; and Google's own tools (``googleSearch``, ``urlContext``:
:data:`~hookgate.wire.translate.gemini_to_chat.GOOGLE_TOOLS`), which the door lets
through only when every target is a Gemini model, leaving them out of the chat request
(the policies see the call without them). Every other target never sees them. The
result is then fitted to its model as any translated call is
(:mod:`hookgate.wire.translate.fit`).

Nothing kept here holds text no policy has seen: a group with text in it (tool
descriptions and schemas, ``stopSequences``, the output schema) is sent as the client
sent it only when its chat form, which the policies read, came through unchanged, and the
texts of both forms are the same. So left out, with their reason:

* a function declaration's ``response`` and ``responseJsonSchema`` (its output's schema):
  text chat has no field for, so no policy would have read it; a model takes it as a hint.
* ``toolConfig.retrievalConfig`` (the user's location, for the Maps and Search tools:
  personal data no policy reads) and ``labels`` (Vertex AI's billing labels, which
  Gemini's API, the one hookgate calls, refuses).

What chat carries is taken from the chat request, the policies' version of it:
``contents`` and ``systemInstruction`` (see :mod:`~.gemini_to_chat` for what of them
comes through two translations unchanged). What a part carries beside its content
(:data:`_PART_METADATA`: a text part's ``thoughtSignature``, ``videoMetadata``,
``mediaResolution``) is put back on the part it came with when the translated turns
still pair with the client's: as many turns, each with the client's role and kinds of
parts in order (function calls and responses by name and id); a turn that does not pair
(a policy removed or added turns, or the translations joined two text parts) goes
without.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hookgate.wire.translate.fields import mapping

_FORMAT = frozenset(
    {"responseMimeType", "responseSchema", "responseJsonSchema", "_responseJsonSchema"}
)

_CONFIG_GROUPS: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = (
    (frozenset({"maxOutputTokens"}), ("max_tokens", "max_completion_tokens")),
    (frozenset({"temperature"}), ("temperature",)),
    (frozenset({"topP"}), ("top_p",)),
    (frozenset({"seed"}), ("seed",)),
    (frozenset({"presencePenalty"}), ("presence_penalty",)),
    (frozenset({"frequencyPenalty"}), ("frequency_penalty",)),
    (frozenset({"stopSequences"}), ("stop",)),
    (_FORMAT, ("response_format",)),
    (frozenset({"thinkingConfig"}), ("reasoning_effort",)),
)
"""``generationConfig`` fields, grouped, and the chat fields the door makes of each group
(a field in no group has no chat counterpart: it is always the client's)."""

_GROUPS: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = (
    (frozenset({"tools"}), ("tools",)),
    (frozenset({"toolConfig"}), ("tools", "tool_choice")),
)
"""Top-level fields, and the chat fields the door makes of each."""

_KINDS = ("text", "functionCall", "functionResponse", "inlineData")
_PART_METADATA = ("thoughtSignature", "videoMetadata", "mediaResolution")
"""What a part may carry beside its content, and chat cannot: a signature (opaque, the
model's), a video's clip and frame rate, the part's image resolution. None of it text."""

_CHAT_FIELDS = frozenset(f for _, fields in (*_CONFIG_GROUPS, *_GROUPS) for f in fields)


@dataclass(frozen=True, slots=True, kw_only=True)
class GeminiRequest:
    """A Gemini client's settings (see the module docstring): JSON values as it sent them,
    and the chat fields the door made of them."""

    fields: Mapping[str, Any]
    """The client's ``tools`` (declarations without output schemas), ``toolConfig``
    (its ``functionCallingConfig``), ``generationConfig`` and ``safetySettings``, those
    it sent."""
    system_role: str | None
    """The ``role`` of its ``systemInstruction`` (chat's system message has none)."""
    turns: tuple[tuple[str, tuple[tuple[str, Mapping[str, Any]], ...]], ...] = ()
    """Each turn of its ``contents``: its role and, for each part the door translates, the
    part's kind (:func:`_kind`) and its metadata chat has no field for
    (:data:`_PART_METADATA`)."""
    chat: Mapping[str, Any]
    """The door's chat values of the fields :func:`restore` compares (absent: not set)."""
    google_tools: tuple[Mapping[str, Any], ...] = ()
    """Google's own tools it sent (:data:`~.gemini_to_chat.GOOGLE_TOOLS`), one
    ``{kind: settings}`` each: the chat request has no form of them, so they always go
    back."""


def of(body: Mapping[str, Any], chat: Mapping[str, Any]) -> GeminiRequest:
    """What ``body``, a ``GenerateContentRequest`` the door translated to ``chat``, has
    that ``chat`` cannot carry (see the module docstring)."""
    fields: dict[str, Any] = {}
    google: list[Mapping[str, Any]] = []
    if isinstance(body.get("tools"), list):
        fields["tools"] = [_tool(tool) for tool in body["tools"]]
        google = [{k: v} for t in body["tools"] for k, v in mapping(t).items()
                  if k != "functionDeclarations"]  # fmt: skip
    calling = mapping(body.get("toolConfig")).get("functionCallingConfig")
    if calling is not None:
        fields["toolConfig"] = {"functionCallingConfig": calling}
    for field in ("generationConfig", "safetySettings"):
        if body.get(field) is not None:
            fields[field] = body[field]
    role = mapping(body.get("systemInstruction")).get("role")
    contents = body.get("contents")
    return GeminiRequest(
        fields=fields,
        system_role=role if isinstance(role, str) else None,
        chat={f: chat[f] for f in _CHAT_FIELDS if f in chat},
        turns=tuple(_turn(c) for c in contents) if isinstance(contents, list) else (),
        google_tools=tuple(google),
    )


def _kind(part: Mapping[str, Any]) -> str | None:
    """What a part holds, as the translations carry it (None: nothing they carry); a
    function call or response with its name and id, which no policy rewrites."""
    if part.get("thought") or part.get("text") == "":
        return None
    kind = next((k for k in _KINDS if k in part), None)
    if kind in ("functionCall", "functionResponse"):
        call = mapping(part[kind])
        return f"{kind} {call.get('name')} {call.get('id')}"
    return kind


def _turn(content: Any) -> tuple[str, tuple[tuple[str, Mapping[str, Any]], ...]]:
    role = mapping(content).get("role") or "user"
    parts = mapping(content).get("parts")
    layout = []
    for part in parts if isinstance(parts, list) else ():
        kind = _kind(mapping(part))
        if kind is not None:
            layout.append((kind, {k: part[k] for k in _PART_METADATA if k in part}))
    return ("user" if role == "function" else str(role), tuple(layout))


def _tool(tool: Any) -> Any:
    declarations = mapping(tool).get("functionDeclarations")
    if not isinstance(declarations, list):
        return tool
    return {
        **tool,
        "functionDeclarations": [
            {k: v for k, v in d.items() if k not in ("response", "responseJsonSchema")}
            if isinstance(d, Mapping) else d
            for d in declarations
        ],
    }  # fmt: skip


def restore(
    translated: Mapping[str, Any], chat: Mapping[str, Any], kept: GeminiRequest
) -> dict[str, Any]:
    """``translated``, the ``GenerateContentRequest`` :mod:`~.chat_to_gemini` made of
    ``chat`` (the request the pipeline passed on), with the client's settings ``kept``
    put back where ``chat`` still holds what the door made of them."""

    def unchanged(fields: tuple[str, ...]) -> bool:
        return all(chat.get(f) == kept.chat.get(f) for f in fields)

    out = _merged(translated, kept.fields, _GROUPS, unchanged)
    if kept.google_tools and not unchanged(("tools",)):
        out["tools"] = [*out.get("tools", ()), *kept.google_tools]
    out.pop("generationConfig", None)
    config = _merged(
        mapping(translated.get("generationConfig")),
        mapping(kept.fields.get("generationConfig")),
        _CONFIG_GROUPS,
        unchanged,
    )
    if config or "generationConfig" in kept.fields:
        out["generationConfig"] = config
    system = translated.get("systemInstruction")
    if kept.system_role is not None and isinstance(system, Mapping):
        out["systemInstruction"] = {"role": kept.system_role, **system}
    contents = translated.get("contents")
    if isinstance(contents, list) and len(contents) == len(kept.turns):
        out["contents"] = [
            _with_metadata(c, turn) for c, turn in zip(contents, kept.turns, strict=True)
        ]
    return out


def _with_metadata(
    content: Mapping[str, Any], turn: tuple[str, tuple[tuple[str, Mapping[str, Any]], ...]]
) -> Mapping[str, Any]:
    """A translated turn with the client's part metadata put back, when it has the
    client's turn's role and kinds of parts (a policy may have changed the turns; then
    there is nothing to pair it with)."""
    role, layout = turn
    parts = content.get("parts")
    if content.get("role") != role or not isinstance(parts, list):
        return content
    if [_kind(mapping(p)) for p in parts] != [kind for kind, _ in layout]:
        return content
    return {**content, "parts": [{**p, **meta} for p, (_, meta) in zip(parts, layout, strict=True)]}


def _merged(
    translated: Mapping[str, Any],
    client: Mapping[str, Any],
    groups: tuple[tuple[frozenset[str], tuple[str, ...]], ...],
    unchanged: Callable[[tuple[str, ...]], bool],
) -> dict[str, Any]:
    """``translated`` with each group of ``groups`` whose chat fields are ``unchanged``
    replaced by the ``client``'s, and the client's fields in no group added."""
    grouped = frozenset(k for keys, _ in groups for k in keys)
    out = dict(translated)
    for keys, fields in groups:
        if unchanged(fields):
            for key in keys:
                out.pop(key, None)
                if key in client:
                    out[key] = client[key]
    out.update({k: v for k, v in client.items() if k not in grouped and k not in out})
    return out
