"""AgentScope 2: hookgate as an AgentScope ``MiddlewareBase``, attached like any other.

::

    from hookgate.sdk.adapters.agentscope import HookgateMiddleware

    agent = Agent(..., model=model, middlewares=[HookgateMiddleware(gate)])
    msg = await agent.reply(UserMsg(name="user", content="..."))   # or reply_stream

The policies' own tools (the ``todo`` policy's ``write_todos``) come, as any
middleware's, from ``list_tools``: build the toolkit with them, as AgentScope's docs do::

    middleware = HookgateMiddleware(gate)
    agent = Agent(..., toolkit=Toolkit(tools=[*my_tools, *await middleware.list_tools()]),
                  middlewares=[middleware])

Mapping (AgentScope's first middleware is outermost; list hookgate first):

* a reply is AgentScope's ``on_reply``: the gate's ``on_reply`` layers open when it starts
  and close when its event stream ends (with the final message), whichever entry point
  drives it — ``reply`` or ``reply_stream``. The reply is current for the stream's task;
  the session is the agent state's ``session_id``. The user's side of the stream (text
  deltas, block ends, the final message) goes through the response policies' transform,
  so a placeholder never reaches the user, whichever model produced it;
* model calls: an ``openai`` model's client (``OpenAIChatModel`` and the other
  OpenAI-compatible ones: ``agent.model.client``) is governed in place on the reply's
  first call (:func:`hookgate.sdk.client.govern`): each request runs the model-level
  hooks in-process — ``on_system_prompt``, ``convert_to_llm``, ``on_model_call`` (denied
  tools are not offered), ``on_response`` with streamed deltas — and gets a ``chat`` span
  with usage. For models of other SDKs the system prompt runs through AgentScope's
  ``on_system_prompt`` instead (:meth:`Driver.system_prompt
  <hookgate.sdk.driver.Driver.system_prompt>`, with the wrap-up), and the rest is left to
  a proxy;
* ``on_acting`` → ``on_tool_call`` (split around AgentScope's tool stream): a refusal is an
  error ``ToolResponse`` the model reads; rewritten arguments and results pass through;
* external tools (``is_external_tool``): AgentScope hands the call out with a
  ``RequireExternalExecutionEvent`` instead of running ``on_acting``, so the call's
  ``on_tool_call`` begins in ``on_check_permission``, once the call is allowed (after the
  person, for an asked-about one): a refusal is a ``DENY`` whose message the model reads,
  and the call is never handed out; the event hands out the arguments the onion passed on
  (``pii``'s placeholders restored; AgentScope's context keeps the model's own). The
  ``ExternalExecutionResultEvent`` the caller resumes with finishes each call's onion (its
  span spans the wait) and AgentScope keeps what the policies made of the result: while
  calls it handed out wait, the parked reply stays open in this process as well as kept in
  the store (``Driver.pause(keep_open=True)``; it ends as paused when the gate closes). Sent
  to another process, a result runs its call's whole onion there (the arguments side
  again: it counts once more against ``tool_guard``'s limits). A ``UserInterruptEvent``
  ends the parked reply and fails the calls it handed out;
* ``on_compress_context``: AgentScope's compression before a reasoning step is part of the
  reply (its summary request a governed model call); called on its own
  (``await agent.compress_context()``) it runs as a reply of its own, governed the same way.
  ``observe`` has no hook: what it adds to the context is governed when a model call sends
  it;
* ``list_tools`` → :meth:`Policy.tools`: each policy tool as a ``FunctionTool`` (allowed
  without asking: it is the policy's own) that runs in the current reply and answers an
  error ``ToolChunk`` for bad arguments; its calls go through ``on_acting`` as any tool's;
* ``on_model_call`` → :meth:`Driver.after_turn <hookgate.sdk.driver.Driver.after_turn>`
  with the call's usage (streamed or not);
* ``on_reasoning`` → a wrapping-up reply reasons with ``tool_choice: none``; a stopped reply
  ends after this turn (its tool calls still run, then the loop ends);
* ``needs_approval`` (``tool_guard``'s ``approval: pause``) → ``on_check_permission`` answers
  ``ASK``: AgentScope parks the reply with a ``RequireUserConfirmEvent`` and the reply's
  state goes to the store. ``agent.reply_stream(UserConfirmResultEvent(...))`` resumes it —
  in this process or another one given the saved ``agent.state`` and the same store — with
  ``ConfirmResult(confirmed=True)`` (its ``tool_call.input`` may carry edited arguments) or
  ``confirmed=False`` (AgentScope's own denial text is what the model reads); the reply goes
  on with the counts it had. Several asked-about calls of one model turn pause once, as
  AgentScope batches them (a ``RequireUserConfirmEvent`` each for a turn's concurrency-safe
  calls; a sequential batch stops at its first), and one ``UserConfirmResultEvent`` with a
  ``ConfirmResult`` per call answers them: each runs, edited or not, or is denied. With a
  store the parked calls are listed in ``/admin/approvals`` (kind ``sdk``, grouped by the
  parked reply id; :mod:`hookgate.sdk.approvals`); ``gate.decisions(reply_id)`` reads what
  a person decided there (LangChain's shape, one decision per call in order), from which
  the application builds its ``ConfirmResult``s; a resume the application confirmed
  directly marks the listed calls decided by ``sdk`` (confirmed: approved, or edited when
  the input differs; denied: rejected).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import openai
from agentscope.event import (
    ExternalExecutionResultEvent,
    RequireExternalExecutionEvent,
    RequireUserConfirmEvent,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from agentscope.message import (
    Msg,
    TextBlock,
    ToolCallBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
)
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatResponse
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolBase, ToolChoice, ToolChunk, ToolResponse

from hookgate.pipeline.agent import Decision, PolicyTool, ReplyContext, ToolCall, ToolResult
from hookgate.sdk.client import govern
from hookgate.sdk.driver import Driver, Split, current_reply, reply_now
from hookgate.sdk.gate import Gate
from hookgate.wire.deltas import DeltaKey, StreamTransform
from hookgate.wire.usage import Usage


class HookgateMiddleware(MiddlewareBase):
    """See the module docstring."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.driver = gate.driver
        self._handed_out: dict[str, _HandedOut] = {}
        """The external calls handed out and not yet answered, by tool call id."""
        self._asked: dict[str, list[tuple[ToolCall, str]]] = {}
        """The calls asked about in a reply's current run (listed as approvals when it
        parks), by reply id."""

    async def get_middleware_key(self) -> str:
        return "hookgate"

    async def list_tools(self) -> list[ToolBase]:
        """The tools the gate's policies give the agent (see the module docstring)."""
        return [_function_tool(self.driver, tool) for tool in self.driver.offer_tools()]

    async def on_reply(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Any
    ) -> AsyncGenerator[Any, None]:
        if (client := _client(agent)) is not None:
            govern(client)
        inputs = input_kwargs.get("inputs")
        ctx = None
        if isinstance(inputs, _RESUMING):  # a parked reply, maybe paused elsewhere
            ctx = await self.driver.resume_reply(inputs.reply_id, input=inputs)
        if ctx is not None and isinstance(inputs, UserConfirmResultEvent):
            await self._confirmed(ctx, inputs)
        if ctx is None:
            ctx = await self.driver.open_reply(
                agent=getattr(agent, "name", None),
                input=inputs,
                session_id=agent.state.session_id,
            )
        final = None
        parked = None
        answer = _Answer(lambda: self.driver.answer_transform(ctx))
        with self.driver.current(ctx):
            try:
                if isinstance(inputs, ExternalExecutionResultEvent):
                    inputs = await self._returned(agent, inputs, ctx)
                    input_kwargs = {**input_kwargs, "inputs": inputs}
                elif isinstance(inputs, UserInterruptEvent):
                    await self._abandon(ctx)
                async for event in next_handler(**input_kwargs):
                    if isinstance(event, (RequireUserConfirmEvent, RequireExternalExecutionEvent)):
                        parked = event.reply_id
                    if isinstance(event, RequireExternalExecutionEvent):
                        event = self._with_real_arguments(event)
                    for item in await answer.restored(event):
                        if isinstance(item, Msg):
                            final = item
                        yield item
            except BaseException as exc:  # the layers see it (a consumer that left, too)
                self._asked.pop(ctx.reply_id, None)
                await self.driver.close_reply(ctx.reply_id, error=exc)
                raise
            else:
                if parked is not None:  # waits for the user: resumable here or in any process
                    in_flight = any(h.split.ctx is ctx for h in self._handed_out.values())
                    asked = self._asked.pop(ctx.reply_id, [])
                    await self.driver.pause(ctx, key=parked, keep_open=in_flight, calls=asked)
                else:
                    self._asked.pop(ctx.reply_id, None)
                    await self.driver.close_reply(ctx.reply_id, final)

    async def _confirmed(self, ctx: ReplyContext, event: UserConfirmResultEvent) -> None:
        """The listed approvals of the parked reply, still pending, decided as the
        application confirmed or denied each call (by ``sdk``; an edited input is an
        edit)."""
        if self.driver.approvals is None:
            return
        decisions: dict[str, Decision] = {}
        for result in event.confirm_results:
            if not result.confirmed:
                decisions[result.tool_call.id] = Decision("reject")
                continue
            try:
                arguments = json.loads(result.tool_call.input or "{}")
            except ValueError:
                arguments = None
            if isinstance(arguments, dict):
                decisions[result.tool_call.id] = Decision("edit", arguments=arguments)
            else:
                decisions[result.tool_call.id] = Decision("approve")
        await self.driver.approvals.resumed(ctx, event.reply_id, decisions)

    async def on_check_permission(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Any
    ) -> PermissionDecision:
        """``needs_approval`` → AgentScope's own confirmation: the call is asked about
        (``RequireUserConfirmEvent``) unless the user already confirmed it. An allowed
        external call begins its ``on_tool_call`` here (see the module docstring)."""
        tool_call = input_kwargs["tool_call"]
        call = ToolCall(tool_call.name, dict(input_kwargs["tool_input"]), tool_call.id)
        if tool_call.state != ToolCallState.ALLOWED:
            reply = _reply()
            reason = await self.driver.approval(call, reply)
            if reason is not None:
                self._asked.setdefault(reply.reply_id, []).append((call, reason))
                return PermissionDecision(behavior=PermissionBehavior.ASK, message=reason)
        decision: PermissionDecision = await next_handler(**input_kwargs)
        if decision.behavior == PermissionBehavior.ALLOW and input_kwargs["tool"].is_external_tool:
            return await self._hand_out(call, decision)
        return decision

    # external execution ----------------------------------------------------------------

    async def _hand_out(self, call: ToolCall, allowed: PermissionDecision) -> PermissionDecision:
        """An external call AgentScope is about to hand out: its ``on_tool_call`` onion
        begins here (AgentScope never runs ``on_acting`` for it). A refusal is a ``DENY``
        whose message the model reads; otherwise the onion waits for the result."""
        split = await self.driver.begin_tool(call, _reply())
        if split.short_circuited:
            refusal = split.result().content
            return PermissionDecision(behavior=PermissionBehavior.DENY, message=refusal)
        self._handed_out[str(call.call_id)] = _HandedOut(split, time.perf_counter())
        return allowed

    def _with_real_arguments(
        self, event: RequireExternalExecutionEvent
    ) -> RequireExternalExecutionEvent:
        """The event with each call's arguments as its onion passed them on (``pii``'s
        placeholders restored): what the executor gets. AgentScope's context keeps the
        model's own."""
        calls = [self._handed_out_call(block) for block in event.tool_calls]
        if all(new is old for new, old in zip(calls, event.tool_calls, strict=True)):
            return event
        return event.model_copy(update={"tool_calls": calls})

    def _handed_out_call(self, block: ToolCallBlock) -> ToolCallBlock:
        handed = self._handed_out.get(block.id)
        if handed is None:
            return block
        arguments = dict(handed.split.value.arguments)
        if arguments == json.loads(block.input or "{}"):
            return block
        return block.model_copy(update={"input": json.dumps(arguments)})

    async def _returned(
        self, agent: Any, event: ExternalExecutionResultEvent, ctx: ReplyContext
    ) -> ExternalExecutionResultEvent:
        """The executor's results, each through the result side of its call's
        ``on_tool_call`` onion (``pii``, the span, the record) before AgentScope reads it.
        A result the tool's ``metadata_schema`` rejects raises here, as AgentScope would,
        with every onion still waiting (the executor can send it again). A call handed out
        by another process, or by this one before the reply was rebuilt from the store
        (its onion then ends failed), runs the whole onion here, around its result."""
        for block in event.execution_results:
            tool = await agent.toolkit.get_tool(block.name)
            if tool is not None:
                await tool.check_external_result(block)
        submitted = {
            call.id: call
            for call in agent.state.get_awaiting_tool_calls(agent.name)
            if call.state == ToolCallState.SUBMITTED
        }  # a result for anything else is AgentScope's to reject, untouched
        results = [
            await self._result(block, submitted[block.id], ctx) if block.id in submitted else block
            for block in event.execution_results
        ]
        return event.model_copy(update={"execution_results": results})

    async def _result(
        self, block: ToolResultBlock, submitted: ToolCallBlock, ctx: ReplyContext
    ) -> ToolResultBlock:
        """The result of the handed-out call ``submitted`` as the policies make it."""
        text = _block_text(block.output)
        error = block.state == ToolResultState.ERROR
        returned = ToolResult(text, error=error, metadata=dict(block.metadata), raw=block)
        handed = self._handed_out.pop(block.id, None)
        if handed is not None and handed.split.ctx is not ctx:  # the reply was rebuilt since
            await handed.split.fail(RuntimeError("the reply resumed from the store"))
            handed = None
        if handed is not None:
            elapsed = (time.perf_counter() - handed.started) * 1000
            result = await handed.split.finish(
                dataclasses.replace(returned, execution_time_ms=elapsed)
            )
        else:
            arguments = json.loads(submitted.input or "{}")
            call = ToolCall(submitted.name, arguments, submitted.id)

            async def external(call: ToolCall) -> ToolResult:
                return returned

            result = await self.driver.tool(call, external, ctx)
        if result.content == text and result.error == error:
            return block
        state = ToolResultState.ERROR if result.error else block.state
        other = [] if isinstance(block.output, str) else block.output
        kept = [b for b in other if not isinstance(b, TextBlock)]  # data blocks stay
        output = [TextBlock(text=result.content), *kept]
        return block.model_copy(update={"output": output, "state": state})

    async def _abandon(self, ctx: ReplyContext) -> None:
        """The user interrupted a parked reply: the external calls it handed out end
        failed (AgentScope gives the model an interrupted result for each)."""
        for call_id, handed in list(self._handed_out.items()):
            if handed.split.ctx.reply_id == ctx.reply_id:
                del self._handed_out[call_id]
                await handed.split.fail(RuntimeError("the user interrupted the reply"))

    async def on_compress_context(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Any
    ) -> None:
        """``compress_context`` outside a reply (``await agent.compress_context()``) runs
        as a reply of its own, so its summary request is governed like any model call of
        a reply (inside one, AgentScope's own compression before a reasoning step already
        is)."""
        if current_reply() is not None:
            await next_handler(**input_kwargs)
            return
        if (client := _client(agent)) is not None:
            govern(client)
        name = getattr(agent, "name", None)
        instructions = input_kwargs.get("instructions")
        async with self.gate.reply(
            agent=name, input=instructions, session_id=agent.state.session_id
        ):
            await next_handler(**input_kwargs)

    async def on_system_prompt(self, agent: Any, current_prompt: str) -> str:
        if _client(agent) is not None:  # the governed client runs the chain on the request
            return current_prompt
        return await self.driver.system_prompt(current_prompt, _reply())

    async def on_reasoning(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Any
    ) -> AsyncGenerator[Any, None]:
        ctx = _reply()
        if ctx.wrap_up:
            input_kwargs = {**input_kwargs, "tool_choice": ToolChoice(mode="none")}
        async for event in next_handler(**input_kwargs):
            yield event
        if ctx.stop:
            agent.state.cur_iter = agent.react_config.max_iters

    async def on_model_call(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Any
    ) -> Any:
        ctx = _reply()
        response = await next_handler(**input_kwargs)
        if isinstance(response, ChatResponse):
            await self.driver.after_turn(_usage(response), ctx)
            return response

        async def counted() -> AsyncGenerator[ChatResponse, None]:
            last = None
            async for chunk in response:
                last = chunk
                yield chunk
            await self.driver.after_turn(_usage(last), ctx)

        return counted()

    async def on_acting(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Any
    ) -> AsyncGenerator[Any, None]:
        ctx = _reply()
        block = input_kwargs["tool_call"]
        arguments = json.loads(block.input or "{}")
        split = await self.driver.begin_tool(ToolCall(block.name, arguments, block.id), ctx)
        if split.short_circuited:
            yield _response(split.result())
            return
        if dict(split.value.arguments) != arguments:
            block = block.model_copy(update={"input": json.dumps(split.value.arguments)})
        final: ToolResponse | None = None
        started = time.perf_counter()
        try:
            async for chunk in next_handler(**{**input_kwargs, "tool_call": block}):
                if isinstance(chunk, ToolResponse):
                    final = chunk
                    continue
                yield chunk
        except BaseException as exc:
            await split.fail(exc)
            raise
        text = _text(final) if final is not None else ""
        error = final is not None and final.state == ToolResultState.ERROR
        metadata = dict(getattr(final, "metadata", None) or {})
        elapsed = (time.perf_counter() - started) * 1000
        result = await split.finish(
            ToolResult(text, error=error, metadata=metadata, execution_time_ms=elapsed, raw=final)
        )
        if final is not None and result.content == text and result.error == error:
            yield final
        else:
            yield _response(result)


def _function_tool(driver: Driver, tool: PolicyTool) -> FunctionTool:
    async def run(**arguments: Any) -> ToolChunk:
        result = await driver.run_tool(tool.name, arguments, _reply())
        state = ToolResultState.ERROR if result.error else ToolResultState.SUCCESS
        return ToolChunk(content=[TextBlock(text=result.content)], state=state)

    allowed = PermissionDecision(PermissionBehavior.ALLOW, "a tool of hookgate's policies")
    return FunctionTool(
        run,
        name=tool.name,
        description=tool.description,
        input_schema=dict(tool.parameters),
        is_read_only=tool.read_only,
        permission=allowed,
    )


_RESUMING = (UserConfirmResultEvent, ExternalExecutionResultEvent, UserInterruptEvent)
"""What AgentScope resumes (or, an interrupt, ends) a parked reply with."""


@dataclasses.dataclass(frozen=True, slots=True)
class _HandedOut:
    """An external call handed out: its onion, waiting for the result, and when."""

    split: Split[ToolCall, ToolResult]
    started: float


def _block_text(output: str | list[Any]) -> str:
    if isinstance(output, str):
        return output
    return "".join(b.text for b in output if isinstance(b, TextBlock))


def _client(agent: Any) -> openai.AsyncOpenAI | None:
    """The ``openai`` client of the agent's model, if it talks through one."""
    client = getattr(getattr(agent, "model", None), "client", None)
    return client if isinstance(client, openai.AsyncOpenAI) else None


def _response(result: ToolResult) -> ToolResponse:
    state = ToolResultState.ERROR if result.error else ToolResultState.SUCCESS
    return ToolResponse(content=[TextBlock(text=result.content)], state=state)


def _text(response: ToolResponse) -> str:
    return "".join(b.text for b in response.content if isinstance(b, TextBlock))


def _usage(response: ChatResponse | None) -> Usage | None:
    usage = response.usage if response is not None else None
    return None if usage is None else Usage(usage.input_tokens, usage.output_tokens)


class _Answer:
    """The user's side of a reply's events: text deltas, block ends and the final message
    with the response policies' transform applied (``pii`` restores values the reply's tool
    results were given as placeholders), so the user never reads a placeholder. A transform
    is made per text block, when the block starts: it knows every value found so far."""

    def __init__(self, transform: Callable[[], StreamTransform | None]) -> None:
        self._make = transform
        self._blocks: dict[str, tuple[StreamTransform | None, list[str]]] = {}

    async def restored(self, item: Any) -> list[Any]:
        if isinstance(item, TextBlockDeltaEvent):
            transform, sent = self._block(item.block_id)
            if transform is None:
                return [item]
            sent.append(await transform.delta(_KEY, item.delta))
            return [item.model_copy(update={"delta": sent[-1]})]
        if isinstance(item, TextBlockEndEvent):
            transform, sent = self._blocks.pop(item.block_id, (None, []))
            if transform is None:
                return [item]
            held = await transform.end(_KEY)
            out: list[Any] = []
            if held:
                out.append(TextBlockDeltaEvent(
                    reply_id=item.reply_id, block_id=item.block_id, delta=held
                ))  # fmt: skip
            return [*out, item.model_copy(update={"text": "".join(sent) + held})]
        if isinstance(item, Msg) and isinstance(item.content, list):
            blocks = [await self._restored_block(b) for b in item.content]
            if any(new is not old for new, old in zip(blocks, item.content, strict=True)):
                return [item.model_copy(update={"content": blocks})]
        return [item]

    def _block(self, block_id: str) -> tuple[StreamTransform | None, list[str]]:
        if block_id not in self._blocks:
            self._blocks[block_id] = (self._make(), [])
        return self._blocks[block_id]

    async def _restored_block(self, block: Any) -> Any:
        transform = self._make() if isinstance(block, TextBlock) else None
        if transform is None:
            return block
        text = await transform.delta(_KEY, block.text) + await transform.end(_KEY)
        return block if text == block.text else block.model_copy(update={"text": text})


_KEY = DeltaKey("text", 0)
"""Each transform sees one text, so one key."""


def _reply() -> ReplyContext:
    return reply_now("Agent(..., middlewares=[HookgateMiddleware(gate)])")
