"""The observed-call runner (hookgate.pipeline.runner), run on a real pipeline with a
scripted terminal: the usage chunk asked for and hidden in one place, a stream's facts,
timing and end, the audit record's decision vocabulary."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any, ClassVar

import orjson
import pytest

from hookgate.errors import PolicyBlocked, UpstreamReset
from hookgate.pipeline.hooks import Messages, Policy
from hookgate.pipeline.observe import Outcome
from hookgate.pipeline.pipeline import Pipeline
from hookgate.pipeline.runner import CLIENT_DISCONNECTED, ObservedCall, audit_record, finish
from hookgate.pipeline.types import Context, JsonBody, ModelCall, ModelResponse, Target
from hookgate.wire import sse, synth

TARGET = Target("up", "m")
REPLY = synth.Reply(text="Hello there.", input_tokens=7, output_tokens=3, pieces=3)


class Metered(Policy):
    """Reads streams' usage, as the budget policy does."""

    name: ClassVar[str] = "metered"
    needs_usage = True


class Rewriting(Policy):
    """Changes the messages: its decision is ``modify``."""

    name: ClassVar[str] = "rewriting"

    async def convert_to_llm(self, messages: Messages, ctx: Context) -> Messages:
        return [*messages, {"role": "user", "content": "and be brief"}]


class Refusing(Policy):
    """Refuses every call: its decision is ``block``."""

    name: ClassVar[str] = "refusing"

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Any) -> ModelResponse:
        raise PolicyBlocked("no")


class Upstream:
    """A terminal that answers with a chat stream, its usage chunk only when asked."""

    def __init__(self, *, fail_after: int | None = None) -> None:
        self.sent: list[Mapping[str, Any]] = []
        self.fail_after = fail_after

    async def __call__(self, call: ModelCall, ctx: Context) -> ModelResponse:
        self.sent.append(call.body)
        options = call.body.get("stream_options") or {}
        blocks = list(
            synth.chat_stream("m", REPLY, include_usage=bool(options.get("include_usage")))
        )
        if not call.stream:
            body = synth.chat_completion("m", REPLY)
            return ModelResponse(
                status=200, headers={}, target=TARGET, payload=JsonBody.from_data(body)
            )
        return ModelResponse(status=200, headers={}, target=TARGET, stream=self._events(blocks))

    async def _events(self, blocks: list[bytes]) -> AsyncGenerator[bytes, None]:
        for i, block in enumerate(blocks):
            if self.fail_after is not None and i == self.fail_after:
                raise UpstreamReset("the upstream reset the stream", target="up/m")
            yield block


def chat(*, stream: bool = True, extra: Mapping[str, Any] | None = None) -> ModelCall:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    payload = JsonBody.from_data({**body, **(extra or {})})
    return ModelCall(
        api="chat.completions", payload=payload, model="m", stream=stream, targets=(TARGET,)
    )


class Ends:
    """Counts the ends of a call, as a caller's ``ended`` sees them."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []

    async def __call__(self, ctx: Context, outcome: Outcome) -> None:
        finish(ctx, outcome)
        self.outcomes.append(outcome)


def chunks(events: list[bytes]) -> list[Any]:
    return [sse.json_of(b) for b in sse.split(b"".join(events))]


@pytest.mark.parametrize("asked", [False, True])
async def test_the_usage_chunk_is_asked_for_and_seen_only_by_a_client_that_asked(
    asked: bool,
) -> None:
    upstream = Upstream()
    pipeline = Pipeline([Metered()], upstream)
    ends = Ends()
    observed = ObservedCall(Context(request_id="r1", api="chat.completions"), ended=ends)
    extra = {"stream_options": {"include_usage": True}} if asked else {}
    response = await observed.run(pipeline, chat(extra=extra), usage=pipeline.needs_usage)
    assert response.stream is not None
    events = [e async for e in response.stream]
    assert upstream.sent[0]["stream_options"] == {"include_usage": True}
    usage_chunks = [c for c in chunks(events) if isinstance(c, dict) and c.get("choices") == []]
    assert len(usage_chunks) == (1 if asked else 0)
    assert b"".join(events).endswith(sse.DONE)
    (outcome,) = ends.outcomes  # ended once, when the stream ended
    assert outcome.usage is not None and outcome.usage.output_tokens == 3  # counted anyway
    assert outcome.status == 200 and outcome.target == "up/m" and outcome.error_type is None
    assert outcome.finish_reasons == ("stop",) and outcome.ttft_s is not None


async def test_without_a_policy_that_needs_usage_the_body_goes_as_the_client_sent_it() -> None:
    upstream = Upstream()
    pipeline = Pipeline([], upstream)
    observed = ObservedCall(Context(request_id="r1", api="chat.completions"))
    response = await observed.run(pipeline, chat(), usage=pipeline.needs_usage)
    assert response.stream is not None
    assert [e async for e in response.stream]
    assert "stream_options" not in upstream.sent[0]
    assert observed.outcome.usage is None


async def test_a_stream_left_before_its_end_is_a_client_gone_and_ends_once() -> None:
    pipeline = Pipeline([], Upstream())
    ends = Ends()
    finished: list[Outcome] = []
    ctx = Context(request_id="r1", api="chat.completions")
    ctx.observation.on_finish.append(finished.append)
    observed = ObservedCall(ctx, ended=ends)
    response = await observed.run(pipeline, chat())
    assert response.stream is not None
    stream = aiter(response.stream)
    await anext(stream)
    await response.stream.aclose()
    await observed.end()  # the caller's end after the stream's: nothing more
    assert len(ends.outcomes) == 1 and finished == ends.outcomes
    assert finished[0].error_type == CLIENT_DISCONNECTED and finished[0].status == 200


async def test_a_stream_that_fails_after_its_first_event_keeps_its_status() -> None:
    observed = ObservedCall(Context(request_id="r1", api="chat.completions"), ended=Ends())
    response = await observed.run(Pipeline([], Upstream(fail_after=2)), chat())
    assert response.stream is not None
    with pytest.raises(UpstreamReset):
        async for _ in response.stream:
            pass
    outcome = observed.outcome
    assert outcome.status == 200 and outcome.error_type == "upstream_reset"


async def test_a_stream_that_fails_before_its_first_event_is_an_error_status() -> None:
    observed = ObservedCall(Context(request_id="r1", api="chat.completions"), ended=Ends())
    response = await observed.run(Pipeline([], Upstream(fail_after=0)), chat())
    stream = response.stream
    assert stream is not None
    with pytest.raises(UpstreamReset):
        await stream.start()  # type: ignore[attr-defined]
    await stream.aclose()
    assert observed.outcome.status == 502 and observed.outcome.error_type == "upstream_reset"


async def test_the_audit_record_speaks_allow_modify_block() -> None:
    ends = Ends()
    ctx = Context(request_id="r1", api="chat.completions", session_id="s1")
    observed = ObservedCall(ctx, ended=ends)
    response = await observed.run(
        Pipeline([Rewriting(), Metered()], Upstream()), chat(stream=False)
    )
    assert response.payload is not None
    await observed.end()
    (outcome,) = ends.outcomes
    record = audit_record(ctx, outcome, api="chat.completions", model="m", cost_usd=None)
    assert orjson.loads(record.decisions) == {"rewriting": "modify"}
    assert (record.status, record.target, record.session) == (200, "up/m", "s1")
    assert (record.input_tokens, record.output_tokens) == (7, 3)
    refused = ObservedCall(Context(request_id="r2", api="chat.completions"), ended=ends)
    with pytest.raises(PolicyBlocked):
        await refused.run(Pipeline([Rewriting(), Refusing()], Upstream()), chat(stream=False))
    await refused.end()
    record = audit_record(refused.ctx, ends.outcomes[-1], api="chat.completions", model="m",
                          cost_usd=None)  # fmt: skip
    assert orjson.loads(record.decisions) == {"rewriting": "modify", "refusing": "block"}
    assert record.status == PolicyBlocked("no").status and record.error == "policy_blocked"
