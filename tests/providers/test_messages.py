"""Anthropic's Messages API through the proxy, to an Anthropic provider (``type:
anthropic``): the real ``anthropic`` SDK against the real proxy and a loopback upstream.

What goes upstream (path, query, headers, body) and what the client gets (blocks,
signatures, events, errors in Anthropic's shape) are checked byte for byte where the API
promises it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import httpx
import orjson
import pytest

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, TEST_STORE, ProxyFactory, anthropic_client
from tests.fakes import FakeUpstream, Status

KEY = "sk-ant-upstream-secret-0123456789"
SIGNATURE = "EqQBCkYIBxgCKkDsignature+/exact=="
ADMIN = "admin-secret-for-tests"
BETAS = "interleaved-thinking-2025-05-14,context-management-2025-06-27"


def anthropic_config(upstream: FakeUpstream, extra: str = "", models: str = "") -> str:
    return (
        "providers:\n"
        f"  claude: {{type: anthropic, base_url: '{upstream.base_url}', api_key: '{KEY}'}}\n"
        "models:\n"
        '  "*": [{provider: claude}]\n'
        f"{models}"
        f"store: 'sqlite:///{TEST_STORE}'\n"
        f"{extra}"
    )


def aanthropic_client(url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=url.removesuffix("/v1"), api_key=CLIENT_KEY, max_retries=0
    )


TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]

REPLY = synth.Reply(
    "It is sunny.",
    tool_calls=[synth.ToolCall("toolu_01", "get_weather", '{"city": "Paris"}')],
    thinking="The user wants the weather; I should call the tool.",
    signature=SIGNATURE,
    input_tokens=12,
    output_tokens=30,
    cache_creation_tokens=100,
    cache_read_tokens=2000,
    pieces=4,
)


def test_a_message_is_relayed_with_its_blocks_and_signature_exact(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(anthropic_config(upstream)))
    upstream.push(REPLY)
    made = anthropic_client(url).messages.create(
        model="claude-sonnet-4-6",
        max_tokens=1024,
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=TOOLS,
        thinking={"type": "enabled", "budget_tokens": 1024},
        extra_headers={"anthropic-beta": BETAS, "anthropic-version": "2026-10-21"},
        extra_query={"beta": "true"},
    )
    assert [b.type for b in made.content] == ["thinking", "text", "tool_use"]
    thinking = made.content[0]
    assert thinking.type == "thinking" and thinking.signature == SIGNATURE
    assert made.content[2].type == "tool_use" and made.content[2].input == {"city": "Paris"}
    assert made.usage.cache_read_input_tokens == 2000
    assert made.usage.cache_creation_input_tokens == 100
    sent = upstream.last
    assert (sent.path, sent.query) == ("/v1/messages", "beta=true")
    assert sent.headers["x-api-key"] == KEY
    assert "authorization" not in sent.headers
    assert sent.headers["anthropic-version"] == "2026-10-21"  # the client's, forwarded
    assert sent.headers["anthropic-beta"] == BETAS
    body = sent.json()
    assert body["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["tools"] == TOOLS


def test_a_stream_is_relayed_event_for_event(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(anthropic_config(upstream)))
    upstream.push(REPLY)
    with anthropic_client(url).messages.stream(
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=TOOLS,
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_stop" in kinds and "message_delta" in kinds
    expected = synth.message_object("claude-sonnet-4-6", REPLY)
    assert [b.model_dump(exclude_none=True) for b in final.content] == expected["content"]
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens == 30


async def test_the_async_client_and_a_tool_round_trip(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(anthropic_config(upstream)))
    async with aanthropic_client(url) as claude:
        messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        first = await claude.messages.create(
            model="claude-haiku-4-5", max_tokens=256, messages=messages, tools=TOOLS
        )
        assert first.stop_reason == "tool_use"
        call = next(b for b in first.content if b.type == "tool_use")
        messages += [
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Sunny"}],
            },
        ]
        second = await claude.messages.create(
            model="claude-haiku-4-5", max_tokens=256, messages=messages, tools=TOOLS
        )
    assert second.content[0].type == "text"
    assert second.content[0].text == "The tool said: Sunny"


def test_count_tokens_goes_to_the_provider(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(anthropic_config(upstream)))
    upstream.push(Status(200, {"input_tokens": 4242}))
    counted = anthropic_client(url).messages.count_tokens(
        model="claude-sonnet-4-6", messages=[{"role": "user", "content": "Hello there"}]
    )
    assert counted.input_tokens == 4242
    assert upstream.last.path == "/v1/messages/count_tokens"
    assert upstream.last.json()["messages"] == [{"role": "user", "content": "Hello there"}]


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_the_base_url_is_taken_with_or_without_v1_as_anthropic_base_url_is(
    make_proxy: ProxyFactory, upstream: FakeUpstream, suffix: str
) -> None:
    config = anthropic_config(upstream).replace(upstream.base_url, upstream.server.url + suffix)
    url = make_proxy(loaded=load_text(config))
    upstream.push(REPLY)
    made = anthropic_client(url).messages.create(
        model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "Hi"}]
    )
    assert [block.type for block in made.content] == ["thinking", "text", "tool_use"]
    assert upstream.last.path == "/v1/messages"


def test_unknown_fields_and_block_types_are_relayed_untouched(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(anthropic_config(upstream)))
    odd_block = {"type": "future_block", "payload": {"x": [1, 2]}, "note": "kept"}
    messages: list[Any] = [
        {"role": "user", "content": "Hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "opaque+/=="},
                {"type": "thinking", "thinking": "Hmm, a@b.example", "signature": SIGNATURE},
                {"type": "text", "text": "Hello."},
            ],
        },
        {"role": "system", "content": "A system note mid-conversation."},
        {"role": "user", "content": [odd_block, {"type": "text", "text": "And?"}]},
    ]
    anthropic_client(url).messages.create(
        model="claude-sonnet-4-6",
        max_tokens=64,
        messages=messages,
        extra_body={"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
                    "output_config": {"effort": "high"}},
    )  # fmt: skip
    body = upstream.last.json()
    assert body["messages"] == messages
    assert body["context_management"] == {"edits": [{"type": "clear_tool_uses_20250919"}]}
    assert body["output_config"] == {"effort": "high"}


@pytest.mark.parametrize(
    ("status", "error_type", "exception"),
    [
        (429, "rate_limit_error", anthropic.RateLimitError),
        (529, "overloaded_error", anthropic.InternalServerError),
        (400, "invalid_request_error", anthropic.BadRequestError),
    ],
)
def test_an_upstream_error_reaches_the_client_as_anthropic_sent_it(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    status: int,
    error_type: str,
    exception: type[anthropic.APIStatusError],
) -> None:
    url = make_proxy(loaded=load_text(anthropic_config(upstream)))
    error = {"type": "error", "error": {"type": error_type, "message": f"it said {KEY}"}}
    upstream.push(Status(status, error))
    with pytest.raises(exception) as raised:
        anthropic_client(url).messages.create(
            model="claude-sonnet-4-6", max_tokens=8, messages=[{"role": "user", "content": "Hi"}]
        )
    assert raised.value.status_code == status
    body = raised.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == error_type
    assert KEY not in orjson.dumps(body).decode()  # the provider's key is masked


def test_the_proxys_own_errors_take_anthropics_shape(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(
        loaded=load_text(
            anthropic_config(upstream, models='  "only": [{provider: claude}]\n').replace(
                '  "*": [{provider: claude}]\n', ""
            )
        )
    )
    claude = anthropic_client(url)
    with pytest.raises(anthropic.NotFoundError) as missing:
        claude.messages.create(
            model="nope", max_tokens=8, messages=[{"role": "user", "content": "Hi"}]
        )
    assert missing.value.body == {
        "type": "error",
        "error": {
            "type": "not_found_error",
            "message": "The model 'nope' does not exist or you do not have access to it.",
        },
    }
    answer = httpx.post(f"{url}/messages", content=b"{not json", headers={"x-api-key": "k"})
    assert answer.status_code == 400
    data = answer.json()
    assert data["type"] == "error" and data["error"]["type"] == "invalid_request_error"
    assert "parse the JSON body" in data["error"]["message"]
    assert not upstream.requests


def test_virtual_keys_are_read_from_x_api_key_and_bearer(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    extra = f"keys: {{required: true, admin_key: {ADMIN}}}\n"
    config = anthropic_config(upstream, extra).replace(str(TEST_STORE), str(tmp_path / "k.db"))
    url = make_proxy(loaded=load_text(config))
    base = url.removesuffix("/v1")
    created = httpx.post(
        f"{base}/admin/keys",
        json={"team": "coding", "models": ["claude-haiku-4-5"]},
        headers={"authorization": f"Bearer {ADMIN}"},
    )
    key = created.json()["key"]
    hi: list[Any] = [{"role": "user", "content": "Hi"}]
    assert (
        anthropic_client(url, api_key=key)
        .messages.create(model="claude-haiku-4-5", max_tokens=8, messages=hi)
        .content
    )  # x-api-key, as the SDK sends its api_key
    bearer = anthropic_client(
        url, api_key=None, auth_token=key
    )  # Claude Code's ANTHROPIC_AUTH_TOKEN
    assert bearer.messages.create(model="claude-haiku-4-5", max_tokens=8, messages=hi).content
    assert upstream.last.headers["x-api-key"] == KEY  # the provider's key, never the client's
    assert "authorization" not in upstream.last.headers
    with pytest.raises(anthropic.PermissionDeniedError) as denied:
        anthropic_client(url, api_key=key).messages.create(
            model="claude-opus-4-1", max_tokens=8, messages=hi
        )
    assert denied.value.body["error"]["type"] == "permission_error"  # type: ignore[index]
    with pytest.raises(anthropic.AuthenticationError) as refused:
        anthropic_client(url).messages.create(model="claude-haiku-4-5", max_tokens=8, messages=hi)
    assert refused.value.body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "Incorrect API key provided."},
    }


def test_a_spent_budget_tells_anthropic_clients_not_to_retry(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    budget = "policies:\n  - budget: {limits: [{scope: key, usd: 0.000001}]}\n"
    url = make_proxy(loaded=load_text(anthropic_config(upstream, budget)))
    with pytest.raises(anthropic.RateLimitError) as refused:
        anthropic_client(url).messages.create(
            model="claude-haiku-4-5", max_tokens=1024, messages=[{"role": "user", "content": "Hi"}]
        )
    assert refused.value.response.headers["x-should-retry"] == "false"
    assert refused.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert not upstream.requests


def test_anthropic_beta_sent_on_several_lines_reaches_the_provider_whole(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(anthropic_config(upstream)))
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    headers = [("x-api-key", CLIENT_KEY), ("anthropic-version", "2023-06-01"),
               ("anthropic-beta", "a-2025-01-01"), ("anthropic-beta", "b-2025-02-02"),
               ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"),
               ("traceparent", parent)]  # fmt: skip
    body = {"model": "claude-sonnet-4-6", "max_tokens": 8,
            "messages": [{"role": "user", "content": "Hi"}]}  # fmt: skip
    answer = httpx.post(f"{url}/messages", json=body, headers=headers, timeout=30)
    assert answer.status_code == 200
    assert upstream.last.headers["anthropic-beta"] == "a-2025-01-01, b-2025-02-02"
    assert "," not in upstream.last.headers["traceparent"]  # single-valued: never joined
