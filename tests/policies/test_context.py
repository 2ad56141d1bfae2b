"""The context policy through the real proxy and the real openai client: a long agent
conversation reaches the model under its context budget, with its system prompt and with
every tool call beside its result; summaries are made through the same upstream, charged
to the same budget, and reused while the removed history stays the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import orjson

from hookgate.budgets.tokens import prompt_tokens
from hookgate.config.loader import load_text
from hookgate.policies.context import SUMMARY_PREFIX, ContextConfig, ContextPolicy
from hookgate.testing import Harness, Request
from hookgate.wire import synth
from tests.conftest import ProxyFactory, config_text, openai_client
from tests.fakes import FakeUpstream
from tests.spend import settled

SYSTEM = {"role": "system", "content": "You are the travel desk. Always answer briefly."}
PRICES = (
    "pricing: {fixed-model: {input: 1.0, output: 1.0}, summarizer: {input: 1.0, output: 1.0}}\n"
)
FILLER = "The route passes through several stations with timetables and platform notes. "


def conversation(turns: int, *, big: int = 40) -> list[dict[str, Any]]:
    """A system prompt and ``turns`` agent turns: question, tool call, a long tool result
    (``big`` sentences), answer — and a last question."""
    messages: list[dict[str, Any]] = [SYSTEM]
    for n in range(turns):
        tool = "lookup_policy" if n == 0 else "search_trains"
        messages += [
            {"role": "user", "content": f"Question {n}: trains to city {n}?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{n}", "type": "function",
                 "function": {"name": tool, "arguments": orjson.dumps({"city": n}).decode()}},
            ]},
            {"role": "tool", "tool_call_id": f"call_{n}",
             "content": f"result {n}: " + FILLER * big},
            {"role": "assistant", "content": f"Answer {n}: take the 9:{n:02d}."},
        ]  # fmt: skip
    messages.append({"role": "user", "content": f"Question {turns}: and back?"})
    return messages


def assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """The system prompt first, every tool result right after its call, every call answered,
    and the last question last."""
    assert messages[0] == SYSTEM
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, message["tool_call_id"]
            open_calls.discard(message["tool_call_id"])
        else:
            assert not open_calls, f"calls {open_calls} left without their results"
            open_calls = {c["id"] for c in message.get("tool_calls") or ()}
    assert messages[-1]["content"].startswith("Question ")


def ask(client: openai.OpenAI, messages: list[dict[str, Any]]) -> str:
    reply = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    return reply.choices[0].message.content or ""


def sent_tokens(upstream: FakeUpstream, index: int = -1) -> int:
    return prompt_tokens("chat.completions", "m", upstream.requests[index].json())


def test_old_turns_go_whole_until_the_prompt_is_under_target(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    policy = "  - context: {trigger: {tokens: 3000}, target: {tokens: 2000}}\n"
    client = openai_client(make_proxy(f"policies:\n{policy}"))
    history = conversation(10)
    assert prompt_tokens("chat.completions", "m", {"messages": history}) > 6000
    upstream.push(synth.Reply(text="ok"))
    ask(client, history)
    sent = upstream.last.json()["messages"]
    assert_well_formed(sent)
    assert sent_tokens(upstream) <= 2000
    assert sent[-4:] == history[-4:] and len(sent) < len(history) - 8
    assert sent[1]["role"] == "user"  # the kept history starts at a turn
    upstream.push(synth.Reply(text="ok"))
    ask(client, history[:5] + history[-1:])  # under the trigger: sent as it is
    assert upstream.last.json()["messages"] == history[:5] + history[-1:]


def test_capping_then_clearing_results_can_spare_every_turn(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    policy = (
        "  - context:\n      trigger: {tokens: 3000}\n      target: {tokens: 2000}\n"
        "      tool_result_limit: 300\n"
        "      clear_tool_results: {keep_last: 2, exclude: [lookup_*], placeholder: '[gone]'}\n"
    )
    client = openai_client(make_proxy(f"policies:\n{policy}"))
    history = conversation(10)
    upstream.push(synth.Reply(text="ok"))
    ask(client, history)
    sent = upstream.last.json()["messages"]
    assert_well_formed(sent)
    assert len(sent) == len(history)  # no turn removed
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert results[0].endswith("[truncated]")  # lookup_policy: excluded from clearing
    assert results[-2:] == [r for r in results[-2:] if r.endswith("[truncated]")]
    cleared = results.count("[gone]")
    assert 0 < cleared <= 7 and sent_tokens(upstream) <= 2000
    assert results[1 : 1 + cleared] == ["[gone]"] * cleared  # oldest first


def test_summaries_go_through_the_upstream_are_charged_and_reused(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    db = tmp_path / "spend.db"
    policies = (
        "policies:\n"
        "  - context: {trigger: {tokens: 3000}, target: {tokens: 2000},\n"
        "              turns: {keep_last: 2, summarize: {model: summarizer, max_tokens: 99,\n"
        "                                                max_input_tokens: 20000}}}\n"
        "  - budget: {limits: [{scope: model, usd: 10}]}\n"
    )
    loaded = load_text(config_text(
        upstream.base_url, f"store: 'sqlite:///{db}'\n{PRICES}{policies}",
        models='  "*": [{provider: up, model: fixed-model}]',
    ))  # fmt: skip
    client = openai_client(make_proxy(loaded=loaded))
    history = conversation(10)
    upstream.push(synth.Reply(text="SUMMARY-A"), synth.Reply(text="ok"))
    ask(client, history)
    summary_call, call = upstream.requests[-2].json(), upstream.requests[-1].json()
    assert summary_call["model"] == "summarizer" and summary_call["max_tokens"] == 99
    assert "Question 0: trains to city 0?" in summary_call["messages"][1]["content"]
    assert summary_call["messages"][0]["role"] == "system"
    summarized = summary_call["messages"][1]["content"]
    assert "Question 6: trains" in summarized and "Question 7" not in summarized  # kept
    sent = call["messages"]
    assert_well_formed(sent)
    assert sent[1] == {"role": "user", "content": SUMMARY_PREFIX + "SUMMARY-A"}
    assert settled(db)[1] == 2  # the summary was charged like any call

    upstream.push(synth.Reply(text="ok"))  # the same history: the summary is reused
    ask(client, history)
    assert upstream.last.json()["messages"] == sent and settled(db)[1] == 3

    longer = conversation(12)  # two more turns fall out: only they are summarized
    upstream.push(synth.Reply(text="SUMMARY-B"), synth.Reply(text="ok"))
    ask(client, longer)
    extended = upstream.requests[-2].json()["messages"][1]["content"]
    assert extended.startswith("Summary so far:\nSUMMARY-A")
    assert "Question 0:" not in extended  # summarized already
    assert "Question 7: trains" in extended and "Question 8: trains" in extended
    assert "Question 9" not in extended  # still kept whole
    assert upstream.last.json()["messages"][1]["content"] == SUMMARY_PREFIX + "SUMMARY-B"
    assert_well_formed(upstream.last.json()["messages"])


def test_a_summary_request_never_sends_more_than_max_input_tokens(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """Removed turns longer than the bound are read in pieces, in order, each request
    carrying the summary so far; the last summary replaces them all, and is reused."""
    policies = (
        "policies:\n"
        "  - context: {trigger: {tokens: 3000}, target: {tokens: 2000},\n"
        "              turns: {keep_last: 2,\n"
        "                      summarize: {max_tokens: 99, max_input_tokens: 1200}}}\n"
    )
    client = openai_client(make_proxy(policies))
    history = conversation(10)
    upstream.push(*(synth.Reply(text=f"S{n}") for n in range(1, 20)))
    ask(client, history)
    summaries = [r.json() for r in upstream.requests[:-1]]
    assert len(summaries) >= 3
    for n, request in enumerate(summaries):
        assert sent_tokens(upstream, n) <= 1200 + 20  # the chat format's own few tokens
        text = request["messages"][1]["content"]
        assert text.startswith(f"Summary so far:\nS{n}\n") == (n > 0)
    read = "".join(r["messages"][1]["content"] for r in summaries)
    assert all(f"Question {n}: trains" in read for n in range(7))  # every removed turn
    assert "Question 9" not in read  # the kept turns are not summarized
    final = upstream.last.json()["messages"]
    assert final[1] == {"role": "user", "content": SUMMARY_PREFIX + f"S{len(summaries)}"}
    assert_well_formed(final)

    before = len(upstream.requests)
    upstream.push(synth.Reply(text="ok"))
    ask(client, history)
    assert len(upstream.requests) == before + 1  # the pieces' summary is reused


async def test_the_window_comes_from_the_shipped_model_table_when_no_target_names_one() -> None:
    """``{share: S}`` of the model's window: gpt-5's 400,000 tokens from the shipped table,
    the ``context_window`` setting only for a model neither the target nor the table knows."""
    config = ContextConfig.model_validate(
        {"trigger": {"share": 0.5}, "context_window": 1000, "turns": {"keep_last": 1}}
    )
    history = conversation(4)
    assert prompt_tokens("chat.completions", "m", {"messages": history}) > 500
    async with Harness(ContextPolicy(config)) as harness:
        for model, edited in (("gpt-5", False), ("a-model-nobody-lists", True)):
            result = await harness.call(
                Request("chat.completions", {"model": model, "messages": history})
            )
            assert (result.sent[0]["messages"] != history) is edited, model
