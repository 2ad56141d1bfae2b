"""Resilience against a fault-injecting upstream: each failure is recovered or reported."""

from __future__ import annotations

import time
from collections import Counter

import httpx
import openai
import pytest

from hookgate.wire import synth
from tests.conftest import TEST_STORE, UPSTREAM_KEY, ProxyFactory, openai_client
from tests.fakes import Events, FakeUpstream, Hang, Raw, Reset, Status, Step

FAST = (
    "fallback: {retries: 0, attempt_timeout_s: 2, first_token_timeout_s: 2, stall_timeout_s: 2, "
    "deadline_s: 10, "
    "backoff_base_s: 0.01, circuit: {failures: 100}}"
)


def two_targets(
    make_proxy: ProxyFactory,
    primary: str,
    backup: str,
    policy: str = FAST,
    primary_extra: str = "",
    backup_extra: str = "",
) -> str:
    from hookgate.config.loader import load_text

    text = (
        f"store: 'sqlite:///{TEST_STORE}'\n"
        f"providers:\n  one: {{base_url: '{primary}', api_key: {UPSTREAM_KEY}}}\n"
        f"  two: {{base_url: '{backup}', api_key: {UPSTREAM_KEY}}}\n"
        f"models:\n  m:\n    - {{provider: one, model: m1{primary_extra}}}\n"
        f"    - {{provider: two, model: m2{backup_extra}}}\n"
        f"policies:\n  - {policy}\n"
    )
    return make_proxy(loaded=load_text(text))


def cut_stream() -> list[bytes]:
    return list(synth.chat_stream("m1", synth.Reply(text="abcdef"), include_usage=False))[:3]


MOVES_ON: dict[str, list[Step]] = {
    "500": [Status(500, {"error": {"message": "boom"}})],
    "503": [Status(503, {"error": {"message": "busy"}}, {"retry-after": "0"})],
    "429": [Status(429, {"error": {"message": "slow down"}})],
    "reset_mid_body": [Reset()],
    "stall_before_headers": [Hang()],
    "malformed_json": [Raw(b'{"choices": [')],
    "not_json_object": [Raw(b"[1, 2]")],
    "200_with_an_error": [Status(200, {"error": {"message": "quota", "type": "server_error"}})],
    # the provider refused hookgate's key for it: the next target has its own
    "401_for_the_provider_key": [Status(401, {"error": {"message": "Incorrect API key"}})],
}


@pytest.mark.parametrize("fault", list(MOVES_ON))
def test_fault_falls_back_to_next_target(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, fault: str
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    upstream.push(*MOVES_ON[fault])
    started = time.monotonic()
    reply = openai_client(url).chat.completions.with_raw_response.create(model="m", messages=[])
    assert reply.parse().choices[0].message.content == "Hello from the fake upstream."
    assert reply.headers["x-hookgate-upstream"] == "two/m2"
    assert reply.headers["x-hookgate-attempts"] == "2"
    assert backup.last.json()["model"] == "m2"
    assert time.monotonic() - started < 3


def test_connection_refused_falls_back(
    make_proxy: ProxyFactory, backup: FakeUpstream, refused_port: int
) -> None:
    url = two_targets(make_proxy, f"http://127.0.0.1:{refused_port}/v1", backup.base_url)
    reply = openai_client(url).chat.completions.with_raw_response.create(model="m", messages=[])
    assert reply.headers["x-hookgate-upstream"] == "two/m2"


STREAM_BEFORE_FIRST_BYTE: dict[str, list[Step]] = {
    "500": [Status(500, {"error": {"message": "boom"}})],
    "stall_before_first_event": [Events([], end="hang")],
    "invalid_sse": [Events([b"this is not an event stream\n\n"])],
    "error_event_first": [
        Events([b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'])
    ],
    "first_event_not_json": [Events([b"data: this is not json\n\n", b"data: [DONE]\n\n"])],
    "first_event_cut_json": [Events([b'data: {"id": "x", "choices": [\n\n', b"data: [DONE]\n\n"])],
    "first_named_event_not_json": [Events([b"event: message\ndata: <html>\n\n"])],
}


@pytest.mark.parametrize("fault", list(STREAM_BEFORE_FIRST_BYTE))
def test_stream_failure_before_first_byte_falls_back(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, fault: str
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    upstream.push(*STREAM_BEFORE_FIRST_BYTE[fault])
    stream = openai_client(url).chat.completions.create(model="m", messages=[], stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "Hello from the fake upstream."


def test_a_stream_that_opens_with_a_byte_order_mark_is_a_stream(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    events = list(synth.chat_stream("m1", synth.Reply(text="with a BOM"), include_usage=False))
    upstream.push(Events([b"\xef\xbb\xbf" + events[0], *events[1:]]))
    stream = openai_client(url).chat.completions.create(model="m", messages=[], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "with a BOM"
    assert backup.requests == []


def test_an_error_before_any_output_is_an_error_status_without_a_fallback(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy()
    upstream.push(Events([b'data: {"error": {"message": "overloaded", "type": "x"}}\n\n']))
    with pytest.raises(openai.APIStatusError) as info:
        list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True))
    assert info.value.status_code == 502 and "overloaded" in info.value.message


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_a_first_answer_that_is_not_json_is_a_502_without_a_fallback(
    make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool
) -> None:
    url = make_proxy()
    if stream:
        upstream.push(Events([b"data: this is not json\n\n", b"data: [DONE]\n\n"]))
    else:
        upstream.push(Raw(b"this is not json"))
    with pytest.raises(openai.APIStatusError) as info:
        list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True)) if (
            stream
        ) else openai_client(url).chat.completions.create(model="m", messages=[])
    assert info.value.status_code == 502
    assert info.value.code == "upstream_bad_response" and "not JSON" in info.value.message


def test_a_bad_event_after_the_first_is_dropped_and_the_stream_goes_on(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    good = list(synth.chat_stream("m1", synth.Reply(text="abcdef", pieces=3), include_usage=False))
    for bad in (b"data: not json at all\n\n", b'data: {"choices": [{"delta": \n\n'):
        # the bad event arrives alone, and with good ones around it in one read
        for blocks in (
            [good[0], good[1], bad, *good[2:]],
            [good[0], good[1] + bad + good[2], *good[3:]],
        ):
            upstream.push(Events(blocks))
            stream = openai_client(url).chat.completions.create(model="m", messages=[], stream=True)
            assert (
                "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "abcdef"
            )
    assert backup.requests == []  # nothing failed: no attempt elsewhere


def test_stream_failure_after_first_byte_is_reported_when_it_cannot_be_continued(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    for fault, expected in (
        (Events(cut_stream()), "ended the stream"),
        (Events(cut_stream(), end="hang"), "sent nothing for"),
    ):
        upstream.push(fault)  # the backup's answer differs: the original failure
        started = time.monotonic()
        with pytest.raises(openai.APIError) as info:
            list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True))
        assert expected in info.value.message
        assert time.monotonic() - started < 3
    # a cut is asked again of the same target, a stall of the next; what they said differs
    assert len(upstream.requests) == 3 and len(backup.requests) == 1


def test_client_errors_do_not_move_on(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    for status, exc in (
        (400, openai.BadRequestError),
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (422, openai.UnprocessableEntityError),
    ):
        upstream.push(Status(status, {"error": {"message": "no", "code": f"c{status}"}}))
        with pytest.raises(exc):
            openai_client(url).chat.completions.create(model="m", messages=[])
    assert backup.requests == []


def test_context_length_moves_to_a_larger_window(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(
        make_proxy,
        upstream.base_url,
        backup.base_url,
        primary_extra=", context_window: 8000",
        backup_extra=", context_window: 128000",
    )
    error = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens",
            "code": "context_length_exceeded",
            "type": "invalid_request_error",
        }
    }
    upstream.push(Status(400, error))
    reply = openai_client(url).chat.completions.with_raw_response.create(model="m", messages=[])
    assert reply.headers["x-hookgate-upstream"] == "two/m2"
    # with no larger window configured, the 400 comes back as is
    url = two_targets(
        make_proxy,
        upstream.base_url,
        backup.base_url,
        primary_extra=", context_window: 128000",
        backup_extra=", context_window: 8000",
    )
    upstream.push(Status(400, error))
    with pytest.raises(openai.BadRequestError) as info:
        openai_client(url).chat.completions.create(model="m", messages=[])
    assert info.value.code == "context_length_exceeded"
    assert backup.requests[-1].json()["model"] == "m2"  # only the first call reached it
    assert len(backup.requests) == 1


def test_retry_after_is_honoured_on_the_same_target(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    policy = FAST.replace("retries: 0", "retries: 2")
    url = two_targets(make_proxy, upstream.base_url, backup.base_url, policy)
    upstream.push(
        Status(503, {"error": {"message": "busy"}}, {"retry-after-ms": "300"}),
        Status(429, {"error": {"message": "slow"}}, {"retry-after": "0.2"}),
    )
    started = time.monotonic()
    reply = openai_client(url).chat.completions.with_raw_response.create(model="m", messages=[])
    assert time.monotonic() - started >= 0.5
    assert reply.headers["x-hookgate-upstream"] == "one/m1"
    assert reply.headers["x-hookgate-attempts"] == "3"
    assert backup.requests == []
    metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
    assert 'hookgate_retries_total{reason="http_503",target="one/m1"} 1.0' in metrics


def test_a_retry_after_beyond_the_cap_or_unreadable_moves_on_at_once(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    policy = FAST.replace("retries: 0", "retries: 2").replace("{", "{retry_after_max_s: 2, ", 1)
    url = two_targets(make_proxy, upstream.base_url, backup.base_url, policy)
    for asked in ("99999", "Fri, 01 Jan 2100 00:00:00 GMT"):
        upstream.push(Status(429, {"error": {"message": "slow"}}, {"retry-after": asked}))
        started = time.monotonic()
        reply = openai_client(url).chat.completions.with_raw_response.create(model="m", messages=[])
        assert time.monotonic() - started < 1.5  # no wait for a retry it would not honour
        assert reply.headers["x-hookgate-upstream"] == "two/m2"
    # not a number nor a date: no advice, so the usual backoff and a retry (once a 500)
    upstream.push(Status(429, {"error": {"message": "slow"}}, {"retry-after": "soon"}))
    reply = openai_client(url).chat.completions.with_raw_response.create(model="m", messages=[])
    assert reply.headers["x-hookgate-upstream"] == "one/m1"
    assert reply.headers["x-hookgate-attempts"] == "2"


def test_deadline_bounds_the_whole_request(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    policy = FAST.replace("deadline_s: 10", "deadline_s: 1").replace(
        "attempt_timeout_s: 2", "attempt_timeout_s: 10"
    )
    url = two_targets(make_proxy, upstream.base_url, backup.base_url, policy)
    upstream.push(Hang())
    backup.push(Hang())
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as info:
        openai_client(url).chat.completions.create(model="m", messages=[])
    assert info.value.status_code == 504
    assert time.monotonic() - started < 5  # the deadline (1 s), not an attempt timeout (10 s)


def test_circuit_opens_skips_and_recovers(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, refused_port: int
) -> None:
    dead_port = refused_port
    policy = FAST.replace("circuit: {failures: 100}", "circuit: {failures: 2, open_s: 0.5}")
    url = two_targets(make_proxy, f"http://127.0.0.1:{dead_port}/v1", backup.base_url, policy)
    client = openai_client(url)
    base = url.removesuffix("/v1")
    attempts = []
    for _ in range(4):
        reply = client.chat.completions.with_raw_response.create(model="m", messages=[])
        attempts.append(reply.headers["x-hookgate-attempts"])
    assert attempts == ["2", "2", "1", "1"]  # open after two failures: the dead target is skipped
    ready = httpx.get(f"{base}/readyz").json()
    assert ready["policies"]["fallback"]["circuits"]["one/m1"] == "open"
    metrics = httpx.get(f"{base}/metrics").text
    assert 'hookgate_circuit_state{target="one/m1"} 2.0' in metrics
    assert 'hookgate_fallbacks_total{reason="circuit_open",target="one/m1"}' in metrics
    time.sleep(0.6)  # half-open: one probe goes to the primary, which fails again
    reply = client.chat.completions.with_raw_response.create(model="m", messages=[])
    assert reply.headers["x-hookgate-attempts"] == "2"
    assert (
        httpx.get(f"{base}/readyz").json()["policies"]["fallback"]["circuits"]["one/m1"] == "open"
    )


def test_circuit_closes_when_the_target_recovers(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    policy = FAST.replace("circuit: {failures: 100}", "circuit: {failures: 1, open_s: 0.3}")
    url = two_targets(make_proxy, upstream.base_url, backup.base_url, policy)
    client = openai_client(url)
    upstream.push(Status(500, {"error": {"message": "down"}}))
    assert (
        client.chat.completions.with_raw_response.create(model="m", messages=[]).headers[
            "x-hookgate-upstream"
        ]
        == "two/m2"
    )
    assert (
        client.chat.completions.with_raw_response.create(model="m", messages=[]).headers[
            "x-hookgate-upstream"
        ]
        == "two/m2"
    )  # open: skipped
    time.sleep(0.4)
    assert (
        client.chat.completions.with_raw_response.create(model="m", messages=[]).headers[
            "x-hookgate-upstream"
        ]
        == "one/m1"
    )  # the probe succeeded: closed again
    assert (
        client.chat.completions.with_raw_response.create(model="m", messages=[]).headers[
            "x-hookgate-upstream"
        ]
        == "one/m1"
    )


def test_all_circuits_open_is_503_and_not_ready(
    make_proxy: ProxyFactory, refused_port: int
) -> None:
    from hookgate.config.loader import load_text

    dead = f"http://127.0.0.1:{refused_port}/v1"
    url = make_proxy(
        loaded=load_text(
            f"store: 'sqlite:///{TEST_STORE}'\n"
            f"providers:\n  d: {{base_url: '{dead}'}}\nmodels:\n  m: [{{provider: d}}]\n"
            "policies:\n  - fallback: {retries: 0, circuit: {failures: 1, open_s: 60}}\n"
        )
    )
    client = openai_client(url)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=[])
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="m", messages=[])
    assert info.value.status_code == 503
    assert info.value.code == "upstream_unavailable"  # type: ignore[attr-defined]
    ready = httpx.get(url.removesuffix("/v1") + "/readyz")
    assert ready.status_code == 503 and ready.json()["status"] == "unavailable"


def test_weighted_balance_among_equal_priority(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(
        make_proxy,
        upstream.base_url,
        backup.base_url,
        primary_extra=", priority: 0, weight: 3",
        backup_extra=", priority: 0, weight: 1",
    )
    client = openai_client(url)
    served = Counter(
        client.chat.completions.with_raw_response.create(model="m", messages=[]).headers[
            "x-hookgate-upstream"
        ]
        for _ in range(200)
    )
    assert 110 <= served["one/m1"] <= 185 and served["one/m1"] + served["two/m2"] == 200


def test_least_inflight_prefers_the_idle_target(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    import concurrent.futures

    policy = FAST.replace("retries: 0", "retries: 0, balance: least_inflight").replace(
        "attempt_timeout_s: 2", "attempt_timeout_s: 5"
    )
    url = two_targets(make_proxy, upstream.base_url, backup.base_url, policy,
                      primary_extra=", priority: 0", backup_extra=", priority: 0")  # fmt: skip
    upstream.stream_delay = backup.stream_delay = 0.05  # every stream holds its target ~0.5 s
    client = openai_client(url)

    def one(_: int) -> str:
        reply = client.chat.completions.with_raw_response.create(
            model="m", messages=[], stream=True
        )
        for _chunk in reply.parse():
            pass
        return str(reply.headers["x-hookgate-upstream"])

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        served = Counter(pool.map(one, range(8)))
    assert served == {"one/m1": 4, "two/m2": 4}  # in-flight counts stay level
    upstream.stream_delay = backup.stream_delay = 0.0
