"""The frames of the Responses WebSocket mode (:mod:`hookgate.wire.responses_socket`),
and the agents' identity headers (:mod:`hookgate.wire.headers`): pure functions."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from hookgate.errors import InvalidRequest
from hookgate.wire import synth
from hookgate.wire.headers import RequestHeaderFilter
from hookgate.wire.responses_socket import (
    Collector,
    Conversation,
    error_frame,
    frames_of,
    http_headers,
    read_frame,
    warm_up_events,
)

DEVELOPER = {"type": "message", "role": "developer", "content": "be brief"}
USER = {"type": "message", "role": "user", "content": "list files"}
CALL = {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"}
RESULT = {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}


def create(**fields: Any) -> dict[str, Any]:
    return {"type": "response.create", "model": "m", "stream": True, **fields}


def test_a_frame_is_the_http_body_streamed_without_its_type() -> None:
    turn = Conversation().request(create(input=[USER], store=False, stream=False))
    assert turn is not None and not turn.warm_up
    assert turn.body == {"model": "m", "stream": True, "input": [USER], "store": False}


def test_a_warm_up_then_two_continuations_expand_to_the_whole_conversation() -> None:
    conversation = Conversation()
    warm = conversation.request(create(input=[DEVELOPER], generate=False))
    assert warm is not None and warm.warm_up and "generate" not in warm.body
    conversation.remember("resp_warm", warm.body, [])
    first = conversation.request(create(input=[USER], previous_response_id="resp_warm"))
    assert first is not None and "previous_response_id" not in first.body
    assert first.body["input"] == [DEVELOPER, USER]
    conversation.remember("resp_1", first.body, [CALL])
    second = conversation.request(create(input=[RESULT], previous_response_id="resp_1"))
    assert second is not None and second.body["input"] == [DEVELOPER, USER, CALL, RESULT]


def test_only_the_last_response_is_held() -> None:
    conversation = Conversation()
    conversation.remember("resp_1", {"input": "hi"}, [CALL])
    conversation.remember("resp_2", {"input": [USER]}, [])
    old = conversation.request(create(input=[RESULT], previous_response_id="resp_1"))
    assert old is not None and old.body["previous_response_id"] == "resp_1"
    assert old.body["input"] == [RESULT]  # goes upstream as it came
    string = Conversation()
    string.remember("resp_1", {"input": "hi"}, [CALL])
    turn = string.request(create(input="go on", previous_response_id="resp_1"))
    assert turn is not None
    assert turn.body["input"] == [
        {"role": "user", "content": "hi"}, CALL, {"role": "user", "content": "go on"}
    ]  # fmt: skip


def test_a_response_continued_upstream_or_a_failure_is_not_held() -> None:
    conversation = Conversation()
    conversation.remember("resp_1", {"input": [USER], "previous_response_id": "up_1"}, [CALL])
    turn = conversation.request(create(input=[RESULT], previous_response_id="resp_1"))
    assert turn is not None and turn.body["previous_response_id"] == "resp_1"
    conversation.remember("resp_2", {"input": [USER]}, [CALL])
    conversation.forget()
    turn = conversation.request(create(input=[RESULT], previous_response_id="resp_2"))
    assert turn is not None and turn.body["previous_response_id"] == "resp_2"


def test_frames_that_are_not_a_turn() -> None:
    conversation = Conversation()
    assert conversation.request({"type": "response.processed", "response_id": "r"}) is None
    with pytest.raises(InvalidRequest, match=r"unsupported frame type 'session\.update'"):
        conversation.request({"type": "session.update"})
    with pytest.raises(InvalidRequest, match="'generate' must be a boolean"):
        conversation.request(create(generate="no"))
    with pytest.raises(InvalidRequest, match="not JSON"):
        read_frame("{")
    with pytest.raises(InvalidRequest, match="JSON object"):
        read_frame("[1]")


def test_the_collector_keeps_the_output_the_client_received() -> None:
    reply = synth.Reply("done", tool_calls=[synth.ToolCall("c1", "exec_command", "{}")])
    frames = frames_of(b"".join(synth.response_stream("m", reply)) + b"data: [DONE]\n\n")
    assert [orjson.loads(f)["type"] for f in frames][-1] == "response.completed"
    collector = Collector()
    for frame in frames[:-1]:
        collector.feed(frame)
    assert not collector.ended and collector.response_id is None
    collector.feed(frames[-1])
    assert collector.ended and collector.response_id == f"resp_{reply.id}"
    assert [i["type"] for i in collector.output()] == ["message", "function_call"]
    only_completed = Collector()  # a server that sends no output_item.done events
    only_completed.feed(frames[-1])
    assert only_completed.output() == collector.output()
    failed = Collector()
    failed.feed(orjson.dumps({"type": "response.failed", "response": {"id": "r"}}).decode())
    assert not failed.ended


def test_warm_up_events_and_error_frames() -> None:
    response_id, events = warm_up_events({"model": "m", "input": [USER]})
    assert [e["type"] for e in events] == ["response.created", "response.completed"]
    assert events[1]["response"]["id"] == response_id and response_id.startswith("resp_")
    assert events[1]["response"]["output"] == [] and events[1]["response"]["model"] == "m"
    assert warm_up_events({})[0] != response_id
    error = {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}
    assert error_frame(429, {"error": error}, {"retry-after": "2"}) == {
        "type": "error", "status": 429, "error": error, "headers": {"retry-after": "2"}
    }  # fmt: skip
    assert "headers" not in error_frame(400, {"error": error}, {})


def test_the_socket_beta_is_not_sent_over_http() -> None:
    assert http_headers({"openai-beta": "responses_websockets=2026-02-06", "x": "1"}) == {"x": "1"}
    kept = http_headers({"openai-beta": "assistants=v2, responses_websockets=2026-02-06"})
    assert kept == {"openai-beta": "assistants=v2"}


def test_agents_identity_headers_are_forwarded_beside_the_configured_ones() -> None:
    forward = RequestHeaderFilter(["x-team-*"])
    sent = forward(
        {
            "Session-Id": "s", "thread-id": "s", "originator": "codex_exec",
            "x-client-request-id": "s", "x-codex-turn-metadata": "{}",
            "x-codex-window-id": "s:0", "x-session-id": "ses", "x-session-affinity": "ses",
            "x-parent-session-id": "ses0", "x-claude-code-session-id": "cc",
            "x-team-name": "blue", "authorization": "Bearer sk-x", "x-api-key": "sk-y",
            "chatgpt-account-id": "acct", "cookie": "a=b",
        }
    )  # fmt: skip
    assert set(sent) == {
        "session-id", "thread-id", "originator", "x-client-request-id",
        "x-codex-turn-metadata", "x-codex-window-id", "x-session-id", "x-session-affinity",
        "x-parent-session-id", "x-claude-code-session-id", "x-team-name",
    }  # fmt: skip
