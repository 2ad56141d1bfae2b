"""The fallback policy's limits and decisions against providers that fail as real ones do:
silent, slow to their first token, flapping, too small for the prompt, refusing content —
through the real ``openai`` and ``anthropic`` clients, streamed and not."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import httpx
import openai
import pytest

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import TEST_STORE, UPSTREAM_KEY, ProxyFactory, anthropic_client, openai_client
from tests.fakes import Events, FakeUpstream, Hang, Status

LIMITS = "attempt_timeout_s: 1, first_token_timeout_s: 1, stall_timeout_s: 2, deadline_s: 10, "
"""Short limits; ``retries`` stays at its default (2), so a retry on the same target
would show."""

HELLO = "Hello from the fake upstream."


def proxy(
    make_proxy: ProxyFactory,
    primary: FakeUpstream,
    backup: FakeUpstream,
    fallback: str = "",
    models: tuple[str, str] = ("m1", "m2"),
    extra: tuple[str, str] = ("", ""),
    policies: tuple[str, str] = ("", ""),
    store: Path = TEST_STORE,
) -> str:
    """A proxy whose alias ``m`` is served by ``primary`` then ``backup``; ``policies``
    are listed before and after ``fallback``."""
    text = (
        f"store: 'sqlite:///{store}'\n"
        "pricing: {m1: {input: 1.0, output: 1.0}, m2: {input: 1.0, output: 1.0}}\n"
        f"providers:\n  one: {{base_url: '{primary.base_url}', api_key: {UPSTREAM_KEY}}}\n"
        f"  two: {{base_url: '{backup.base_url}', api_key: {UPSTREAM_KEY}}}\n"
        f"models:\n  m:\n    - {{provider: one, model: {models[0]}{extra[0]}}}\n"
        f"    - {{provider: two, model: {models[1]}{extra[1]}}}\n"
        f"policies:\n{policies[0]}  - fallback: {{{LIMITS}backoff_base_s: 0.01, {fallback}}}\n"
        f"{policies[1]}"
    )
    return make_proxy(loaded=load_text(text))


def ask(url: str, stream: bool) -> tuple[str, str]:
    """The answer's text and the target that served it, through the ``openai`` client."""
    client = openai_client(url)
    if not stream:
        reply = client.chat.completions.with_raw_response.create(model="m", messages=[])
        return reply.parse().choices[0].message.content or "", reply.headers["x-hookgate-upstream"]
    raw = client.chat.completions.with_raw_response.create(model="m", messages=[], stream=True)
    chunks = list(raw.parse())
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.role) == 1  # one opening
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, raw.headers["x-hookgate-upstream"]


def slow_first_token(model: str, seconds: float) -> Events:
    """A stream whose headers and role chunk come at once, and its text ``seconds`` later."""
    events = list(synth.chat_stream(model, synth.Reply(text="late but whole"), include_usage=False))
    return Events([events[0], b"".join(events[1:])], delay=seconds)  # a wait after each


STREAMED = pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])


@STREAMED
def test_a_silent_primary_ends_at_its_first_limit_and_is_not_retried(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    url = proxy(make_proxy, upstream, backup)
    upstream.push(Hang(), Hang(), Hang())
    started = time.monotonic()
    assert ask(url, stream) == (HELLO, "two/m2")
    assert time.monotonic() - started < 2.5  # one limit (1 s), not three
    assert len(upstream.requests) == 1  # a timeout goes to the next target at once


def test_fallback_on_is_a_choice_a_timeout_may_be_retried_on_the_same_target(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = proxy(make_proxy, upstream, backup, fallback="retries: 1, fallback_on: []")
    upstream.push(Hang())
    assert ask(url, stream=True) == (HELLO, "one/m1")  # the retry on the same target answered
    assert len(upstream.requests) == 2 and backup.requests == []


def test_a_slow_first_token_moves_on_at_the_first_token_limit(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = proxy(make_proxy, upstream, backup)
    upstream.push(slow_first_token("m1", 3))
    started = time.monotonic()
    # the primary's opening (its role chunk) was held back, never relayed: one whole answer
    assert ask(url, stream=True) == (HELLO, "two/m2")
    assert time.monotonic() - started < 2.5
    assert len(upstream.requests) == 1
    metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
    timed_out = 'hookgate_upstream_attempts_total{outcome="upstream_timeout",target="one/m1"} 1.0'
    assert timed_out in metrics  # not "ok", though its headers came


def test_a_slow_first_token_on_messages_moves_on_too(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = proxy(make_proxy, upstream, backup)
    upstream.push(slow_first_token("m1", 3))  # a chat server: translated to Messages events
    client = anthropic_client(url)  # imports anthropic: before the clock starts
    started = time.monotonic()
    with client.messages.stream(
        model="m", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == HELLO and final.model == "m2"
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize("declared", [False, True], ids=["shipped-table", "declared"])
def test_a_model_that_reasons_is_given_the_reasoning_limit(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, declared: bool
) -> None:
    """gpt-5 reasons in the shipped table; an unknown model that its target says reasons
    is treated alike. Both think past ``first_token_timeout_s`` and still answer."""
    model, extra = ("m1", ", reasoning: true") if declared else ("gpt-5", "")
    url = proxy(make_proxy, upstream, backup, "reasoning_timeout_s: 5", (model, "m2"), (extra, ""))
    upstream.push(slow_first_token(model, 1.5))
    assert ask(url, stream=True) == ("late but whole", f"one/{model}")
    assert backup.requests == []


def test_a_flapping_primary_is_probed_less_while_down_and_back_once_a_probe_succeeds(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    circuit = "retries: 0, circuit: {failures: 1, open_s: 0.3, open_max_s: 1.2}"
    url = proxy(make_proxy, upstream, backup, circuit)
    down = Status(503, {"error": {"message": "down"}})
    upstream.push(down, down, down)
    assert ask(url, stream=True)[1] == "two/m2"  # fails; open 0.3 s
    time.sleep(0.35)
    assert ask(url, stream=True)[1] == "two/m2"  # the probe fails; open 0.6 s
    time.sleep(0.35)
    assert ask(url, stream=True)[1] == "two/m2"  # still open: skipped
    assert len(upstream.requests) == 2
    time.sleep(0.3)
    assert ask(url, stream=True)[1] == "two/m2"  # the third probe fails; open 1.2 s
    time.sleep(1.25)  # the primary has recovered meanwhile
    assert ask(url, stream=True) == (HELLO, "one/m1")  # the probe succeeds: closed at once
    assert ask(url, stream=False) == (HELLO, "one/m1")
    assert len(upstream.requests) == 5


CONTEXT = Status(
    400,
    {
        "error": {
            "message": "This model's maximum context length is 128000 tokens",
            "code": "context_length_exceeded",
            "type": "invalid_request_error",
        }
    },
)


@STREAMED
def test_a_context_length_error_moves_to_a_larger_model_of_the_shipped_table(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    url = proxy(make_proxy, upstream, backup, "retries: 2", ("gpt-4o", "gpt-4.1"))
    upstream.push(CONTEXT)
    assert ask(url, stream) == (HELLO, "two/gpt-4.1")  # 128k to 1M tokens
    assert len(upstream.requests) == 1  # never resent to the model it did not fit


@STREAMED
def test_a_context_length_error_skips_a_model_no_larger(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    # the table's window (1M) against a declared smaller one
    url = proxy(make_proxy, upstream, backup, models=("gpt-4.1", "m2"),
                extra=("", ", context_window: 200000"))  # fmt: skip
    upstream.push(CONTEXT)
    with pytest.raises(openai.BadRequestError) as info:
        ask(url, stream)
    assert info.value.code == "context_length_exceeded"
    assert "maximum context length" in info.value.message
    assert len(upstream.requests) == 1 and backup.requests == []


def test_a_context_length_error_tries_the_next_target_when_no_window_is_known(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = proxy(make_proxy, upstream, backup)
    upstream.push(CONTEXT)
    assert ask(url, stream=True) == (HELLO, "two/m2")


CONTENT_FILTER = Status(
    400,
    {
        "error": {
            "message": "Your request was rejected as a result of our safety system.",
            "code": "content_policy_violation",
            "type": "invalid_request_error",
        }
    },
)


@STREAMED
def test_a_content_filter_refusal_is_never_retried_and_its_reason_reaches_the_client(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    # even a user who lists every 4xx as retried does not resend a refused request
    url = proxy(make_proxy, upstream, backup, 'retries: 2, retry_on: ["4xx", "5xx"]')
    upstream.push(CONTENT_FILTER, CONTENT_FILTER, CONTENT_FILTER)
    with pytest.raises(openai.BadRequestError) as info:
        ask(url, stream)
    assert info.value.code == "content_policy_violation"
    assert "rejected as a result of our safety system" in info.value.message
    assert len(upstream.requests) == 1 and backup.requests == []


def charges(db: Path) -> list[tuple[str, str | None, int, int]]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT model, target, input_tokens, output_tokens FROM usage ORDER BY id"
        ).fetchall()
    return [(str(m), t, int(i), int(o)) for m, t, i, o in rows]


@pytest.mark.parametrize("budget_first", [True, False], ids=["budget-outside", "budget-inside"])
@STREAMED
def test_failed_attempts_are_never_billed_and_the_answer_names_the_model_that_served(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    backup: FakeUpstream,
    tmp_path: Path,
    budget_first: bool,
    stream: bool,
) -> None:
    """Whether the budget sees the whole call (outside fallback) or each attempt (inside),
    only the attempt that answered is charged: a 503 and a stream that opened but timed
    out before its first output produced nothing."""
    db = tmp_path / "spend.db"
    budget = "  - budget: {limits: [{scope: model, usd: 100}]}\n"
    # listed after fallback, the budget is inside it, around each attempt
    placed = (budget, "") if budget_first else ("", budget)
    url = proxy(make_proxy, upstream, backup, "retries: 1, fallback_on: []", policies=placed,
                store=db)  # fmt: skip
    upstream.push(Status(503, {"error": {"message": "busy"}}))  # retried, then:
    upstream.push(slow_first_token("m1", 3) if stream else Hang())
    client = openai_client(url)
    if stream:
        chunks = list(
            client.chat.completions.create(
                model="m", messages=[], stream=True, stream_options={"include_usage": True}
            )
        )
        assert {c.model for c in chunks} == {"m2"}
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 15
    else:
        reply = client.chat.completions.create(model="m", messages=[])
        assert reply.model == "m2" and reply.usage is not None
    assert len(upstream.requests) == 2
    assert charges(db) == [("m", "m2", 10, 5)]  # the alias asked for, the model that served
