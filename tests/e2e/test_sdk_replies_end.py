"""Every reply of a LangChain run ends, with the status it ended with, and leaves no task
behind: a run that raises out of hookgate's hooks ends its reply at once, as an error; one
that raises where hookgate does not see it ends it when the gate closes (``aclose``), as an
error too. Real ``create_agent`` runs against a scripted model, sync and async; asyncio's
"Task was destroyed but it is pending" log lines and the exceptions ignored in destructors
(a coroutine that ignored ``GeneratorExit``) are collected and must be none. (A reply
paused in one process and resumed in another: ``tests/e2e/test_hitl.py``.)"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from hookgate.sdk import Gate
from hookgate.sdk.adapters.langchain import HookgateMiddleware
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver
from tests.sdk.harness import make_gate, tracing

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


class Leftovers:
    """What runs left unended, collected while the test runs (see the module docstring)."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self.caplog = caplog
        self.ignored: list[str] = []

    def hook(self, unraisable: Any) -> None:
        self.ignored.append(f"{unraisable.exc_type.__name__}: {unraisable.exc_value}")

    def found(self) -> list[str]:
        gc.collect()
        logged = [r.getMessage() for r in self.caplog.records if r.name == "asyncio"]
        return self.ignored + logged


@pytest.fixture
def leftovers(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Leftovers]:
    caplog.set_level(logging.ERROR, logger="asyncio")
    found = Leftovers(caplog)
    monkeypatch.setattr(sys, "unraisablehook", found.hook)
    yield found


def gate_for(tmp_path: Path, upstream: FakeUpstream, receiver: OtlpReceiver) -> tuple[Gate, Path]:
    report = tmp_path / "replies.jsonl"
    policies = (
        tracing(receiver) + f"  - tests.policies_for_tests:ReplyReport: {{path: '{report}'}}\n"
    )
    return make_gate(tmp_path, upstream, policies), report


class Broken(AgentMiddleware):  # type: ignore[type-arg]
    """A middleware whose ``before_model`` raises: the run fails in a node of its own,
    where none of hookgate's hooks runs."""

    def before_model(self, state: Any, runtime: Any) -> None:
        raise RuntimeError("broken middleware")

    async def abefore_model(self, state: Any, runtime: Any) -> None:
        raise RuntimeError("broken middleware")


def agent_for(gate: Gate, upstream: FakeUpstream, *extra: AgentMiddleware) -> Any:  # type: ignore[type-arg]
    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        raise ValueError(f"no forecast for {city} today")

    model = ChatOpenAI(
        model="gpt-4.1-mini", base_url=upstream.base_url, api_key=CLIENT_KEY, max_retries=0
    )  # type: ignore[arg-type]
    return create_agent(model, tools=[get_weather], middleware=[HookgateMiddleware(gate), *extra])


def run_then_close(gate: Gate, agent: Any, asynchronous: bool, raised: type[Exception]) -> int:
    """Run the agent (it raises ``raised``), then close the gate; the count of replies still
    open between the two."""
    question = {"messages": [{"role": "user", "content": "Weather in Paris?"}]}
    if asynchronous:

        async def run() -> int:
            with pytest.raises(raised):
                await agent.ainvoke(question)
            still_open = len(gate.driver._open)
            await gate.aclose()
            return still_open

        return asyncio.run(run())
    with pytest.raises(raised):
        agent.invoke(question)
    still_open = len(gate.driver._open)
    asyncio.run(gate.aclose())
    return still_open


def assert_ended(report: Path, receiver: OtlpReceiver, error: str) -> None:
    """One reply, ended as an error of type ``error``: in the report and on its span."""
    (line,) = [orjson.loads(x) for x in report.read_bytes().splitlines()]
    assert (line["status"], line["error"]) == ("error", error)
    spans = receiver.wait_until(
        lambda spans: any(s.name == "invoke_agent assistant" for s in spans)
    )
    (reply,) = [s for s in spans if s.name == "invoke_agent assistant"]
    assert reply.attributes["hookgate.reply.status"] == "error"
    assert reply.attributes["error.type"] == error and reply.status_code == 2  # ERROR


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_a_run_that_raises_in_a_tool_ends_its_reply_as_an_error_at_once(
    upstream: FakeUpstream, tmp_path: Path, receiver: OtlpReceiver, leftovers: Leftovers,
    asynchronous: bool,
) -> None:  # fmt: skip
    gate, report = gate_for(tmp_path, upstream, receiver)
    agent = agent_for(gate, upstream)
    call = synth.ToolCall("call_1", "get_weather", '{"city": "Paris"}')
    upstream.push(synth.Reply(tool_calls=[call]))
    assert run_then_close(gate, agent, asynchronous, ValueError) == 0  # ended before aclose
    assert_ended(report, receiver, "ValueError")
    del gate, agent
    assert leftovers.found() == []


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_gate_aclose_ends_a_reply_whose_run_raised_where_hookgate_does_not_see(
    upstream: FakeUpstream, tmp_path: Path, receiver: OtlpReceiver, leftovers: Leftovers,
    asynchronous: bool,
) -> None:  # fmt: skip
    gate, report = gate_for(tmp_path, upstream, receiver)
    agent = agent_for(gate, upstream, Broken())
    assert run_then_close(gate, agent, asynchronous, RuntimeError) == 1  # open until aclose
    assert gate.driver._open == {}
    assert_ended(report, receiver, "ReplyAbandoned")
    del gate, agent
    assert leftovers.found() == []
