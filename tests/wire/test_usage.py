"""Usage and response facts, from JSON bodies and from streams however they are batched."""

from __future__ import annotations

import pytest

from hookgate.wire import synth
from hookgate.wire.usage import StreamFacts, Usage, facts_of, usage_of

REPLY = synth.Reply(text="hello world", input_tokens=12, output_tokens=7, id="x")


def test_usage_shapes() -> None:
    chat = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    assert usage_of(chat) == Usage(10, 5, 4, 2)
    responses = {
        "input_tokens": 8,
        "output_tokens": 3,
        "input_tokens_details": {"cached_tokens": 1},
        "output_tokens_details": {"reasoning_tokens": 1},
    }
    assert usage_of(responses) == Usage(8, 3, 1, 1)
    assert usage_of(None) is None and usage_of({"prompt_tokens": "x"}) == Usage()


def test_json_facts() -> None:
    facts = facts_of("chat.completions", synth.chat_completion("m", REPLY), collect_text=True)
    assert (facts.response_id, facts.response_model, facts.finish_reasons) == (
        "chatcmpl-x",
        "m",
        ["stop"],
    )
    assert facts.usage == Usage(12, 7) and facts.text == ["hello world"]
    facts = facts_of("responses", synth.response_object("m", REPLY))
    assert facts.finish_reasons == ["completed"] and facts.usage == Usage(12, 7)


@pytest.mark.parametrize("api", ["chat.completions", "responses", "completions"])
@pytest.mark.parametrize("group", [1, 2, 3, 100])
def test_stream_facts_any_batching(api: str, group: int) -> None:
    if api == "responses":
        blocks = list(synth.response_stream("m", REPLY))
    elif api == "completions":
        blocks = list(synth.completion_stream("m", REPLY))
    else:
        blocks = list(synth.chat_stream("m", REPLY, include_usage=True))
    facts = StreamFacts(api, collect_text=False)
    for i in range(0, len(blocks), group):
        facts.feed(b"".join(blocks[i : i + group]))
    assert facts.facts.response_model == "m"
    assert facts.facts.finish_reasons in (["stop"], ["completed"])
    if api != "completions":
        assert facts.facts.usage == Usage(12, 7)


def test_stream_text_collection_and_crlf() -> None:
    blocks = [b.replace(b"\n", b"\r\n") for b in synth.chat_stream("m", REPLY, include_usage=True)]
    facts = StreamFacts("chat.completions", collect_text=True)
    facts.feed(b"".join(blocks))
    assert "".join(facts.facts.text) == "hello world" and facts.facts.usage == Usage(12, 7)
