"""YAML policy names → policy classes, and building policies from config entries.

Built-in policies are listed by import path and imported only when a config uses them.
A YAML key of the form ``package.module:ClassName`` loads a user's own
:class:`~hookgate.pipeline.hooks.Policy` subclass the same way, so custom policies need no
registration code.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from hookgate.pipeline.hooks import (
    Policy,
    PolicyDefinitionError,
    definition_problems,
    label,
)

BUILTIN: Mapping[str, str] = {
    "budget": "hookgate.policies.budget:BudgetPolicy",
    "context": "hookgate.policies.context:ContextPolicy",
    "fallback": "hookgate.policies.fallback:FallbackPolicy",
    "model_call_limit": "hookgate.policies.model_call_limit:ModelCallLimitPolicy",
    "output_check": "hookgate.policies.output_check:OutputCheckPolicy",
    "pii": "hookgate.policies.pii:PiiPolicy",
    "provenance": "hookgate.policies.provenance:ProvenancePolicy",
    "rate_limit": "hookgate.policies.rate_limit:RateLimitPolicy",
    "reply_budget": "hookgate.policies.reply_budget:ReplyBudgetPolicy",
    "system_prompt": "hookgate.policies.system_prompt:SystemPromptPolicy",
    "todo": "hookgate.policies.todo:TodoPolicy",
    "tool_guard": "hookgate.policies.tool_guard:ToolGuardPolicy",
    "tool_retry": "hookgate.policies.tool_retry:ToolRetryPolicy",
    "tracing": "hookgate.policies.tracing:TracingPolicy",
}


class UnknownPolicy(LookupError):
    """A policy name that is neither built in nor an importable ``module:Class``."""


def resolve(name: str) -> type[Policy[Any]]:
    """The policy class for a YAML key; raises :class:`UnknownPolicy`."""
    path = BUILTIN.get(name)
    if path is None:
        if ":" not in name:
            known = ", ".join(sorted(BUILTIN))
            raise UnknownPolicy(
                f"unknown policy {name!r} (built in: {known}; or a 'package.module:Class')"
            )
        path = name
    module_name, _, attr = path.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise UnknownPolicy(f"cannot load policy {name!r}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise UnknownPolicy(f"{name!r} is not a hookgate Policy subclass")
    return cls


def build(name: str, settings: Any) -> Policy[Any]:
    """Validate ``settings`` with the policy's ``Config`` and instantiate it.

    Raises :class:`UnknownPolicy`, :class:`PolicySettingsError` listing every problem
    of the settings, or :class:`~hookgate.pipeline.hooks.PolicyDefinitionError` listing
    every problem of the class (a hook of the wrong kind, no ``name``).
    """
    cls = resolve(name)
    try:
        config = cls.Config.model_validate({} if settings is None else settings)
    except ValidationError as exc:
        raise PolicySettingsError(exc) from None
    policy = cls(config)
    if problems := definition_problems(policy):
        raise PolicyDefinitionError([(label(policy), problem) for problem in problems])
    return policy


class PolicySettingsError(ValueError):
    """A policy's settings failed its ``Config`` model; ``errors`` are pydantic's."""

    def __init__(self, error: ValidationError) -> None:
        super().__init__(str(error))
        self.errors = error.errors()
