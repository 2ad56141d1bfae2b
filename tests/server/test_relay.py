"""The real ``openai`` client through the real proxy to the fake upstream: a faithful relay."""

from __future__ import annotations

import asyncio
import gzip
import io
import time
from pathlib import Path

import httpx
import openai
import orjson
import pytest
from aiohttp import web

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import (
    CLIENT_KEY,
    TEST_STORE,
    UPSTREAM_KEY,
    ProxyFactory,
    config_text,
    openai_client,
)
from tests.fakes import FakeUpstream, LoopThread, Raw, RunningApp, Status, send_raw


def test_chat_completion_round_trip(proxy_url: str, upstream: FakeUpstream) -> None:
    reply = openai_client(proxy_url).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )
    completion = reply.parse()
    assert completion.choices[0].message.content == "Hello from the fake upstream."
    assert reply.headers["x-hookgate-upstream"] == "up/gpt-4o-mini"
    assert len(reply.headers["x-hookgate-request-id"]) == 32
    assert upstream.last.path == "/v1/chat/completions"


def test_the_upstream_gets_the_body_as_checked_with_every_unknown_field(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    raw = (
        b'{"model":"m","messages":[{"role":"user","content":"x"}],"parallel_tool_calls":false,'
        b'"reasoning":{"effort":"high"},"include":["a"],"future_field":{"n":[1,2.50,"\\u00e9"]}}'
    )
    response = httpx.post(
        f"{proxy_url}/chat/completions", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    assert orjson.loads(upstream.last.body) == orjson.loads(raw)
    # a duplicate key is sent once, with the value every policy saw (the last)
    twice = b'{"model":"m","messages":[{"role":"user","content":"hidden"}],"messages":[]}'
    response = httpx.post(
        f"{proxy_url}/chat/completions", content=twice, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    assert upstream.last.body == b'{"model":"m","messages":[]}'


def test_alias_rewrites_model_and_keeps_unknown_fields(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(models="  fast: [{provider: up, model: real-model-1}]")
    reply = openai_client(url).chat.completions.with_raw_response.create(
        model="fast",
        messages=[{"role": "user", "content": "hi"}],
        parallel_tool_calls=False,
        extra_body={"reasoning": {"effort": "low"}, "include": ["x"]},
    )
    sent = upstream.last.json()
    assert sent["model"] == "real-model-1"
    assert sent["parallel_tool_calls"] is False
    assert sent["reasoning"] == {"effort": "low"} and sent["include"] == ["x"]
    assert reply.headers["x-hookgate-upstream"] == "up/real-model-1"


def test_unknown_alias_without_wildcard_is_404_model_not_found(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(models="  fast: [{provider: up, model: real}]")
    with pytest.raises(openai.NotFoundError) as info:
        openai_client(url).chat.completions.create(model="other", messages=[])
    assert info.value.code == "model_not_found"
    assert info.value.param == "model"
    assert upstream.requests == []


def test_models_lists_aliases(make_proxy: ProxyFactory) -> None:
    url = make_proxy(
        models="  fast: [{provider: up, model: a}]\n  smart: [{provider: up, model: b}]"
    )
    ids = [m.id for m in openai_client(url).models.list()]
    assert ids == ["fast", "smart"]
    assert openai_client(url).models.retrieve("smart").id == "smart"
    with pytest.raises(openai.NotFoundError):
        openai_client(url).models.retrieve("nope")


def test_models_behind_the_wildcard_are_the_providers_own_merged_and_cached(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    backup: FakeUpstream,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = make_proxy(loaded=load_text(
        f"store: 'sqlite:///{TEST_STORE}'\nserver: {{models_cache_s: 0.3}}\n"
        f"providers:\n  up: {{base_url: '{upstream.base_url}', api_key: {UPSTREAM_KEY}}}\n"
        f"  two: {{base_url: '{backup.base_url}', api_key: {UPSTREAM_KEY}}}\n"
        "  local: {type: echo}\n"
        "models:\n  fast: [{provider: up, model: a}]\n"
        '  "*": [{provider: up}, {provider: two}, {provider: local}]\n'
    ))  # fmt: skip
    backup.models = ["fake-model-b", "fake-model-c", "fast"]
    client = openai_client(url)
    ids = [m.id for m in client.models.list()]
    assert ids == ["fast", "fake-model-a", "fake-model-b", "fake-model-c"]  # no id twice
    listed = {m.id: m for m in client.models.list()}
    assert listed["fake-model-c"].owned_by == "fake" and listed["fast"].owned_by == "hookgate"
    # cached: a burst of listings asks each provider once
    calls = [r for r in upstream.requests if r.path == "/v1/models"]
    assert len(calls) == 1
    assert calls[0].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    # a provider that cannot list is left out with a log line, never a 5xx; then refreshed
    time.sleep(0.35)
    upstream.models = Status(500, {"error": {"message": "down"}})
    assert [m.id for m in client.models.list()] == ["fast", "fake-model-b", "fake-model-c"]
    assert "provider 'up' cannot list its models" in caplog.text
    time.sleep(0.35)
    upstream.models = ["fake-model-z"]
    assert "fake-model-z" in [m.id for m in client.models.list()]
    # a model behind "*" is answered by the provider
    assert client.models.retrieve("fake-model-z").id == "fake-model-z"
    assert upstream.last.path == "/v1/models/fake-model-z"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("fake-model-q")


def test_a_key_limited_to_some_models_lists_only_those(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    from hookgate.store.keys import KeyRecord, digest, generate, key_id
    from hookgate.store.sqlite import SQLiteStore

    db = tmp_path / "keys.db"
    secret = generate()

    async def add() -> None:
        store = SQLiteStore(f"sqlite:///{db}")
        await store.open()
        record = KeyRecord(key_id(digest(secret)), digest(secret), "t", models=("fake-model-b",))
        await store.add_key(record)
        await store.close()

    asyncio.run(add())
    url = make_proxy(f"store: 'sqlite:///{db}'\nkeys: {{required: true}}\n")
    with openai.OpenAI(base_url=url, api_key=secret, max_retries=0) as client:
        assert [m.id for m in client.models.list()] == ["fake-model-b"]
        with pytest.raises(openai.PermissionDeniedError):
            client.models.retrieve("fake-model-a")


def test_headers_forwarded_and_credential_replaced(proxy_url: str, upstream: FakeUpstream) -> None:
    c = openai_client(
        proxy_url,
        default_headers={
            "OpenAI-Beta": "assistants=v2",
            "OpenAI-Organization": "org-1",
            "OpenAI-Project": "proj-1",
            "Idempotency-Key": "idem-1",
            "X-Internal-Secret": "do-not-forward",
            "Cookie": "a=b",
        },
    )
    reply = c.chat.completions.with_raw_response.create(model="m", messages=[])
    sent = upstream.last.headers
    assert sent["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert CLIENT_KEY not in str(sent)
    assert sent["openai-beta"] == "assistants=v2"
    assert sent["openai-organization"] == "org-1" and sent["openai-project"] == "proj-1"
    assert sent["idempotency-key"] == "idem-1"
    assert sent["user-agent"].startswith("OpenAI/Python")
    assert any(name.startswith("x-stainless-") for name in sent)
    assert "x-internal-secret" not in sent and "cookie" not in sent
    # upstream headers clients read come back; cookies and framing do not
    assert reply.headers["x-request-id"] == "req_fake_123"
    assert reply.headers["openai-processing-ms"] == "7"
    assert reply.headers["x-ratelimit-remaining-requests"] == "99"
    assert "set-cookie" not in reply.headers


def test_headers_the_client_lists_in_connection_are_not_forwarded(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    headers = {"OpenAI-Project": "proj-1", "Idempotency-Key": "idem-1", "OpenAI-Beta": "x",
               "Connection": "keep-alive, OpenAI-Project, idempotency-key"}  # fmt: skip
    body = {"model": "m", "messages": []}
    assert httpx.post(f"{proxy_url}/chat/completions", json=body, headers=headers).is_success
    sent = upstream.last.headers
    assert "openai-project" not in sent and "idempotency-key" not in sent
    assert sent["openai-beta"] == "x"


def test_upstream_cookies_are_never_replayed(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """The upstream sets a cookie on every answer (as Cloudflare does); the proxy's shared
    client must not keep it and send it on later requests, which may be other clients'.
    ``localhost`` rather than an IP: aiohttp's default jar ignores cookies from IP hosts."""
    named = upstream.base_url.replace("127.0.0.1", "localhost")
    url = make_proxy(loaded=load_text(config_text(named)))
    client = openai_client(url)
    client.chat.completions.create(model="m", messages=[])
    client.chat.completions.create(model="m", messages=[])
    httpx.get(f"{url}/files")  # and through the generic relay
    assert len(upstream.requests) == 3
    assert all("cookie" not in r.headers for r in upstream.requests)


@pytest.mark.parametrize(
    ("status", "exc"),
    [
        (400, openai.BadRequestError),  # (a 401 is the proxy's own key: see below)
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (422, openai.UnprocessableEntityError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
    ],
)
def test_upstream_errors_relayed_unchanged(
    proxy_url: str, upstream: FakeUpstream, status: int, exc: type[Exception]
) -> None:
    body = {
        "error": {
            "message": f"upstream says {status}",
            "type": "x",
            "param": "p",
            "code": f"c{status}",
        }
    }
    upstream.push(Status(status, body, {"retry-after": "3"}))
    response = httpx.post(f"{proxy_url}/chat/completions", json={"model": "m", "messages": []})
    assert response.status_code == status
    assert response.json() == body
    assert response.headers["retry-after"] == "3"
    upstream.push(Status(status, body))
    with pytest.raises(exc) as info:
        openai_client(proxy_url).chat.completions.create(model="m", messages=[])
    assert info.value.code == f"c{status}"  # type: ignore[attr-defined]


def test_an_upstream_quoting_the_provider_key_never_shows_it_to_the_client(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    """Upstreams that reject a key quote it, whole or in part (``sk-UPSTR****3456``). On a
    model route that 401 is the operator's problem: a 502 that says so, without the
    provider's body; the relay passes it on, the key masked."""
    partly = f"{UPSTREAM_KEY[:8]}****{UPSTREAM_KEY[-4:]}"
    quoted = Status(
        401,
        {"error": {"message": f"Incorrect API key provided: {UPSTREAM_KEY} ({partly}).",
                   "type": "x", "param": None, "code": "invalid_api_key"}},
        {"www-authenticate": f'Bearer error="invalid_token", key="{UPSTREAM_KEY}"'},
    )  # fmt: skip
    body = {"model": "m", "messages": []}
    answers = []
    for stream in (False, True):
        upstream.push(quoted)
        answers.append(httpx.post(f"{proxy_url}/chat/completions", json={**body, "stream": stream}))
    for response in answers:
        assert response.status_code == 502
        error = response.json()["error"]
        assert error["code"] == "upstream_auth_failed"
        assert "refused the credentials hookgate sends for provider 'up'" in error["message"]
        assert partly not in response.text and "www-authenticate" not in response.headers
    upstream.relay_script.append(quoted)
    relayed = httpx.get(f"{proxy_url}/files/file-1")
    assert relayed.status_code == 401
    assert relayed.json()["error"]["message"].startswith(
        "Incorrect API key provided: [credential removed by hookgate]"
    )
    assert "[credential removed by hookgate]" in relayed.headers["www-authenticate"]
    for response in [*answers, relayed]:
        assert UPSTREAM_KEY not in response.text and UPSTREAM_KEY not in str(response.headers)
    with pytest.raises(openai.InternalServerError) as info:
        upstream.push(quoted)
        openai_client(proxy_url).chat.completions.create(model="m", messages=[])
    assert UPSTREAM_KEY not in str(info.value)


def test_a_stream_quoting_the_provider_key_never_shows_it_to_the_client(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    from tests.fakes import Events

    error = orjson.dumps({"error": {"message": f"Incorrect API key provided: {UPSTREAM_KEY}",
                                    "type": "invalid_request_error"}})  # fmt: skip
    first = next(synth.chat_stream("m", synth.Reply(text="hi"), include_usage=False))
    body = {"model": "m", "messages": [], "stream": True}
    upstream.push(Events([first, b"data: " + error + b"\n\n"]))  # after the first byte
    mid_stream = httpx.post(f"{proxy_url}/chat/completions", json=body)
    upstream.push(Events([b"data: " + error + b"\n\n"]))  # before it: a 502
    before = httpx.post(f"{proxy_url}/chat/completions", json=body)
    assert mid_stream.status_code == 200 and before.status_code == 502
    for response in (mid_stream, before):
        assert UPSTREAM_KEY not in response.text
        assert "Incorrect API key provided: [credential removed by hookgate]" in response.text


def test_a_success_echoing_the_provider_key_in_a_header_is_masked(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    echoed = {"x-echo-auth": f"Bearer {UPSTREAM_KEY}"}
    upstream.push(Status(200, synth.chat_completion("m", synth.Reply(text="hi")), echoed))
    reply = httpx.post(f"{proxy_url}/chat/completions", json={"model": "m", "messages": []})
    assert reply.status_code == 200
    assert reply.headers["x-echo-auth"] == "[credential removed by hookgate]"


def test_streamed_chat(proxy_url: str) -> None:
    stream = openai_client(proxy_url).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello from the fake upstream."
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 15


def test_responses_json_and_stream(proxy_url: str, upstream: FakeUpstream) -> None:
    c = openai_client(proxy_url)
    response = c.responses.create(model="m", input="hi", include=["reasoning.encrypted_content"])
    assert response.output_text == "Hello from the fake upstream."
    assert upstream.last.json()["include"] == ["reasoning.encrypted_content"]
    with c.responses.stream(model="m", input="hi") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == "Hello from the fake upstream."


def test_embeddings_and_completions(proxy_url: str, upstream: FakeUpstream) -> None:
    c = openai_client(proxy_url)
    vectors = c.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
    assert len(vectors.data) == 2 and upstream.last.path == "/v1/embeddings"
    assert vectors.data[0].embedding == synth.embedding_vector("a")
    upstream.push(synth.Reply(text="legacy text"))
    assert c.completions.create(model="m", prompt="p").choices[0].text == "legacy text"
    upstream.push(synth.Reply(text="streamed legacy"))
    pieces = [c.choices[0].text for c in c.completions.create(model="m", prompt="p", stream=True)]
    assert "".join(pieces) == "streamed legacy"


def test_generic_relay_upload_and_download(proxy_url: str, upstream: FakeUpstream) -> None:
    c = openai_client(proxy_url)
    payload = b'{"custom_id": "1"}\n' * 20000
    created = c.files.create(file=("batch.jsonl", io.BytesIO(payload)), purpose="batch")
    assert created.bytes == len(payload)
    assert upstream.last.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert c.files.content(created.id).read() == payload


def test_query_strings_reach_the_upstream(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    """A base_url's own query (Azure's api-version) and the client's, on every route."""
    url = make_proxy(loaded=load_text(config_text(f"{upstream.base_url}?api-version=2024-10-21")))
    client = openai.OpenAI(
        base_url=url, api_key=CLIENT_KEY, max_retries=0, default_query={"trace": "a b"}
    )
    client.chat.completions.create(model="m", messages=[])
    client.embeddings.create(model="m", input="x")
    client.files.list()
    assert [(r.path, r.query) for r in upstream.requests] == [
        ("/v1/chat/completions", "api-version=2024-10-21&trace=a+b"),
        ("/v1/embeddings", "api-version=2024-10-21&trace=a+b"),
        ("/v1/files", "api-version=2024-10-21&trace=a+b"),
    ]


def test_generic_relay_compressed_bodies_arrive_whole(
    make_proxy: ProxyFactory, loop_thread: LoopThread
) -> None:
    """aiohttp decodes compressed bodies both ways; their encoded lengths must not be
    relayed with the decoded bytes (that cut them short, silently)."""
    document = orjson.dumps({"id": "file-1", "lines": [f"line {i}" for i in range(500)]})
    received: list[bytes] = []

    async def compressed(request: web.Request) -> web.Response:
        received.append(await request.read())
        out = web.Response(body=document, content_type="application/json")
        out.enable_compression(web.ContentCoding.gzip)
        return out

    app = web.Application()
    app.router.add_route("*", "/v1/{tail:.*}", compressed)
    upstream = loop_thread.run(RunningApp(app).start())
    try:
        url = make_proxy(loaded=load_text(config_text(f"{upstream.url}/v1")))
        upload = b'{"custom_id": "1"}\n' * 300
        response = httpx.post(
            f"{url}/batches",
            content=gzip.compress(upload),
            headers={"content-encoding": "gzip", "content-type": "application/jsonl"},
        )
        assert response.status_code == 200
        assert received == [upload]
        got = httpx.get(f"{url}/files/file-1", headers={"accept-encoding": "identity"})
        assert got.content == document
    finally:
        loop_thread.run(upstream.stop())


def test_generic_relay_cut_mid_body_is_not_complete(proxy_url: str, upstream: FakeUpstream) -> None:
    upstream.files["file-cut"] = b"x" * 200_000
    with pytest.raises(httpx.RemoteProtocolError):  # at once: not a hang, not a short 200
        httpx.get(f"{proxy_url}/files/file-cut/content", timeout=30).read()
    # the proxy is fine afterwards
    assert httpx.get(f"{proxy_url.removesuffix('/v1')}/healthz").status_code == 200


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "POST"])
def test_generic_relay_any_method_with_query(
    proxy_url: str, upstream: FakeUpstream, method: str
) -> None:
    response = httpx.request(
        method,
        f"{proxy_url}/batches/b1?limit=2&after=x%2Fy",
        content=b"abc" if method != "GET" else None,
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
    )
    assert response.status_code == 200
    assert response.json() == {
        "method": method,
        "path": "/v1/batches/b1",
        "query": "limit=2&after=x%2Fy",
        "body_size": 0 if method == "GET" else 3,
    }
    assert response.headers["x-request-id"] == "req_fake_123"
    assert upstream.last.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"


def raw_request(url: str, request_line: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send one request as written (no client-side path normalisation)."""
    head = f"{request_line}\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    data = send_raw(url, head + body)
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.mark.parametrize(
    "path",
    [
        "/v1/files/../../admin", "/v1/files/%2e%2e/secret", "/v1/./x", "/v1/files/%2E%2E%2Fadmin",
        "/v1/files/%252e%252e/admin", "/v1/files/..;/admin", "/v1/files\\..\\admin",
        # spellings of a model endpoint that some upstream servers route to it, which
        # would skip the pipeline (PII redaction, budgets, model limits)
        "/v1/chat%2Fcompletions", "/v1/chat%2fcompletions", "/v1/chat/completions/",
        "/v1//chat/completions", "/v1/Chat/Completions", "/v1/chat/completions;x",
        "/v1/%63hat/completions", "/v1/EMBEDDINGS", "/v1/models/gpt-4o/",
        # a client whose base URL ended in the version already: no API has these paths
        "/v1/v1/chat/completions", "/v1/v1/messages", "/v1/v1beta/models/g:generateContent",
        "/v1/V1/responses",
    ],
)  # fmt: skip
def test_generic_relay_refuses_paths_an_upstream_could_resolve_elsewhere(
    proxy_url: str, upstream: FakeUpstream, path: str
) -> None:
    for method in ("GET", "POST"):
        status, body = raw_request(
            proxy_url, f"{method} {path} HTTP/1.1\r\nContent-Length: 2", body=b"{}"
        )
        assert status in (400, 404), (method, path, status)
        assert orjson.loads(body)["error"]["message"]
    assert upstream.requests == []


def test_a_doubled_api_version_is_refused_saying_how_to_set_the_base_url(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    """``GOOGLE_GEMINI_BASE_URL=http://host/v1`` makes Gemini CLI send
    ``/v1/v1beta/models/...``: it would have gone to the relay, past every policy."""
    status, body = raw_request(
        proxy_url, "POST /v1/v1beta/models/g:generateContent HTTP/1.1\r\nContent-Length: 2",
        body=b"{}",
    )  # fmt: skip
    assert status == 400
    message = orjson.loads(body)["error"]["message"]
    assert "/v1/v1beta/" in message and "the host alone" in message
    assert upstream.requests == []


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE", "OPTIONS", "GET"])
@pytest.mark.parametrize("path", ["/chat/completions", "/responses", "/embeddings"])
def test_a_model_endpoint_takes_no_body_past_its_policies(
    make_proxy: ProxyFactory, upstream: FakeUpstream, method: str, path: str
) -> None:
    """POST runs the policies; any other method with a body went to the relay, which runs
    none (a PUT carried raw PII to the provider). A GET without one is relayed."""
    url = make_proxy("policies:\n  - pii: {}\n")
    body = {"model": "m", "messages": [{"role": "user", "content": "mail jo@example.com"}]}
    refused = httpx.request(method, f"{url}{path}", json=body)
    assert refused.status_code == 405, refused.text
    assert refused.json()["error"]["code"] == "method_not_allowed"
    assert upstream.requests == []
    listed = httpx.get(f"{url}{path}", params={"limit": 2})
    assert listed.status_code == 200 and [r.path for r in upstream.requests] == [f"/v1{path}"]


def test_relay_off_answers_404_and_model_endpoints_still_work(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(extra="server: {relay: false}")
    response = httpx.get(f"{url}/files")
    assert response.status_code == 404
    assert "server.relay is off" in response.json()["error"]["message"]
    assert openai_client(url).chat.completions.create(model="m", messages=[]).choices
    assert [r.path for r in upstream.requests] == ["/v1/chat/completions"]


def test_bad_input_gets_openai_errors(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    url = make_proxy(extra="server: {max_body_bytes: 1000}")
    cases = [
        (b"{not json", 400),
        (b"", 400),
        (b"[1,2]", 400),
        (b'{"messages": []}', 400),
        (b'{"model": 5}', 400),
        (b'{"model": "m", "stream": "yes"}', 400),
        (b"\xff\xfe", 400),
        (b'{"model": "m", "messages": "' + b"x" * 2000 + b'"}', 413),
    ]
    for body, status in cases:
        response = httpx.post(f"{url}/chat/completions", content=body)
        assert response.status_code == status, body[:40]
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
    chunked = httpx.post(f"{url}/chat/completions", content=iter([b"x" * 600, b"y" * 600]))
    assert chunked.status_code == 413
    assert httpx.get(f"{url.removesuffix('/v1')}/nowhere").status_code == 404
    assert upstream.requests == []
    # GET on a model path is OpenAI's list of stored completions: relayed, not refused
    assert httpx.get(f"{url}/chat/completions").json()["method"] == "GET"


def test_malformed_upstream_json_is_502(proxy_url: str, upstream: FakeUpstream) -> None:
    upstream.push(Raw(b'{"id": "truncated'))
    with pytest.raises(openai.InternalServerError) as info:
        openai_client(proxy_url).chat.completions.create(model="m", messages=[])
    assert info.value.status_code == 502
    assert info.value.code == "upstream_bad_response"  # type: ignore[attr-defined]


def test_health_and_ready(proxy_url: str) -> None:
    base = proxy_url.removesuffix("/v1")
    assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{base}/readyz").json()
    assert ready["status"] == "ready" and ready["providers"] == ["up"]


def test_tool_call_round_trip_sync_and_streamed(proxy_url: str) -> None:
    c = openai_client(proxy_url)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
    ]
    messages: list[dict[str, object]] = [{"role": "user", "content": "weather?"}]
    first = c.chat.completions.create(model="m", messages=messages, tools=tools)  # type: ignore[arg-type]
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert orjson.loads(call.function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21C"},
    ]
    stream = c.chat.completions.create(model="m", messages=messages, tools=tools, stream=True)  # type: ignore[arg-type]
    text = "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices)
    assert text == "The tool said: sunny, 21C"


async def test_async_client_concurrent(proxy_url: str) -> None:
    import asyncio

    c = openai.AsyncOpenAI(base_url=proxy_url, api_key=CLIENT_KEY, max_retries=0)
    results = await asyncio.gather(
        *[
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])
            for i in range(20)
        ]
    )
    assert {r.choices[0].message.content for r in results} == {"Hello from the fake upstream."}
    stream = await c.chat.completions.create(model="m", messages=[], stream=True)
    text = "".join([ch.choices[0].delta.content or "" async for ch in stream if ch.choices])
    assert text == "Hello from the fake upstream."
    await c.close()
