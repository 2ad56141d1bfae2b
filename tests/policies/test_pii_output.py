"""The pii policy's output scan through the real proxy and the real openai client: values
the model wrote that the prompt did not contain are masked, redacted or blocked, streamed
or not; the user's own values come back whole; tool-call arguments are left alone."""

from __future__ import annotations

import httpx
import openai
import orjson
import pytest

from tests.conftest import ProxyFactory, openai_client
from tests.fakes import Echo, FakeUpstream

USER = "I'm Siobhan O'Brien, mail siobhan.obrien@example.org about the refund."
NEW = {
    "PERSON": "Marcus Whitfield",
    "EMAIL_ADDRESS": "m.whitfield@helpdesk-mail.com",
    "PHONE_NUMBER": "212-555-0187",
}
PREFIX = (
    f"Our agent {NEW['PERSON']} will call you from {NEW['PHONE_NUMBER']}.\n"
    f"Write to {NEW['EMAIL_ADDRESS']} if you prefer. You said: "
)
POLICY = (
    "policies:\n  - pii: {secret: 'test-secret-0123456789', output: {action: mask, "
    "actions: {%s}}}\n"
)
REDACT_EMAIL = "EMAIL_ADDRESS: redact"
MASKED_PHONE = "********0187"


def client_for(make_proxy: ProxyFactory, actions: str = REDACT_EMAIL) -> openai.OpenAI:
    return openai_client(make_proxy(POLICY % actions))


def assert_scanned(text: str) -> None:
    """New values gone (masked or redacted), the user's own values restored whole."""
    for kind, value in NEW.items():
        assert value not in text, kind
    assert MASKED_PHONE in text and "<EMAIL_ADDRESS>" in text
    assert f"You said: {USER}" in text  # the prompt's own values: restored, kept


def ask(client: openai.OpenAI, **kwargs: object) -> object:
    return client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": USER}], **kwargs
    )


def test_a_non_streamed_answer_is_scanned(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    client = client_for(make_proxy)
    upstream.push(Echo(prefix=PREFIX))
    reply = ask(client)
    content = reply.choices[0].message.content  # type: ignore[attr-defined]
    assert_scanned(content)
    assert "Siobhan O'Brien" not in upstream.last.body.decode()  # input redaction still on


@pytest.mark.parametrize("pieces", [0, 9])
def test_a_stream_is_scanned_at_every_chunking(
    make_proxy: ProxyFactory, upstream: FakeUpstream, pieces: int
) -> None:
    client = client_for(make_proxy)
    upstream.push(Echo(prefix=PREFIX))
    whole = ask(client).choices[0].message.content  # type: ignore[attr-defined]
    upstream.push(Echo(prefix=PREFIX, pieces=pieces))  # 0: one character per delta
    chunks = [c.choices[0].delta.content or "" for c in ask(client, stream=True) if c.choices]
    assert "".join(chunks) == whole
    assert_scanned("".join(chunks))
    for kind, value in NEW.items():  # no value is ever shown, even split over chunks
        assert all(value[:6] not in chunk for chunk in chunks if chunk), kind
    assert sum(1 for c in chunks if c) < len(whole) / 20  # released a sentence at a time


def test_responses_stream_deltas_and_final_text_agree(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    client = client_for(make_proxy)
    upstream.push(Echo(prefix=PREFIX, pieces=11))
    events = list(client.responses.create(model="m", input=USER, stream=True))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    done = next(e for e in events if e.type == "response.completed").response.output_text
    assert deltas == done
    assert_scanned(done)


def test_block_refuses_an_answer_and_ends_a_stream_before_the_value(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    client = client_for(make_proxy, "PHONE_NUMBER: block")
    upstream.push(Echo(prefix=PREFIX))
    with pytest.raises(openai.BadRequestError) as refused:
        ask(client)
    body = refused.value.body
    assert isinstance(body, dict) and body["code"] == "pii_output_blocked"
    assert "PHONE_NUMBER" in body["message"] and NEW["PHONE_NUMBER"] not in str(body)
    opening = "Sure, I can help with that refund request of yours today. "  # one segment
    upstream.push(Echo(prefix=opening + PREFIX, pieces=0))
    shown: list[str] = []
    with pytest.raises(openai.APIError) as ended:
        for chunk in ask(client, stream=True):
            shown.extend(c.delta.content or "" for c in chunk.choices)
    assert "pii_output_blocked" in str(ended.value.body)
    assert "".join(shown) == opening  # the sentence with the number was held, never shown
    assert NEW["PHONE_NUMBER"] not in "".join(shown)


def test_keep_lets_a_type_through_and_tool_arguments_are_not_scanned(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    client = client_for(make_proxy, "PERSON: keep")
    upstream.push(Echo(prefix=PREFIX))
    content = ask(client).choices[0].message.content  # type: ignore[attr-defined]
    assert NEW["PERSON"] in content and NEW["EMAIL_ADDRESS"] not in content
    upstream.push(Echo(prefix=PREFIX, tool="send_email"))
    call = ask(client).choices[0].message.tool_calls[0]  # type: ignore[attr-defined]
    assert NEW["EMAIL_ADDRESS"] in orjson.loads(call.function.arguments)["text"]


def test_output_findings_are_counted_never_shown(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(POLICY % REDACT_EMAIL)
    upstream.push(Echo(prefix=PREFIX))
    ask(openai_client(url))
    metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
    for kind, action in (("PHONE_NUMBER", "mask"), ("EMAIL_ADDRESS", "redact")):
        line = f'hookgate_pii_output_entities_total{{action="{action}",entity_type="{kind}"}} 1.0'
        assert line in metrics
    assert not any(value in metrics for value in NEW.values())
