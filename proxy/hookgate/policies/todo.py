"""``todo`` (SDK): a planning tool, ``write_todos``, and the plan kept in view.

YAML::

    - todo:
        system_prompt: "..."     # when and how to plan (a default is built in)
        tool_description: "..."  # what the model reads about write_todos
        show_list: true          # the current list is added to the system prompt
        max_items: 50

LangChain's ``TodoListMiddleware``, for every framework whose adapter offers a policy's
tools (:meth:`~hookgate.pipeline.hooks.Policy.tools`). The agent gets a ``write_todos``
tool that replaces its todo list (each item ``content`` and ``status``: pending,
in_progress, completed); every model call of the reply gets ``system_prompt`` and, with
``show_list``, the list as it stands — so the plan stays in view when the ``context``
policy has trimmed the turns that wrote it.

The list belongs to the session when the reply has one (the framework's thread or
conversation id; kept in the store with the session's state) and to the reply otherwise.
``write_todos`` may be called once per model answer: it replaces the whole list, so a
second call in the same answer gets an error result the model reads, and the first stands.
With ``pii``, list ``todo`` first: Responses ``instructions`` are redacted in ``pii``'s
``on_system_prompt``, which must see the list (chat system messages are redacted anyway).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import Field

from hookgate.pipeline.agent import PolicyTool, ReplyContext, ToolInputError
from hookgate.pipeline.hooks import Policy, PolicyConfig
from hookgate.pipeline.types import Context

TOOL = "write_todos"

DESCRIPTION = (
    "Create or update your todo list for the current task: pass the whole list each time, "
    "every item with its content and status (pending, in_progress, completed). Use it for "
    "work of three or more steps, or when the user gives several tasks: mark an item "
    "in_progress before you start it and completed as soon as it is done, and add the "
    "follow-up items you discover. Skip it for a single simple step. Call it at most once "
    "per answer."
)

PROMPT = (
    "You have a `write_todos` tool to plan and track multi-step work. For a task of three or "
    "more steps, write the plan first, then keep it current: one item in_progress at a "
    "time unless items are independent, each marked completed when it is done. Do not use "
    "it for simple requests."
)

STATUSES = ("pending", "in_progress", "completed")


class TodoConfig(PolicyConfig):
    """Settings of the ``todo`` policy."""

    system_prompt: str = PROMPT
    """When and how to plan, added to the system prompt of every model call."""
    tool_description: str = DESCRIPTION
    """What the model reads about ``write_todos``."""
    show_list: bool = True
    """Add the current list to the system prompt of every model call."""
    max_items: int = Field(50, ge=1)
    """The most items one ``write_todos`` call may write."""


class TodoPolicy(Policy[TodoConfig]):
    """See the module docstring."""

    name: ClassVar[str] = "todo"
    runs_in = frozenset({"sdk"})

    def tools(self) -> Sequence[PolicyTool]:
        item = {
            "type": "object",
            "properties": {
                "content": {"type": "string", "minLength": 1},
                "status": {"type": "string", "enum": list(STATUSES)},
            },
            "required": ["content", "status"],
            "additionalProperties": False,
        }
        parameters = {
            "type": "object",
            "properties": {
                "todos": {"type": "array", "items": item, "maxItems": self.config.max_items}
            },
            "required": ["todos"],
            "additionalProperties": False,
        }
        return (PolicyTool(TOOL, self.config.tool_description, parameters, self._write),)

    async def _write(self, arguments: Mapping[str, Any], ctx: ReplyContext) -> str:
        kept = self._kept(ctx)
        answer = [ctx.reply_id, ctx.turns]  # the model answer that asked for this call
        if kept.get("written_in") == answer:
            raise ToolInputError(
                f"{TOOL} was already called in this answer; it replaces the whole list, so "
                "call it once per answer with every item"
            )
        todos = [{"content": t["content"], "status": t["status"]} for t in arguments["todos"]]
        kept.update(todos=todos, written_in=answer)
        return f"Updated the todo list:\n{_render(todos)}" if todos else "Cleared the todo list."

    async def on_system_prompt(self, prompt: str, ctx: Context) -> str:
        if ctx.reply is None:  # a model call outside any reply: no list, no tool to use
            return prompt
        parts = [prompt, self.config.system_prompt]
        todos = self.todos(ctx.reply)
        if self.config.show_list and todos:
            parts.append(f"Your todo list now:\n{_render(todos)}")
        return "\n\n".join(part for part in parts if part)

    def todos(self, ctx: ReplyContext) -> list[dict[str, str]]:
        """The reply's todo list (its session's, when it has one), oldest item first."""
        todos: list[dict[str, str]] = self._kept(ctx).get("todos", [])
        return todos

    def _kept(self, ctx: ReplyContext) -> dict[str, Any]:
        owner = ctx.session if ctx.session_id else ctx.state
        kept: dict[str, Any] = owner.setdefault(self.slot, {})
        return kept


def _render(todos: Sequence[Mapping[str, str]]) -> str:
    return "\n".join(f"{n}. [{t['status']}] {t['content']}" for n, t in enumerate(todos, 1))
