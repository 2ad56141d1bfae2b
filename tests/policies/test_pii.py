"""The pii policy through the real proxy with the real openai client: what the upstream saw,
what the client got back, and what telemetry kept."""

from __future__ import annotations

import concurrent.futures
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest

from hookgate.redaction.placeholders import PATTERN, placeholder
from hookgate.store.sqlite import SQLiteStore
from tests.conftest import ProxyFactory, openai_client
from tests.fakes import Echo, FakeUpstream, LoopThread
from tests.otlp import OtlpReceiver

PII = {
    "PERSON": "Siobhan O'Brien",
    "EMAIL_ADDRESS": "siobhan.obrien@example.org",
    "PHONE_NUMBER": "459.502.4057",
    "CREDIT_CARD": "4111 1111 1111 1111",
    "SECRET": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f",
}
MESSAGE = (
    f"Hi, I'm {PII['PERSON']}. Mail {PII['EMAIL_ADDRESS']} or call {PII['PHONE_NUMBER']}; "
    f"my card {PII['CREDIT_CARD']} was charged twice. Key: {PII['SECRET']} (see JIRA-4521)."
)
POLICY = "policies:\n  - pii: {secret: 'test-secret-0123456789'%s}\n"


def pii_proxy(make_proxy: ProxyFactory, settings: str = "", store: str = "") -> str:
    return make_proxy(store + POLICY % settings)


def sent(upstream: FakeUpstream) -> bytes:
    """The last body the upstream received, raw."""
    return upstream.last.body


def assert_clean(raw: bytes | str) -> None:
    text = raw.decode() if isinstance(raw, bytes) else raw
    for kind, value in PII.items():
        assert value not in text, kind
        assert json.dumps(value)[1:-1] not in text, kind


def placeholders(raw: bytes) -> list[str]:
    return PATTERN.findall(raw.decode())


@pytest.fixture
def client(make_proxy: ProxyFactory) -> Iterator[openai.OpenAI]:
    with openai_client(pii_proxy(make_proxy)) as c:
        yield c


def test_chat_round_trip_restores_exactly(client: openai.OpenAI, upstream: FakeUpstream) -> None:
    upstream.push(Echo())
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": MESSAGE}]
    )
    assert_clean(sent(upstream))
    assert len(set(placeholders(sent(upstream)))) == 5
    assert "JIRA-4521" in sent(upstream).decode()
    assert reply.choices[0].message.content == f"You said: {MESSAGE}"


@pytest.mark.parametrize("pieces", [0, 7, 3])
def test_streamed_text_restored_across_every_chunk_boundary(
    client: openai.OpenAI, upstream: FakeUpstream, pieces: int
) -> None:
    upstream.push(Echo(pieces=pieces))  # 0: one character per delta
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": MESSAGE}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert_clean(sent(upstream))
    assert text == f"You said: {MESSAGE}"


@pytest.mark.parametrize("stream", [False, True])
def test_tool_call_arguments_get_real_values(
    client: openai.OpenAI, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.push(Echo(tool="send_email"))
    kwargs: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": MESSAGE}],
        "tools": [{"type": "function", "function": {"name": "send_email", "parameters": {}}}],
    }
    if stream:
        chunks = list(client.chat.completions.create(stream=True, **kwargs))
        arguments = "".join(
            call.function.arguments or ""
            for c in chunks
            if c.choices
            for call in c.choices[0].delta.tool_calls or []
            if call.function is not None
        )
    else:
        reply = client.chat.completions.create(**kwargs)
        call = reply.choices[0].message.tool_calls[0]  # type: ignore[index]
        arguments = call.function.arguments  # type: ignore[union-attr]
    assert_clean(sent(upstream))
    assert json.loads(arguments) == {"text": f"You said: {MESSAGE}"}


def test_every_role_and_shape_is_redacted(client: openai.OpenAI, upstream: FakeUpstream) -> None:
    arguments = json.dumps({"to": PII["EMAIL_ADDRESS"], "name": PII["PERSON"]})
    client.chat.completions.create(
        model="m",
        messages=[
            {"role": "system", "content": f"You assist {PII['PERSON']}."},
            {"role": "developer", "content": [{"type": "text", "text": PII["PHONE_NUMBER"]}]},
            {
                "role": "user",
                "name": "Friday",
                "content": [
                    {"type": "text", "text": f"card {PII['CREDIT_CARD']}"},
                    {"type": "text", "text": f"key {PII['SECRET']}"},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "send", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": f"sent to {PII['PERSON']}"},
        ],
    )
    body = orjson.loads(sent(upstream))
    assert_clean(sent(upstream))
    assert body["messages"][2]["name"] == "Friday"
    history_args = json.loads(body["messages"][3]["tool_calls"][0]["function"]["arguments"])
    assert set(history_args) == {"to", "name"} and all(
        PATTERN.fullmatch(v) for v in history_args.values()
    )


def test_texts_outside_the_messages_are_redacted_too(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """Tool and schema descriptions, enums, prediction, stop, suffix, Responses prompt
    variables, instructions as items, reasoning summaries and reasoning sent back, and
    user/metadata/cache ids."""
    url = pii_proxy(make_proxy)
    email, person, phone = PII["EMAIL_ADDRESS"], PII["PERSON"], PII["PHONE_NUMBER"]
    schema = {"type": "object", "properties": {"to": {"type": "string", "enum": [email],
              "description": f"Always {person}"}}}  # fmt: skip
    say = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Done.", "reasoning_content": f"Mail {email} now."},
        {"role": "assistant", "content": "Done.", "reasoning": f"Ask {person} first."},
        {"role": "user", "content": "thanks"},
    ]
    chat = {
        "messages": say,
        "tools": [{"type": "function", "function": {
            "name": "send", "description": f"Mails {email}", "parameters": schema}}],
        "functions": [{"name": "call", "description": f"Calls {phone}"}],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "r", "description": f"For {person}", "schema": schema}},
        "prediction": {"type": "content", "content": f"Dear {person},"},
        "stop": [f"Regards, {person}"], "user": email, "safety_identifier": email,
        "metadata": {"customer": email}, "prompt_cache_key": f"user-{email}",
    }  # fmt: skip
    responses = {
        "input": [
            {"type": "reasoning", "id": "rs_1", "summary": [
                {"type": "summary_text", "text": f"The user {person} wants mail."}]},
            {"role": "user", "content": "hi"},
        ],
        "instructions": [{"role": "developer", "content": f"Reply to {email}"}],
        "prompt": {"id": "pmpt_1", "variables": {"customer": person, "mail": email}},
        "tools": [{"type": "function", "name": "send", "description": f"Mails {email}",
                   "parameters": schema}],
        "text": {"format": {"type": "json_schema", "name": "r", "schema": schema}},
    }  # fmt: skip
    completions = {"prompt": "Write to", "suffix": f" -- {person}, {phone}"}
    for path, body in (("chat/completions", chat), ("responses", responses),
                       ("completions", completions)):  # fmt: skip
        reply = httpx.post(f"{url}/{path}", json={"model": "m", **body}, timeout=30)
        assert reply.status_code == 200, reply.text
        assert_clean(sent(upstream))
        assert placeholders(sent(upstream)), path
    first = orjson.loads(upstream.requests[-3].body)
    assert first["tools"][0]["function"]["name"] == "send"  # names and types are kept
    assert first["tools"][0]["function"]["parameters"]["properties"]["to"]["type"] == "string"


_S = f"{PII['PERSON']} at {PII['EMAIL_ADDRESS']}"
_PDF = "data:application/pdf;base64,AA"
HISTORY_ITEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "web_search_call": ("responses", {"input": [{"type": "web_search_call", "id": "ws_1",
        "status": "completed", "action": {"type": "search", "query": _S}}]}),
    "file_search_call": ("responses", {"input": [{"type": "file_search_call", "id": "fs_1",
        "status": "completed", "queries": [_S], "results": [{"file_id": "f", "text": _S}]}]}),
    "code_interpreter_call": ("responses", {"input": [{"type": "code_interpreter_call",
        "id": "ci_1", "container_id": "c", "code": f"send({_S!r})",
        "outputs": [{"type": "logs", "logs": _S}]}]}),
    "function_call_output_object": ("responses", {"input": [{"type": "function_call_output",
        "call_id": "c1", "output": {"result": _S}}]}),
    "mcp_call": ("responses", {"input": [{"type": "mcp_call", "id": "m1", "server_label": "s",
        "name": "lookup", "arguments": json.dumps({"q": _S}), "output": _S, "error": _S}]}),
    "mcp_approval_response": ("responses", {"input": [{"type": "mcp_approval_response",
        "approval_request_id": "a", "approve": False, "reason": _S}]}),
    "computer_call": ("responses", {"input": [{"type": "computer_call", "id": "cc",
        "call_id": "c", "action": {"type": "type", "text": _S}}]}),
    "local_shell_call": ("responses", {"input": [{"type": "local_shell_call", "id": "l",
        "call_id": "c", "action": {"type": "exec", "command": ["echo", _S], "env": {}}}]}),
    "input_file_name": ("responses", {"input": [{"role": "user", "content": [{"type":
        "input_file", "filename": f"{_S} - notes.pdf", "file_data": _PDF}]}]}),
    "mcp_server_description": ("responses", {"input": "hi", "tools": [{"type": "mcp",
        "server_label": "s", "server_url": "https://mcp.example.com", "server_description": _S}]}),
    "file_search_filters": ("responses", {"input": "hi", "tools": [{"type": "file_search",
        "vector_store_ids": ["vs"], "filters": {"type": "eq", "key": "author", "value": _S}}]}),
    "chat_file_name": ("chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "file", "file": {"filename": f"{_S} - notes.pdf", "file_data": _PDF}}]}]}),
    "untyped_parts": ("chat/completions", {"messages": [{"role": "user", "content": [
        _S, {"text": _S}]}]}),
    "web_search_location": ("chat/completions", {"messages": [{"role": "user", "content": "hi"}],
        "web_search_options": {"user_location": {"type": "approximate",
                                                 "approximate": {"city": _S}}}}),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(HISTORY_ITEMS))
def test_tool_items_in_the_history_and_tool_settings_are_redacted(
    make_proxy: ProxyFactory, upstream: FakeUpstream, shape: str
) -> None:
    """Items other than messages are mapped whole, ids, names, URLs and payloads aside, so
    an item type nobody listed is covered too."""
    url = pii_proxy(make_proxy)
    path, body = HISTORY_ITEMS[shape]
    reply = httpx.post(f"{url}/{path}", json={"model": "m", **body}, timeout=30)
    assert reply.status_code == 200, reply.text
    assert_clean(sent(upstream))
    assert placeholders(sent(upstream))
    upstream_body = orjson.loads(sent(upstream))
    if shape == "mcp_call":  # ids and names kept; arguments still JSON
        (item,) = upstream_body["input"]
        assert (item["id"], item["name"], item["server_label"]) == ("m1", "lookup", "s")
        assert PATTERN.search(json.loads(item["arguments"])["q"])
    if shape == "input_file_name":
        part = upstream_body["input"][0]["content"][0]
        assert part["file_data"] == _PDF
    if shape == "chat_file_name":
        part = upstream_body["messages"][0]["content"][0]
        assert part["file"]["file_data"] == _PDF and part["type"] == "file"


def test_placeholders_are_stable_across_turns_and_never_shared(
    client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    history: list[Any] = [{"role": "user", "content": f"I'm {PII['PERSON']}."}]
    upstream.push(Echo())
    first = client.chat.completions.create(model="m", messages=history)
    turn1 = placeholders(sent(upstream))
    history += [
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": f"Also cc Jordan Banks at {PII['EMAIL_ADDRESS']}."},
    ]
    client.chat.completions.create(model="m", messages=history)
    turn2 = placeholders(sent(upstream))
    assert first.choices[0].message.content == f"You said: I'm {PII['PERSON']}."
    assert turn1 and all(token == turn1[0] for token in turn2[:2])  # same person, same token
    assert len(set(turn2)) == 3  # person, Jordan Banks, e-mail: three values, three tokens
    # A fresh conversation, trimmed history: the person still gets the same placeholder.
    client.chat.completions.create(model="m", messages=[history[-1], history[0]])
    assert turn1[0] in placeholders(sent(upstream))


def test_invented_placeholders_are_left_alone(
    client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    upstream.push(Echo(prefix="<PERSON_AAAAAA> and <EMAIL_ADDRESS_QQQQQQ>: "))
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": f"I'm {PII['PERSON']}"}]
    )
    assert reply.choices[0].message.content == (
        f"<PERSON_AAAAAA> and <EMAIL_ADDRESS_QQQQQQ>: I'm {PII['PERSON']}"
    )


@pytest.mark.parametrize("stream", [False, True])
def test_responses_api(client: openai.OpenAI, upstream: FakeUpstream, stream: bool) -> None:
    upstream.push(Echo(pieces=5))
    kwargs: dict[str, Any] = {
        "model": "m",
        "instructions": f"You work for {PII['PERSON']}.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": MESSAGE}]}],
    }
    if stream:
        events = list(client.responses.create(stream=True, **kwargs))
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        done = next(e for e in events if e.type == "response.completed").response.output_text
        assert deltas == done == f"You said: {MESSAGE}"
    else:
        response = client.responses.create(**kwargs)
        assert response.output_text == f"You said: {MESSAGE}"
    body = orjson.loads(sent(upstream))
    assert_clean(sent(upstream))
    assert PATTERN.search(body["instructions"])


def test_completions_prompt_and_embeddings_input(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    with openai_client(pii_proxy(make_proxy)) as plain:
        upstream.push(Echo())
        reply = plain.completions.create(model="m", prompt=MESSAGE)
        assert_clean(sent(upstream))
        assert reply.choices[0].text == f"You said: {MESSAGE}"
        plain.embeddings.create(model="m", input=[MESSAGE])
        assert PII["PERSON"] in sent(upstream).decode()  # embeddings: off by default
    with openai_client(pii_proxy(make_proxy, ", embeddings: true")) as embedding:
        embedding.embeddings.create(model="m", input=[MESSAGE, "plain text"])
        assert_clean(sent(upstream))


def test_actions_mask_redact_hash_and_block(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    settings = ", actions: {CREDIT_CARD: mask, PERSON: redact, EMAIL_ADDRESS: hash, SECRET: block}"
    with openai_client(pii_proxy(make_proxy, settings)) as c:
        with pytest.raises(openai.BadRequestError) as refused:
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": MESSAGE}])
        error = refused.value.body
        assert isinstance(error, dict) and error["code"] == "pii_blocked"
        assert "SECRET" in error["message"] and PII["SECRET"] not in str(error)
        assert upstream.requests == []
        text = MESSAGE.replace(f" Key: {PII['SECRET']}", "")
        upstream.push(Echo())
        reply = c.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    body = sent(upstream).decode()
    assert "***************1111" in body and "<PERSON>" in body
    assert PII["EMAIL_ADDRESS"] not in body and len(body) > len(text)  # a 64-hex hash
    assert PATTERN.search(body)  # the phone number: default action
    content = reply.choices[0].message.content or ""
    assert PII["PHONE_NUMBER"] in content and "<PERSON>" in content  # only pseudonyms return


def test_fails_closed_and_on_error_continue(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    with openai_client(pii_proxy(make_proxy, ", timeout_s: 0.000001")) as c:
        with pytest.raises(openai.InternalServerError) as failed:
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": MESSAGE}])
        assert failed.value.status_code == 503
        assert isinstance(failed.value.body, dict)
        assert failed.value.body["code"] == "guardrail_unavailable"
        assert upstream.requests == []
    settings = ", timeout_s: 0.000001, on_error: continue"
    with openai_client(pii_proxy(make_proxy, settings)) as c:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": MESSAGE}])
        assert PII["PERSON"] in sent(upstream).decode()


def test_secret_from_the_store_is_stable_across_restarts(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, loop_thread: LoopThread
) -> None:
    store = f"store: 'sqlite:///{tmp_path / 'pii.db'}'\n"
    tokens = []
    for _ in range(2):  # two proxies, one after the other, on one store
        url = make_proxy(store + "policies:\n  - pii: {}\n")
        with openai_client(url) as c:
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": MESSAGE}])
        tokens.append(placeholders(sent(upstream)))
    assert tokens[0] == tokens[1] and len(tokens[0]) == 5
    kept = loop_thread.run(SQLiteStore(f"sqlite:///{tmp_path / 'pii.db'}").secret("pii"))
    assert len(kept) == 32


def test_telemetry_has_counts_never_values(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    loop_thread: LoopThread,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    receiver: OtlpReceiver,
) -> None:
    caplog.set_level(logging.DEBUG)
    db = tmp_path / "audit.db"
    url = make_proxy(
        f"store: 'sqlite:///{db}'\n"
        "policies:\n"
        f"  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05,"
        " capture_content: true}\n"
        "  - pii: {secret: 'test-secret-0123456789'}\n"
    )
    with openai_client(url) as c:
        upstream.push(Echo())
        c.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": MESSAGE}],
            stop=["END", f"write to {PII['EMAIL_ADDRESS']}"],
        )
    spans = receiver.wait_for(2)
    metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
    # the e-mail address is sent twice (message and stop sequence): each occurrence counts
    line = 'hookgate_pii_entities_total{action="pseudonymize",entity_type="EMAIL_ADDRESS"} 2.0'
    assert line in metrics
    guard = next(s for s in spans if s.name == "apply_guardrail pii")
    request = next(s for s in spans if s.name.startswith("chat"))
    assert guard.parent_span_id == request.span_id
    assert guard.attributes["hookgate.pii.entities"] == 5
    assert set(guard.attributes["hookgate.pii.entity_types"]) == set(PII)
    records = loop_thread.run(SQLiteStore(f"sqlite:///{db}").audit_records(0))
    assert json.loads(records[-1]["findings"])["PERSON:pseudonymize"] == 1
    exported = " ".join(str(s.attributes) for s in spans)
    assert PATTERN.search(exported)  # captured content is what the model saw
    (stop_end, stop_mail) = request.attributes["gen_ai.request.stop_sequences"]
    assert stop_end == "END" and PATTERN.fullmatch(stop_mail.removeprefix("write to "))
    for where in (metrics, exported, json.dumps(records), caplog.text):
        assert_clean(where)


def test_a_long_analysis_blocks_no_other_request(
    client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}])
    # sentences that may hold a name (the model reads only those): seconds of analysis
    long_text = f"Dear {PII['PERSON']}, " + "Jolanta Wiśniewska met Kwame Mensah today. " * 1500
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        slow = pool.submit(
            client.chat.completions.create,
            model="m",
            messages=[{"role": "user", "content": long_text}],
        )
        time.sleep(0.3)  # the proxy is analyzing the long text (it takes seconds)
        quick = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello"}]
        )
        health = httpx.get(str(client.base_url).removesuffix("/v1/") + "/healthz")
        assert not slow.done()  # both were served while the long analysis was still running
        assert quick.choices[0].message.content and health.status_code == 200
        assert slow.result(timeout=60).choices[0].message.content
    assert_clean(sent(upstream))


@pytest.mark.parametrize("stream", [False, True])
def test_responses_function_call_arguments_get_real_values(
    client: openai.OpenAI, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.push(Echo(tool="send_email", pieces=6))
    kwargs: dict[str, Any] = {
        "model": "m",
        "input": MESSAGE,
        "tools": [{"type": "function", "name": "send_email", "parameters": {}}],
    }
    if stream:
        events = list(client.responses.create(stream=True, **kwargs))
        deltas = "".join(
            e.delta for e in events if e.type == "response.function_call_arguments.delta"
        )
        done = next(e for e in events if e.type == "response.function_call_arguments.done")
        assert json.loads(deltas) == json.loads(done.arguments)
        completed = next(e for e in events if e.type == "response.completed").response
        arguments = completed.output[0].arguments  # type: ignore[union-attr]
    else:
        arguments = client.responses.create(**kwargs).output[0].arguments  # type: ignore[union-attr]
    assert_clean(sent(upstream))
    assert json.loads(arguments) == {"text": f"You said: {MESSAGE}"}


def test_a_value_found_once_is_redacted_everywhere_in_the_request(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    # EMP-123456 scores 0.3: found only next to the word "employee" (context), yet the
    # bare mention in the other message gets the same placeholder.
    settings = (
        ", recognizers: [{entity: EMPLOYEE_ID, patterns: [{regex: 'EMP-\\d{6}', score: 0.3}],"
        " context: [employee]}]"
    )
    with openai_client(pii_proxy(make_proxy, settings)) as c:
        c.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "Badge EMP-123456 stopped working."},
                {"role": "user", "content": "The employee EMP-123456 needs a new one."},
            ],
        )
    body = orjson.loads(sent(upstream))
    first, second = (m["content"] for m in body["messages"])
    assert "EMP-123456" not in sent(upstream).decode()
    assert PATTERN.findall(first) == PATTERN.findall(second)


def test_a_name_s_parts_are_replaced_wherever_they_stand_alone(
    client: openai.OpenAI, upstream: FakeUpstream
) -> None:
    """Turn 2 names the person of turn 1 by given name and by title + family name: each gets
    the keyed hash of the part (stable, exactly restorable); a sentence that starts with a
    function word that is also a given name ("Will you …") is left alone."""
    messages: list[Any] = [
        {"role": "user", "content": "Please write to Jolanta Wiśniewska and Will Carter."},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "It's Jolanta again. Ms. Wiśniewska wants it by Friday. "
         "Will you hurry? Carter knows."},
    ]  # fmt: skip
    upstream.push(Echo())
    reply = client.chat.completions.create(model="m", messages=messages)
    body = sent(upstream).decode()
    for value in ("Jolanta", "Wiśniewska", "Carter", json.dumps("Wiśniewska")[1:-1]):
        assert value not in body
    secret = b"test-secret-0123456789"
    for part in ("Jolanta", "Wiśniewska", "Carter"):
        assert placeholder(secret, "PERSON", part) in body
    assert "Will you hurry?" in body
    assert reply.choices[0].message.content == f"You said: {messages[-1]['content']}"
