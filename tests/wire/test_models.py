"""What hookgate knows of well-known models, and how a translated call is fitted to it."""

from __future__ import annotations

from typing import Any

import pytest

from hookgate.wire.models import Limits, limits_of
from hookgate.wire.translate.fit import fit


@pytest.mark.parametrize(
    ("model", "known"),
    [
        ("gpt-4o", Limits(16_384, False)),
        ("gpt-4o-2024-08-06", Limits(16_384, False)),  # a dated snapshot
        ("openai/o4-mini", Limits(100_000, True, completion_tokens=True)),  # a provider prefix
        ("claude-sonnet-4-20250514", Limits(64_000, True, prefill=True)),
        ("gemini-2.0-flash-001", Limits(8_192, False)),
        ("gpt-4o-mini-tts", Limits()),  # never by prefix
        ("llama3.1", Limits()),
    ],
)
def test_models_are_looked_up_as_prices_are(model: str, known: Limits) -> None:
    assert limits_of(model) == known


def test_a_target_s_settings_override_the_table_and_cover_unknown_models() -> None:
    assert limits_of("gpt-4o", max_output_tokens=4_000) == Limits(4_000, False)
    assert limits_of("llama3.1", reasoning=False) == Limits(None, False)
    assert limits_of("llama3.1", prefill=True) == Limits(prefill=True)
    assert limits_of("claude-opus-4-5", prefill=False).prefill is False


CLAUDE_CODE_AS_CHAT = {"model": "m", "max_tokens": 32_000, "reasoning_effort": "high"}


GPT_4O = {"model": "m", "max_tokens": 16_384}
O4_MINI = {"model": "m", "max_completion_tokens": 32_000, "reasoning_effort": "high"}


@pytest.mark.parametrize(
    ("limits", "sent", "changed"),
    [
        (Limits(16_384, False), GPT_4O, ["max_tokens", "reasoning_effort"]),
        (Limits(100_000, True, completion_tokens=True), O4_MINI, ["max_tokens"]),
        (Limits(64_000, True), {**CLAUDE_CODE_AS_CHAT}, []),  # Claude via an OpenAI-compatible API
        (Limits(), CLAUDE_CODE_AS_CHAT, []),
    ],
)
def test_a_chat_call_asks_only_what_its_model_takes(
    limits: Limits, sent: dict[str, Any], changed: list[str]
) -> None:
    assert fit("chat.completions", CLAUDE_CODE_AS_CHAT, limits) == (sent, changed)


def test_a_messages_call_keeps_its_thinking_under_the_lowered_ceiling() -> None:
    asked = {"max_tokens": 50_176, "thinking": {"type": "enabled", "budget_tokens": 49_152}}
    sent, changed = fit("messages", asked, Limits(32_000, True))
    assert sent == {"max_tokens": 32_000, "thinking": {"type": "enabled", "budget_tokens": 31_999}}
    assert changed == ["max_tokens", "thinking"]
    assert fit("messages", asked, Limits(8_192, False))[0] == {"max_tokens": 8_192}
    tiny = fit("messages", asked, Limits(1_000, True))[0]
    assert tiny == {"max_tokens": 1_000}  # no budget of at least 1024 fits under 1000
    disabled = {"max_tokens": 100, "thinking": {"type": "disabled"}}
    assert fit("messages", disabled, Limits(8_192, False)) == (disabled, [])


def test_a_gemini_call_keeps_no_thinking_budget_for_a_model_without_thinking() -> None:
    asked = {"contents": [], "generationConfig": {"maxOutputTokens": 32_000,
             "thinkingConfig": {"thinkingBudget": 24_576}}}  # fmt: skip
    sent, changed = fit("generate_content", asked, Limits(8_192, False))
    assert sent == {"contents": [], "generationConfig": {"maxOutputTokens": 8_192}}
    assert changed == ["maxOutputTokens", "thinkingConfig"]
    assert asked["generationConfig"]["maxOutputTokens"] == 32_000  # the caller's body is kept
