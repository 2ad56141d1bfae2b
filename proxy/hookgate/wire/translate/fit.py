"""A translated call fitted to what its model can do. Pure.

A client written for one provider asks what that provider's models take: Claude Code
asks every model for extended thinking and 32,000 output tokens. Translated for another
model, such a request can be one the model refuses outright: GPT-4o takes no
``reasoning_effort`` and writes at most 16,384 tokens, OpenAI's reasoning models refuse
``max_tokens``, Gemini 2.0 takes no thinking budget. So a translated call (only a
translated one: a client speaking its model's own API is sent what it sent) is fitted
to its model's :class:`~hookgate.wire.models.Limits` by :func:`fit`:

* the output ceiling is lowered to the model's most, which it could not exceed anyway;
* reasoning is left out for a model known not to reason: its answer has no thinking, as
  when the client itself asks a model without it;
* on Chat Completions, ``max_tokens`` becomes ``max_completion_tokens`` for a model that
  takes only that name (OpenAI's reasoning models);
* on Messages, a thinking budget that no longer fits under the lowered ``max_tokens`` is
  lowered with it (Anthropic requires ``budget_tokens`` below ``max_tokens`` and at least
  :data:`MIN_THINKING_BUDGET`), or left out when it cannot fit.

What is not known (None) changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hookgate.wire.models import Limits

MIN_THINKING_BUDGET = 1024
"""Anthropic's smallest ``thinking.budget_tokens``."""


def fit(api: str, body: Mapping[str, Any], limits: Limits) -> tuple[dict[str, Any], list[str]]:
    """``body``, a request in ``api`` as it goes upstream, fitted to ``limits``; and the
    fields that changed (for the log)."""
    out = dict(body)
    changed: list[str] = []
    if api == "chat.completions":
        _fit_chat(out, limits, changed)
    elif api == "messages":
        _fit_messages(out, limits, changed)
    elif api == "generate_content":
        _fit_gemini(out, limits, changed)
    return out, changed


def _lower(container: dict[str, Any], field: str, most: int | None, changed: list[str]) -> None:
    value = container.get(field)
    if most is not None and isinstance(value, int) and value > most:
        container[field] = most
        changed.append(field)


def _fit_chat(out: dict[str, Any], limits: Limits, changed: list[str]) -> None:
    for field in ("max_completion_tokens", "max_tokens"):
        _lower(out, field, limits.max_output_tokens, changed)
    if limits.reasoning is False and out.pop("reasoning_effort", None) is not None:
        changed.append("reasoning_effort")
    if limits.completion_tokens and "max_tokens" in out and "max_completion_tokens" not in out:
        out["max_completion_tokens"] = out.pop("max_tokens")
        changed.append("max_tokens")


def _fit_messages(out: dict[str, Any], limits: Limits, changed: list[str]) -> None:
    _lower(out, "max_tokens", limits.max_output_tokens, changed)
    thinking = out.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") == "disabled":
        return
    if limits.reasoning is False:
        del out["thinking"]
        changed.append("thinking")
        return
    budget, most = thinking.get("budget_tokens"), out.get("max_tokens")
    if isinstance(budget, int) and isinstance(most, int) and budget >= most:
        if most - 1 < MIN_THINKING_BUDGET:
            del out["thinking"]
        else:
            out["thinking"] = {**thinking, "budget_tokens": most - 1}
        changed.append("thinking")


def _fit_gemini(out: dict[str, Any], limits: Limits, changed: list[str]) -> None:
    config = out.get("generationConfig")
    if not isinstance(config, Mapping):
        return
    config = out["generationConfig"] = dict(config)
    _lower(config, "maxOutputTokens", limits.max_output_tokens, changed)
    if limits.reasoning is False and config.pop("thinkingConfig", None) is not None:
        changed.append("thinkingConfig")
