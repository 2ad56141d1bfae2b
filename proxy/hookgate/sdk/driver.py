"""The adapters' API of a gate: :class:`Driver`, what :mod:`hookgate.sdk.adapters` call.

An application builds a :class:`~hookgate.sdk.gate.Gate` and hands it to an adapter; the
adapter drives the gate's policies from its framework's positions through
``gate.driver``:

* a reply: :meth:`Driver.open_reply` where the framework's run starts and
  :meth:`Driver.close_reply` where it ends — with the run's result, or the error it raised
  (the ``on_reply`` onion split in two halves, :class:`Split`; found in between by id with
  :meth:`Driver.reply_of`); :meth:`Driver.pause` keeps a reply waiting for a human in the
  store and ends it here (status ``paused``), :meth:`Driver.resume_reply` continues it, in
  this process or another one, and :meth:`Driver.gone` says why a reply to resume is not
  there; :meth:`Driver.current` makes a reply current (a context variable: concurrent
  replies never mix) for code that runs in it. Every reply ends: one still open when the
  gate closes (:meth:`Driver.end_replies`) ends as an error, or as paused;
* a tool: :meth:`Driver.tool` runs one inside the ``on_tool_call`` onion, or
  :meth:`Driver.begin_tool` splits it for frameworks that report a tool's start and end in
  two callbacks; :meth:`Driver.approval` asks ``needs_approval`` first; the policies' own
  tools (:attr:`Driver.tools`) are offered in the framework's shape
  (:meth:`Driver.offer_tools`) and run with :meth:`Driver.run_tool`;
* a turn: :meth:`Driver.after_turn` records a model call's usage and asks
  ``should_stop_after_turn``;
* a model call: :meth:`Driver.model_call` runs an OpenAI-shaped call through the
  model-level hooks with the framework's own model as the terminal handler — no HTTP —
  observed by the proxy's runner (:mod:`hookgate.pipeline.runner`);
  :meth:`Driver.system_prompt` is the system prompt of a model call the gate does not run.

Wrap-up is applied here only: a reply told to wrap up (``ReplyContext.wrap_up``) gets the
instruction as a last system message and ``tool_choice: none`` on every model call the
driver runs, and after the system prompt :meth:`Driver.system_prompt` returns. An adapter
adds only what its framework alone can express (AgentScope's ``tool_choice`` on its
reasoning step, ending its loop).

Importing this module imports neither the server nor aiohttp.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import jsonschema
import orjson
from jsonschema.protocols import Validator

from hookgate.errors import PolicyBlocked
from hookgate.pipeline.agent import (
    NextReply,
    NotRepeatable,
    PolicyTool,
    Reply,
    ReplyAbandoned,
    ReplyContext,
    ReplyPaused,
    ToolCall,
    ToolInputError,
    ToolResult,
)
from hookgate.pipeline.compose import compose_onion
from hookgate.pipeline.hooks import Next, Policy, implements
from hookgate.pipeline.observe import Outcome
from hookgate.pipeline.pipeline import Pipeline
from hookgate.pipeline.runner import ObservedCall, finish
from hookgate.pipeline.types import Api, Context, JsonBody, ModelCall, ModelResponse, Target
from hookgate.sdk.approvals import PausedApprovals
from hookgate.sdk.bridge import LoopThread
from hookgate.store.base import Store, display_url
from hookgate.store.state import STATE_TTL_S, json_safe, shared
from hookgate.wire import prompts, sse
from hookgate.wire.deltas import StreamTransform
from hookgate.wire.usage import Usage

log = logging.getLogger("hookgate")

T = TypeVar("T")
V = TypeVar("V")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Running:
    """A reply being run, and the driver running it."""

    driver: Driver
    reply: ReplyContext


CURRENT: contextvars.ContextVar[Running | None] = contextvars.ContextVar(
    "hookgate_reply", default=None
)
"""The reply the running code belongs to, with its driver (None outside a reply): set by
:meth:`Driver.current`. A context variable, so concurrent replies never mix and tasks a
reply starts inherit it."""

MODEL_CALL: contextvars.ContextVar[Context | None] = contextvars.ContextVar(
    "hookgate_model_call", default=None
)
"""The model call whose terminal (the framework's model) is running here: a governed
client under it only adds the reply's headers (:mod:`hookgate.sdk.transport`), so a call
an adapter's model hook already governs is not governed twice."""

LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "hookgate_loop", default=None
)
"""The event loop running the current reply (for hooks a framework calls from threads)."""


def current_reply() -> ReplyContext | None:
    """The :class:`ReplyContext` of the reply being run here, if any."""
    running = CURRENT.get()
    return running.reply if running is not None else None


def current() -> Running | None:
    """The reply being run here and its driver, if any."""
    return CURRENT.get()


def reply_now(entry: str) -> ReplyContext:
    """The current reply; a RuntimeError naming ``entry`` (how to start one) when none runs.

    For hooks a framework calls: they only make sense inside a reply.
    """
    ctx = current_reply()
    if ctx is None:
        raise RuntimeError(f"hookgate: no reply is running; run the agent with {entry}")
    return ctx


class Driver:
    """The SDK policies of one gate, composed once, as adapters drive them (see the module
    docstring). Safe to share between replies; one per :class:`~hookgate.sdk.gate.Gate`."""

    MAX_SESSIONS = 10_000
    """Sessions whose shared state a gate without a store keeps (least recently used ones
    are forgotten); with a store, the store keeps it (:mod:`hookgate.store.state`)."""

    MAX_OPEN_REPLIES = 10_000
    """Replies opened and not yet closed that are kept; past it the oldest is taken for
    abandoned (its run raised before the framework's end hook) and failed, so its
    ``on_reply`` layers end."""

    def __init__(
        self,
        policies: Sequence[Policy],
        *,
        agent: str,
        store: Store | None,
        paused_ttl_s: float = STATE_TTL_S,
    ) -> None:
        self.agent = agent
        self._store = store
        self.paused_ttl_s = paused_ttl_s
        """How long the store keeps a paused reply's state (``sdk.paused_ttl_s``)."""
        self._sessions: OrderedDict[str, dict[str, Any]] = OrderedDict()
        listed = list(policies)
        self._reply_layers: list[Callable[[Reply, ReplyContext, NextReply], Awaitable[Any]]] = [
            p.on_reply for p in listed if implements(p, "on_reply")
        ]
        if store is not None:  # outermost: the policies see the session as the store has it
            self._reply_layers.insert(0, self._session_kept)
        self._tool_layers = [p.on_tool_call for p in listed if implements(p, "on_tool_call")]
        self._stops = [
            p.should_stop_after_turn for p in listed if implements(p, "should_stop_after_turn")
        ]
        self._approvals = [p.needs_approval for p in listed if implements(p, "needs_approval")]
        self._tools = _policy_tools(listed)
        self.tools: tuple[PolicyTool, ...] = tuple(tool for tool, _ in self._tools.values())
        """The tools the policies give the agent (:meth:`Policy.tools`), in listed order."""
        self._tools_offered = not self.tools
        self._model_terminal: contextvars.ContextVar[Next | None] = contextvars.ContextVar(
            "hookgate_model_terminal", default=None
        )
        self._pipeline = Pipeline(listed, self._terminal)
        self._open: OrderedDict[str, ReplyHandle] = OrderedDict()
        self._paused: set[str] = set()
        """Open replies waiting for a human with no store to keep them (resumable here)."""
        self.sync = LoopThread()
        """Runs the policies for frameworks' synchronous hooks (:mod:`hookgate.sdk.bridge`)."""
        self.approvals = None if store is None else PausedApprovals(store, listed, paused_ttl_s)
        """The paused calls in the approvals list (:mod:`hookgate.sdk.approvals`); None
        without a store."""

    # replies ------------------------------------------------------------------------

    async def open_reply(
        self,
        *,
        agent: str | None = None,
        input: Any = None,
        session_id: str | None = None,
        reply_id: str | None = None,
    ) -> ReplyContext:
        """Begin a reply where the framework's run starts: its ``on_reply`` layers run up
        to the point where they call ``next`` (a layer that refuses raises here). It stays
        open until :meth:`close_reply`, found in between by its id (:meth:`reply_of`)."""
        ctx = self._new_reply(agent, session_id, reply_id)
        await self._begin(ctx, input)
        return ctx

    async def close_reply(
        self, reply_id: str | None, result: Any = None, *, error: BaseException | None = None
    ) -> Any:
        """End an open reply where the framework's run ends: its ``on_reply`` layers see
        ``result`` (or ``error``, not raised again here) and what they make of the result
        is returned. Closing a reply that is not open does nothing. Any task may close it,
        on any loop (the reply's layers run on the loop that opened it)."""
        handle = self._open.pop(reply_id, None) if reply_id else None
        if handle is None:
            return result
        self._paused.discard(handle.ctx.reply_id)
        if error is not None:
            await handle.fail(error)
            return None
        return await handle.finish(result)

    def reply_of(self, reply_id: str | None) -> ReplyContext | None:
        """The open reply with this id, if any."""
        handle = self._open.get(reply_id) if reply_id else None
        return handle.ctx if handle is not None else None

    @contextmanager
    def current(
        self, ctx: ReplyContext, *, loop: asyncio.AbstractEventLoop | None = None
    ) -> Iterator[ReplyContext]:
        """Make ``ctx`` the current reply for the block (tasks created in it inherit it),
        and ``loop`` — default: the running one, if any — the loop of its synchronous
        hooks (:meth:`call_sync`). Where the block ends in another context (a framework
        drove a reply's stream from another task), ``ctx`` stops being current there."""
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        token = CURRENT.set(Running(self, ctx))
        loop_token = LOOP.set(loop) if loop is not None else None
        try:
            yield ctx
        finally:
            try:
                CURRENT.reset(token)
                if loop_token is not None:
                    LOOP.reset(loop_token)
            except ValueError:  # the token belongs to another context
                if current_reply() is ctx:
                    CURRENT.set(None)

    def set_current(self, ctx: ReplyContext | None) -> None:
        """Make ``ctx`` (None: no reply) current for the rest of this task, for a
        framework whose run is one task with no block around it (cubeloop)."""
        CURRENT.set(Running(self, ctx) if ctx is not None else None)

    async def _begin(self, ctx: ReplyContext, input: Any) -> None:
        handle: ReplyHandle = await Split.start(self._reply_layers, Reply(ctx.agent, input), ctx)
        self._open[ctx.reply_id] = handle
        while len(self._open) > self.MAX_OPEN_REPLIES:
            reply_id, abandoned = self._open.popitem(last=False)
            await abandoned.fail(self._unended(reply_id, "the framework never ended it"))

    async def end_replies(self) -> None:
        """End every reply still open (the gate is closing): a reply paused with no store
        ends as paused (:class:`ReplyPaused`: it could resume only in this process), any
        other as abandoned (:class:`ReplyAbandoned`, an error: its run never reported its
        end). Their ``on_reply`` layers end on the loop that opened them; the replies of a
        loop that has closed ended with it."""
        while self._open:
            reply_id, handle = self._open.popitem(last=False)
            await handle.fail(self._unended(reply_id, "the gate closed while it was open"))

    def _unended(self, reply_id: str, why: str) -> Exception:
        if reply_id in self._paused:
            self._paused.discard(reply_id)
            return ReplyPaused(f"hookgate: reply {reply_id} was waiting for a human and {why}")
        return ReplyAbandoned(f"hookgate: reply {reply_id} abandoned: {why}")

    def _new_reply(
        self, agent: str | None, session_id: str | None, reply_id: str | None
    ) -> ReplyContext:
        """A fresh :class:`ReplyContext` (the session's shared state attached)."""
        if not self._tools_offered:
            self._tools_offered = True  # said once
            log.warning(
                "hookgate: the policies give the agent tools (%s) that its adapter has not "
                "offered: LangChain and the Agents SDK add them; with AgentScope build the "
                "toolkit with `await middleware.list_tools()`; other frameworks take none",
                ", ".join(t.name for t in self.tools),
            )
        session: dict[str, Any] = {}
        if session_id and self._store is None:  # with a store: the store's (_session_kept)
            session = self._sessions.setdefault(session_id, session)
            self._sessions.move_to_end(session_id)
            while len(self._sessions) > self.MAX_SESSIONS:
                self._sessions.popitem(last=False)
        return ReplyContext(
            agent=agent or self.agent,
            reply_id=reply_id or f"reply_{uuid.uuid4().hex}",
            session_id=session_id,
            session=session,
        )

    # pausing for a human ------------------------------------------------------------

    async def approval(self, call: ToolCall, ctx: ReplyContext | None = None) -> str | None:
        """Why ``call`` must wait for a human (the first policy's ``needs_approval``
        reason), or None."""
        ctx = ctx or _context()
        for ask in self._approvals:
            if (reason := await ask(call, ctx)) is not None:
                return reason
        return None

    async def pause(
        self,
        ctx: ReplyContext,
        key: str | None = None,
        *,
        keep_open: bool = False,
        calls: Sequence[tuple[ToolCall, str]] = (),
    ) -> None:
        """The reply's run has stopped to wait for a human: keep the reply's state in the
        store under ``key`` (default: its id) for :attr:`paused_ttl_s` — the counters,
        usage, each policy's state and the session's — and end the reply here, its
        ``on_reply`` layers seeing :class:`ReplyPaused`; :meth:`resume_reply` continues it
        in any process sharing the store, this one included. With no store the reply stays
        open, resumable in this process only (it ends as paused when the gate closes).
        ``keep_open`` keeps it open here as well, for a run that left work in flight in this
        process (AgentScope's external tool calls, whose ``on_tool_call`` onions wait for
        their results): a resume here continues it, one elsewhere rebuilds it from the
        store, and this process's copy ends as paused when the gate closes. ``calls`` (each
        waiting call with its reason) are listed for a person to decide
        (:meth:`PausedApprovals.save <hookgate.sdk.approvals.PausedApprovals.save>`)."""
        if self._store is None:
            log.warning(
                "hookgate: no store; reply %s can resume in this process only", ctx.reply_id
            )
            self._paused.add(ctx.reply_id)
            return
        if self.approvals is not None:  # first: the session keeps what pii showed them as
            await self.approvals.save(ctx, key or ctx.reply_id, calls)
        await self._save_paused(ctx, key)
        handle = None if keep_open else self._open.pop(ctx.reply_id, None)
        if handle is not None:  # its layers save the session as they end
            await handle.fail(ReplyPaused(f"hookgate: reply {ctx.reply_id} waits for a human"))
            return
        await self._save_session(ctx)
        if keep_open:
            self._paused.add(ctx.reply_id)

    async def _save_paused(self, ctx: ReplyContext, key: str | None) -> None:
        assert self._store is not None
        saved = {
            "agent": ctx.agent, "reply_id": ctx.reply_id, "session_id": ctx.session_id,
            "state": json_safe(ctx.state), "turns": ctx.turns, "tool_calls": ctx.tool_calls,
            "usage": dataclasses.asdict(ctx.usage), "wrap_up": ctx.wrap_up, "stop": ctx.stop,
        }  # fmt: skip
        await self._store.save_state(
            f"reply:{key or ctx.reply_id}", orjson.dumps(saved), self.paused_ttl_s
        )

    async def resume_reply(self, key: str, *, input: Any = None) -> ReplyContext | None:
        """The paused reply saved under ``key``: still open in this process, or rebuilt
        from the store (its ``on_reply`` layers begin again around the rest of the run,
        with the counts it had). None when there is none."""
        if (open_ctx := self.reply_of(key)) is not None:
            self._paused.discard(key)
            return open_ctx
        saved = await self._load(f"reply:{key}") if self._store is not None else None
        if saved is None:
            return None
        if (open_ctx := self.reply_of(saved["reply_id"])) is not None:
            self._paused.discard(saved["reply_id"])
            return open_ctx
        ctx = self._new_reply(saved["agent"], saved["session_id"], saved["reply_id"])
        ctx.state.update(saved["state"])  # before the on_reply layers begin again
        ctx.turns, ctx.tool_calls = saved["turns"], saved["tool_calls"]
        ctx.usage = Usage(**saved["usage"])
        ctx.wrap_up, ctx.stop = saved["wrap_up"], saved["stop"]
        await self._begin(ctx, input)
        return ctx

    def gone(self, key: str) -> RuntimeError:
        """The error for a run resumed under ``key`` whose reply is neither open here nor
        kept in the store: it names the store and how long a paused reply is kept."""
        if self._store is None:
            where = (
                "this gate has no store, so a paused reply resumes only in the process "
                "that paused it, before its gate closes"
            )
        else:
            where = (
                f"the store {display_url(self._store.url)} keeps a paused reply for "
                f"{self.paused_ttl_s:g} s (sdk.paused_ttl_s) and only for gates that use "
                "that store: it expired, was paused with another store, or its run had "
                "already ended"
            )
        return RuntimeError(f"hookgate: reply {key} is not open here and not kept: {where}")

    async def _session_kept(self, reply: Reply, ctx: ReplyContext, next: NextReply) -> Any:
        """The outermost reply layer of a gate with a store: a session's shared state is read
        from the store as each of its replies begins and what the reply changed is merged
        back as it ends (and when it pauses), so per-session counts hold across processes
        and replicas, and tool calls through the MCP gateway meanwhile keep theirs."""
        if not ctx.session_id:
            return await next(reply, ctx)
        assert self._store is not None
        kept = shared(self._store, f"session:{ctx.session_id}")  # held while the reply runs
        ctx.session = await kept.load()
        try:
            return await next(reply, ctx)
        finally:
            await kept.save()

    async def _save_session(self, ctx: ReplyContext) -> None:
        """Write back what the reply changed in its session's state (merged with what
        others wrote meanwhile, :mod:`hookgate.store.state`)."""
        if ctx.session_id and self._store is not None:
            await shared(self._store, f"session:{ctx.session_id}").save()

    async def _load(self, key: str) -> dict[str, Any] | None:
        assert self._store is not None
        raw = await self._store.load_state(key)
        return orjson.loads(raw) if raw is not None else None

    # tools and turns ----------------------------------------------------------------

    def offer_tools(self) -> tuple[PolicyTool, ...]:
        """:attr:`tools`, for an adapter about to offer them to its framework (a gate whose
        tools no adapter took warns when its first reply begins)."""
        self._tools_offered = True
        return self.tools

    async def run_tool(
        self, name: str, arguments: Any, ctx: ReplyContext | None = None
    ) -> ToolResult:
        """Run the policy tool ``name`` (the end of a call's ``on_tool_call`` onion, in the
        framework's tool object): arguments that do not match its ``parameters``, or a
        :class:`ToolInputError` it raises, give an error result the model reads."""
        ctx = ctx or _context()
        if name not in self._tools:
            return ToolResult(f"No hookgate tool is named {name!r}.", error=True)
        tool, validator = self._tools[name]
        found = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
        if found is not None:
            where = "/".join(str(p) for p in found.absolute_path) or "arguments"
            message = f"Invalid arguments for {name} ({where}): {found.message}"
            return ToolResult(message, error=True, error_message=message)
        try:
            return ToolResult(await tool.run(arguments, ctx))
        except ToolInputError as exc:
            return ToolResult(str(exc), error=True, error_message=str(exc))

    async def tool(
        self,
        call: ToolCall,
        execute: Callable[[ToolCall], Awaitable[ToolResult]],
        ctx: ReplyContext | None = None,
    ) -> ToolResult:
        """Run one tool execution inside every policy's ``on_tool_call``."""
        ctx = ctx or _context()

        async def terminal(call: ToolCall, ctx: ReplyContext) -> ToolResult:
            started = time.perf_counter()
            with self.current(ctx):  # the tool runs in its reply (a policy tool needs it)
                result = await execute(call)
            if result.execution_time_ms is None:
                elapsed = (time.perf_counter() - started) * 1000
                result = dataclasses.replace(result, execution_time_ms=elapsed)
            return result

        ctx.tool_calls += 1
        return await compose_onion(self._tool_layers, terminal)(call, ctx)

    async def begin_tool(
        self, call: ToolCall, ctx: ReplyContext | None = None
    ) -> Split[ToolCall, ToolResult]:
        """Start a tool execution whose result another callback will report.

        When the returned split is ``short_circuited`` the tool must not run and
        ``split.result()`` is what the model should read; otherwise run the tool with
        ``split.value`` (arguments possibly rewritten) and pass its result to ``finish``.
        """
        ctx = ctx or _context()
        ctx.tool_calls += 1
        split: Split[ToolCall, ToolResult] = await Split.start(self._tool_layers, call, ctx)
        return split

    async def after_turn(self, usage: Usage | None, ctx: ReplyContext | None = None) -> bool:
        """Record one finished model call; True when a policy says the reply must stop."""
        ctx = ctx or _context()
        ctx.turns += 1
        if usage is not None:
            ctx.add_usage(usage)
        answers = [await stop(ctx) for stop in self._stops]
        ctx.stop = ctx.stop or any(answers)
        return ctx.stop

    # model calls in-process -------------------------------------------------------

    async def model_call(
        self,
        call: ModelCall,
        terminal: Next,
        reply: ReplyContext | None = None,
        *,
        turn: bool = False,
    ) -> ModelResponse:
        """Run an OpenAI-shaped model call of ``reply`` (default: the current one) through
        the model-level hooks, in-process, observed as the proxy observes one
        (:class:`~hookgate.pipeline.runner.ObservedCall`: a stream asks for its usage
        chunk, hidden again from a client that did not ask).

        ``terminal`` performs the call with the framework's own model. A reply told to
        wrap up gets the instruction as a last system message and ``tool_choice: none``.
        A streamed response comes back with the response policies' transform applied to
        its events (placeholders restored in text and tool-call argument deltas); the
        call's span and outcome end with the stream, which the caller must consume or
        ``aclose``. With ``turn`` (for frameworks with no turn hook of their own) the call
        is also the reply's turn: :meth:`after_turn` runs when it ends, and once the reply
        is stopped, further calls are answered without the model by a final message that
        says so (:func:`stopped_answer`) — as is every call of a reply a policy stopped
        before its first one, whichever framework runs it.
        """
        reply = reply or current_reply()
        if reply is not None and reply.stop and (turn or reply.turns == 0):
            return stopped_answer(call)  # stopped, or stopped before its first call
        if reply is not None and reply.wrap_up and call.api == "chat.completions":
            call = call.with_body(_wrapped_up(call, reply.wrap_up))

        async def ended(ctx: Context, outcome: Outcome) -> None:
            finish(ctx, outcome)
            if turn and reply is not None and outcome.error_type is None:
                await self.after_turn(outcome.usage, reply)

        observed = ObservedCall(self._model_context(call.api, reply), ended=ended)
        token = self._model_terminal.set(terminal)
        try:
            return await observed.run(self._pipeline, call, usage=True)
        finally:
            self._model_terminal.reset(token)
            await observed.end()

    def _model_context(self, api: Api, reply: ReplyContext | None) -> Context:
        """A per-model-call :class:`Context` tied to ``reply``."""
        return Context(
            request_id=f"call_{uuid.uuid4().hex}",
            api=api,
            agent=reply.agent if reply else self.agent,
            session_id=reply.session_id if reply else None,
            reply_id=reply.reply_id if reply else None,
            reply=reply,
        )

    async def _terminal(self, call: ModelCall, ctx: Context) -> ModelResponse:
        """The framework's model, with :data:`MODEL_CALL` set while it runs."""
        terminal = self._model_terminal.get()
        assert terminal is not None, "model_call sets the terminal"
        token = MODEL_CALL.set(ctx)
        try:
            return await terminal(call, ctx)
        finally:
            MODEL_CALL.reset(token)

    def response_transform(self, ctx: Context) -> StreamTransform | None:
        """The response policies' transform for the model call of ``ctx`` (None when no
        policy would change its answer, e.g. ``pii`` with nothing to restore)."""
        return self._pipeline.stream_transform(ctx)

    def answer_transform(self, reply: ReplyContext) -> StreamTransform | None:
        """The response policies' transform for text a reply hands its user outside a model
        call this driver ran (a framework's own answer events): ``pii`` restores the values
        behind the placeholders the reply's tool results were given. None when no policy
        transforms responses."""
        return self.response_transform(self._model_context("chat.completions", reply))

    async def system_prompt(self, prompt: str, reply: ReplyContext | None = None) -> str:
        """The system prompt of a model call of ``reply`` (default: the current one) that
        the driver does not run (a framework's model of another SDK): the
        ``on_system_prompt`` chain, then the wrap-up instruction when the reply is told to
        wrap up."""
        reply = reply or _context()
        made = await self._pipeline.system_prompt(
            prompt, self._model_context("chat.completions", reply)
        )
        return f"{made}\n\n{reply.wrap_up}" if reply.wrap_up else made

    def call_sync(self, coroutine: Awaitable[T]) -> T:
        """Run a driver coroutine from a framework's worker thread, on the reply's loop
        (:data:`LOOP`, set by :meth:`current`)."""
        loop = LOOP.get()
        if loop is None:
            raise RuntimeError("no reply is running: open one first")

        async def run() -> T:
            return await coroutine

        return asyncio.run_coroutine_threadsafe(run(), loop).result()

    async def aclose(self) -> None:
        """End the replies still open (:meth:`end_replies`), close the store and stop the
        loop of the synchronous hooks."""
        await self.end_replies()
        if self._store is not None:
            await self._store.close()
        self.sync.close()


def _context() -> ReplyContext:
    return reply_now("an adapter of hookgate.sdk.adapters, or Gate.reply")


STOPPED = "This reply was stopped by a hookgate policy."
"""The answer a stopped reply's further model calls get (see :func:`stopped_answer`)."""


def stopped_answer(call: ModelCall) -> ModelResponse:
    """A final assistant message saying the reply was stopped, in the shape ``call``
    asked for (a chat completion, streamed or not): the framework's loop ends as after
    any answer that calls no tool. Other APIs get a :class:`PolicyBlocked` error."""
    if call.api != "chat.completions":
        raise PolicyBlocked(STOPPED, code="reply_stopped")
    made = {"id": f"chatcmpl-stopped-{uuid.uuid4().hex[:12]}", "created": int(time.time()),
            "model": call.model}  # fmt: skip
    target = Target("hookgate", None)
    if not call.stream:
        message = {"role": "assistant", "content": STOPPED}
        body = {**made, "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
        return ModelResponse(
            status=200, headers={}, target=target, payload=JsonBody.from_data(body)
        )
    chunk = {**made, "object": "chat.completion.chunk"}
    delta = {"role": "assistant", "content": STOPPED}
    events = (
        sse.encode({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        + sse.encode({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        + sse.DONE
    )

    async def stream() -> AsyncGenerator[bytes, None]:
        yield events

    return ModelResponse(
        status=200, headers={"content-type": "text/event-stream"}, target=target, stream=stream()
    )


def _wrapped_up(call: ModelCall, message: str) -> dict[str, Any]:
    """A chat body that tells the model to finish now and lets it call no tool."""
    messages = list(prompts.messages_of(call.api, call.body) or ())
    messages.append({"role": "system", "content": message})
    body = prompts.with_messages(call.api, call.body, messages)
    if "tools" in body:
        body["tool_choice"] = "none"
    return body


class Split(Generic[V, R]):
    """An onion run in two halves, for frameworks that report a step's start and end in two
    callbacks (a reply's start and end; a tool's before and after hooks).

    :meth:`start` runs the layers up to their ``next``; :attr:`value` is what reached the
    terminal (a tool call with rewritten arguments), or :attr:`short_circuited` is True and
    :meth:`result` holds what a layer answered instead (a refusal). :meth:`finish` hands the
    framework's result to the layers' second halves and returns what they make of it.
    """

    def __init__(self, ctx: ReplyContext) -> None:
        self.ctx = ctx
        loop = asyncio.get_running_loop()
        self._result: asyncio.Future[R] = loop.create_future()
        self._entered: asyncio.Future[V] = loop.create_future()
        self._task: asyncio.Task[R] | None = None

    @classmethod
    async def start(cls, layers: Sequence[Any], value: V, ctx: ReplyContext) -> Split[V, R]:
        split: Split[V, R] = cls(ctx)

        async def terminal(value: V, ctx: ReplyContext) -> R:
            if split._entered.done():
                raise NotRepeatable("the framework runs this step once, between its hooks")
            split._entered.set_result(value)
            return await split._result

        run = compose_onion(layers, terminal)

        async def whole() -> R:
            result: R = await run(value, ctx)
            return result

        split._task = asyncio.create_task(whole())
        waiters: set[asyncio.Future[Any]] = {split._task, split._entered}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if split._task.done() and not split._entered.done():
            split._task.result()  # a layer refused by raising: raise it here
        return split

    @property
    def short_circuited(self) -> bool:
        """True when a layer answered without letting the framework run the step."""
        return not self._entered.done()

    @property
    def value(self) -> V:
        """What the innermost layer passed on (only when not short-circuited)."""
        return self._entered.result()

    def result(self) -> R:
        """The layers' answer of a short-circuited step."""
        assert self._task is not None
        return self._task.result()

    async def finish(self, result: R) -> R:
        """Hand the framework's result to the layers; returns what they make of it."""
        assert self._task is not None
        if not self._result.done():
            self._result.set_result(result)
        return await self._task

    async def fail(self, error: BaseException) -> None:
        """The framework failed: the layers see the error; it is not raised again here.
        From any loop: the layers run on the loop that started them (when that loop has
        closed, they ended with it)."""
        assert self._task is not None
        loop = self._task.get_loop()
        if loop is asyncio.get_running_loop():
            await self._failed(error)
        elif loop.is_running() and not self._task.done():
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._failed(error), loop))

    async def _failed(self, error: BaseException) -> None:
        assert self._task is not None
        if not self._result.done():
            self._result.set_exception(error)
        await asyncio.gather(self._task, return_exceptions=True)


ReplyHandle = Split[Reply, Any]
"""A reply split in two halves (see :meth:`Driver.open_reply`)."""


def _policy_tools(policies: Sequence[Policy]) -> dict[str, tuple[PolicyTool, Validator]]:
    """Every policy's tools by name, in listed order, each with the validator of its
    arguments; a ValueError names a clash, a SchemaError a bad schema."""
    tools: dict[str, tuple[PolicyTool, Validator]] = {}
    for policy in policies:
        for tool in policy.tools():
            if tool.name in tools:
                raise ValueError(f"two policies give the agent a tool named {tool.name!r}")
            schema = dict(tool.parameters)
            kind = jsonschema.validators.validator_for(schema)
            kind.check_schema(schema)
            tools[tool.name] = (tool, kind(schema))
    return tools
