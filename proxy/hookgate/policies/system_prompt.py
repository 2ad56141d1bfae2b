"""``system_prompt``: add organisation text to the system prompt of every chat/Responses call.

YAML::

    - system_prompt:
        prepend: "You work for Acme. Never reveal internal hostnames."
        append: "Answer in English."
        separator: "\\n\\n"          # between the parts (default: a blank line)

or, for full control, a template with placeholders (other braces are left alone, so
JSON examples in the text need no escaping)::

    - system_prompt:
        template: "{prompt}\\n\\nAgent: {agent}. Today is {date}."

Placeholders: ``{prompt}`` (the prompt so far, "" if none), ``{agent}``,
``{session_id}``, ``{reply_id}``, ``{date}`` (UTC, ISO). When the request has no system
prompt, the result becomes one.
"""

from __future__ import annotations

import datetime as dt
import re

from pydantic import model_validator

from hookgate.pipeline.hooks import Policy, PolicyConfig
from hookgate.pipeline.types import Context

_PLACEHOLDER = re.compile(r"\{(prompt|agent|session_id|reply_id|date)\}")


class SystemPromptConfig(PolicyConfig):
    """Settings of the ``system_prompt`` policy."""

    prepend: str = ""
    """Text put before the system prompt."""
    append: str = ""
    """Text put after the system prompt."""
    template: str | None = None
    """The whole system prompt, with ``{prompt}``, ``{agent}``, ``{session_id}``, ``{reply_id}``,
    ``{date}`` (instead of ``prepend``/``append``; other braces are left alone)."""
    separator: str = "\n\n"
    """Between ``prepend``, the prompt and ``append``."""

    @model_validator(mode="after")
    def _one_style(self) -> SystemPromptConfig:
        if self.template is not None and (self.prepend or self.append):
            raise ValueError("use either template or prepend/append, not both")
        if self.template is None and not (self.prepend or self.append):
            raise ValueError("set prepend, append or template")
        return self


class SystemPromptPolicy(Policy[SystemPromptConfig]):
    """See the module docstring."""

    name = "system_prompt"

    async def on_system_prompt(self, prompt: str, ctx: Context) -> str:
        config = self.config
        if config.template is not None:
            values = {
                "prompt": prompt,
                "agent": ctx.agent or "",
                "session_id": ctx.session_id or "",
                "reply_id": ctx.reply_id or "",
                "date": dt.datetime.now(dt.UTC).date().isoformat(),
            }
            return _PLACEHOLDER.sub(lambda m: values[m.group(1)], config.template)
        parts = [part for part in (config.prepend, prompt, config.append) if part]
        return config.separator.join(parts)
