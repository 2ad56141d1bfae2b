"""Continuing a Responses stream, by output item and by replay only (see
:mod:`hookgate.wire.continuation`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hookgate.wire import sse
from hookgate.wire.continuation.base import Diverged, Mode, typed_events


@dataclass(slots=True)
class _Item:
    type: str
    id: str | None
    name: str | None = None
    text: str = ""
    """A message's output text, a function call's arguments so far."""
    part: bool = False
    """A message's ``content_part.added`` reached the client."""
    done: bool = False


_RESPONSES_SKIPPED = frozenset({"response.created", "response.in_progress"})


@dataclass(slots=True)
class ResponsesTranscript:
    """What a Responses stream has delivered to its client: the response id, the last
    ``sequence_number`` and the output items (messages, function calls; a reasoning item
    or any other makes it not continuable). Continued by replay only."""

    id: str | None = None
    sequence: int = -1
    items: list[_Item] = field(default_factory=list)
    finished: bool = False
    other: bool = False

    @property
    def continuable(self) -> bool:
        return not self.finished and not self.other

    prefillable = False
    text = ""

    def feed(self, events: bytes) -> None:
        for block in sse.split(events):
            data = sse.json_of(block)
            if not isinstance(data, dict):
                continue
            if isinstance(number := data.get("sequence_number"), int):
                self.sequence = max(self.sequence, number)
            kind = data.get("type")
            if kind == "response.created" and isinstance(response := data.get("response"), dict):
                self.id = response.get("id") if isinstance(response.get("id"), str) else None
            elif kind == "response.output_item.added" and isinstance(data.get("item"), dict):
                item = data["item"]
                if item.get("type") not in ("message", "function_call"):
                    self.other = True
                self.items.append(_Item(str(item.get("type")), item.get("id"), item.get("name")))
            elif not self.items:
                self.finished = self.finished or kind in sse.RESPONSES_TERMINAL
            elif kind == "response.content_part.added":
                self.items[-1].part = True
            elif kind in _RESPONSES_DELTAS and isinstance(data.get("delta"), str):
                self.items[-1].text += data["delta"]
            elif kind == "response.output_item.done":
                self.items[-1].done = True
            elif kind in sse.RESPONSES_TERMINAL:
                self.finished = True

    def request(self, body: Mapping[str, Any], mode: Mode) -> dict[str, Any]:
        del mode  # a replay: Responses are not prefilled
        return dict(body)

    def splice(self, mode: Mode, prefix_tokens: int = 0) -> ResponsesSplice:
        del mode, prefix_tokens
        return ResponsesSplice(self)


_RESPONSES_DELTAS = frozenset(
    {"response.output_text.delta", "response.function_call_arguments.delta"}
)


class ResponsesSplice:
    """A replayed Responses stream as the remainder of ``transcript``: its output items
    must reproduce the delivered ones (type, function name, text or arguments) before
    anything is relayed; relayed events take the first response's id and item ids, and
    sequence numbers that go on from the client's last."""

    mode: Mode = "replay"

    def __init__(self, transcript: ResponsesTranscript) -> None:
        self._had = transcript
        self._at = [0] * len(transcript.items)
        self._started = 0
        self._caught_up = not transcript.items
        self._sequence = transcript.sequence

    def feed(self, events: bytes) -> bytes:
        out: list[bytes] = []
        for block, kind, data in typed_events(events):
            if kind is None:
                out.append(block)
                continue
            spliced = self._event(kind, data)
            if spliced is not None:
                self._sequence += 1
                if "sequence_number" in spliced:
                    spliced = {**spliced, "sequence_number": self._sequence}
                out.append(sse.encode(spliced, event=kind))
        return b"".join(out)

    def _event(self, kind: str, data: dict[str, Any]) -> dict[str, Any] | None:
        had = self._had.items
        if kind in _RESPONSES_SKIPPED:
            return None
        if kind in sse.RESPONSES_TERMINAL:
            self._end()
            return self._response(data)
        index = data.get("output_index")
        if not isinstance(index, int) or index >= len(had):
            if isinstance(index, int) and not self._caught_up:
                raise Diverged("the new answer has more items before reproducing the first's")
            return data
        item = had[index]
        if kind == "response.output_item.added":
            added = data.get("item")
            added = added if isinstance(added, Mapping) else {}
            if index != self._started or (index and self._at[index - 1] < len(had[index - 1].text)):
                raise Diverged("the new answer's items come in another order")
            if added.get("type") != item.type or added.get("name") != item.name:
                raise Diverged("the new answer's item differs from the one delivered")
            self._started += 1
            return None
        if index >= self._started:
            raise Diverged("the new answer's events come in another order")
        data = self._ids(data, item)
        if kind == "response.content_part.added":
            return None if item.part else data
        if kind in _RESPONSES_DELTAS:
            return self._delta(index, data)
        # the .done events of a delivered item: it must be whole
        if self._at[index] < len(item.text):
            raise Diverged("the new answer's item is shorter than the one delivered")
        if index == len(had) - 1:
            self._caught_up = True
        return None if item.done else data

    def _delta(self, index: int, data: dict[str, Any]) -> dict[str, Any] | None:
        had = self._had.items
        piece = data.get("delta")
        if not isinstance(piece, str):
            return None
        delivered, at = had[index].text, self._at[index]
        expected = delivered[at : at + len(piece)]
        last = index == len(had) - 1
        if not piece.startswith(expected) or (len(expected) < len(piece) and not last):
            raise Diverged("the new answer differs from what was delivered")
        self._at[index] = at + len(expected)
        if self._at[index] < len(delivered):
            return None
        self._caught_up = last
        excess = piece[len(expected) :]
        if excess and had[index].done:
            raise Diverged("the new answer's item is longer than the one delivered")
        return {**data, "delta": excess} if excess else None

    def _ids(self, data: dict[str, Any], item: _Item) -> dict[str, Any]:
        """``data`` naming the delivered item's id (its ``item_id``, its ``item.id``)."""
        if item.id is None:
            return data
        if "item_id" in data:
            data = {**data, "item_id": item.id}
        if isinstance(inner := data.get("item"), Mapping) and "id" in inner:
            data = {**data, "item": {**inner, "id": item.id}}
        return data

    def _response(self, data: dict[str, Any]) -> dict[str, Any]:
        """The terminal event's response with the first's id and the delivered item ids."""
        response = data.get("response")
        if not isinstance(response, Mapping):
            return data
        response = dict(response)
        if self._had.id is not None:
            response["id"] = self._had.id
        output = response.get("output")
        if isinstance(output, list):
            response["output"] = [
                {**o, "id": had.id}
                if isinstance(o, Mapping) and had.id is not None and "id" in o
                else o
                for o, had in zip(output, self._had.items, strict=False)
            ] + output[len(self._had.items) :]
        return {**data, "response": response}

    def _end(self) -> None:
        had = self._had.items
        if not self._caught_up and (
            self._started < len(had)
            or any(at < len(i.text) for at, i in zip(self._at, had, strict=True))
        ):
            raise Diverged("the new answer is shorter than what was delivered")
        self._caught_up = True
