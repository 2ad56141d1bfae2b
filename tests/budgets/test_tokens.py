"""Prompt token estimates: texts counted, images reserved at their worst case, base64
payloads never read as text."""

from __future__ import annotations

import base64

from hookgate.budgets.tokens import (
    IMAGE_TOKENS,
    PER_MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    count,
    prompt_tokens,
)


def test_images_are_reserved_at_their_worst_case() -> None:
    text = "What is in these pictures?"
    image = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    plain = [{"role": "user", "content": [{"type": "text", "text": text}]}]
    with_images = [{"role": "user", "content": [{"type": "text", "text": text}, *[image] * 50]}]
    base = prompt_tokens("chat.completions", "m", {"messages": plain})
    assert base == count("m", text) + PER_MESSAGE_OVERHEAD + REPLY_PRIMING
    assert prompt_tokens("chat.completions", "m", {"messages": with_images}) == (
        base + 50 * IMAGE_TOKENS
    )
    responses = {"input": [{"role": "user", "content": [
        {"type": "input_text", "text": text},
        {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 100_000},
    ]}]}  # fmt: skip
    assert prompt_tokens("responses", "m", responses, image_tokens=50_000) == base + 50_000


def test_base64_payloads_are_not_counted_as_text() -> None:
    pdf = base64.b64encode(b"%PDF-1.7" + bytes(range(256)) * 4000).decode()
    audio = base64.b64encode(bytes(64_000)).decode()
    messages = [{"role": "user", "content": [
        {"type": "file", "file": {"filename": "a.pdf", "file_data": pdf}},
        {"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}},
    ]}]  # fmt: skip
    estimate = prompt_tokens("chat.completions", "m", {"messages": messages})
    framing = 2 * PER_MESSAGE_OVERHEAD + REPLY_PRIMING  # framing is counted per text
    assert estimate == count("m", "a.pdf") + count("m", "wav") + framing
