"""Apply a :class:`~hookgate.pipeline.hooks.StreamTransform` to the events of a stream.

Only the fields that carry text are touched: chat ``delta.content`` and
``delta.tool_calls[].function.arguments``; legacy completions ``choices[].text``;
Responses ``output_text`` and ``function_call_arguments`` deltas. When a string is
complete (a ``finish_reason``, a ``.done`` event, or the end of the stream) the
transform's :meth:`~hookgate.pipeline.hooks.StreamTransform.end` is asked for what it held
back, and that text is delivered before the stream moves on. Responses ``.done``,
``output_item.done`` and ``response.completed`` events, which repeat the whole text, are
rewritten to the transformed text so they agree with the deltas the client received.
Anthropic Messages: ``text_delta`` and ``input_json_delta`` (the tool input's partial
JSON) of each content block, completed by the block's ``content_block_stop``; thinking
deltas pass untouched (a signature covers them).

Each string a chat choice carries from a Gemini model's candidate (its search
grounding: :data:`~hookgate.wire.translate.chat_to_gemini.CANDIDATE_KEY`) is given to
the transform whole, as a string of its own, as Messages citations are.

Events that are not JSON are passed through unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from hookgate.wire import sse
from hookgate.wire.deltas import DeltaKey, DeltaKind, StreamTransform
from hookgate.wire.translate.chat_to_gemini import CANDIDATE_KEY


def rewriter_for(api: str, transform: StreamTransform) -> StreamRewriter:
    """The rewriter that knows ``api``'s event shapes."""
    if api == "responses":
        return ResponsesRewriter(transform)
    if api == "messages":
        return MessagesRewriter(transform)
    return ChoicesRewriter(transform, text_field="content" if api == "chat.completions" else "text")


class EventRewriter:
    """Feed event blocks in order, get the blocks to send in their place."""

    async def rewrite(self, events: bytes) -> AsyncIterator[bytes]:
        """The bytes to send for ``events`` (whole event blocks as they arrived), in one
        piece. When the transform raises, what the blocks before it gave is yielded first:
        text a transform released is delivered before the stream ends with its error."""
        out: list[bytes] = []
        try:
            for block in sse.split(events):
                out += await self.feed(block)
        except Exception:
            if out:
                yield b"".join(out)
            raise
        yield b"".join(out)

    async def feed(self, block: bytes) -> list[bytes]:
        """The blocks to send for ``block`` (possibly more or fewer than one)."""
        raise NotImplementedError


class StreamRewriter(EventRewriter):
    """An :class:`EventRewriter` applying a :class:`StreamTransform` (never drops a data
    block)."""

    def __init__(self, transform: StreamTransform) -> None:
        self.transform = transform


class ChoicesRewriter(StreamRewriter):
    """Chat completion chunks (``delta``) and legacy completion chunks (``text``)."""

    def __init__(self, transform: StreamTransform, text_field: str) -> None:
        super().__init__(transform)
        self._chat = text_field == "content"
        self._open: dict[int, set[DeltaKey]] = {}
        self._last: dict[str, Any] | None = None
        self._whole = 0

    async def feed(self, block: bytes) -> list[bytes]:
        if sse.is_done(block):
            tail = await self._flush_all()
            return [*tail, block]
        data = sse.json_of(block)
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            return [block]
        self._last = data
        choices = [await self._choice(c) if isinstance(c, dict) else c for c in data["choices"]]
        return [sse.encode({**data, "choices": choices})]

    async def _choice(self, choice: dict[str, Any]) -> dict[str, Any]:
        index = choice.get("index", 0)
        index = index if isinstance(index, int) else 0
        keys = self._open.setdefault(index, set())
        if self._chat:
            delta = choice.get("delta")
            if isinstance(delta, dict):
                choice = {**choice, "delta": await self._delta(index, delta, keys)}
            if CANDIDATE_KEY in choice:
                choice = {**choice, CANDIDATE_KEY: await self._strings(choice[CANDIDATE_KEY])}
        elif isinstance(choice.get("text"), str):
            key = DeltaKey("text", index)
            keys.add(key)
            choice = {**choice, "text": await self.transform.delta(key, choice["text"])}
        if choice.get("finish_reason") is not None:
            choice = await self._finish(index, choice, keys)
        return choice

    async def _delta(
        self, index: int, delta: dict[str, Any], keys: set[DeltaKey]
    ) -> dict[str, Any]:
        out = dict(delta)
        if isinstance(delta.get("content"), str):
            key = DeltaKey("text", index)
            keys.add(key)
            out["content"] = await self.transform.delta(key, delta["content"])
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            out["tool_calls"] = [await self._tool_call(index, c, keys) for c in calls]
        return out

    async def _strings(self, value: Any) -> Any:
        """``value`` with each string in it transformed whole (a key of its own each:
        choice -1 and on, which no choice uses)."""
        if isinstance(value, str):
            self._whole += 1
            key = DeltaKey("text", -self._whole)
            return await self.transform.delta(key, value) + await self.transform.end(key)
        if isinstance(value, list):
            return [await self._strings(v) for v in value]
        if isinstance(value, dict):
            return {k: await self._strings(v) for k, v in value.items()}
        return value

    async def _tool_call(self, index: int, call: Any, keys: set[DeltaKey]) -> Any:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
            return call
        key = DeltaKey("tool_arguments", index, call.get("index", 0))
        keys.add(key)
        arguments = await self.transform.delta(key, function["arguments"])
        return {**call, "function": {**function, "arguments": arguments}}

    async def _finish(
        self, index: int, choice: dict[str, Any], keys: set[DeltaKey]
    ) -> dict[str, Any]:
        for key in sorted(keys, key=lambda k: (k.kind, k.index)):
            tail = await self.transform.end(key)
            if tail:
                choice = _append(choice, key, tail, chat=self._chat)
        keys.clear()
        return choice

    async def _flush_all(self) -> list[bytes]:
        """At ``[DONE]``: deliver what is still held for choices that never finished."""
        out: list[bytes] = []
        for index, keys in self._open.items():
            if not keys or self._last is None:
                continue
            empty: dict[str, Any] = {"index": index, "finish_reason": None}
            if self._chat:
                empty["delta"] = {}
            else:
                empty["text"] = ""
            choice = await self._finish(index, empty, keys)
            choice["finish_reason"] = None
            out.append(sse.encode({**self._last, "choices": [choice]}))
        return out


def _append(choice: dict[str, Any], key: DeltaKey, tail: str, *, chat: bool) -> dict[str, Any]:
    if not chat:
        return {**choice, "text": (choice.get("text") or "") + tail}
    delta = dict(choice.get("delta") or {})
    if key.kind == "text":
        delta["content"] = (delta.get("content") or "") + tail
    else:
        calls = [c for c in delta.get("tool_calls") or [] if isinstance(c, dict)]
        calls.append({"index": key.index, "function": {"arguments": tail}})
        delta["tool_calls"] = calls
    return {**choice, "delta": delta}


class ResponsesRewriter(StreamRewriter):
    """Responses API streaming events."""

    def __init__(self, transform: StreamTransform) -> None:
        super().__init__(transform)
        self._text: dict[DeltaKey, str] = {}

    async def feed(self, block: bytes) -> list[bytes]:
        event = sse.parse(block)
        data = sse.json_of(block)
        if not isinstance(data, dict):
            return [block]
        kind = data.get("type", event.event)
        name = event.event
        if kind in ("response.output_text.delta", "response.function_call_arguments.delta"):
            key = self._key(kind, data)
            text = await self.transform.delta(key, str(data.get("delta", "")))
            self._text[key] = self._text.get(key, "") + text
            return [sse.encode({**data, "delta": text}, event=name)]
        if kind in ("response.output_text.done", "response.function_call_arguments.done"):
            return await self._done(kind, data, name)
        if kind == "response.content_part.done" and isinstance(data.get("part"), dict):
            key = DeltaKey("text", _int(data.get("output_index")), _int(data.get("content_index")))
            part = data["part"]
            if key in self._text and "text" in part:
                part = {**part, "text": self._text[key]}
            return [sse.encode({**data, "part": part}, event=name)]
        if kind == "response.output_item.done" and isinstance(data.get("item"), dict):
            item = self._item(_int(data.get("output_index")), data["item"])
            return [sse.encode({**data, "item": item}, event=name)]
        if isinstance(data.get("response"), dict) and isinstance(
            data["response"].get("output"), list
        ):
            response = data["response"]
            output = [self._item(i, item) for i, item in enumerate(response["output"])]
            return [sse.encode({**data, "response": {**response, "output": output}}, event=name)]
        return [block]

    @staticmethod
    def _key(kind: str, data: dict[str, Any]) -> DeltaKey:
        output_index = _int(data.get("output_index"))
        if kind.startswith("response.output_text"):
            return DeltaKey("text", output_index, _int(data.get("content_index")))
        return DeltaKey("tool_arguments", output_index)

    async def _done(self, kind: str, data: dict[str, Any], name: str | None) -> list[bytes]:
        key = self._key(kind, data)
        field = "text" if key.kind == "text" else "arguments"
        tail = await self.transform.end(key)
        out: list[bytes] = []
        if tail:
            delta_kind = kind.removesuffix(".done") + ".delta"
            extra = {k: v for k, v in data.items() if k not in (field, "logprobs")}
            out.append(
                sse.encode(
                    {**extra, "type": delta_kind, "delta": tail}, event=delta_kind if name else None
                )
            )
        self._text[key] = self._text.get(key, "") + tail
        out.append(sse.encode({**data, field: self._text[key]}, event=name))
        return out

    def _item(self, output_index: int, item: Any) -> Any:
        if not isinstance(item, dict):
            return item
        if item.get("type") == "function_call":
            key = DeltaKey("tool_arguments", output_index)
            return {**item, "arguments": self._text[key]} if key in self._text else item
        content = item.get("content")
        if not isinstance(content, list):
            return item
        parts = []
        for index, part in enumerate(content):
            key = DeltaKey("text", output_index, index)
            if isinstance(part, dict) and key in self._text and "text" in part:
                part = {**part, "text": self._text[key]}
            parts.append(part)
        return {**item, "content": parts}


class MessagesRewriter(StreamRewriter):
    """Anthropic Messages streaming events: each content block's text or tool input is one
    growing string, keyed by the block's index (``DeltaKey(kind, 0, index)``). A
    ``citations_delta`` arrives whole: each of its text fields (:data:`CITED`) goes through
    the transform as a string of its own (``DeltaKey("text", n, index)``, ``n`` counting
    from 1), so what it quotes is restored like the text around it."""

    _KINDS: ClassVar[dict[str, tuple[DeltaKind, str]]] = {
        "text_delta": ("text", "text"),
        "input_json_delta": ("tool_arguments", "partial_json"),
    }

    CITED: ClassVar[tuple[str, ...]] = ("cited_text", "document_title", "title", "source")
    """A citation's text fields (the others are indices, ids and opaque values)."""

    def __init__(self, transform: StreamTransform) -> None:
        super().__init__(transform)
        self._open: dict[int, tuple[DeltaKey, str, str]] = {}
        """Block index → its key, its delta type and the delta's text field."""
        self._citations = 0

    async def feed(self, block: bytes) -> list[bytes]:
        event = sse.parse(block)
        data = sse.json_of(block)
        if not isinstance(data, dict):
            return [block]
        kind = data.get("type", event.event)
        index = _int(data.get("index"))
        if kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            delta = data["delta"]
            if delta.get("type") == "citations_delta" and isinstance(delta.get("citation"), dict):
                citation = await self._cited(delta["citation"], index)
                changed = {**data, "delta": {**delta, "citation": citation}}
                return [sse.encode(changed, event=event.event)]
            found = self._KINDS.get(str(delta.get("type")))
            if found is None or not isinstance(delta.get(found[1]), str):
                return [block]
            key = DeltaKey(found[0], 0, index)
            self._open[index] = (key, str(delta["type"]), found[1])
            text = await self.transform.delta(key, delta[found[1]])
            return [sse.encode({**data, "delta": {**delta, found[1]: text}}, event=event.event)]
        if kind == "content_block_stop" and index in self._open:
            key, delta_type, field = self._open.pop(index)
            tail = await self.transform.end(key)
            if not tail:
                return [block]
            held = {"type": "content_block_delta", "index": index,
                    "delta": {"type": delta_type, field: tail}}  # fmt: skip
            return [sse.encode(held, event="content_block_delta"), block]
        return [block]

    async def _cited(self, citation: dict[str, Any], index: int) -> dict[str, Any]:
        out = dict(citation)
        for field in self.CITED:
            value = citation.get(field)
            if isinstance(value, str) and value:
                self._citations += 1
                key = DeltaKey("text", self._citations, index)
                out[field] = await self.transform.delta(key, value) + await self.transform.end(key)
        return out


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0
