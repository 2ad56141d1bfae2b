"""LangChain v1 ``create_agent`` with nothing but hookgate's middleware attached, run with
LangChain's own entry points (invoke, ainvoke, stream, astream, batch), with the SDK alone
and with the proxy also in the path."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langchain_openai import ChatOpenAI
from langgraph.types import Command

from hookgate.budgets.tokens import prompt_tokens
from hookgate.errors import HookgateError
from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate
from hookgate.sdk.adapters.langchain import HookgateMiddleware
from hookgate.sdk.driver import STOPPED
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import Echo, FakeUpstream
from tests.otlp import OtlpReceiver, ReceivedSpan
from tests.policies.test_context import SYSTEM, assert_well_formed, conversation
from tests.sdk.harness import GUARD, SECRET, assert_joined_trace, make_gate, traced_proxy, tracing

PII = f"  - pii: {{secret: '{SECRET}'}}\n"
FORECAST = "sunny in {city}; forecast by Siobhan O'Brien, siobhan@example.org"


def agent_with(gate: Gate, url: str, calls: list[str]) -> Any:
    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return FORECAST.format(city=city)

    model = ChatOpenAI(model="gpt-4.1-mini", base_url=url, api_key=CLIENT_KEY, max_retries=0)  # type: ignore[arg-type]
    return create_agent(model, tools=[get_weather], middleware=[HookgateMiddleware(gate)])


def question(text: str = "Weather in Paris?") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def final_text(state: dict[str, Any]) -> str:
    message = state["messages"][-1]
    assert isinstance(message, AIMessage)
    return str(message.text)


def assert_tool_result_redacted_and_answer_restored(
    upstream: FakeUpstream, answer: str, request: int = 1
) -> None:
    """The model read placeholders for the tool's PII; the user reads the values."""
    tool_message = upstream.requests[request].json()["messages"][-1]["content"]
    assert "Siobhan" not in tool_message and "siobhan@example.org" not in tool_message
    assert len(PATTERN.findall(tool_message)) == 2
    assert "Siobhan O'Brien" in answer and "siobhan@example.org" in answer
    assert not PATTERN.search(answer)


def invoke(agent: Any) -> dict[str, Any]:
    return dict(agent.invoke(question()))


def ainvoke(agent: Any) -> dict[str, Any]:
    return dict(asyncio.run(agent.ainvoke(question())))


def stream_values(agent: Any) -> dict[str, Any]:
    return dict(list(agent.stream(question(), stream_mode="values"))[-1])


def astream_values(agent: Any) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        return [chunk async for chunk in agent.astream(question(), stream_mode="values")][-1]

    return dict(asyncio.run(run()))


def stream_updates(agent: Any) -> dict[str, Any]:
    updates = list(agent.stream(question(), stream_mode="updates"))
    messages = [m for u in updates for node in u.values() if node for m in node.get("messages", [])]
    return {"messages": messages}


@pytest.mark.parametrize(
    "entry",
    [invoke, ainvoke, stream_values, astream_values, stream_updates],
    ids=lambda f: f.__name__,
)
def test_every_entry_point_runs_one_governed_reply(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, entry: Any
) -> None:
    gate = make_gate(tmp_path, upstream, PII)
    calls: list[str] = []
    state = entry(agent_with(gate, make_proxy(), calls))
    assert calls == ["Paris"]
    assert_tool_result_redacted_and_answer_restored(upstream, final_text(state))
    assert gate.driver._open == {}  # the reply closed where the run ended
    asyncio.run(gate.aclose())


def test_batch_runs_concurrent_replies_that_never_mix(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, "  - reply_budget: {tokens: 20}\n")  # turn 1: 30
    calls: list[str] = []
    agent = agent_with(gate, upstream.base_url, calls)  # SDK only: the headers reach it
    states = agent.batch(
        [question("Weather in Paris?"), question("Weather in Rome?")],
        config=[{"configurable": {"thread_id": "s-1"}}, {"configurable": {"thread_id": "s-2"}}],
    )
    assert len(states) == 2 and all(isinstance(s["messages"][-1], AIMessage) for s in states)
    # each run is its own reply with its own budget: both spent theirs at turn 1, each was
    # wrapped up, and each reply's headers carried its own session
    wrapped = [r.json() for r in upstream.requests if r.json().get("tool_choice") == "none"]
    assert len(wrapped) == 2
    sessions = {r.headers.get("x-hookgate-session-id") for r in upstream.requests}
    assert sessions == {"s-1", "s-2"}
    replies = {r.headers["x-hookgate-reply-id"] for r in upstream.requests}
    assert len(replies) == 2
    asyncio.run(gate.aclose())


async def test_the_prompt_is_redacted_before_it_leaves_the_process(
    upstream: FakeUpstream, tmp_path: Path, make_proxy: ProxyFactory
) -> None:
    """SDK only (the model's base URL is the fake upstream itself): the user's own PII is
    redacted in-process, and the model's answer, quoting it, is restored for the user."""
    gate = make_gate(tmp_path, upstream, PII)
    upstream.push(Echo())  # the model answers with the user's message as it read it
    agent = agent_with(gate, upstream.base_url, [])
    state = await agent.ainvoke(question("I'm Ana Lima, ana.lima@example.org: weather?"))
    await gate.aclose()
    sent = upstream.requests[0].body.decode()
    assert "ana.lima@example.org" not in sent and "Ana Lima" not in sent
    assert "ana.lima@example.org" in final_text(state) and "Ana Lima" in final_text(state)
    assert not PATTERN.search(final_text(state))


async def test_a_denied_tool_is_never_offered_and_one_trace(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    agent = agent_with(gate, traced_proxy(make_proxy, receiver), calls)
    state = await agent.ainvoke(question(), config={"configurable": {"thread_id": "s-1"}})
    await gate.aclose()
    assert calls == []
    assert "tools" not in upstream.requests[0].json()  # get_weather was never offered
    assert final_text(state) == "Hello from the fake upstream."

    def joined(spans: list[ReceivedSpan]) -> bool:  # two exporters: either may come first
        replies = [x for x in spans if x.name == "invoke_agent assistant"]
        return any(x.name.startswith("chat ") and x.trace_id == replies[0].trace_id
                   for x in spans) if replies else False  # fmt: skip

    spans = receiver.wait_until(joined)
    (reply,) = [s for s in spans if s.name == "invoke_agent assistant"]
    proxied = [s for s in spans if s.name.startswith("chat ") and s.trace_id == reply.trace_id]
    assert proxied[0].attributes["gen_ai.conversation.id"] == "s-1"


def test_a_spent_budget_wraps_the_reply_up_in_a_sync_run(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, "  - reply_budget: {tokens: 20}\n")  # turn 1: 30
    agent = agent_with(gate, make_proxy(), [])
    state = agent.invoke(question())
    second = upstream.requests[1].json()
    assert second["tool_choice"] == "none"
    system = [m["content"] for m in second["messages"] if m["role"] == "system"]
    assert any("budget for this reply is spent" in text for text in system)
    assert isinstance(state["messages"][-1], AIMessage)
    assert any(m["role"] == "tool" for m in second["messages"])  # the history is intact
    asyncio.run(gate.aclose())


async def test_sdk_and_proxy_together_redact_once_and_join_one_trace(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, tracing(receiver) + PII)
    url = make_proxy(f"policies:\n{tracing(receiver)}{PII}")
    calls: list[str] = []
    state = await agent_with(gate, url, calls).ainvoke(question())
    await gate.aclose()
    assert_tool_result_redacted_and_answer_restored(upstream, final_text(state))
    assert_joined_trace(receiver, "get_weather", model_calls=2)


async def test_sdk_alone_traces_each_model_call_under_the_reply(
    upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, tracing(receiver))
    await agent_with(gate, upstream.base_url, []).ainvoke(question())
    await gate.aclose()
    spans = receiver.wait_until(
        lambda s: (
            sum(x.name.startswith("chat ") for x in s) >= 2
            and any(x.name == "invoke_agent assistant" for x in s)
        )
    )
    (reply,) = [s for s in spans if s.name == "invoke_agent assistant"]
    chats = [s for s in spans if s.name == "chat gpt-4.1-mini"]
    assert len(chats) == 2 and {s.parent_span_id for s in chats} == {reply.span_id}
    assert [s.attributes["gen_ai.usage.input_tokens"] for s in chats] == [10, 10]
    assert [s.attributes["gen_ai.usage.output_tokens"] for s in chats] == [5, 5]


def test_the_messages_stream_never_shows_a_placeholder(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """``stream_mode="messages"``: the tokens a user sees carry the values, not the
    placeholders the model read."""
    gate = make_gate(tmp_path, upstream, PII)
    agent = agent_with(gate, upstream.base_url, [])
    chunks = list(agent.stream(question(), stream_mode="messages"))
    asyncio.run(gate.aclose())
    assert PATTERN.search(upstream.requests[1].body.decode())  # the model read placeholders
    said = "".join(
        str(message.content) for message, meta in chunks if meta.get("langgraph_node") == "model"
    )
    assert "Siobhan O'Brien" in said and "siobhan@example.org" in said
    assert not PATTERN.search(said)


@pytest.mark.parametrize("entry", [invoke, ainvoke], ids=lambda f: f.__name__)
def test_a_flaky_tool_is_retried(upstream: FakeUpstream, tmp_path: Path, entry: Any) -> None:
    """tool_retry on LangChain's own tool: it raised twice, ran the third time, and the
    model read its result."""
    gate = make_gate(tmp_path, upstream, "  - tool_retry: {retries: 2, backoff_base_s: 0}\n")
    attempts: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        attempts.append(city)
        if len(attempts) < 3:
            raise ConnectionError("the weather service hung up")
        return f"sunny in {city}"

    model = ChatOpenAI(model="m", base_url=upstream.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    agent = create_agent(model, tools=[get_weather], middleware=[HookgateMiddleware(gate)])
    state = entry(agent)
    asyncio.run(gate.aclose())
    assert len(attempts) == 3
    assert "sunny in" in upstream.requests[1].json()["messages"][-1]["content"]
    assert final_text(state).startswith("The tool said: sunny in")


def test_a_tool_returning_a_command_or_an_artifact_keeps_its_shape(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """LangChain gets its own types back: a Command (with its state update) and a
    ToolMessage's artifact survive pii rewriting the text the model reads."""
    gate = make_gate(tmp_path, upstream, PII)

    @tool
    def get_weather(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Current weather for a city."""
        message = ToolMessage(FORECAST.format(city=city), tool_call_id=tool_call_id,
                              artifact={"source": "met-office"})  # fmt: skip
        return Command(update={"messages": [message]})

    model = ChatOpenAI(model="m", base_url=upstream.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    agent = create_agent(model, tools=[get_weather], middleware=[HookgateMiddleware(gate)])
    state = agent.invoke(question())
    asyncio.run(gate.aclose())
    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    artifacts = [m.artifact for m in tool_messages]
    read = upstream.requests[1].json()["messages"][-1]["content"]
    assert "Command(" not in read and "sunny in" in read and "siobhan@example.org" not in read
    assert artifacts == [{"source": "met-office"}]  # the state update went through, intact
    assert "siobhan@example.org" in final_text(state)


@pytest.mark.parametrize("entry", [invoke, ainvoke], ids=lambda f: f.__name__)
def test_a_bad_json_answer_is_asked_again_in_process(
    upstream: FakeUpstream, tmp_path: Path, entry: Any
) -> None:
    """output_check through LangChain's own model hook (SDK alone): the invalid answer and
    the error go back to the model, and the user gets the valid one."""
    check = "  - output_check: {json_schema: {type: object, required: [city]}}\n"
    gate = make_gate(tmp_path, upstream, check)
    upstream.push(synth.Reply(text="Sunny in Paris."), synth.Reply(text='{"city": "Paris"}'))
    model = ChatOpenAI(model="m", base_url=upstream.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    agent = create_agent(model, tools=[], middleware=[HookgateMiddleware(gate)])
    state = entry(agent)
    asyncio.run(gate.aclose())
    assert final_text(state) == '{"city": "Paris"}'
    again = upstream.requests[1].json()["messages"]
    assert again[-2]["content"] == "Sunny in Paris." and "it is not JSON" in again[-1]["content"]


@pytest.mark.parametrize("entry", [invoke, ainvoke], ids=lambda f: f.__name__)
def test_a_long_conversation_stays_under_its_context_budget(
    upstream: FakeUpstream, tmp_path: Path, entry: Any
) -> None:
    """context through LangChain's own model hook: an agent resuming a long thread sends
    the model its system prompt, a summary of the old turns (written by the same model),
    and the newest turns, each tool call beside its result."""
    policy = (
        "  - context: {trigger: {tokens: 3000}, target: {tokens: 2000},\n"
        "              turns: {keep_last: 2, summarize: {max_input_tokens: 50000}}}\n"
    )
    gate = make_gate(tmp_path, upstream, policy)
    upstream.push(synth.Reply(text="Earlier: trains to cities 0 to 6."), synth.Reply(text="ok"))
    agent = agent_with(gate, upstream.base_url, [])
    history = conversation(10)

    def run(agent: Any) -> dict[str, Any]:
        if entry is invoke:
            return dict(agent.invoke({"messages": history}))
        return dict(asyncio.run(agent.ainvoke({"messages": history})))

    state = run(agent)
    asyncio.run(gate.aclose())
    assert final_text(state) == "ok"
    assert len(state["messages"]) == len(history) + 1  # LangChain's own state keeps it all
    summary_call, call = upstream.requests[-2].json(), upstream.requests[-1].json()
    assert "Question 0: trains to city 0?" in summary_call["messages"][-1]["content"]
    sent = call["messages"]
    assert sent[0] == SYSTEM
    assert "Earlier: trains to cities 0 to 6." in sent[1]["content"]
    assert_well_formed([{k: v for k, v in m.items() if v is not None} for m in sent])
    assert prompt_tokens("chat.completions", "m", call) <= 2000


def test_a_system_prompt_template_reaches_the_model(upstream: FakeUpstream, tmp_path: Path) -> None:
    """system_prompt (LangChain's ``dynamic_prompt``): the agent's own system prompt, run
    through the template with the reply's facts, is what the model reads."""
    template = "  - system_prompt: {template: '{prompt} Agent: {agent}; reply {reply_id}.'}\n"
    gate = make_gate(tmp_path, upstream, template)
    model = ChatOpenAI(model="m", base_url=upstream.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    agent = create_agent(
        model, tools=[], system_prompt="Be brief.", middleware=[HookgateMiddleware(gate)]
    )
    upstream.push(synth.Reply("Hi."))
    agent.invoke(question())
    asyncio.run(gate.aclose())
    (sent,) = upstream.requests
    system = sent.json()["messages"][0]
    reply = sent.headers["x-hookgate-reply-id"]
    assert system == {"role": "system", "content": f"Be brief. Agent: assistant; reply {reply}."}


def weather_calls(*cities: str) -> list[synth.Reply]:
    """Model answers that each call get_weather for one city."""
    return [
        synth.Reply(tool_calls=[synth.ToolCall(f"c{n}", "get_weather", f'{{"city": "{city}"}}')])
        for n, city in enumerate(cities)
    ]


@pytest.mark.parametrize("on_limit", ["end", "error"])
def test_the_model_call_limit_ends_a_run(
    upstream: FakeUpstream, tmp_path: Path, on_limit: str
) -> None:
    """model_call_limit (``ModelCallLimitMiddleware``'s run limit): a model that would call
    tools forever gets two calls; ``stop`` makes the second answer final (its tool call
    dropped), ``error`` ends the run with a 429 error."""
    gate = make_gate(
        tmp_path, upstream, f"  - model_call_limit: {{max_per_reply: 2, on_limit: {on_limit}}}\n"
    )
    calls: list[str] = []
    agent = agent_with(gate, upstream.base_url, calls)
    upstream.push(*weather_calls("Paris", "Rome", "Oslo"))
    if on_limit == "end":
        state = agent.invoke(question())
        last = state["messages"][-1]
        assert isinstance(last, AIMessage) and not last.tool_calls
    else:
        with pytest.raises(HookgateError) as raised:
            agent.invoke(question())
        assert raised.value.status == 429 and raised.value.code == "model_call_limit"
    asyncio.run(gate.aclose())
    assert len(upstream.requests) == 2 and calls == ["Paris"]


def test_the_model_call_limit_counts_across_a_thread(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """``max_per_session`` is the thread limit: the thread's second run has one call left,
    and a third run, begun with none, gets hookgate's final message without the model."""
    gate = make_gate(
        tmp_path, upstream, "  - model_call_limit: {max_per_session: 3, on_limit: end}\n"
    )
    calls: list[str] = []
    agent = agent_with(gate, upstream.base_url, calls)
    upstream.push(*weather_calls("Paris"), synth.Reply("Sunny."), *weather_calls("Rome", "Oslo"))
    thread = {"configurable": {"thread_id": "t-1"}}
    agent.invoke(question(), thread)
    second = agent.invoke(question("And Rome?"), thread)
    third = agent.invoke(question("And Oslo?"), thread)
    asyncio.run(gate.aclose())
    assert len(upstream.requests) == 3 and calls == ["Paris"]
    assert not second["messages"][-1].tool_calls
    assert final_text(third) == STOPPED


def test_a_tool_over_its_own_limit_is_refused(upstream: FakeUpstream, tmp_path: Path) -> None:
    """tool_guard per-tool limits (``ToolCallLimitMiddleware(tool_name=...)``, ``continue``):
    the call past the limit is refused with a result the model reads, and the run goes on."""
    guard = "  - tool_guard: {limits: [{tool: get_weather, max_per_reply: 1}]}\n"
    gate = make_gate(tmp_path, upstream, guard)
    calls: list[str] = []
    agent = agent_with(gate, upstream.base_url, calls)
    upstream.push(*weather_calls("Paris", "Rome"), synth.Reply("Paris is sunny."))
    state = agent.invoke(question())
    asyncio.run(gate.aclose())
    assert calls == ["Paris"] and final_text(state) == "Paris is sunny."
    refused = upstream.requests[2].json()["messages"][-1]
    assert refused["role"] == "tool" and refused["content"].startswith("Tool call refused")
    assert "limit" in refused["content"]


def test_old_tool_results_are_cleared_before_the_model_reads_them(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """context ``clear_tool_results`` (``ContextEditingMiddleware``/``ClearToolUsesEdit``):
    past the trigger, older results become the placeholder, each beside its call; the newest
    stays whole, and LangChain's own state keeps every result."""
    policy = (
        "  - context: {trigger: {tokens: 600},\n"
        "              clear_tool_results: {keep_last: 1, placeholder: '[cleared]'}}\n"
    )
    gate = make_gate(tmp_path, upstream, policy)

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"Weather in {city}: " + "sunny and mild, " * 60

    model = ChatOpenAI(model="m", base_url=upstream.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    agent = create_agent(model, tools=[get_weather], middleware=[HookgateMiddleware(gate)])
    upstream.push(*weather_calls("Paris", "Rome", "Oslo"), synth.Reply("All sunny."))
    state = agent.invoke(question())
    asyncio.run(gate.aclose())
    sent = upstream.requests[3].json()["messages"]
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert results[:2] == ["[cleared]", "[cleared]"] and results[2].startswith("Weather in Oslo")
    calls = [(m["role"], m.get("tool_call_id") or m["tool_calls"][0]["id"]) for m in sent[1:]]
    assert calls == [(role, f"c{n}") for n in range(3) for role in ("assistant", "tool")]
    kept = [m.content for m in state["messages"] if isinstance(m, ToolMessage)]
    assert len(kept) == 3 and all(str(c).startswith("Weather in") for c in kept)


def test_a_shell_command_matching_an_argument_rule_is_refused(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """tool_guard argument rules on a shell tool (``ShellToolMiddleware``'s guard, without
    its sandbox): ``rm -rf`` is refused with a result the model reads; ``ls`` runs."""
    guard = r"  - tool_guard: {arguments: [{tool: run_shell, pattern: 'rm\s+-rf'}]}" + "\n"
    gate = make_gate(tmp_path, upstream, guard)
    ran: list[str] = []

    @tool
    def run_shell(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return "done"

    model = ChatOpenAI(model="m", base_url=upstream.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    agent = create_agent(model, tools=[run_shell], middleware=[HookgateMiddleware(gate)])
    upstream.push(
        synth.Reply(tool_calls=[synth.ToolCall("s1", "run_shell", '{"command": "rm -rf /"}')]),
        synth.Reply(tool_calls=[synth.ToolCall("s2", "run_shell", '{"command": "ls"}')]),
        synth.Reply("Listed."),
    )
    agent.invoke(question("Clean up"))
    asyncio.run(gate.aclose())
    assert ran == ["ls"]
    refused = upstream.requests[1].json()["messages"][-1]
    assert refused["content"].startswith("Tool call refused") and "run_shell" in refused["content"]


@pytest.mark.parametrize("entry", ["invoke", "astream"])
def test_output_pii_is_masked_in_the_answer(
    upstream: FakeUpstream, tmp_path: Path, entry: str
) -> None:
    """pii ``output`` (``PIIMiddleware(apply_to_output=True)``) through LangChain's model hook:
    a number the model made up is masked; the user's own e-mail, which the prompt held as a
    placeholder, comes back whole."""
    gate = make_gate(
        tmp_path, upstream, f"  - pii: {{secret: '{SECRET}', output: {{action: mask}}}}\n"
    )
    prefix = "Our desk will call you back on 212-555-0187 later today.\nYou said: "
    upstream.push(Echo(prefix=prefix))
    model = ChatOpenAI(model="m", base_url=upstream.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    agent = create_agent(model, tools=[], middleware=[HookgateMiddleware(gate)])
    prompt = "Mail siobhan@example.org about my refund."

    def ask(agent: Any) -> dict[str, Any]:
        real = question(prompt)
        if entry == "invoke":
            return dict(agent.invoke(real))

        async def run() -> dict[str, Any]:
            return [chunk async for chunk in agent.astream(real, stream_mode="values")][-1]

        return dict(asyncio.run(run()))

    state = ask(agent)
    asyncio.run(gate.aclose())
    assert "siobhan@example.org" not in upstream.requests[0].body.decode()
    assert final_text(state) == (prefix + prompt).replace("212-555-0187", "********0187")
