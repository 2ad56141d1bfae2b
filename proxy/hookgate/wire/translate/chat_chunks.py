"""The ``chat.completion.chunk`` events a translated stream writes, and reads. Pure.

Writing is shared by the translators that turn another provider's stream into a chat one
(:mod:`.chat_to_messages`, :mod:`.chat_to_gemini`): every chunk of one stream carries the
same ``id``, ``created`` and ``model``, and one choice at index 0. Reading
(:func:`read_chunk`) by those that turn a chat stream into another API's
(:mod:`.responses_to_chat`, :mod:`.messages_to_chat`, :mod:`.gemini_to_chat`).
"""

from __future__ import annotations

import time
from typing import Any

from hookgate.errors import UpstreamBadResponse
from hookgate.wire import sse


def read_chunk(block: bytes) -> dict[str, Any] | None:
    """The chat chunk one SSE block carries (None for a block without data: a comment, a
    keep-alive). Raises :class:`UpstreamBadResponse` for data that is not a JSON object.
    ``[DONE]`` is the caller's to recognise first (:func:`hookgate.wire.sse.is_done`)."""
    try:
        return sse.object_of(block)
    except ValueError:
        raise UpstreamBadResponse("a chat stream chunk is not a JSON object") from None


class ChatChunks:
    """The chunks of one stream: ``id`` is set once the upstream names its answer."""

    def __init__(self, model: str) -> None:
        self.id = "chatcmpl-"
        self.model = model
        self.created = int(time.time())

    def chunk(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        """One chunk event with ``choices`` (and ``extra`` fields: ``usage``)."""
        return sse.encode(
            {
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": choices,
                **extra,
            }
        )

    def delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        """One chunk event whose only choice carries ``delta``."""
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return self.chunk([choice])
