"""``context``: keep what the model reads under a context budget, before each model call.

YAML (every key optional)::

    - context:
        trigger: {share: 0.8}          # act when the prompt exceeds this: {tokens: N}, or
                                       #   {share: S} of the model's context window
        target: {share: 0.6}           # then shrink it to this (default: 3/4 of trigger)
        context_window: 128000         # the window when neither the model's target
                                       #   (``context_window`` in ``models:``) nor the
                                       #   shipped model table names one
        tool_result_limit: 2000        # 1. cap each tool result at this many tokens
        clear_tool_results:            # 2. replace old tool results, oldest first
          keep_last: 3                 #    the newest results are kept
          exclude: [get_plan]          #    never these tools (globs)
          placeholder: "[cleared: the tool result was removed to save context]"
        turns:                         # 3. remove old turns, oldest first
          keep_last: 2                 #    the newest turns are kept (the current one always)
          summarize:                   #    and replace them with a summary the model writes
            model: gpt-4o-mini         #    (default: the call's model; same providers)
            max_tokens: 400            #    the summary's length
            max_input_tokens: 4000     #    the most one summary request sends (as
                                       #    LangChain's); a longer history is read in
                                       #    pieces, each extending the summary so far
            prompt: "Summarize ..."

The steps run in that order, each only while the prompt is still over ``target`` (the cap
applies to every result at once). The system prompt is never touched, and a tool call is
never separated from its result: old turns are removed whole, and a cleared result keeps
its call (:mod:`hookgate.wire.history`).

A summary is one model call, made through the rest of the ``on_model_call`` onion — the
same providers, fallback and budgets as the call itself (list ``context`` before ``budget``
so it is charged; in the SDK its usage is added to the reply's, which ``reply_budget``
reads) — and it reads the history as the model would (after ``pii``). It is
inserted where the removed turns were, as a user message. Summaries are cached per removed
history (LRU): while turns accumulate, each call reuses the summary and a new one extends
the last one with only the newly removed turns. No summary request sends more than
``max_input_tokens``: removed turns that do not fit are read in pieces, in order, each
request carrying the summary so far and the next piece (so a long history's first trim
makes several sequential summary calls, and nothing is summarized from a truncated text
but a single message longer than the whole bound).

It edits what one model call sends, like LangChain's ``ContextEditingMiddleware``: the
framework's memory, and the client's history in the proxy, stay whole. In the proxy, a
trimmed prompt changes the prefix the provider's prompt cache keyed on: the first call
after a trim (or a new summary) is a cache miss from the first changed message on, and
the calls after it hit again while the trimmed prefix stays the same. Set ``trigger`` well
above ``target`` so that happens once per several turns, not on every call.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import orjson
from pydantic import Field, model_validator

from hookgate.budgets import tokens
from hookgate.pipeline.hooks import Next, Policy, PolicyConfig
from hookgate.pipeline.observe import Metric
from hookgate.pipeline.types import Context, JsonBody, ModelCall, ModelResponse
from hookgate.policies.globs import listed
from hookgate.wire import history, prompts
from hookgate.wire.models import context_window_of
from hookgate.wire.usage import facts_of

log = logging.getLogger("hookgate")

EDITS = Metric(
    "hookgate_context_edits_total",
    "Model calls whose prompt the context policy shrank, by the last step it needed",
    ("step",),
)

SUMMARY_PROMPT = (
    "Summarize the conversation below for the assistant that continues it. Keep every fact, "
    "decision, name, number and open question it will need; drop pleasantries. Write plain "
    "prose, at most a few paragraphs."
)
SUMMARY_PREFIX = "Summary of the earlier conversation:\n"
CACHE_SIZE = 1024


class Size(PolicyConfig):
    """A prompt size: a token count, or a share of the model's context window."""

    tokens: int | None = Field(None, gt=0)
    """A prompt size in tokens."""
    share: float | None = Field(None, gt=0, le=1)
    """A prompt size as a share of the model's context window."""

    @model_validator(mode="after")
    def _one(self) -> Size:
        if (self.tokens is None) == (self.share is None):
            raise ValueError("give one of tokens and share")
        return self

    def of(self, window: int) -> int:
        """The size in tokens for a model with this ``window``."""
        return self.tokens if self.tokens is not None else int(window * (self.share or 0))


class ClearToolResults(PolicyConfig):
    """Step 2: old tool results replaced by a placeholder, oldest first."""

    keep_last: int = Field(3, ge=0)
    """The newest tool results left whole."""
    exclude: tuple[str, ...] = ()
    """Tools (globs) whose results are never cleared."""
    placeholder: str = "[cleared: the tool result was removed to save context]"
    """What a cleared result reads instead."""


class Summarize(PolicyConfig):
    """Removed turns replaced by a summary the model writes."""

    model: str | None = None
    """The model that writes the summary (default: the call's own), through the same providers and
    budgets."""
    max_tokens: int = Field(400, gt=0)
    """The summary's length, in output tokens."""
    max_input_tokens: int = Field(4000, gt=0)
    """The most a summary request sends (prompt, summary so far and transcript), as
    LangChain's ``SummarizationMiddleware`` bounds it (``trim_tokens_to_summarize``); a
    longer history is summarized in pieces."""
    prompt: str = SUMMARY_PROMPT
    """The instruction the summary request starts with."""

    @model_validator(mode="after")
    def _room(self) -> Summarize:
        if self.max_input_tokens <= self.max_tokens + 100:
            raise ValueError("max_input_tokens must leave room for the summary so far")
        return self


class Turns(PolicyConfig):
    """Step 3: old turns removed whole, oldest first."""

    keep_last: int = Field(2, ge=1)
    """The newest turns kept (the current one always is)."""
    summarize: Summarize | None = None
    """Replace the removed turns with a summary the model writes (unset: they are dropped)."""


class ContextConfig(PolicyConfig):
    """Settings of the ``context`` policy."""

    trigger: Size = Size(share=0.8)
    """Act when the prompt exceeds this: ``{tokens: N}`` or ``{share: S}`` of the context window."""
    target: Size | None = None
    """Shrink the prompt to this (default: three quarters of ``trigger``)."""
    context_window: int = Field(128_000, gt=0)
    """The window when neither the model's target (``context_window``) nor the shipped model table
    names one."""
    tool_result_limit: int | None = Field(None, gt=0)
    """Step 1: cap each tool result at this many tokens (unset: no cap)."""
    clear_tool_results: ClearToolResults | None = None
    """Step 2: replace old tool results, oldest first (unset: skipped)."""
    turns: Turns | None = Turns()
    """Step 3: remove old turns whole, oldest first (null: skipped)."""


class ContextPolicy(Policy[ContextConfig]):
    """See the module docstring."""

    name: ClassVar[str] = "context"
    metrics = (EDITS,)

    def __init__(self, config: ContextConfig) -> None:
        super().__init__(config)
        self._summaries: OrderedDict[str, str] = OrderedDict()

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        if call.api not in ("chat.completions", "responses"):
            return await next(call, ctx)
        serving = call.targets[0] if call.targets else None
        window = (
            context_window_of(serving.model or call.model, context_window=serving.context_window)
            if serving is not None
            else None
        ) or self.config.context_window
        size = tokens.prompt_tokens(call.api, call.model, call.body)
        if size <= self.config.trigger.of(window):
            return await next(call, ctx)
        target = (
            self.config.target.of(window)
            if self.config.target is not None
            else self.config.trigger.of(window) * 3 // 4
        )
        edit = _Edit(call, size, target)
        step = self._cap(edit) or self._clear(edit) or await self._turns(edit, ctx, next)
        if edit.entries is edit.original:
            return await next(call, ctx)
        ctx.observation.count(EDITS, step or "over_target")
        ctx.observation.attributes["hookgate.context.tokens_before"] = size
        ctx.observation.attributes["hookgate.context.tokens_after"] = edit.size
        if step is None:
            log.info("context: %s still %d tokens over its target", call.model, edit.size - target)
        return await next(call.with_body(edit.body()), ctx)

    # the steps: each returns its name when the prompt is then under target ------------

    def _cap(self, edit: _Edit) -> str | None:
        limit = self.config.tool_result_limit
        if limit is None:
            return None
        for index, _ in history.tool_results(edit.entries):
            entry = edit.entries[index]
            cut = tokens.truncate(edit.model, history.result_text(entry), limit)
            if cut is not None:
                edit.replace(index, history.with_result_text(entry, f"{cut}\n[truncated]"))
        return "tool_result_limit" if edit.under() else None

    def _clear(self, edit: _Edit) -> str | None:
        clear = self.config.clear_tool_results
        if clear is None:
            return None
        results = [
            index
            for index, name in history.tool_results(edit.entries)
            if not (clear.exclude and listed(name, clear.exclude))
        ]
        for index in results[: max(0, len(results) - clear.keep_last)]:
            if edit.under():
                break
            entry = edit.entries[index]
            if history.result_text(entry) != clear.placeholder:
                edit.replace(index, history.with_result_text(entry, clear.placeholder))
        return "clear_tool_results" if edit.under() else None

    async def _turns(self, edit: _Edit, ctx: Context, next: Next) -> str | None:
        settings = self.config.turns
        if settings is None:
            return None
        units = history.units(edit.entries)
        grouped = history.turns(units)
        removable = grouped[: max(0, len(grouped) - settings.keep_last)]
        removed: list[int] = []
        spared = 0  # the tokens of the entries in ``removed``
        for turn in removable:
            if edit.size - spared <= edit.target:
                break
            indexes = [i for unit in turn for i in range(unit.start, unit.end)]
            spared += sum(tokens.item_tokens(edit.model, edit.entries[i]) for i in indexes)
            removed += indexes
        if not removed:
            return None
        summary = None
        if settings.summarize is not None:
            dropped = [edit.entries[i] for i in removed]
            summary = await self._summary(dropped, settings.summarize, edit.call, ctx, next)
        edit.remove(removed, summary)
        step = "summarize" if summary is not None else "turns"
        return step if edit.under() else None

    async def _summary(
        self, dropped: list[Any], settings: Summarize, call: ModelCall, ctx: Context, next: Next
    ) -> dict[str, Any] | None:
        """The summary message for ``dropped`` (cached), or None when it cannot be made (the
        turns are then removed without one). What a summary call sends stays within
        ``settings.max_input_tokens``: the part of ``dropped`` no cached summary covers is
        read in pieces that fit, each extending the summary of the ones before it."""
        keys = _prefix_keys(dropped)
        known = 0  # the longest prefix already summarized
        for n in range(len(keys), 0, -1):
            if keys[n - 1] in self._summaries:
                known = n
                break
        summary = self._summaries[keys[known - 1]] if known else None
        if known:
            self._summaries.move_to_end(keys[known - 1])
        model = settings.model or call.model
        while known < len(dropped):
            end, text = _piece(dropped, known, summary, settings, model)
            summary = await self._summarize(text, settings, model, call, ctx, next)
            if summary is None:
                return None
            self._summaries[keys[end - 1]] = summary
            while len(self._summaries) > CACHE_SIZE:
                self._summaries.popitem(last=False)
            known = end
        assert summary is not None
        return _summary_message(summary)

    async def _summarize(
        self, text: str, settings: Summarize, model: str, call: ModelCall, ctx: Context,
        next: Next,
    ) -> str | None:  # fmt: skip
        """One summary call on ``text`` through the rest of the onion; None when it fails."""
        body = {
            "model": model,
            "messages": [
                {"role": "system", "content": settings.prompt},
                {"role": "user", "content": text},
            ],
            "max_tokens": settings.max_tokens,
        }
        targets = tuple(
            dataclasses.replace(t, model=settings.model) if settings.model and t.model else t
            for t in call.targets
        )
        asked = ModelCall(
            api="chat.completions", payload=JsonBody.from_data(body), model=model,
            stream=False, targets=targets, headers=call.headers,
        )  # fmt: skip
        try:
            response = await next(asked, ctx)
        except Exception as exc:  # a summary is an optimisation: the turns go without one
            log.warning("context: the summary call failed (%s); old turns removed", exc)
            return None
        if response.status >= 300 or response.payload is None:
            return None
        facts = facts_of("chat.completions", response.body, collect_text=True)
        if ctx.reply is not None and facts.usage is not None:
            ctx.reply.add_usage(facts.usage)  # the reply's budgets count the summary too
        summary = "".join(facts.text)
        return summary if summary.strip() else None


def _piece(
    dropped: Sequence[Any], start: int, earlier: str | None, settings: Summarize, model: str
) -> tuple[int, str]:
    """The next piece of ``dropped`` to summarize from ``start``: its end and the text of
    its summary request (``earlier``, the summary so far, then the piece's transcript),
    within ``settings.max_input_tokens`` with the prompt. At least one entry is taken; one
    longer than the room left is cut to it."""
    head = f"Summary so far:\n{earlier}\n\nWhat followed:\n" if earlier else ""
    room = settings.max_input_tokens - tokens.count(model, settings.prompt + head)
    lines: list[str] = []
    end = start
    while end < len(dropped):
        line = history.transcript(dropped[end : end + 1])
        cost = tokens.count(model, line + "\n") if line else 0
        if lines and cost > room:
            break
        if not lines and cost > room:
            line = tokens.truncate(model, line, max(room, 1)) or line
            cost = room
        if line:
            lines.append(line)
        room -= cost
        end += 1
    return end, head + "\n".join(lines)


class _Edit:
    """The history of one call being shrunk, with its running token estimate."""

    def __init__(self, call: ModelCall, size: int, target: int) -> None:
        self.call = call
        self.model = call.model
        self.original: Sequence[Any] = prompts.messages_of(call.api, call.body) or ()
        self.entries: list[Any] | Sequence[Any] = self.original
        self.size = size
        self.target = target

    def under(self) -> bool:
        """Whether the prompt is under target."""
        return self.size <= self.target

    def replace(self, index: int, entry: Any) -> None:
        if self.entries is self.original:
            self.entries = list(self.original)
        old = self.entries[index]
        self.size += tokens.item_tokens(self.model, entry) - tokens.item_tokens(self.model, old)
        self.entries[index] = entry  # type: ignore[index]

    def remove(self, indexes: Sequence[int], summary: Mapping[str, Any] | None) -> None:
        gone = set(indexes)
        first = min(gone)
        self.size -= sum(tokens.item_tokens(self.model, self.entries[i]) for i in gone)
        kept: list[Any] = []
        for index, entry in enumerate(self.entries):
            if index == first and summary is not None:
                kept.append(summary)
                self.size += tokens.item_tokens(self.model, summary)
            if index not in gone:
                kept.append(entry)
        self.entries = kept

    def body(self) -> dict[str, Any]:
        return prompts.with_messages(self.call.api, self.call.body, self.entries)


def _summary_message(summary: str) -> dict[str, Any]:
    return {"role": "user", "content": SUMMARY_PREFIX + summary}


def _prefix_keys(entries: Sequence[Any]) -> list[str]:
    """A key per prefix of ``entries`` (``keys[n]`` names ``entries[: n + 1]``): a chain of
    SHA-256 digests, so a longer history finds the summary of its longest known prefix."""
    keys: list[str] = []
    digest = b""
    for entry in entries:
        digest = hashlib.sha256(digest + orjson.dumps(entry, default=str)).digest()
        keys.append(digest.hex())
    return keys
