"""Read usage and response facts (id, model, finish reasons, text) from model responses:
OpenAI's chat, completions, embeddings and Responses, and Anthropic's Messages.

:func:`facts_of` reads a JSON body. :class:`StreamFacts` reads a stream's events as they
pass without parsing them all: it parses the first event (id, model), events that carry
usage or a finish reason, and the Responses terminal event. With ``collect_text`` it also
gathers the output text (parsing every event; only used when content capture is on).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import astuple, dataclass, field
from typing import Any

from hookgate.wire import sse
from hookgate.wire.sse import EventStream


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the provider reported them, normalised: ``input_tokens`` is every
    prompt token, of which ``cached_input_tokens`` were read from a prompt cache and
    ``cache_write_tokens`` written to one (Anthropic's ``cache_creation_input_tokens``), of
    which ``cache_write_1h_tokens`` for an hour (Anthropic's
    ``cache_creation.ephemeral_1h_input_tokens``, priced apart); ``reasoning_tokens`` ⊆
    ``output_tokens``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Charge:
    """What a budget settled for a request. ``estimated`` when the response reported no
    usage (a cut or abandoned stream, an upstream that ignores ``include_usage``) and the
    tokens were counted by the proxy; ``cost_usd`` is None for an unpriced model."""

    usage: Usage
    cost_usd: float | None
    estimated: bool

    def plus(self, earlier: Charge | None) -> Charge:
        """This charge added to an ``earlier`` one of the same request (each attempt of a
        stream continued mid-way is charged for what it produced), or itself."""
        if earlier is None:
            return self
        a, b = self.usage, earlier.usage
        usage = Usage(*(x + y for x, y in zip(astuple(a), astuple(b), strict=True)))
        costs = [c for c in (self.cost_usd, earlier.cost_usd) if c is not None]
        return Charge(usage, sum(costs) if costs else None, self.estimated or earlier.estimated)


@dataclass(frozen=True, slots=True)
class HostedToolCall:
    """A tool the provider ran itself, as a Responses output item reports it: web search,
    file search, the code interpreter, image generation, a remote MCP server's tool."""

    type: str
    """The item's type without ``_call``: ``web_search``, ``mcp``, ..."""
    name: str
    """The MCP tool's name; for the others, the type."""
    call_id: str | None = None
    status: str | None = None


HOSTED_TOOL_ITEMS = frozenset(
    {"web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
     "mcp_call"}
)  # fmt: skip
"""Responses output items of tools the provider runs (the client never sees them run)."""


@dataclass(slots=True)
class ResponseFacts:
    """What telemetry reports about a response (read by :func:`facts_of`, :class:`StreamFacts`)."""

    response_id: str | None = None
    response_model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    usage: Usage | None = None
    usage_partial: bool = False
    """True while :attr:`usage` is only what a stream's start said (a Messages stream
    before its ``message_delta``): its input is known, its output count is not the
    answer's (a stream cut there is charged by an estimate of what it streamed)."""
    text: list[str] = field(default_factory=list)
    hosted_tools: list[HostedToolCall] = field(default_factory=list)


_ANTHROPIC_CACHE = ("cache_creation_input_tokens", "cache_read_input_tokens")


def usage_of(data: Any) -> Usage | None:
    """Normalise a chat, completions, embeddings, Responses or Messages ``usage`` object.

    Anthropic's ``input_tokens`` counts only the tokens after the last cache breakpoint:
    the cache reads and writes it reports beside it are added to make the prompt's total.
    (Its usage is told from a Responses one by those two fields; without them the two
    read the same.)"""
    if not isinstance(data, Mapping):
        return None
    if "input_tokens" in data and any(field in data for field in _ANTHROPIC_CACHE):
        return message_usage(data)
    if "input_tokens" in data:  # Responses API
        input_details = _mapping(data.get("input_tokens_details"))
        output_details = _mapping(data.get("output_tokens_details"))
        return Usage(
            _int(data.get("input_tokens")),
            _int(data.get("output_tokens")),
            _int(input_details.get("cached_tokens")),
            _int(output_details.get("reasoning_tokens")),
            # what the Responses translation of an Anthropic answer sets beside cached_tokens
            _int(input_details.get("cache_write_tokens")),
        )
    prompt_details = _mapping(data.get("prompt_tokens_details"))
    completion_details = _mapping(data.get("completion_tokens_details"))
    return Usage(
        _int(data.get("prompt_tokens")),
        _int(data.get("completion_tokens")),
        _int(prompt_details.get("cached_tokens")),
        _int(completion_details.get("reasoning_tokens")),
        # OpenAI's cache writes; also what the chat translation of an Anthropic answer sets
        _int(prompt_details.get("cache_write_tokens")),
    )


def message_usage(data: Mapping[str, Any]) -> Usage:
    """Normalise an Anthropic Messages ``usage`` object (see :func:`usage_of`)."""
    read = _int(data.get("cache_read_input_tokens"))
    written = _int(data.get("cache_creation_input_tokens"))
    hour = _int(_mapping(data.get("cache_creation")).get("ephemeral_1h_input_tokens"))
    return Usage(
        _int(data.get("input_tokens")) + read + written,
        _int(data.get("output_tokens")),
        cached_input_tokens=read,
        cache_write_tokens=written,
        cache_write_1h_tokens=min(hour, written),
    )


def facts_of(api: str, body: Mapping[str, Any], *, collect_text: bool = False) -> ResponseFacts:
    """Facts of a non-streamed response body."""
    facts = ResponseFacts()
    _read_head(body, facts)
    facts.usage = usage_of(body.get("usage"))
    if api == "responses":
        _read_response_output(body, facts, collect_text)
        return facts
    if api == "messages":
        if isinstance(body.get("stop_reason"), str):
            facts.finish_reasons.append(body["stop_reason"])
        if collect_text:
            facts.text += [
                block["text"]
                for block in _list(body.get("content"))
                if isinstance(block, Mapping) and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ]  # fmt: skip
        return facts
    for choice in _list(body.get("choices")):
        if not isinstance(choice, Mapping):
            continue
        if isinstance(choice.get("finish_reason"), str):
            facts.finish_reasons.append(choice["finish_reason"])
        if collect_text:
            message = _mapping(choice.get("message"))
            text = message.get("content", choice.get("text"))
            if isinstance(text, str):
                facts.text.append(text)
    return facts


class StreamFacts:
    """Accumulates :class:`ResponseFacts` from a stream's events, cheaply."""

    def __init__(self, api: str, *, collect_text: bool = False) -> None:
        self.api = api
        self.facts = ResponseFacts()
        self._collect_text = collect_text
        self._seen_first = False
        self._markers = _MARKERS.get(api, _CHOICE_MARKERS)
        self._message_usage: dict[str, Any] = {}

    def feed(self, events: bytes) -> None:
        """Look at a batch of complete event blocks; parse only the ones that matter."""
        for block in self._blocks_of_interest(events):
            data = sse.json_of(block)
            if isinstance(data, Mapping):
                self._read(data)

    def _blocks_of_interest(self, events: bytes) -> list[bytes]:
        """The first block ever, and blocks holding a marker, found without splitting all."""
        if self._collect_text or b"\r" in events:
            return sse.split(events)
        starts = set() if self._seen_first else {0}
        for marker in self._markers:
            at = events.find(marker)
            while at >= 0:
                previous = events.rfind(b"\n\n", 0, at)
                starts.add(0 if previous < 0 else previous + 2)
                at = events.find(marker, at + len(marker))
        blocks = []
        for start in sorted(starts):
            end = events.find(b"\n\n", start)
            blocks.append(events[start : len(events) if end < 0 else end + 2])
        return blocks

    def _read(self, data: Mapping[str, Any]) -> None:
        facts = self.facts
        if self.api == "messages":
            self._read_message_event(data)
            return
        if self.api == "responses":
            kind = data.get("type")
            response = data.get("response")
            if isinstance(response, Mapping):
                _read_head(response, facts)
                if kind in ("response.completed", "response.incomplete", "response.failed"):
                    facts.usage = usage_of(response.get("usage")) or facts.usage
                    _read_response_output(response, facts, collect_text=False)
            if self._collect_text and kind == "response.output_text.delta":
                facts.text.append(str(data.get("delta", "")))
            self._seen_first = True
            return
        if not self._seen_first:
            _read_head(data, facts)
            self._seen_first = True
        usage = usage_of(data.get("usage"))
        if usage is not None:
            facts.usage = usage
        for choice in _list(data.get("choices")):
            if not isinstance(choice, Mapping):
                continue
            if isinstance(choice.get("finish_reason"), str):
                facts.finish_reasons.append(choice["finish_reason"])
            if self._collect_text:
                delta = _mapping(choice.get("delta"))
                text = delta.get("content", choice.get("text"))
                if isinstance(text, str):
                    facts.text.append(text)

    def _read_message_event(self, data: Mapping[str, Any]) -> None:
        """Messages: ``message_start`` holds the id, model and input usage;
        ``message_delta`` the stop reason and the usage so far (its fields win)."""
        facts = self.facts
        kind = data.get("type")
        if kind == "message_start":
            message = _mapping(data.get("message"))
            _read_head(message, facts)
            self._message_usage.update(_mapping(message.get("usage")))
        elif kind == "message_delta":
            reason = _mapping(data.get("delta")).get("stop_reason")
            if isinstance(reason, str):
                facts.finish_reasons.append(reason)
            self._message_usage.update(
                {k: v for k, v in _mapping(data.get("usage")).items() if v is not None}
            )
        elif kind == "content_block_delta" and self._collect_text:
            delta = _mapping(data.get("delta"))
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                facts.text.append(delta["text"])
        if kind in ("message_start", "message_delta"):
            facts.usage = message_usage(self._message_usage)
            facts.usage_partial = kind == "message_start"
        self._seen_first = True


_CHOICE_MARKERS = (b'"finish_reason":"', b'"usage":{', b'"finish_reason": "', b'"usage": {')
_MARKERS = {
    "responses": (b"response.completed", b"response.incomplete", b"response.failed"),
    "messages": (b"message_start", b"message_delta"),
}


async def observed(stream: EventStream, facts: StreamFacts) -> AsyncGenerator[bytes, None]:
    """Pass ``stream`` through unchanged, feeding every batch of events to ``facts``."""
    try:
        async for events in stream:
            facts.feed(events)
            yield events
    finally:
        await stream.aclose()


def _read_head(data: Mapping[str, Any], facts: ResponseFacts) -> None:
    if isinstance(data.get("id"), str):
        facts.response_id = data["id"]
    if isinstance(data.get("model"), str):
        facts.response_model = data["model"]


def _read_response_output(
    data: Mapping[str, Any], facts: ResponseFacts, collect_text: bool
) -> None:
    status = data.get("status")
    has_calls = False
    for item in _list(data.get("output")):
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        has_calls = has_calls or kind == "function_call"
        if kind in HOSTED_TOOL_ITEMS:
            facts.hosted_tools.append(_hosted(item))
        if collect_text and item.get("type") == "message":
            for part in _list(item.get("content")):
                if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                    facts.text.append(part["text"])
    if isinstance(status, str) and status != "in_progress":
        facts.finish_reasons = ["tool_calls" if has_calls else status]


def _hosted(item: Mapping[str, Any]) -> HostedToolCall:
    kind = str(item["type"]).removesuffix("_call")
    name = item.get("name") if kind == "mcp" else None
    call_id, status = item.get("id"), item.get("status")
    return HostedToolCall(
        kind,
        name if isinstance(name, str) else kind,
        call_id if isinstance(call_id, str) else None,
        status if isinstance(status, str) else None,
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_requested(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """A streamed chat body that asks for the usage chunk (``stream_options.include_usage``)
    when ``body`` does not; None when it already does. Clients often leave it out behind a
    custom base URL, and without it a stream reports no usage."""
    options = body.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        return None
    merged = {**(options if isinstance(options, Mapping) else {}), "include_usage": True}
    return {**body, "stream_options": merged}


def is_usage_chunk(block: bytes) -> bool:
    """True for a chat stream's usage chunk (no choices, a usage object): the one
    :func:`usage_requested` adds, to be removed before a client that did not ask sees it."""
    if b'"choices":[]' not in block and b'"choices": []' not in block:
        return False
    data = sse.json_of(block)
    return (
        isinstance(data, dict) and data.get("choices") == [] and isinstance(data.get("usage"), dict)
    )
