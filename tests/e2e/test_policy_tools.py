"""Tools a policy gives the agent (``Policy.tools``; the ``todo`` policy's ``write_todos``),
offered the way each framework takes a middleware's tools — LangChain's middleware
``tools``, AgentScope's ``list_tools``, the Agents SDK's attached agent — and run by the
framework's own entry points against a scripted model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as OpenAIAgent
from agents import OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from agentscope.agent import Agent, ReActConfig
from agentscope.credential import OpenAICredential
from agentscope.message import UserMsg
from agentscope.model import OpenAIChatModel
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from openai import AsyncOpenAI

from hookgate.policies.todo import PROMPT
from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate
from hookgate.sdk.adapters import agentscope as agentscope_adapter
from hookgate.sdk.adapters import langchain as langchain_adapter
from hookgate.sdk.adapters.openai_agents import attach
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import FakeUpstream
from tests.sdk.harness import make_gate

set_tracing_disabled(True)

TODO = (
    "  - todo: {}\n"
    "  - tool_guard:\n"
    "      arguments: [{tool: write_todos, pattern: 'secret plan'}]\n"
)
NOW = "Your todo list now:"


def plan(*items: tuple[str, str]) -> str:
    return json.dumps({"todos": [{"content": c, "status": s} for c, s in items]})


def write(call_id: str, arguments: str) -> synth.ToolCall:
    return synth.ToolCall(call_id, "write_todos", arguments)


def script(upstream: FakeUpstream) -> None:
    """Two parallel writes (whichever runs second is refused: LangChain's sync entry runs
    parallel calls in threads, so both write the same list), a bad status, a write
    tool_guard refuses, then a good write beside the agent's own tool, then the answer."""
    first_plan = plan(("Check the weather", "in_progress"), ("Answer", "pending"))
    upstream.push(
        synth.Reply(tool_calls=[write("w1", first_plan), write("w2", first_plan)]),
        synth.Reply(tool_calls=[write("w3", plan(("Check the weather", "done")))]),
        synth.Reply(tool_calls=[write("w4", plan(("a secret plan", "pending")))]),
        synth.Reply(tool_calls=[
            write("w5", plan(("Check the weather", "completed"), ("Answer", "in_progress"))),
            synth.ToolCall("g1", "get_weather", '{"city": "Paris"}'),
        ]),
        synth.Reply("Sunny in Paris."),
    )  # fmt: skip


def text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def system(request: dict[str, Any]) -> str:
    return "".join(text(m["content"]) for m in request["messages"] if m["role"] == "system")


def results(request: dict[str, Any]) -> dict[str, str]:
    """The tool results the model read, by call id."""
    return {
        m["tool_call_id"]: text(m["content"]) for m in request["messages"] if m["role"] == "tool"
    }


def assert_planned(upstream: FakeUpstream, calls: list[str]) -> None:
    requests = [r.json() for r in upstream.requests]
    assert len(requests) == 5
    first = requests[0]
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(offered) == {"write_todos", "get_weather"}
    assert offered["write_todos"]["parameters"]["required"] == ["todos"]
    assert PROMPT in system(first) and NOW not in system(first)

    parallel = sorted(results(requests[1])[w] for w in ("w1", "w2"))
    assert parallel[0].startswith("Updated the todo list:\n1. [in_progress] Check the weather")
    assert "already called in this answer" in parallel[1]
    assert f"{NOW}\n1. [in_progress] Check the weather\n2. [pending] Answer" in system(requests[1])

    # hookgate's check, or the framework's own where it validates first (AgentScope)
    assert "'done' is not one of" in results(requests[2])["w3"]
    assert results(requests[3])["w4"].startswith("Tool call refused")  # on_tool_call ran
    assert "[in_progress] Check the weather" in system(requests[3])  # nothing changed

    last = requests[4]
    assert "1. [completed] Check the weather\n2. [in_progress] Answer" in results(last)["w5"]
    assert f"{NOW}\n1. [completed] Check the weather" in system(last)
    assert calls == ["Paris"]


def langchain_agent(gate: Gate, url: str, calls: list[str], **kwargs: Any) -> Any:
    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny in {city}"

    model = ChatOpenAI(model="gpt-4.1-mini", base_url=url, api_key=CLIENT_KEY, max_retries=0)  # type: ignore[arg-type]
    middleware = langchain_adapter.HookgateMiddleware(gate)
    return create_agent(model, tools=[get_weather], middleware=[middleware], **kwargs)


QUESTION = {"messages": [{"role": "user", "content": "Weather in Paris?"}]}


@pytest.mark.parametrize("entry", ["invoke", "ainvoke"])
def test_langchain_middleware_tools(upstream: FakeUpstream, tmp_path: Path, entry: str) -> None:
    gate = make_gate(tmp_path, upstream, TODO)
    calls: list[str] = []
    agent = langchain_agent(gate, upstream.base_url, calls)
    script(upstream)
    try:
        if entry == "invoke":
            state = agent.invoke(QUESTION)
        else:
            state = asyncio.run(agent.ainvoke(QUESTION))
    finally:
        asyncio.run(gate.aclose())
    assert state["messages"][-1].text == "Sunny in Paris."
    assert_planned(upstream, calls)


def test_langchain_plan_lasts_the_thread(upstream: FakeUpstream, tmp_path: Path) -> None:
    """The list belongs to the session (LangGraph's thread): the thread's next run sees it."""
    gate = make_gate(tmp_path, upstream, TODO)
    agent = langchain_agent(gate, upstream.base_url, [], checkpointer=InMemorySaver())
    upstream.push(
        synth.Reply(tool_calls=[write("w1", plan(("Book the train", "in_progress")))]),
        synth.Reply("Booking."),
        synth.Reply("Still booking."),
        synth.Reply("A fresh start."),
    )
    try:
        for thread in ("t1", "t1", "t2"):
            agent.invoke(QUESTION, {"configurable": {"thread_id": thread}})
    finally:
        asyncio.run(gate.aclose())
    systems = [system(r.json()) for r in upstream.requests]
    assert NOW not in systems[0]
    assert f"{NOW}\n1. [in_progress] Book the train" in systems[1]  # same run
    assert f"{NOW}\n1. [in_progress] Book the train" in systems[2]  # same thread, next run
    assert NOW not in systems[3]  # another thread


def test_a_denied_policy_tool_is_not_offered(upstream: FakeUpstream, tmp_path: Path) -> None:
    gate = make_gate(tmp_path, upstream, "  - todo: {}\n  - tool_guard: {deny: [write_*]}\n")
    agent = langchain_agent(gate, upstream.base_url, [])
    upstream.push(synth.Reply("Hello."))
    try:
        agent.invoke(QUESTION)
    finally:
        asyncio.run(gate.aclose())
    (request,) = [r.json() for r in upstream.requests]
    assert [t["function"]["name"] for t in request["tools"]] == ["get_weather"]


@pytest.mark.parametrize("stream", [False, True], ids=["reply", "reply_stream"])
async def test_agentscope_list_tools(upstream: FakeUpstream, tmp_path: Path, stream: bool) -> None:
    gate = make_gate(tmp_path, upstream, TODO)
    calls: list[str] = []

    def get_weather(city: str) -> str:
        """Current weather for a city.

        Args:
            city (`str`):
                The city name.
        """
        calls.append(city)
        return f"sunny in {city}"

    model = OpenAIChatModel(
        credential=OpenAICredential(api_key=CLIENT_KEY, base_url=upstream.base_url),
        model="gpt-4o-mini",
        stream=stream,
        max_retries=0,
    )
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed in test")
    middleware = agentscope_adapter.HookgateMiddleware(gate)
    own = FunctionTool(get_weather, permission=allow)  # type: ignore[arg-type]
    agent = Agent(
        name="assistant",
        system_prompt="You are a helpful assistant.",
        model=model,
        toolkit=Toolkit(tools=[own, *await middleware.list_tools()]),
        react_config=ReActConfig(max_iters=8),
        middlewares=[middleware],
    )
    script(upstream)
    question = UserMsg(name="user", content="Weather in Paris?")
    try:
        if stream:
            answer = [e async for e in agent.reply_stream(question, yield_final_msg=True)][-1]
        else:
            answer = await agent.reply(question)
    finally:
        await model.client.close()
        await gate.aclose()
    assert answer.get_text_content() == "Sunny in Paris."
    assert_planned(upstream, calls)


async def test_openai_agents_attached_agent_has_the_tools(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, TODO)
    calls: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny in {city}"

    client = AsyncOpenAI(base_url=upstream.base_url, api_key=CLIENT_KEY, max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client)
    agent = OpenAIAgent(name="assistant", instructions="Plan.", tools=[get_weather], model=model)
    script(upstream)
    try:
        result = await Runner.run(attach(gate, agent), "Weather in Paris?", max_turns=8)
    finally:
        await client.close()
        await gate.aclose()
    assert result.final_output == "Sunny in Paris."
    assert_planned(upstream, calls)


@pytest.mark.parametrize("path", ["sdk", "proxy"])
def test_the_plan_is_redacted_where_the_model_reads_it(
    upstream: FakeUpstream, make_proxy: ProxyFactory, tmp_path: Path, path: str
) -> None:
    """A value in the list reaches the model as a placeholder, in the tool's result and in
    the system prompt that shows the list; the user's answer, which quotes the result,
    carries the value — with the SDK alone and with a proxy in the path."""
    gate = make_gate(
        tmp_path, upstream, "  - todo: {}\n  - pii: {secret: 'todo-test-0123456789'}\n"
    )
    agent = langchain_agent(gate, make_proxy() if path == "proxy" else upstream.base_url, [])
    task = ("Mail Siobhan O'Brien the forecast", "pending")
    upstream.push(synth.Reply(tool_calls=[write("w1", plan(task))]))  # then: "The tool said: ..."
    try:
        state = asyncio.run(agent.ainvoke(QUESTION))
    finally:
        asyncio.run(gate.aclose())
    second = upstream.requests[1].json()
    assert "[pending] Mail" in results(second)["w1"] and NOW in system(second)
    assert "Siobhan" not in upstream.requests[1].body.decode()
    answer = state["messages"][-1].text
    assert "1. [pending] Mail Siobhan O'Brien the forecast" in answer
    assert not PATTERN.search(answer)
