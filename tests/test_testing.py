"""``hookgate.testing``: a policy run on chat, Responses and Messages calls, streamed or
not, against a scripted model — what the model was sent, what the client got, refusals
as the proxy answers them, streams a policy ends mid-way, retries, budgets across calls."""

from __future__ import annotations

import pytest

from hookgate import Context, Messages, Policy, PolicyBlocked, StreamTransform, map_messages
from hookgate.budgets.pricing import Price
from hookgate.errors import UpstreamConnectError
from hookgate.pipeline.types import Identity, Target
from hookgate.policies.budget import BudgetConfig, BudgetPolicy, LimitConfig
from hookgate.policies.fallback import FallbackConfig, FallbackPolicy
from hookgate.policies.tool_guard import ToolGuardConfig, ToolGuardPolicy
from hookgate.testing import Harness, ModelToolCall, Reply, Request, chat, messages, responses
from hookgate.wire.deltas import DeltaKey

REQUESTS = [chat, responses, messages]


class Shout(Policy):
    """Upper-cases what the model reads; refuses a streamed answer that says "secret"."""

    name = "shout"

    async def convert_to_llm(self, messages: Messages, ctx: Context) -> Messages:
        return map_messages(messages, str.upper)

    def on_response_stream(self, ctx: Context) -> StreamTransform | None:
        return NoSecret()


class NoSecret(StreamTransform):
    def __init__(self) -> None:
        self.seen = ""

    async def delta(self, key: DeltaKey, text: str) -> str:
        self.seen += text
        if "secret" in self.seen:
            raise PolicyBlocked("the answer named a secret", code="secret_answer")
        return text


@pytest.mark.parametrize("make", REQUESTS)
@pytest.mark.parametrize("stream", [False, True])
async def test_each_api_shape_streamed_or_not(make: type[Request], stream: bool) -> None:
    async with Harness(Shout()) as harness:
        result = await harness.call(make("quiet words", stream=stream), "a calm answer")  # type: ignore[operator]
    assert "QUIET WORDS" in str(result.sent[0]) and "quiet" not in str(result.sent[0])
    assert result.status == 200 and result.text == "a calm answer"
    assert (result.body is None) == stream and bool(result.events) == stream
    assert result.decisions == {"shout": "modify"}


@pytest.mark.parametrize("make", REQUESTS)
async def test_a_stream_ended_by_a_policy_ends_with_the_proxys_error_event(
    make: type[Request],
) -> None:
    async with Harness(Shout()) as harness:
        reply = Reply(text="the secret is out", pieces=3)
        result = await harness.call(make("hi", stream=True), reply)  # type: ignore[operator]
    assert result.error_code == "secret_answer" and result.status == 200
    last = result.events[-1]
    assert last.event == "error" and "the answer named a secret" in last.data
    assert "secret" not in result.text


async def test_a_refusal_is_the_error_body_the_client_would_get() -> None:
    class Refuse(Policy):
        name = "refuse"

        async def convert_to_llm(self, messages: Messages, ctx: Context) -> Messages:
            raise PolicyBlocked("no", code="nope")

    async with Harness(Refuse()) as harness:
        openai_shape = await harness.call(chat("hi"))
        anthropic_shape = await harness.call(messages("hi"))
    assert openai_shape.status == 400 and openai_shape.sent == []
    assert openai_shape.body == {
        "error": {"message": "no", "type": "invalid_request_error", "param": None, "code": "nope"}
    }
    assert anthropic_shape.body is not None and anthropic_shape.body["type"] == "error"
    assert openai_shape.decisions == {"refuse": "block"}


async def test_scripted_failures_drive_a_retrying_policy() -> None:
    targets = (Target("a", "model-a", priority=0), Target("b", "model-b", priority=1))
    down = UpstreamConnectError("connection refused", target="a/model-a")

    def by_target(call: object) -> object:
        assert hasattr(call, "targets")
        return down if call.targets[0].provider == "a" else Reply(text="from b")  # type: ignore[attr-defined]

    async with Harness(FallbackPolicy(FallbackConfig(backoff_base_s=0))) as harness:
        result = await harness.call(chat("hi"), by_target, targets=targets)
    assert result.text == "from b"
    assert len(result.sent) == 4  # a, its two retries, then b


async def test_budgets_accumulate_across_calls_of_one_harness() -> None:
    budget = BudgetPolicy(BudgetConfig(limits=[LimitConfig(scope="key", usd=0.002)]))
    caller = Identity(key_id="key-1")
    prices = {"test-model": Price(input=100.0, output=100.0)}
    async with Harness(budget, prices=prices) as harness:
        first = await harness.call(
            chat("hi", max_tokens=10),
            Reply(text="ok", input_tokens=10, output_tokens=5),
            identity=caller,
        )
        second = await harness.call(chat("hi", max_tokens=10), identity=caller)
    assert first.status == 200
    assert second.status == 429 and second.error_code == "budget_exceeded"


async def test_tool_calls_are_scripted_in_every_shape() -> None:
    reply = Reply(tool_calls=[ModelToolCall("call_1", "get_weather", '{"city": "Oslo"}')])
    async with Harness(Shout()) as harness:
        for make in REQUESTS:
            result = await harness.call(make("weather?"), reply)
            assert "get_weather" in str(result.body)


async def test_a_streamed_call_charges_its_usage_chunk_which_the_client_never_sees() -> None:
    budget = BudgetPolicy(BudgetConfig(limits=[LimitConfig(scope="key", usd=1.0)]))
    prices = {"test-model": Price(input=100.0, output=100.0)}
    async with Harness(budget, prices=prices) as harness:
        result = await harness.call(
            chat("hi", stream=True, max_tokens=10),
            Reply(text="ok", input_tokens=7, output_tokens=3),
        )
    assert result.sent[0]["stream_options"] == {"include_usage": True}  # asked upstream
    assert b'"choices":[]' not in result.stream and result.text == "ok"  # hidden from the client
    assert result.outcome.usage is not None and result.outcome.usage.input_tokens == 7
    charge = result.ctx.observation.charge
    assert charge is not None and charge.cost_usd == pytest.approx(10 * 100 / 1e6)


async def test_a_tool_call_runs_through_the_tool_policies_as_the_gateway_runs_it() -> None:
    guard = ToolGuardPolicy(
        ToolGuardConfig.model_validate(
            {"deny": ["delete_*"], "approval": "pause", "approve": ["wire_money"]}
        )
    )
    async with Harness(guard) as harness:
        fine = await harness.tool_call("get_weather", {"city": "Oslo"}, "sunny")
        denied = await harness.tool_call("delete_files", {"path": "/"})
        waiting = await harness.tool_call("wire_money", {"to": "x"})
    assert fine.result is not None and fine.result.content == "sunny"
    assert [c.arguments for c in fine.ran] == [{"city": "Oslo"}]
    assert fine.decisions == {"tool_guard": "allow"}
    assert denied.result is not None and denied.result.blocked and denied.ran == []
    assert denied.decisions == {"tool_guard": "block"}
    assert waiting.result is None and waiting.needs_approval and waiting.ran == []
