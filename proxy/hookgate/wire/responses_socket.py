"""The Responses API's WebSocket mode (``GET /v1/responses`` upgraded), frame by frame.
Pure: no aiohttp; the socket is :mod:`hookgate.server.responses_socket`'s.

A client sends text frames, each one JSON object with a ``type``:

* ``response.create``: the body of ``POST /v1/responses`` plus its ``type``; ``stream`` is
  implied (every answer streams). ``generate: false`` asks for a warm-up: nothing is
  generated, and the response id that comes back may be chained from.
  ``previous_response_id`` with only the new ``input`` continues a response of the same
  connection, which the server keeps in memory even when ``store`` is false (only the
  most recent one);
* ``response.processed`` (newer Codex releases): the client is done with a response. No
  answer.

The server answers a ``response.create`` with the events of the streamed response, the
JSON of each SSE event in a text frame of its own, in order, up to the terminal event
(``response.completed``, ``response.failed``, ``response.incomplete``, ``error``). An
error is one frame ``{"type": "error", "status": <HTTP status>, "error": {...}}``
(:func:`error_frame`): Codex reads the status as it would an HTTP response's (a 429 is
retried, a 400 fails the turn).

hookgate sends every turn to its upstream over HTTP, so a :class:`Conversation` keeps, per
connection, the input and output of the last response it served, and expands a frame that
continues it into the whole input (:meth:`Conversation.request`): the pipeline sees what
the HTTP path sees for the same turn (Codex's HTTP mode sends the whole input every time).
A ``previous_response_id`` the connection does not hold goes upstream as it came, as on
the HTTP path.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from hookgate.errors import InvalidRequest
from hookgate.ids import UniqueIds
from hookgate.wire import prompts, sse

CREATE = "response.create"
PROCESSED = "response.processed"

_ids = UniqueIds()


@dataclass(frozen=True, slots=True)
class Turn:
    """What one ``response.create`` frame asks for."""

    body: dict[str, Any]
    """The body of the equivalent ``POST /v1/responses``: streamed, without the frame's
    ``type`` and ``generate``, the input of a continued response expanded."""
    warm_up: bool
    """``generate: false``: answered by :func:`warm_up_events`, no model called."""


def read_frame(text: str | bytes) -> dict[str, Any]:
    """A client frame's JSON object, or a 400 saying what is wrong."""
    try:
        frame = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"the frame is not JSON ({exc.msg} at byte {exc.pos})") from None
    if not isinstance(frame, dict):
        raise InvalidRequest("a frame must be a JSON object")
    return frame


class Conversation:
    """The state of one connection: the last response served, to expand its successor."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[str, list[Any]] | None = None
        """The last response's id and the whole conversation up to its end (its input,
        then its output)."""

    def request(self, frame: dict[str, Any]) -> Turn | None:
        """The turn ``frame`` asks for; None for a frame that needs no answer
        (``response.processed``); a 400 for any other type or a ``generate`` that is not a
        boolean."""
        kind = frame.get("type")
        if kind == PROCESSED:
            return None
        if kind != CREATE:
            raise InvalidRequest(f"unsupported frame type {kind!r}: send {CREATE!r}", param="type")
        generate = frame.get("generate", True)
        if not isinstance(generate, bool):
            raise InvalidRequest("'generate' must be a boolean", param="generate")
        body = {k: v for k, v in frame.items() if k not in ("type", "generate")}
        body["stream"] = True
        last = self._last
        if last is not None and body.get("previous_response_id") == last[0]:
            del body["previous_response_id"]
            body["input"] = [*last[1], *(prompts.messages_of("responses", body) or ())]
        return Turn(body, warm_up=not generate)

    def remember(self, response_id: str, body: dict[str, Any], output: list[Any]) -> None:
        """Keep the response ``response_id`` that answered ``body`` (a :class:`Turn`'s)
        with ``output``: the next frame may continue it. A body that still continues a
        response the upstream holds is not the whole conversation: nothing is kept, and
        its successor goes upstream with its ``previous_response_id`` too."""
        if body.get("previous_response_id") is not None:
            self._last = None
        else:
            self._last = (response_id, [*(prompts.messages_of("responses", body) or ()), *output])

    def forget(self) -> None:
        """Drop the last response (after a failed turn, as OpenAI's server does)."""
        self._last = None


SOCKET_BETA = "responses_websockets"
"""The ``OpenAI-Beta`` feature a client names to open the WebSocket mode."""


def http_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The forwarded headers of a turn sent upstream over HTTP: ``OpenAI-Beta`` without
    the WebSocket feature (``responses_websockets=2026-02-06``), which names the transport
    between the client and hookgate, not the upstream's."""
    out = dict(headers)
    beta = out.pop("openai-beta", None)
    if beta is not None:
        features = (f.strip() for f in beta.split(","))
        kept = [f for f in features if f and not f.startswith(SOCKET_BETA)]
        if kept:
            out["openai-beta"] = ", ".join(kept)
    return out


_ENDED = ("response.completed", "response.incomplete")
_KEPT = ("response.output_item.done", *_ENDED)
"""The events :class:`Collector` reads."""


class Collector:
    """Reads the frames of a response as they are sent: its id, and its output items as
    the client received them (placeholders restored), to :meth:`Conversation.remember`."""

    __slots__ = ("_items", "ended", "response_id")

    def __init__(self) -> None:
        self._items: dict[int, Any] = {}
        self.response_id: str | None = None
        self.ended = False
        """Whether the response ended with a response to continue from (completed, or
        incomplete)."""

    def feed(self, frame: str) -> None:
        """Read one sent frame (the JSON of one event); only the events it keeps are
        parsed (a text delta, most of a stream, is passed over unread)."""
        if not any(kind in frame for kind in _KEPT):
            return
        try:
            event = orjson.loads(frame)
        except orjson.JSONDecodeError:
            return
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "response.output_item.done" and isinstance(event.get("output_index"), int):
            self._items[event["output_index"]] = event.get("item")
        elif kind in _ENDED:
            response = event.get("response")
            if isinstance(response, dict) and isinstance(response.get("id"), str):
                self.response_id = response["id"]
                self.ended = True
                if not self._items and isinstance(response.get("output"), list):
                    self._items = dict(enumerate(response["output"]))

    def output(self) -> list[Any]:
        """The response's output items, in order."""
        return [self._items[i] for i in sorted(self._items)]


def frames_of(events: bytes) -> list[str]:
    """The frames to send for SSE event blocks: each event's data, as it came."""
    frames = []
    for block in sse.split(events):
        data = sse.parse(block).data
        if data and data != "[DONE]":
            frames.append(data)
    return frames


def warm_up_events(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The answer to a warm-up (``generate: false``): a new response id and the events of
    a completed response with no output and no usage."""
    response_id = f"resp_{_ids.next()}"
    response: dict[str, Any] = {
        "id": response_id, "object": "response", "created_at": int(time.time()),
        "status": "completed", "error": None, "incomplete_details": None,
        "model": body.get("model"), "output": [],
        "usage": {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": 0},
    }  # fmt: skip
    return response_id, [
        {"type": "response.created", "sequence_number": 0,
         "response": {**response, "status": "in_progress", "usage": None}},
        {"type": "response.completed", "sequence_number": 1, "response": response},
    ]  # fmt: skip


def error_frame(status: int, body: object, headers: dict[str, str]) -> dict[str, Any]:
    """The frame of a failed turn: the HTTP status it would have had, the OpenAI error
    object of its body (``{"error": {...}}``) and the headers a client reads
    (``retry-after``, an upstream's rate limits)."""
    error = body.get("error") if isinstance(body, dict) else None
    frame: dict[str, Any] = {"type": "error", "status": status, "error": error}
    if headers:
        frame["headers"] = headers
    return frame
