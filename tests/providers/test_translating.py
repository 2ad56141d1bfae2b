"""The translating provider in front of an HTTP provider: tool call ids the Gemini
translation made reach a provider of another API cut to their head, also through a
translation (chat → Messages); relaying and model listing are the HTTP provider's own."""

from __future__ import annotations

from typing import Any

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import TEST_STORE, ProxyFactory, openai_client
from tests.fakes import FakeUpstream, Status

GEMINI_KEY = "AIza-upstream-secret-0123456789"
CLAUDE_KEY = "sk-ant-upstream-secret-0123456789"
SIGNATURE = "CiQB0e2Kb7Yv+signature/of==thought"
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def config(gemini: FakeUpstream, claude: FakeUpstream) -> str:
    """Alias ``smart``: Gemini first, Claude second; Claude's own models behind ``"*"``."""
    return (
        "providers:\n"
        f"  google: {{type: gemini, base_url: '{gemini.gemini_base_url}', "
        f"api_key: '{GEMINI_KEY}'}}\n"
        f"  claude: {{type: anthropic, base_url: '{claude.base_url}', api_key: '{CLAUDE_KEY}'}}\n"
        "models:\n"
        "  smart: [{provider: google, model: gemini-2.5-flash}, "
        "{provider: claude, model: claude-sonnet-4-6}]\n"
        '  "*": [{provider: claude}]\n'
        f"store: 'sqlite:///{TEST_STORE}'\n"
        "policies:\n  - fallback: {retries: 0}\n"
    )


def test_a_conversation_gemini_began_goes_on_on_claude_with_plain_ids(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    """Translated to Messages for Claude (Gemini down), the ids Gemini's signature rode in
    are cut to their head, calls and results still paired; Gemini got them whole."""
    url = make_proxy(loaded=load_text(config(upstream, backup)))
    call = synth.ToolCall("ignored", "get_weather", '{"city": "Paris"}')
    upstream.push(synth.Reply(tool_calls=[call], thinking="A tool.", signature=SIGNATURE))
    client = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model="smart", messages=messages, tools=TOOLS)
    (signed,) = first.choices[0].message.tool_calls or []
    assert signed.id.endswith(SIGNATURE)
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": signed.id, "content": "Sunny"},
    ]
    client.chat.completions.create(model="smart", messages=messages, tools=TOOLS)
    parts = upstream.last.json()["contents"][1]["parts"]
    assert any(p.get("thoughtSignature") == SIGNATURE for p in parts)  # Gemini: whole
    upstream.push(Status(503, {"error": {"code": 503, "message": "overloaded"}}))
    final = client.chat.completions.create(model="smart", messages=messages, tools=TOOLS)
    assert final.choices[0].message.content == "The tool said: Sunny"
    assert backup.last.path == "/v1/messages"
    sent = backup.last.json()["messages"]
    head = signed.id[: len("call_") + 24]
    (use,) = [b for b in sent[1]["content"] if b["type"] == "tool_use"]
    (result,) = [b for b in sent[2]["content"] if b["type"] == "tool_result"]
    assert use["id"] == head and result["tool_use_id"] == head
    assert b"~ts~" not in backup.last.body and b"~id~" not in backup.last.body


def test_a_translated_provider_lists_and_relays_as_itself(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    backup.models = ["claude-sonnet-4-6", "claude-haiku-4-5"]
    client = openai_client(make_proxy(loaded=load_text(config(upstream, backup))))
    assert [m.id for m in client.models.list()] == ["smart", *backup.models]
    assert client.models.retrieve("claude-haiku-4-5").id == "claude-haiku-4-5"
    assert backup.last.path == "/v1/models/claude-haiku-4-5"
    assert backup.last.headers["x-api-key"] == CLAUDE_KEY
    assert "authorization" not in backup.last.headers


def test_only_calls_to_other_apis_than_gemini_s_are_cut(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    """A body bound for Gemini is sent as translated, even where its text looks like an id
    that carries a signature; the same text to Claude is cut like an id."""
    url = make_proxy(loaded=load_text(config(upstream, backup)))
    quoted = f"call_{'ab' * 12}~ts~{SIGNATURE}"
    messages: list[Any] = [{"role": "user", "content": f"Look up {quoted}"}]
    openai_client(url).chat.completions.create(model="smart", messages=messages)
    assert upstream.last.json()["contents"][0]["parts"] == [{"text": f"Look up {quoted}"}]
    upstream.push(Status(503, {"error": {"code": 503, "message": "overloaded"}}))
    openai_client(url).chat.completions.create(model="smart", messages=messages)
    cut = [{"type": "text", "text": f"Look up call_{'ab' * 12}"}]
    assert backup.last.json()["messages"][0]["content"] == cut
