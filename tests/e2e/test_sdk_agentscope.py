"""AgentScope 2's ``Agent`` with nothing but hookgate's middleware attached, run with
AgentScope's own entry points (``reply``, ``reply_stream``; 2.0's ``Agent`` is not
callable), its model behind the proxy or straight at the provider; its pauses (a turn's
confirmations, external tools) resumed with AgentScope's own events, ``observe`` and
``compress_context``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from agentscope.agent import Agent, ReActConfig
from agentscope.credential import AnthropicCredential, OpenAICredential
from agentscope.event import (
    ConfirmResult,
    ExternalExecutionResultEvent,
    RequireExternalExecutionEvent,
    RequireUserConfirmEvent,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from agentscope.message import Msg, TextBlock, ToolResultBlock, ToolResultState, UserMsg
from agentscope.model import AnthropicChatModel, OpenAIChatModel
from agentscope.permission import PermissionBehavior, PermissionContext, PermissionDecision
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, ToolBase, Toolkit

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate
from hookgate.sdk.adapters.agentscope import HookgateMiddleware
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import Echo, FakeUpstream
from tests.otlp import OtlpReceiver
from tests.sdk.harness import (
    CAP_RESULTS,
    GUARD,
    PII_AND_BUDGET,
    REFUSAL,
    REPORT,
    SECRET,
    assert_joined_trace,
    assert_redacted_and_wrapped_up,
    assert_refused,
    assert_result_capped,
    call_the_denied_tool,
    make_gate,
    traced_proxy,
    tracing,
)

EMAIL = "maria.garcia@example.com"


def make_agent(
    gate: Gate,
    url: str,
    calls: list[str],
    stream: bool,
    extra: Sequence[Callable[..., str]] = (),
) -> tuple[Agent, Any]:
    """The agent, with ``get_weather`` (``calls`` records its cities) and ``extra`` tools."""

    def get_weather(city: str) -> str:
        """Current weather for a city.

        Args:
            city (`str`):
                The city name.
        """
        calls.append(city)
        return f"sunny in {city}; forecast by Siobhan O'Brien, siobhan@example.org"

    model = OpenAIChatModel(
        credential=OpenAICredential(api_key=CLIENT_KEY, base_url=url),
        model="gpt-4o-mini",
        stream=stream,
        max_retries=0,
    )
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed in test")
    agent = Agent(
        name="assistant",
        system_prompt="You are a helpful assistant.",
        model=model,
        toolkit=Toolkit(
            tools=[FunctionTool(f, permission=allow) for f in (get_weather, *extra)]  # type: ignore[arg-type]
        ),
        react_config=ReActConfig(max_iters=4),
        middlewares=[HookgateMiddleware(gate)],
    )
    return agent, model


@pytest.mark.parametrize("stream", [False, True], ids=["no-stream", "stream"])
async def test_blocked_tool_and_one_trace(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    receiver: OtlpReceiver,
    tmp_path: Path,
    stream: bool,
) -> None:
    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    call_the_denied_tool(upstream)
    agent, model = make_agent(gate, traced_proxy(make_proxy, receiver), calls, stream)
    try:
        answer = await agent.reply(UserMsg(name="user", content="Weather in Paris?"))
    finally:
        await model.client.close()
        await gate.aclose()
    assert_refused(upstream, calls)
    assert answer.get_text_content() == f"The tool said: {REFUSAL}"
    assert_joined_trace(receiver, "get_weather", model_calls=2)


def get_time() -> str:
    """The current time."""
    return "12:00"


def offered(body: dict[str, Any]) -> list[str]:
    """The names of the tools a model request offers."""
    return [t["function"]["name"] for t in body.get("tools") or []]


def system_text(body: dict[str, Any]) -> str:
    """The text of a model request's system message (AgentScope sends text blocks)."""
    system = body["messages"][0]
    assert system["role"] == "system"
    return "".join(block["text"] for block in system["content"])


async def reply(agent: Agent, message: Any) -> Any:
    return await agent.reply(message)


async def reply_stream(agent: Agent, message: Any) -> Any:
    events = [e async for e in agent.reply_stream(message, yield_final_msg=True)]
    return events[-1]


@pytest.mark.parametrize("entry", [reply, reply_stream], ids=lambda f: f.__name__)
async def test_every_entry_point_is_one_governed_reply(
    upstream: FakeUpstream, tmp_path: Path, entry: Any
) -> None:
    gate = make_gate(tmp_path, upstream, PII_AND_BUDGET)
    calls: list[str] = []
    agent, model = make_agent(gate, upstream.base_url, calls, False)  # SDK only: headers seen
    try:
        answer = await entry(agent, UserMsg(name="user", content="Weather in Paris?"))
    finally:
        await model.client.close()
        await gate.aclose()
    assert calls == ["Paris"]
    assert_redacted_and_wrapped_up(upstream)  # the budget was the reply's: one per run
    assert gate.driver._open == {}  # the reply closed where AgentScope's ended
    replies = {r.headers["x-hookgate-reply-id"] for r in upstream.requests}
    assert len(replies) == 1
    text = answer.get_text_content()
    assert "Siobhan O'Brien" in text and "siobhan@example.org" in text  # the model read
    assert not PATTERN.search(text)  # placeholders; the user reads the values


async def test_a_streamed_answer_never_shows_a_placeholder(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n")
    agent, model = make_agent(gate, upstream.base_url, [], True)
    try:
        events = [
            e
            async for e in agent.reply_stream(
                UserMsg(name="user", content=f"Weather in Paris? Mail {EMAIL}."),
                yield_final_msg=True,
            )
        ]
    finally:
        await model.client.close()
        await gate.aclose()
    sent = b"".join(r.body for r in upstream.requests).decode()
    assert PATTERN.search(sent) and "siobhan@example.org" not in sent  # the model read placeholders
    assert EMAIL not in sent  # the user's own e-mail too
    deltas = "".join(e.delta for e in events if isinstance(e, TextBlockDeltaEvent))
    ends = "".join(e.text or "" for e in events if isinstance(e, TextBlockEndEvent))
    assert isinstance(events[-1], Msg)
    final = events[-1].get_text_content() or ""
    for text in (deltas, ends, final):
        assert "Siobhan O'Brien" in text and "siobhan@example.org" in text
        assert not PATTERN.search(text)


@pytest.mark.parametrize("entry", [reply, reply_stream], ids=lambda f: f.__name__)
async def test_sdk_alone_with_pii_guard_and_tracing(
    upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path, entry: Any
) -> None:
    """Only the middleware attached, the model straight at the provider: neither the user's
    e-mail nor the tool's reaches the model, a denied tool is never offered, the answer
    carries the tool's e-mail, and the reply, its tool and its model calls are one trace."""
    policies = f"  - pii: {{secret: '{SECRET}'}}\n  - tool_guard: {{deny: [get_time]}}\n" + tracing(
        receiver
    )
    gate = make_gate(tmp_path, upstream, policies)
    calls: list[str] = []
    agent, model = make_agent(gate, upstream.base_url, calls, False, extra=[get_time])
    try:
        answer = await entry(agent, UserMsg(name="user", content=f"Weather? Mail {EMAIL}."))
    finally:
        await model.client.close()
        await gate.aclose()
    sent = b"".join(r.body for r in upstream.requests).decode()
    assert len(calls) == 1  # the allowed tool ran (tool_guard denies another)
    for request in upstream.requests:  # the agent has get_time; the model never saw it
        assert offered(request.json()) == ["get_weather"]
    assert EMAIL not in sent and "siobhan@example.org" not in sent
    text = answer.get_text_content()
    assert "siobhan@example.org" in text and not PATTERN.search(text)
    spans = receiver.wait_until(
        lambda s: (
            any(x.name == "invoke_agent assistant" for x in s)
            and len([x for x in s if x.name.startswith("chat ")]) >= 2
        )
    )
    (reply_span,) = [s for s in spans if s.name == "invoke_agent assistant"]
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert all(s.parent_span_id == reply_span.span_id for s in chats)
    assert any(s.name == "execute_tool get_weather" for s in spans)


@pytest.mark.parametrize("entry", [reply, reply_stream], ids=lambda f: f.__name__)
async def test_a_system_prompt_template_reaches_every_model_call(
    upstream: FakeUpstream, tmp_path: Path, entry: Any
) -> None:
    """system_prompt (AgentScope's ``on_system_prompt``): the agent's own prompt, run
    through the template with the reply's facts, is the system message of each call."""
    template = "  - system_prompt: {template: '{prompt} Agent: {agent}; reply {reply_id}.'}\n"
    gate = make_gate(tmp_path, upstream, template)
    agent, model = make_agent(gate, upstream.base_url, [], False)
    try:
        await entry(agent, UserMsg(name="user", content="Weather in Paris?"))
    finally:
        await model.client.close()
        await gate.aclose()
    assert len(upstream.requests) == 2  # the tool call, then the answer
    for request in upstream.requests:
        reply_id = request.headers["x-hookgate-reply-id"]
        expected = f"You are a helpful assistant. Agent: assistant; reply {reply_id}."
        assert system_text(request.json()) == expected


def read_report() -> str:
    """The long weather report."""
    return REPORT


@pytest.mark.parametrize("entry", [reply, reply_stream], ids=lambda f: f.__name__)
async def test_a_long_tool_result_is_capped_before_the_model_reads_it(
    upstream: FakeUpstream, tmp_path: Path, entry: Any
) -> None:
    """context (AgentScope's ``on_compress_context``): past the trigger, the tool result the
    next call sends is cut to ``tool_result_limit``; the system prompt stays, the call stays
    beside its result, and AgentScope's own memory keeps the whole result."""
    gate = make_gate(tmp_path, upstream, CAP_RESULTS)
    agent, model = make_agent(gate, upstream.base_url, [], False, extra=[read_report])
    upstream.push(synth.Reply(tool_calls=[synth.ToolCall("call_r", "read_report", "{}")]))
    try:
        await entry(agent, UserMsg(name="user", content="Read me the report."))
    finally:
        await model.client.close()
        await gate.aclose()
    body = upstream.requests[1].json()
    assert system_text(body) == "You are a helpful assistant."
    sent = body["messages"]
    assert_result_capped(sent, "call_r")
    assert REPORT in str(agent.state.model_dump())  # AgentScope's memory: whole


@pytest.mark.parametrize("entry", [reply, reply_stream], ids=lambda f: f.__name__)
async def test_a_stopped_reply_ends_its_reasoning_loop(
    upstream: FakeUpstream, tmp_path: Path, entry: Any
) -> None:
    """model_call_limit ``stop`` through ``on_reasoning``: after its one call the reply's
    tool call still runs, then AgentScope's loop ends instead of calling the model again."""
    gate = make_gate(
        tmp_path, upstream, "  - model_call_limit: {max_per_reply: 1, on_limit: end}\n"
    )
    calls: list[str] = []
    weather = [
        synth.Reply(tool_calls=[synth.ToolCall(f"c{n}", "get_weather", '{"city": "Paris"}')])
        for n in range(3)
    ]
    upstream.push(*weather)
    agent, model = make_agent(gate, upstream.base_url, calls, False)
    try:
        await entry(agent, UserMsg(name="user", content="Weather in Paris?"))
    finally:
        await model.client.close()
        await gate.aclose()
    assert len(upstream.requests) == 1 and calls == ["Paris"]
    assert gate.driver._open == {}


APPROVAL = "  - tool_guard: {approval: pause, approve: [send_*]}\n"


def mailer(
    gate: Gate, url: str, sent: list[str], extra: Sequence[ToolBase] = (), model: Any = None
) -> Agent:
    """An agent whose ``send_email`` (asked about: ``APPROVAL``) appends to ``sent``; its
    model an ``OpenAIChatModel`` at ``url`` unless ``model`` is given."""

    def send_email(to: str, body: str) -> str:
        """Send an e-mail.

        Args:
            to (`str`):
                The recipient.
            body (`str`):
                The text.
        """
        sent.append(f"{to}: {body}")
        return f"sent to {to}"

    model = model or OpenAIChatModel(
        credential=OpenAICredential(api_key=CLIENT_KEY, base_url=url),
        model="gpt-4o-mini",
        stream=False,
        max_retries=0,
    )
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed in test")
    return Agent(
        name="assistant",
        system_prompt="You send e-mails.",
        model=model,
        toolkit=Toolkit(tools=[FunctionTool(send_email, permission=allow), *extra]),  # type: ignore[arg-type]
        react_config=ReActConfig(max_iters=4),
        middlewares=[HookgateMiddleware(gate)],
    )


async def events_of(agent: Agent, message: Any) -> list[Any]:
    return [e async for e in agent.reply_stream(message, yield_final_msg=True)]


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """What a model request's tool messages say, by call id (text blocks joined)."""
    return {
        m["tool_call_id"]: m["content"]
        if isinstance(m["content"], str)
        else "".join(b.get("text", "") for b in m["content"])
        for m in body["messages"]
        if m["role"] == "tool"
    }


async def test_several_gated_calls_of_one_turn_pause_once_and_resume_with_a_decision_each(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Three approval-gated calls of one model turn: one pause with a
    ``RequireUserConfirmEvent`` per call (AgentScope's own shape for a turn's concurrent
    calls); one ``UserConfirmResultEvent`` answers them all — approve, edit, reject — and
    the reply goes on: the approved call runs as asked, the edited one as edited, the
    rejected one never runs and the model reads AgentScope's denial."""
    gate = make_gate(tmp_path, upstream, APPROVAL)
    sent: list[str] = []
    agent = mailer(gate, upstream.base_url, sent)
    asked = [{"to": f"{who}@corp.example", "body": "Late."} for who in ("ann", "bob", "cy")]
    calls = [
        synth.ToolCall(f"call_{n}", "send_email", orjson.dumps(a).decode())
        for n, a in enumerate(asked)
    ]
    upstream.push(synth.Reply(tool_calls=calls), synth.Reply(text="Done."))
    try:
        paused = await events_of(agent, UserMsg(name="user", content="Tell them I'm late."))
        asks = [e for e in paused if isinstance(e, RequireUserConfirmEvent)]
        assert sorted(c.id for e in asks for c in e.tool_calls) == ["call_0", "call_1", "call_2"]
        assert not sent and len(upstream.requests) == 1  # paused once, before any ran
        by_id = {c.id: c for e in asks for c in e.tool_calls}
        edited = by_id["call_1"].model_copy(
            update={"input": orjson.dumps({"to": "bob@corp.example", "body": "Sorry."}).decode()}
        )
        answer = UserConfirmResultEvent(
            reply_id=asks[0].reply_id,
            confirm_results=[
                ConfirmResult(confirmed=True, tool_call=by_id["call_0"]),
                ConfirmResult(confirmed=True, tool_call=edited),
                ConfirmResult(confirmed=False, tool_call=by_id["call_2"]),
            ],
        )
        resumed = await events_of(agent, answer)
    finally:
        await agent.model.client.close()
        await gate.aclose()
    assert not any(isinstance(e, RequireUserConfirmEvent) for e in resumed)
    assert resumed[-1].get_text_content() == "Done."
    assert sorted(sent) == ["ann@corp.example: Late.", "bob@corp.example: Sorry."]
    read = tool_results(upstream.requests[-1].json())
    assert read["call_0"] == "sent to ann@corp.example"
    assert read["call_1"] == "sent to bob@corp.example"
    assert "denied by user" in read["call_2"]
    assert gate.driver._open == {}  # the one reply closed when AgentScope's ended


class SendFax(ToolBase):
    """A tool AgentScope hands out (``is_external_tool``): the caller runs it."""

    name = "send_fax"
    description = "Send a fax."
    is_concurrency_safe = False
    is_read_only = False
    is_external_tool = True

    def __init__(self) -> None:
        super().__init__()
        self.input_schema = {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        }

    async def check_permissions(
        self, tool_input: dict[str, Any], context: PermissionContext
    ) -> PermissionDecision:
        return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed in test")


RECEIPT = "receipts@fax-office.example.net"
FAXED = f"Faxed; the receipt went to {RECEIPT}."


def executed(asked: RequireExternalExecutionEvent, output: str = FAXED) -> Any:
    """What the caller sends back once it ran every call handed out."""
    results = [
        ToolResultBlock(
            id=c.id, name=c.name, output=[TextBlock(text=output)], state=ToolResultState.SUCCESS
        )
        for c in asked.tool_calls
    ]
    return ExternalExecutionResultEvent(reply_id=asked.reply_id, execution_results=results)


async def test_an_external_call_gets_real_values_and_its_result_is_governed(
    upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    """An ``is_external_tool`` call: AgentScope never runs ``on_acting`` for it, yet its
    ``on_tool_call`` runs from hand-out to result: the executor gets the user's real
    e-mail where the model wrote a placeholder; the result that comes back is redacted
    before the model reads it (and before AgentScope's memory keeps it), the call is
    counted, and its ``execute_tool`` span, a child of the reply's, records it."""
    report = tmp_path / "replies.jsonl"
    policies = (  # tracing first: its span records what the model reads
        f"  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05, "
        "capture_content: true}\n"
        f"  - pii: {{secret: '{SECRET}'}}\n"
        f"  - tests.policies_for_tests:ReplyReport: {{path: '{report}'}}\n"
    )
    gate = make_gate(tmp_path, upstream, policies)
    agent = mailer(gate, upstream.base_url, [], extra=[SendFax()])
    upstream.push(Echo(prefix="", tool="send_fax", user=0), synth.Reply(text="Done."))
    try:
        paused = await events_of(agent, UserMsg(name="user", content=f"Fax {EMAIL} please."))
        (asked,) = [e for e in paused if isinstance(e, RequireExternalExecutionEvent)]
        (call,) = asked.tool_calls
        assert orjson.loads(call.input) == {"text": f"Fax {EMAIL} please."}  # real values
        assert len(upstream.requests) == 1 and not report.exists()  # parked
        resumed = await events_of(agent, executed(asked))
    finally:
        await agent.model.client.close()
        await gate.aclose()
    assert resumed[-1].get_text_content() == "Done."
    sent = b"".join(r.body for r in upstream.requests).decode()
    assert EMAIL not in sent and RECEIPT not in sent  # the user's message, the receipt
    read = tool_results(upstream.requests[1].json())[call.id]
    assert read.startswith("Faxed; the receipt went to ") and PATTERN.search(read)
    assert RECEIPT not in agent.state.model_dump_json()  # AgentScope kept what the model read
    (line,) = [orjson.loads(x) for x in report.read_bytes().splitlines()]
    assert line["tool_calls"] == 1
    spans = receiver.wait_until(
        lambda s: (
            any(x.name == "execute_tool send_fax" for x in s)
            and any(x.name == "invoke_agent assistant" for x in s)
        )
    )
    (reply_span,) = [s for s in spans if s.name == "invoke_agent assistant"]
    (tool_span,) = [s for s in spans if s.name == "execute_tool send_fax"]
    assert tool_span.parent_span_id == reply_span.span_id
    assert tool_span.attributes["gen_ai.tool.call.id"] == call.id
    assert tool_span.attributes["gen_ai.tool.call.result"] == read
    assert gate.driver._open == {}


@pytest.mark.parametrize(
    ("guard", "refusal"),
    [
        ("{deny: [send_fax]}", "Tool call refused: the tool 'send_fax' is not allowed"),
        ("{max_per_reply: 0}", "Tool call refused: the tool call limit is reached"),
    ],
    ids=["denied", "over-limit"],
)
async def test_a_refused_external_call_is_never_handed_out(
    upstream: FakeUpstream, tmp_path: Path, guard: str, refusal: str
) -> None:
    """``tool_guard`` decides before AgentScope hands the call out: a refused call is
    never handed out, the reply does not park, and the model reads the refusal."""
    gate = make_gate(tmp_path, upstream, f"  - tool_guard: {guard}\n")
    agent = mailer(gate, upstream.base_url, [], extra=[SendFax()])
    upstream.push(Echo(prefix="", tool="send_fax", user=0), synth.Reply(text="I could not fax it."))
    try:
        events = await events_of(agent, UserMsg(name="user", content="Fax it."))
    finally:
        await agent.model.client.close()
        await gate.aclose()
    assert not any(isinstance(e, RequireExternalExecutionEvent) for e in events)
    assert events[-1].get_text_content() == "I could not fax it."
    (read,) = tool_results(upstream.requests[1].json()).values()
    assert read.startswith(refusal)
    assert gate.driver._open == {}


async def test_an_approval_gated_external_call_asks_the_person_before_it_is_handed_out(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """``approval: pause`` on an external tool: the reply parks for the person first; once
    confirmed, AgentScope hands the call out (with real values) and the result resumes
    it. A rejected one is never handed out."""
    gate = make_gate(
        tmp_path,
        upstream,
        f"  - pii: {{secret: '{SECRET}'}}\n{APPROVAL.replace('send_*', 'send_fax')}",
    )
    agent = mailer(gate, upstream.base_url, [], extra=[SendFax()])
    upstream.push(Echo(prefix="", tool="send_fax", user=0), synth.Reply(text="Done."))
    try:
        first = await events_of(agent, UserMsg(name="user", content=f"Fax {EMAIL} please."))
        (ask,) = [e for e in first if isinstance(e, RequireUserConfirmEvent)]
        assert not any(isinstance(e, RequireExternalExecutionEvent) for e in first)
        (block,) = ask.tool_calls
        confirmed = UserConfirmResultEvent(
            reply_id=ask.reply_id, confirm_results=[ConfirmResult(confirmed=True, tool_call=block)]
        )
        second = await events_of(agent, confirmed)
        (asked,) = [e for e in second if isinstance(e, RequireExternalExecutionEvent)]
        assert orjson.loads(asked.tool_calls[0].input) == {"text": f"Fax {EMAIL} please."}
        assert len(upstream.requests) == 1  # no model call between the two pauses
        third = await events_of(agent, executed(asked, "Faxed."))
    finally:
        await agent.model.client.close()
        await gate.aclose()
    assert third[-1].get_text_content() == "Done."
    assert tool_results(upstream.requests[1].json()) == {block.id: "Faxed."}
    assert gate.driver._open == {}


async def test_an_external_call_gets_real_values_where_the_model_wrote_placeholders(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """A model of another SDK (Anthropic's: not governed in-process, so nothing restores
    its tool calls before AgentScope reads them) copies a placeholder from a tool result
    into an external call's arguments: the executor gets the real value."""
    gate = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n")
    model = AnthropicChatModel(
        credential=AnthropicCredential(api_key=CLIENT_KEY, base_url=upstream.anthropic_base_url),
        model="claude-opus-4-7",
        stream=False,
        max_retries=0,
    )
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed in test")

    def get_contact() -> str:
        """The contact to fax."""
        return RECEIPT

    tools = [FunctionTool(get_contact, permission=allow), SendFax()]  # type: ignore[arg-type]
    agent = mailer(gate, upstream.base_url, [], extra=tools, model=model)
    contact = synth.ToolCall("toolu_1", "get_contact", "{}")
    upstream.push(synth.Reply(tool_calls=[contact]), Echo(prefix="", tool="send_fax"))
    try:
        events = await events_of(agent, UserMsg(name="user", content="Fax the contact."))
    finally:
        await model.client.close()
        await gate.aclose()
    (asked,) = [e for e in events if isinstance(e, RequireExternalExecutionEvent)]
    read = tool_results_of_messages(upstream.requests[1].json())
    assert RECEIPT not in read and PATTERN.search(read)  # the model read a placeholder
    text = orjson.loads(asked.tool_calls[0].input)["text"]
    assert RECEIPT in text and not PATTERN.search(text)  # the executor gets the value


def tool_results_of_messages(body: dict[str, Any]) -> str:
    """The text of the ``tool_result`` blocks of an Anthropic Messages request."""
    return "".join(
        str(block.get("content"))
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    )


async def test_an_interrupted_external_call_ends_with_its_reply(
    upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    """The user interrupts a reply parked on an external call (``UserInterruptEvent``):
    the reply ends there, with AgentScope's interruption message, and the call's span
    ends failed — nothing stays open."""
    gate = make_gate(tmp_path, upstream, tracing(receiver))
    agent = mailer(gate, upstream.base_url, [], extra=[SendFax()])
    upstream.push(Echo(prefix="", tool="send_fax", user=0))
    try:
        paused = await events_of(agent, UserMsg(name="user", content="Fax it."))
        (asked,) = [e for e in paused if isinstance(e, RequireExternalExecutionEvent)]
        assert gate.driver._open  # parked
        ended = await events_of(agent, UserInterruptEvent(reply_id=asked.reply_id))
    finally:
        await agent.model.client.close()
        await gate.aclose()
    assert ended[-1].get_text_content() == agent.react_config.interruption_message
    assert gate.driver._open == {}
    spans = receiver.wait_until(
        lambda s: (
            any(x.name == "execute_tool send_fax" for x in s)
            and any(x.name == "invoke_agent assistant" for x in s)
        )
    )
    (tool_span,) = [s for s in spans if s.name == "execute_tool send_fax"]
    assert tool_span.status_code == 2  # ERROR


async def test_an_external_result_sent_to_another_process_is_governed_there(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """The reply parks on an external call in one gate and its result comes back to
    another one (another process: the agent's saved state, the same store): there the
    result runs through ``on_tool_call`` — redacted before AgentScope keeps it — and the
    reply ends."""
    first = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n")
    agent = mailer(first, upstream.base_url, [], extra=[SendFax()])
    upstream.push(Echo(prefix="", tool="send_fax", user=0), synth.Reply(text="Done."))
    try:
        paused = await events_of(agent, UserMsg(name="user", content=f"Fax {EMAIL} please."))
    finally:
        await agent.model.client.close()
        await first.aclose()
    (asked,) = [e for e in paused if isinstance(e, RequireExternalExecutionEvent)]
    assert orjson.loads(asked.tool_calls[0].input) == {"text": f"Fax {EMAIL} please."}

    second = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n")
    resumed_agent = mailer(second, upstream.base_url, [], extra=[SendFax()])
    resumed_agent.state = AgentState.model_validate_json(agent.state.model_dump_json())
    try:
        resumed = await events_of(resumed_agent, executed(asked))
    finally:
        await resumed_agent.model.client.close()
        await second.aclose()
    assert resumed[-1].get_text_content() == "Done."
    read = tool_results(upstream.requests[1].json())[asked.tool_calls[0].id]
    assert RECEIPT not in read and PATTERN.search(read)
    assert RECEIPT not in resumed_agent.state.model_dump_json()  # redacted as it came back
    assert second.driver._open == {}


async def test_an_observed_message_reaches_the_model_governed(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """``observe``: another agent's message enters AgentScope's context with no hook of
    its own; the model call that sends it is governed (``pii`` redacts it there)."""
    gate = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n")
    agent = mailer(gate, upstream.base_url, [])
    upstream.push(synth.Reply(text="Noted."))
    try:
        await agent.observe(UserMsg(name="colleague", content=f"Reach me at {EMAIL}."))
        answer = await agent.reply(UserMsg(name="user", content="What did they say?"))
    finally:
        await agent.model.client.close()
        await gate.aclose()
    assert answer.get_text_content() == "Noted."
    (request,) = upstream.requests
    sent = request.body.decode()
    assert "Reach me at" in sent and EMAIL not in sent and PATTERN.search(sent)


SUMMARY = {
    "task_overview": "Mail the team.",
    "current_state": "Nothing sent yet.",
    "important_discoveries": "None.",
    "next_steps": "Send the mail.",
    "context_to_preserve": "Be brief.",
}


async def test_compress_context_on_its_own_is_a_governed_reply(
    upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    """``await agent.compress_context()`` outside a reply: the request that writes the
    summary is governed as a reply's model call — what it sends to be summarised is
    redacted, and it is a ``chat`` span under a reply's — instead of going out untouched."""
    gate = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n" + tracing(receiver))
    model = OpenAIChatModel(
        credential=OpenAICredential(api_key=CLIENT_KEY, base_url=upstream.base_url),
        model="gpt-4o-mini",
        stream=False,
        max_retries=0,
        context_size=400,
    )
    agent = mailer(gate, upstream.base_url, [], model=model)
    summarised = synth.ToolCall(
        "call_s", "generate_structured_output", orjson.dumps(SUMMARY).decode()
    )
    upstream.push(synth.Reply(tool_calls=[summarised]))
    try:
        await agent.observe(UserMsg(name="user", content=f"Mail {EMAIL}. {REPORT[:1600]}"))
        await agent.compress_context()
    finally:
        await model.client.close()
        await gate.aclose()
    assert "Send the mail." in str(agent.state.summary)  # AgentScope compressed
    (request,) = upstream.requests
    sent = request.body.decode()
    assert "Weather report" in sent and EMAIL not in sent and PATTERN.search(sent)
    assert request.headers["x-hookgate-reply-id"]
    spans = receiver.wait_until(
        lambda s: (
            any(x.name == "invoke_agent assistant" for x in s)
            and any(x.name.startswith("chat ") for x in s)
        )
    )
    (reply_span,) = [s for s in spans if s.name == "invoke_agent assistant"]
    (chat,) = [s for s in spans if s.name.startswith("chat ")]
    assert chat.parent_span_id == reply_span.span_id
    assert gate.driver._open == {}


async def test_an_external_result_after_the_reply_was_rebuilt_ends_the_first_onion(
    upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    """The parked reply was dropped here (past ``MAX_OPEN_REPLIES``) and is rebuilt from the
    store when the result comes back: the onion begun at hand-out ends failed instead of
    waiting forever, and the result runs a whole onion in the rebuilt reply."""
    gate = make_gate(tmp_path, upstream, tracing(receiver))
    gate.driver.MAX_OPEN_REPLIES = 0  # every reply is dropped as soon as it opens
    agent = mailer(gate, upstream.base_url, [], extra=[SendFax()])
    upstream.push(Echo(prefix="", tool="send_fax", user=0), synth.Reply(text="Done."))
    try:
        paused = await events_of(agent, UserMsg(name="user", content="Fax it."))
        (asked,) = [e for e in paused if isinstance(e, RequireExternalExecutionEvent)]
        resumed = await events_of(agent, executed(asked, "Faxed."))
    finally:
        await agent.model.client.close()
        await gate.aclose()
    assert resumed[-1].get_text_content() == "Done."
    spans = receiver.wait_until(
        lambda s: len([x for x in s if x.name == "execute_tool send_fax"]) == 2
    )
    ended = sorted(s.status_code for s in spans if s.name == "execute_tool send_fax")
    assert ended == [0, 2]  # the rebuilt reply's onion ran; the first one ended failed
