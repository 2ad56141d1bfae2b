"""What hookgate knows of well-known models besides their price: the most output tokens
each writes, whether it reasons (takes ``reasoning_effort``, extended thinking or a
thinking budget), the tokens it accepts (its context window), and whether it continues a
final assistant message (a prefill). Pure.

Models are looked up as prices are (:func:`lookup`): by exact name (after any
``provider/`` prefix), then without a snapshot suffix — a date or version
(``gpt-4o-2024-08-06``, ``claude-sonnet-4-20250514``, ``gemini-2.0-flash-001``) or
``-latest``; never by prefix. A target's own ``max_output_tokens``, ``reasoning`` and
``prefill`` (YAML ``models:``) override the table, and cover models it does not know. A model known
to no one is left alone (:attr:`Limits.max_output_tokens` and :attr:`Limits.reasoning`
None): nothing about its calls is adapted (:mod:`hookgate.wire.translate.fit`).
A target's ``context_window`` likewise overrides :data:`CONTEXT_WINDOWS`
(:func:`context_window_of`), which the ``fallback`` policy reads to move a call that was
too long for one model to a model with a larger window.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|\d{3,4}|latest)$")
"""A snapshot of a known model: a date (``-2024-08-06``, ``-20250514``), a version
(``-2411``, ``-001``) or ``-latest``."""


def lookup(table: Mapping[str, T], model: str) -> T | None:
    """``table``'s entry for ``model``: its exact name, else the name after any
    ``provider/`` prefix, else that name without a snapshot suffix; None when none is."""
    found = table.get(model)
    if found is None:
        name = model.rsplit("/", 1)[-1]
        found = table.get(name) or table.get(SNAPSHOT.sub("", name))
    return found


@dataclass(frozen=True, slots=True)
class Limits:
    """What a model can do; None where it is not known."""

    max_output_tokens: int | None = None
    """The most tokens it writes in one answer (thinking included where it counts)."""
    reasoning: bool | None = None
    """Whether it reasons: True takes ``reasoning_effort``, False refuses both reasoning
    and thinking."""
    completion_tokens: bool = False
    """Whether it takes its output ceiling only as ``max_completion_tokens`` (OpenAI's
    reasoning models refuse ``max_tokens``)."""
    prefill: bool | None = None
    """Whether it continues a final assistant message (an assistant *prefill*) rather
    than answering anew: how a stream that failed mid-way is continued
    (:mod:`hookgate.wire.continuation`). Anthropic's models do; OpenAI's do not."""


SHIPPED: Mapping[str, Limits] = {
    # OpenAI
    "gpt-5": Limits(128_000, True, completion_tokens=True),
    "gpt-5-mini": Limits(128_000, True, completion_tokens=True),
    "gpt-5-nano": Limits(128_000, True, completion_tokens=True),
    "gpt-5-codex": Limits(128_000, True, completion_tokens=True),
    "gpt-5-pro": Limits(272_000, True, completion_tokens=True),
    "gpt-5-chat-latest": Limits(16_384, False),
    "gpt-4.1": Limits(32_768, False),
    "gpt-4.1-mini": Limits(32_768, False),
    "gpt-4.1-nano": Limits(32_768, False),
    "gpt-4o": Limits(16_384, False),
    "gpt-4o-mini": Limits(16_384, False),
    "chatgpt-4o-latest": Limits(16_384, False),
    "gpt-4-turbo": Limits(4_096, False),
    "gpt-3.5-turbo": Limits(4_096, False),
    "o1": Limits(100_000, True, completion_tokens=True),
    "o1-pro": Limits(100_000, True, completion_tokens=True),
    "o3": Limits(100_000, True, completion_tokens=True),
    "o3-mini": Limits(100_000, True, completion_tokens=True),
    "o3-pro": Limits(100_000, True, completion_tokens=True),
    "o4-mini": Limits(100_000, True, completion_tokens=True),
    # Anthropic
    "claude-opus-4": Limits(32_000, True, prefill=True),
    "claude-opus-4-1": Limits(32_000, True, prefill=True),
    "claude-opus-4-5": Limits(64_000, True, prefill=True),
    "claude-sonnet-4": Limits(64_000, True, prefill=True),
    "claude-sonnet-4-5": Limits(64_000, True, prefill=True),
    "claude-sonnet-4-6": Limits(64_000, True, prefill=True),
    "claude-haiku-4-5": Limits(64_000, True, prefill=True),
    "claude-3-7-sonnet": Limits(64_000, True, prefill=True),
    "claude-3-5-haiku": Limits(8_192, False, prefill=True),
    # Google
    "gemini-2.5-pro": Limits(65_536, True),
    "gemini-2.5-flash": Limits(65_536, True),
    "gemini-2.5-flash-lite": Limits(65_536, True),
    "gemini-2.0-flash": Limits(8_192, False),
    "gemini-2.0-flash-lite": Limits(8_192, False),
}


def limits_of(
    model: str,
    *,
    max_output_tokens: int | None = None,
    reasoning: bool | None = None,
    prefill: bool | None = None,
) -> Limits:
    """What ``model`` can do: the shipped table's entry, with a target's own settings
    (not None) taking precedence."""
    known = lookup(SHIPPED, model) or Limits()
    return Limits(
        max_output_tokens if max_output_tokens is not None else known.max_output_tokens,
        reasoning if reasoning is not None else known.reasoning,
        known.completion_tokens,
        prefill if prefill is not None else known.prefill,
    )


CONTEXT_WINDOWS: Mapping[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "gpt-5-codex": 400_000,
    "gpt-5-pro": 400_000,
    "gpt-5-chat-latest": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "chatgpt-4o-latest": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-pro": 200_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o3-pro": 200_000,
    "o4-mini": 200_000,
    # Anthropic (the standard window; the 1M-token beta is a target's own context_window)
    "claude-opus-4": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4-5": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-sonnet-4-6": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    # Google
    "gemini-2.5-pro": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.5-flash-lite": 1_048_576,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.0-flash-lite": 1_048_576,
}
"""The tokens each well-known model accepts, prompt and output together."""


def context_window_of(model: str, *, context_window: int | None = None) -> int | None:
    """The tokens ``model`` accepts: a target's own ``context_window`` when set, else the
    shipped table's (looked up as :func:`lookup` does); None when neither knows."""
    if context_window is not None:
        return context_window
    return lookup(CONTEXT_WINDOWS, model)
