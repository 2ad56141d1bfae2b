"""PraisonAI's ``Agent`` with hookgate attached (``praisonai.attach``), run with its own
``astart``, ``achat``, ``start`` and ``chat``."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate
from hookgate.sdk.driver import STOPPED
from hookgate.store.sqlite import SQLiteStore
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, TEST_STORE, ProxyFactory
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver
from tests.sdk.harness import (
    GUARD,
    PII_AND_BUDGET,
    REFUSAL,
    SECRET,
    assert_joined_trace,
    assert_refused,
    call_the_denied_tool,
    make_gate,
    traced_proxy,
    tracing,
)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DO_NOT_TRACK", "true")
    monkeypatch.setenv("PRAISONAI_TELEMETRY_DISABLED", "true")
    monkeypatch.setenv("OPENAI_API_KEY", CLIENT_KEY)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)


EMAIL = "maria.garcia@example.com"


def make_agent(
    gate: Gate,
    url: str,
    calls: list[str],
    monkeypatch: pytest.MonkeyPatch,
    session_id: str | None = None,
) -> object:
    from praisonaiagents import Agent

    from hookgate.sdk.adapters.praisonai import attach

    monkeypatch.setenv("OPENAI_BASE_URL", url)

    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny in {city}; forecast by Siobhan O'Brien, siobhan@example.org"

    agent = Agent(
        name="assistant",
        instructions="Use tools.",
        model="gpt-4o-mini",
        tools=[get_weather],
    )
    return attach(gate, agent, session_id=session_id)


async def test_blocked_tool_and_one_trace(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    receiver: OtlpReceiver,
    tmp_path: Path,
    offline: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hookgate.sdk.adapters.praisonai import aclose

    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    call_the_denied_tool(upstream)
    agent = make_agent(gate, traced_proxy(make_proxy, receiver), calls, monkeypatch)
    answer = await agent.astart("Weather in Paris?")
    await aclose(agent)
    await gate.aclose()
    assert_refused(upstream, calls)
    assert REFUSAL in str(answer)
    assert_joined_trace(receiver, "get_weather", model_calls=2)


async def test_tool_result_is_redacted(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    tmp_path: Path,
    offline: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hookgate.sdk.adapters.praisonai import aclose

    gate = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n")
    calls: list[str] = []
    agent = make_agent(gate, make_proxy(), calls, monkeypatch)
    answer = await agent.achat(f"Weather in Paris? Mail it to {EMAIL}.")
    await aclose(agent)
    await gate.aclose()
    assert calls == ["Paris"]
    sent = b"".join(r.body for r in upstream.requests).decode()
    assert EMAIL not in sent and "siobhan@example.org" not in sent
    tool_message = upstream.requests[1].json()["messages"][-1]["content"]
    assert "Siobhan" not in tool_message and len(PATTERN.findall(tool_message)) == 2
    assert "siobhan@example.org" in str(answer) and not PATTERN.search(str(answer))


async def test_turns_wrap_up_and_stop(
    upstream: FakeUpstream, tmp_path: Path, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PraisonAI has no turn hook: each governed model call is a turn, so reply_budget
    wraps the reply up and model_call_limit stops it."""
    from hookgate.sdk.adapters.praisonai import aclose

    gate = make_gate(tmp_path, upstream, PII_AND_BUDGET)
    calls: list[str] = []
    agent = make_agent(gate, upstream.base_url, calls, monkeypatch)
    await agent.astart("Weather in Paris?")
    await aclose(agent)
    await gate.aclose()
    second = upstream.requests[1].json()
    assert second["tool_choice"] == "none"
    assert any("budget for this reply is spent" in str(m["content"]) for m in second["messages"])

    upstream.requests.clear()
    stopper = make_gate(
        tmp_path, upstream, "  - model_call_limit: {max_per_reply: 1, on_limit: end}\n"
    )
    agent = make_agent(stopper, upstream.base_url, calls, monkeypatch)
    answer = await agent.astart("Weather in Paris?")
    await aclose(agent)
    await stopper.aclose()
    assert len(upstream.requests) == 1 and STOPPED in str(answer)


@pytest.mark.filterwarnings(
    # PraisonAI's sync path runs each call on a loop of its own and drops that loop's async
    # client unclosed (praisonaiagents.llm.openai_client.async_client): its sockets, not ours
    "ignore::ResourceWarning",
    "ignore::pytest.PytestUnraisableExceptionWarning",
)
def test_the_synchronous_entry_points_run_governed_replies(
    upstream: FakeUpstream, tmp_path: Path, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``start`` and ``chat``: the tool is governed in the caller's thread, each call is
    one reply (its headers on the model requests)."""
    import asyncio
    import gc

    gate = make_gate(tmp_path, upstream, GUARD)
    calls: list[str] = []
    agent = make_agent(gate, upstream.base_url, calls, monkeypatch)
    for entry in (agent.start, agent.chat):
        call_the_denied_tool(upstream)
        answer = entry("Weather in Paris?")
        assert REFUSAL in str(answer)
    client = agent._Agent__openai_client
    client.sync_client.close()
    client._async_client = None  # bound to a loop PraisonAI closed: dropped, as it does
    asyncio.run(gate.aclose())
    gc.collect()  # PraisonAI's dropped clients go now, inside this test's filters
    assert calls == []
    replies = [r.headers.get("x-hookgate-reply-id") for r in upstream.requests]
    assert len(replies) == 4 and None not in replies and len(set(replies)) == 2


async def test_replies_belong_to_the_attached_session(
    upstream: FakeUpstream, tmp_path: Path, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``attach(..., session_id=)`` (PraisonAI's ``MiddlewareContext.session_id``): every
    reply of the agent is in that session, and per-session counts carry over."""
    from hookgate.sdk.adapters.praisonai import aclose

    gate = make_gate(tmp_path, upstream, "  - model_call_limit: {max_per_session: 9}\n")
    agent = make_agent(gate, upstream.base_url, [], monkeypatch, session_id="s-1")
    upstream.push(synth.Reply("One."), synth.Reply("Two."), synth.Reply("Three."))
    answers = [await agent.astart(q) for q in ("Hi", "Hello", "Hey")]
    await aclose(agent)
    await gate.aclose()
    assert answers == ["One.", "Two.", "Three."]
    assert {r.headers.get("x-hookgate-session-id") for r in upstream.requests} == {"s-1"}
    kept = SQLiteStore(f"sqlite:///{TEST_STORE}")  # the gate's (config_text's) store
    session = orjson.loads(await kept.load_state("session:s-1") or b"{}")
    await kept.close()
    assert session["model_call_limit"] == {"calls": 3}
