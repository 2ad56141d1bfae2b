"""LangChain v1: hookgate as an ``AgentMiddleware``, attached the way LangChain attaches any.

::

    from hookgate.sdk import Gate
    from hookgate.sdk.adapters.langchain import HookgateMiddleware

    gate = Gate.from_config("policies/agent.yaml")
    agent = create_agent(model, tools, middleware=[HookgateMiddleware(gate)])
    agent.invoke({"messages": [...]})              # or ainvoke, stream, astream, batch

Mapping (LangChain's own composition rules hold: list hookgate first to make it the
outermost wrapper):

* a reply is one run of the agent, from ``before_agent`` to ``after_agent``: the gate's
  ``on_reply`` layers open there and close there. The reply's id rides in the run's state
  (a private field, ``hookgate_reply``), so concurrent runs — threads, tasks, ``batch`` —
  never mix, whichever entry point started them. The session is the run's LangGraph
  ``thread_id`` when it has one. A run that raises out of one of hookgate's hooks (the
  model, a tool, a policy) ends its reply there as an error; one that raises elsewhere
  ends it when the gate closes (``Gate.aclose``);
* ``wrap_tool_call`` → ``on_tool_call``; a refusal becomes a ``ToolMessage`` with
  ``status="error"`` that the model reads. The tool runs in LangChain's own thread, with
  the reply current;
* the middleware's ``tools`` → :meth:`Policy.tools`: ``create_agent`` adds each policy tool
  (the ``todo`` policy's ``write_todos``) as a ``StructuredTool`` beside the agent's own;
  LangChain runs it as any tool (through ``wrap_tool_call``), bad arguments give an error
  ``ToolMessage``;
* ``needs_approval`` (``tool_guard``'s ``approval: pause``) → ``after_model``, as
  LangChain's ``HumanInTheLoopMiddleware`` does it (batched): the model turn's tool calls
  that need a human make ONE ``interrupt`` with its request (``action_requests``,
  ``review_configs``, one of each per call, in the turn's order). The run stops, the
  reply's state goes to the store and the reply ends here as ``paused``;
  ``agent.invoke(Command(resume={"decisions": [...]}), config)`` with one decision per
  action — ``approve``, ``edit`` with ``edited_action.args``, or ``reject`` with a
  ``message`` the model reads — resumes it from the graph's checkpoint, in this process or
  another one sharing the checkpointer and the store: approved calls run, edited ones run
  with the new arguments, rejected ones are not run and the model reads the rejection. The
  reply continues with the counts it had; a reply no longer kept (expired, another store)
  is an error that says so. With a store, the paused calls are also listed for a person
  (``/admin/approvals``, the web UI; kind ``sdk``, arguments as ``pii`` shows them):
  ``agent.invoke(Command(resume=await gate.decisions(thread_id)), config)`` resumes with
  what was decided there (None while a call waits); a run resumed with decisions given
  directly marks the listed calls decided by ``sdk`` (:mod:`hookgate.sdk.approvals`);
* ``wrap_model_call`` → the model-level hooks in-process (:meth:`Driver.model_call
  <hookgate.sdk.driver.Driver.model_call>`): the
  request becomes an OpenAI chat body (:mod:`.langchain_wire`) for ``on_system_prompt``,
  ``convert_to_llm`` (the prompt redacted before it leaves the process) and
  ``on_model_call`` (tools a guard denies are not offered; a spent reply's wrap-up adds
  its instruction and ``tool_choice: none``), LangChain's model answers as the terminal,
  and its answer goes through ``on_response`` (placeholders restored in the text and the
  tool-call arguments). The reply's headers ride along (``extra_headers``: a proxy in the
  path joins the trace and sees the reply). When the answer has placeholders to restore,
  the model call is tagged ``nostream``: ``stream_mode="messages"`` then shows the
  restored message, never the model's own tokens. After the call ``should_stop_after_turn``
  with the reported usage: a stopped reply's last answer is final (tool calls it asked for
  are dropped), so the agent ends.

Synchronous runs (``invoke``, ``stream``, ``batch``) run the policies on the gate's own
event loop (:mod:`hookgate.sdk.bridge`); asynchronous ones on the caller's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_messages
from langchain_core.tools import StructuredTool, ToolException
from langgraph.config import get_config
from langgraph.constants import TAG_NOSTREAM
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.types import Command, interrupt

from hookgate.pipeline.agent import Decision, PolicyTool, ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.types import Context, JsonBody, ModelCall, Target
from hookgate.pipeline.types import ModelResponse as GateResponse
from hookgate.sdk.adapters import langchain_wire as wire
from hookgate.sdk.driver import Driver, reply_now
from hookgate.sdk.gate import Gate
from hookgate.wire.usage import Usage, usage_of

TARGET = Target("langchain", None)
"""What the in-process model call is sent to: the agent's own LangChain model."""

REPLY_KEY = "hookgate_reply"

EDITS_KEY = "hookgate_edits"

DECISIONS = ["approve", "edit", "reject"]

ATTACH = "create_agent(..., middleware=[HookgateMiddleware(gate)])"


class HookgateState(AgentState):
    """The agent state with the id of the hookgate reply the run belongs to, and the
    arguments a human gave the tool calls of the last turn they edited, by call id."""

    hookgate_reply: NotRequired[Annotated[str, PrivateStateAttr]]
    hookgate_edits: NotRequired[Annotated[dict[str, dict[str, Any]], PrivateStateAttr]]


class HookgateMiddleware(AgentMiddleware[HookgateState]):
    """See the module docstring. ``agent`` names the agent in traces (default: the gate's)."""

    state_schema = HookgateState

    def __init__(self, gate: Gate, *, agent: str | None = None) -> None:
        super().__init__()
        self.driver = gate.driver
        self.agent = agent
        self.tools = [_structured_tool(self.driver, tool) for tool in self.driver.offer_tools()]

    @property
    def name(self) -> str:
        return "hookgate"

    # the run ----------------------------------------------------------------------------

    async def abefore_agent(self, state: HookgateState, runtime: Any) -> dict[str, Any]:
        return await self._open(state, _thread_id(runtime))

    def before_agent(self, state: HookgateState, runtime: Any) -> dict[str, Any]:
        return self.driver.sync.run(self._open(state, _thread_id(runtime)))

    async def _open(self, state: HookgateState, session_id: str | None) -> dict[str, Any]:
        ctx = await self.driver.open_reply(
            agent=self.agent, input=_last_input(state), session_id=session_id
        )
        return {REPLY_KEY: ctx.reply_id}

    async def aafter_agent(self, state: HookgateState, runtime: Any) -> None:
        reply_id = state.get(REPLY_KEY)
        await self.driver.close_reply(reply_id if isinstance(reply_id, str) else None, state)

    def after_agent(self, state: HookgateState, runtime: Any) -> None:
        self.driver.sync.run(self.aafter_agent(state, runtime))

    # model calls ------------------------------------------------------------------------

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        ctx = await self._areply(request.state)
        async with self._ends_on_error(ctx):
            response = await self._model_call(request, ctx, handler)
            return await self._after(response, ctx)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        ctx = self.driver.sync.run(self._areply(request.state))

        async def onion(inner: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
            return await self._model_call(request, ctx, inner)

        with self._ends_on_error_sync(ctx):
            response = self.driver.sync.wrap(onion, handler)  # the model runs in LangChain's thread
            return self.driver.sync.run(self._after(response, ctx))

    async def _model_call(
        self,
        request: ModelRequest,
        ctx: ReplyContext,
        send: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """The model call through the gate's model-level hooks, in-process: the request in
        the OpenAI shape for ``on_system_prompt``, ``convert_to_llm`` and ``on_model_call``
        (the wrap-up, filtered tools), LangChain's own model as the terminal, and its
        answer through ``on_response`` (placeholders restored) back into LangChain's types."""
        model = _model_name(request.model)
        originals: list[BaseMessage] = list(request.messages)
        if request.system_message is not None:
            originals.insert(0, request.system_message)
        before = wire.openai_messages(request.system_message, request.messages)
        body: dict[str, Any] = {"model": model, "messages": before}
        if request.tools:
            body["tools"] = wire.openai_tools(request.tools)
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        answers: list[ModelResponse] = []

        async def terminal(call: ModelCall, call_ctx: Context) -> GateResponse:
            sent = call.body
            system, messages = wire.langchain_messages(sent["messages"], originals, before)
            changes: dict[str, Any] = {
                "system_message": system,
                "messages": messages,
                "model_settings": {**request.model_settings, "extra_headers": ctx.headers()},
            }
            chat_model = request.model
            if self.driver.response_transform(call_ctx) is not None and isinstance(
                chat_model, BaseChatModel
            ):  # the model's own tokens would show the user what the answer hooks restore:
                # LangGraph streams none of them ("nostream"), and the restored message whole
                tags = [*(chat_model.tags or []), TAG_NOSTREAM]
                changes["model"] = chat_model.model_copy(update={"tags": tags})
            if request.tools:
                offered = {wire.tool_name(t) for t in sent.get("tools") or ()}
                changes["tools"] = [t for t in request.tools if wire.tool_name(t) in offered]
            if sent.get("tool_choice") != body.get("tool_choice"):
                changes["tool_choice"] = sent.get("tool_choice")
            answer = await send(request.override(**changes))
            answers.append(answer)
            message = _ai(answer)
            payload = wire.completion(message, model) if message is not None else {}
            return GateResponse(
                status=200, headers={}, target=TARGET, payload=JsonBody.from_data(payload)
            )

        call = ModelCall(
            api="chat.completions",
            payload=JsonBody.from_data(body),
            model=model,
            stream=False,
            targets=(TARGET,),
        )
        response = await self.driver.model_call(call, terminal, ctx)
        if not answers:  # a policy answered without the model
            (made,) = convert_to_messages([response.body["choices"][0]["message"]])
            return ModelResponse(result=[made])
        answer = answers[-1]
        message = _ai(answer)
        if message is None:
            return answer
        final = wire.restored(message, response.body)
        return ModelResponse(
            result=[final if m is message else m for m in answer.result],
            structured_response=answer.structured_response,
        )

    async def _after(self, response: ModelResponse, ctx: ReplyContext) -> ModelResponse:
        message = _ai(response)
        if not await self.driver.after_turn(_usage(message), ctx) or message is None:
            return response
        if not message.tool_calls:
            return response
        final = AIMessage(content=message.content or "Stopped by policy.", id=message.id)
        return ModelResponse(
            result=[final if m is message else m for m in response.result],
            structured_response=response.structured_response,
        )

    # approvals --------------------------------------------------------------------------

    async def aafter_model(self, state: HookgateState, runtime: Any) -> dict[str, Any] | None:
        calls = _turn_calls(state)
        if not calls:
            return _edits_cleared(state)
        ctx = await self._areply(state)
        async with self._ends_on_error(ctx):
            gated = [(c, r) for c in calls if (r := await self.driver.approval(c, ctx))]
            if not gated:
                return _edits_cleared(state)
            try:
                answer = interrupt(_review(gated))
            except GraphInterrupt:  # the run stops here: the reply waits in the store
                await self.driver.pause(ctx, calls=gated)
                raise
            update, decisions = _decided(gated, answer)
            if self.driver.approvals is not None:
                await self.driver.approvals.resumed(ctx, ctx.reply_id, decisions)
            return update

    def after_model(self, state: HookgateState, runtime: Any) -> dict[str, Any] | None:
        calls = _turn_calls(state)
        if not calls:
            return _edits_cleared(state)
        sync = self.driver.sync
        ctx = sync.run(self._areply(state))
        with self._ends_on_error_sync(ctx):
            gated = [(c, r) for c in calls if (r := sync.run(self.driver.approval(c, ctx)))]
            if not gated:
                return _edits_cleared(state)
            try:
                answer = interrupt(_review(gated))  # in LangChain's thread, with its context
            except GraphInterrupt:
                sync.run(self.driver.pause(ctx, calls=gated))
                raise
            update, decisions = _decided(gated, answer)
            if self.driver.approvals is not None:
                sync.run(self.driver.approvals.resumed(ctx, ctx.reply_id, decisions))
            return update

    # tools ------------------------------------------------------------------------------

    async def awrap_tool_call(
        self, request: Any, handler: Callable[[Any], Awaitable[ToolMessage | Any]]
    ) -> ToolMessage | Any:
        ctx = await self._areply(request.state)
        call, tool_call = _call(request)

        async def execute(call: ToolCall) -> ToolResult:
            return _result(await handler(_with_arguments(request, tool_call, call)))

        async with self._ends_on_error(ctx):
            return _message(await self.driver.tool(call, execute, ctx), tool_call)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], ToolMessage | Any]) -> Any:
        ctx = self.driver.sync.run(self._areply(request.state))
        call, tool_call = _call(request)

        async def onion(inner: Callable[[ToolCall], Awaitable[Any]]) -> ToolResult:
            async def execute(call: ToolCall) -> ToolResult:
                return _result(await inner(call))

            return await self.driver.tool(call, execute, ctx)

        def run(call: ToolCall) -> Any:  # in LangChain's thread, with its context
            with self.driver.current(ctx):
                return handler(_with_arguments(request, tool_call, call))

        with self._ends_on_error_sync(ctx):
            return _message(self.driver.sync.wrap(onion, run), tool_call)

    # the run's reply --------------------------------------------------------------------

    async def _areply(self, state: Any) -> ReplyContext:
        """The run's reply: open in this process, or — a run resumed after a pause, maybe
        in another process — rebuilt from the store with its counts; an error that says
        why when the store no longer keeps it."""
        reply_id = state.get(REPLY_KEY) if isinstance(state, dict) else None
        if not isinstance(reply_id, str):
            raise RuntimeError(f"hookgate: this agent run has no open reply; attach it: {ATTACH}")
        ctx = await self.driver.resume_reply(reply_id)
        if ctx is None:
            raise self.driver.gone(reply_id)
        return ctx

    @asynccontextmanager
    async def _ends_on_error(self, ctx: ReplyContext) -> AsyncIterator[None]:
        """An error out of the block ends the run, and the reply with it, as an error (a
        LangGraph interrupt is no error: the run waits, :meth:`Driver.pause`)."""
        try:
            yield
        except GraphBubbleUp:
            raise
        except BaseException as exc:
            await self.driver.close_reply(ctx.reply_id, error=exc)
            raise

    @contextmanager
    def _ends_on_error_sync(self, ctx: ReplyContext) -> Iterator[None]:
        """:meth:`_ends_on_error` for the synchronous hooks (the reply ends on the gate's
        loop)."""
        try:
            yield
        except GraphBubbleUp:
            raise
        except BaseException as exc:
            self.driver.sync.run(self.driver.close_reply(ctx.reply_id, error=exc))
            raise


def _structured_tool(driver: Driver, tool: PolicyTool) -> StructuredTool:
    """A policy tool as LangChain runs tools: in the reply current where it runs (the
    middleware's ``wrap_tool_call`` makes it so), an error result as a ``ToolException``."""

    async def arun(**arguments: Any) -> str:
        return _answer(await driver.run_tool(tool.name, arguments, reply_now(ATTACH)))

    def run(**arguments: Any) -> str:
        return _answer(driver.sync.run(driver.run_tool(tool.name, arguments, reply_now(ATTACH))))

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=dict(tool.parameters),
        func=run,
        coroutine=arun,
        handle_tool_error=True,
    )


def _answer(result: ToolResult) -> str:
    if result.error:
        raise ToolException(result.content)
    return result.content


def _turn_calls(state: Any) -> list[ToolCall]:
    """The tool calls of the model turn that just ended (its answer is the last message)."""
    messages = state.get("messages") if isinstance(state, dict) else None
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage):
        return []
    return [ToolCall(c["name"], dict(c.get("args") or {}), c.get("id")) for c in last.tool_calls]


def _review(gated: Sequence[tuple[ToolCall, str]]) -> dict[str, Any]:
    """What the human is asked, in the shape of ``HumanInTheLoopMiddleware``'s batched
    ``HITLRequest``: one action and one review config per call, in the turn's order."""
    return {
        "action_requests": [
            {"name": call.name, "args": dict(call.arguments), "description": reason}
            for call, reason in gated
        ],
        "review_configs": [
            {"action_name": call.name, "allowed_decisions": list(DECISIONS)} for call, _ in gated
        ],
    }


def _decided(
    gated: Sequence[tuple[ToolCall, str]], answer: Any
) -> tuple[dict[str, Any], list[Decision]]:
    """The state update of the human's ``{"decisions": [...]}``, one per call in the order
    asked: an approved call runs as the model asked, an edited one with the new arguments
    (kept under ``hookgate_edits`` for ``wrap_tool_call``), a rejected one is answered by a
    ``ToolMessage`` the model reads, so LangChain does not run it; and the decisions."""
    decisions = answer.get("decisions") if isinstance(answer, dict) else None
    if not isinstance(decisions, list) or len(decisions) != len(gated):
        raise ValueError(
            f"hookgate: resume with {{'decisions': [...]}}, one decision per paused tool call "
            f"({len(gated)}, in the order of action_requests); got {answer!r}"
        )
    edits: dict[str, dict[str, Any]] = {}
    answered: list[ToolMessage] = []
    parsed = [Decision.parse(value) for value in decisions]
    for (call, _), decision in zip(gated, parsed, strict=True):
        decided = decision.applied(call)
        if isinstance(decided, ToolResult):
            answered.append(_message(decided, {"name": call.name, "id": call.call_id}))
        elif decided is not call and call.call_id:
            edits[call.call_id] = dict(decided.arguments)
    return {"messages": answered, EDITS_KEY: edits}, parsed


def _edits_cleared(state: Any) -> dict[str, Any] | None:
    """An earlier turn's edits never apply to this turn's calls."""
    return {EDITS_KEY: {}} if isinstance(state, dict) and state.get(EDITS_KEY) else None


def _ai(response: ModelResponse) -> AIMessage | None:
    return next((m for m in response.result if isinstance(m, AIMessage)), None)


def _model_name(model: Any) -> str:
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


def _thread_id(runtime: Any) -> str | None:
    """The run's LangGraph ``thread_id`` (hookgate's session), when it has one."""
    thread = getattr(getattr(runtime, "execution_info", None), "thread_id", None)
    if thread is None:
        try:
            thread = (get_config().get("configurable") or {}).get("thread_id")
        except RuntimeError:  # outside a runnable context
            return None
    return str(thread) if thread is not None else None


def _last_input(state: Any) -> Any:
    messages = state.get("messages") if isinstance(state, dict) else None
    return messages[-1].content if messages else None


def _usage(message: AIMessage | None) -> Usage | None:
    return usage_of(wire.openai_usage(message)) if message is not None else None


def _call(request: Any) -> tuple[ToolCall, dict[str, Any]]:
    """The call to run: the model's, with the arguments a human gave it when they edited it."""
    tool_call = dict(request.tool_call)
    edits = request.state.get(EDITS_KEY) if isinstance(request.state, dict) else None
    arguments = (edits or {}).get(tool_call.get("id"))
    if arguments is None:
        arguments = dict(tool_call.get("args") or {})
    return ToolCall(tool_call["name"], dict(arguments), tool_call.get("id")), tool_call


def _with_arguments(request: Any, tool_call: dict[str, Any], call: ToolCall) -> Any:
    return request.override(tool_call={**tool_call, "args": dict(call.arguments)})


def _result(output: Any) -> ToolResult:
    """The tool's output, normalized; ``raw`` keeps it (a ``ToolMessage`` with its artifact,
    a ``Command`` with its state update) for :func:`_message`."""
    message = _tool_message(output)
    if message is None:
        return ToolResult(str(output), raw=output)
    content = message.content if isinstance(message.content, str) else message.text
    metadata = {"artifact": message.artifact} if message.artifact is not None else {}
    return ToolResult(content, error=message.status == "error", metadata=metadata, raw=output)


def _message(result: ToolResult, tool_call: dict[str, Any]) -> Any:
    """What LangChain gets back: its own output with the result's text in place (a
    ``Command`` keeps its state update and ``goto``, a ``ToolMessage`` its artifact and
    ids); a new ``ToolMessage`` for a refused call or an output of another kind."""
    status = "error" if result.error else "success"
    update = {"content": result.content, "status": status}
    raw = result.raw
    if isinstance(raw, ToolMessage):
        unchanged = raw.content == result.content and raw.status == status
        return raw if unchanged else raw.model_copy(update=update)
    if isinstance(raw, Command) and isinstance(raw.update, dict):
        message = _tool_message(raw)
        if message is None or (message.content == result.content and message.status == status):
            return raw
        messages = [
            m.model_copy(update=update) if m is message else m for m in raw.update["messages"]
        ]
        return dataclasses.replace(raw, update={**raw.update, "messages": messages})
    return ToolMessage(
        content=result.content,
        tool_call_id=tool_call.get("id") or "",
        name=tool_call["name"],
        status=status,
    )


def _tool_message(output: Any) -> ToolMessage | None:
    """The ``ToolMessage`` a tool's output carries: itself, or the one in a ``Command``'s
    state update (a tool that updates the agent's state answers the model there)."""
    if isinstance(output, ToolMessage):
        return output
    if isinstance(output, Command) and isinstance(output.update, dict):
        messages = output.update.get("messages")
        if isinstance(messages, list):
            return next((m for m in messages if isinstance(m, ToolMessage)), None)
    return None
