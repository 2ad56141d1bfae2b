"""Policies used by tests, loaded through the registry by import path like a user's own."""

from __future__ import annotations

import asyncio
import os
from collections import defaultdict
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from hookgate import Context, ModelCall, ModelResponse, Next, Policy
from hookgate.errors import PolicyBlocked
from hookgate.pipeline.agent import NextReply, Reply, ReplyContext, ReplyPaused
from hookgate.pipeline.hooks import Messages
from hookgate.pipeline.services import Services
from hookgate.wire.deltas import DeltaKey, StreamTransform

LOGS: defaultdict[str, list[str]] = defaultdict(list)
"""Recorded hook calls, by the ``log`` name in each policy's config."""


class RecorderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    label: str
    log: str = "default"


class Recorder(Policy):
    """Records every hook call as ``label:hook`` and leaves a visible mark where it can."""

    name = "recorder"
    Config = RecorderConfig
    config: RecorderConfig

    def _note(self, event: str) -> None:
        LOGS[self.config.log].append(f"{self.config.label}:{event}")

    async def on_system_prompt(self, prompt: str, ctx: Context) -> str:
        self._note("system")
        return f"{prompt}[{self.config.label}]"

    async def convert_to_llm(self, messages: Messages, ctx: Context) -> Messages:
        self._note("convert")
        return [*messages, {"role": "user", "content": f"from {self.config.label}"}]

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        self._note("before")
        response = await next(call, ctx)
        self._note("after")
        return response

    async def on_response(self, response: ModelResponse, ctx: Context) -> ModelResponse:
        self._note("response")
        marks = [*response.body.get("marks", []), self.config.label]
        return response.with_body({**response.body, "marks": marks})

    def on_response_stream(self, ctx: Context) -> StreamTransform | None:
        self._note("stream")
        return Bracket(self.config.label)


class Bracket(StreamTransform):
    """Holds back every other character, then wraps each finished string in ``label(...)``."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.held: dict[DeltaKey, str] = {}
        self.started: set[DeltaKey] = set()

    async def delta(self, key: DeltaKey, text: str) -> str:
        prefix = "" if key in self.started else f"{self.label}("
        self.started.add(key)
        pending = self.held.get(key, "") + text
        keep = len(pending) // 2
        self.held[key] = pending[keep:]
        return prefix + pending[:keep]

    async def end(self, key: DeltaKey) -> str:
        prefix = "" if key in self.started else f"{self.label}("
        self.started.add(key)
        return prefix + self.held.pop(key, "") + ")"


class WhoServes(Policy):
    """Says which process served a model call, and under which config: the headers
    ``x-hookgate-test-pid`` and ``x-hookgate-test-label`` (the config's ``label``)."""

    name = "who_serves"
    Config = RecorderConfig
    config: RecorderConfig

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        ctx.response_headers["x-hookgate-test-pid"] = str(os.getpid())
        ctx.response_headers["x-hookgate-test-label"] = self.config.label
        return await next(call, ctx)


class BlockWordConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    word: str


class BlockWord(Policy):
    """Refuses any call whose body mentions ``word``."""

    name = "block_word"
    Config = BlockWordConfig
    config: BlockWordConfig

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        if self.config.word in call.payload.to_bytes().decode():
            raise PolicyBlocked(
                f"the word {self.config.word!r} is not allowed", code="word_blocked"
            )
        return await next(call, ctx)


class Buggy(BlockWord):
    """A policy with a bug: a call whose body mentions ``word`` raises ``ValueError``."""

    name = "buggy"

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        if self.config.word in call.payload.to_bytes().decode():
            raise ValueError("a bug in a policy")
        return await next(call, ctx)


class Fragile(Policy):
    """Valid settings, yet it cannot start: what a policy whose resource is missing does."""

    name = "fragile"

    def __init__(self, config: BaseModel) -> None:
        super().__init__(config)
        raise RuntimeError("the thing this policy needs is not there")


class NoServices(Policy):
    """Valid and built, yet it cannot be attached to the server's services: it fails
    where a server starts (each worker, with ``--workers``), not where a config is read."""

    name = "no_services"

    def attach(self, services: Services) -> None:
        raise RuntimeError("the services this policy needs are not there")


class ReplyReportConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str


class ReplyReport(Policy):
    """Appends what each reply counted, and how it ended (``status``: ``ok``, ``error`` with
    the error's type, ``paused``), when it ends, to a JSON-lines file (for replies run in
    another process)."""

    name = "reply_report"
    Config = ReplyReportConfig
    runs_in = frozenset({"sdk"})
    config: ReplyReportConfig

    async def on_reply(self, reply: Reply, ctx: ReplyContext, next: NextReply) -> Any:
        status, error = "error", None
        try:
            result = await next(reply, ctx)
            status = "ok"
            return result
        except ReplyPaused:
            status = "paused"
            raise
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            line = {
                "reply_id": ctx.reply_id,
                "status": status,
                "error": error,
                "turns": ctx.turns,
                "tool_calls": ctx.tool_calls,
                "input_tokens": ctx.usage.input_tokens,
                "session": ctx.session,
            }
            await asyncio.to_thread(self._append, orjson.dumps(line, default=str) + b"\n")

    def _append(self, line: bytes) -> None:
        with open(self.config.path, "ab") as out:
            out.write(line)
