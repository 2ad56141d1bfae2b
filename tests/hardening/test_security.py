"""No one gets in, nothing leaks out: request routing cannot be redirected (no SSRF), the
relay passes nothing it was not meant to, and no response header carries a provider key."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import httpx
import openai
import orjson
import pytest

from tests.conftest import CLIENT_KEY, UPSTREAM_KEY, ProxyFactory, openai_client
from tests.fakes import FakeUpstream, Status, send_raw


class Canary:
    """A listening socket that records every connection made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def canary() -> Iterator[Canary]:
    running = Canary()
    yield running
    running.close()


def _post(target: str, headers: str, body: bytes) -> bytes:
    head = f"POST {target} HTTP/1.1\r\n{headers}Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def test_no_request_field_or_header_can_redirect_the_proxy(
    proxy_url: str, upstream: FakeUpstream, canary: Canary
) -> None:
    evil = f"127.0.0.1:{canary.port}"
    base = proxy_url.removesuffix("/v1")
    body = orjson.dumps(
        {"model": "m", "messages": [], "base_url": f"http://{evil}/v1", "api_base": f"http://{evil}",
         "url": f"http://{evil}/x", "extra_headers": {"host": evil}}
    )  # fmt: skip
    headers = (
        f"Host: {evil}\r\nX-Forwarded-Host: {evil}\r\nForwarded: host={evil}\r\n"
        f"X-Forwarded-Proto: http\r\nX-Original-URL: http://{evil}/\r\n"
        f"Content-Type: application/json\r\nConnection: close\r\n"
    )
    requests = [
        # a body naming other upstreams, and every host-ish header pointing at the canary
        _post("/v1/chat/completions", headers, body),
        # absolute-form request targets, for a model route and for the generic relay
        _post(f"http://{evil}/v1/chat/completions", headers, body),
        f"GET http://{evil}/v1/files HTTP/1.1\r\n{headers}\r\n".encode(),
        # a relay path that tries to become a URL of its own
        f"GET /v1//{evil}/v1/files HTTP/1.1\r\n{headers}\r\n".encode(),
        f"GET /v1/@{evil}/files HTTP/1.1\r\n{headers}\r\n".encode(),
        f"GET /v1/files?next=http://{evil}/ HTTP/1.1\r\n{headers}\r\n".encode(),
    ]
    for raw in requests:
        reply = send_raw(base, raw)
        assert reply.startswith(b"HTTP/1.1 "), reply[:200]
    assert canary.connections == 0
    upstream_port = httpx.URL(upstream.base_url).port
    assert upstream.requests, "the requests that were served went to the configured upstream"
    assert all(r.headers["host"] == f"127.0.0.1:{upstream_port}" for r in upstream.requests)


def test_an_upstream_redirect_is_neither_followed_nor_relayed(
    proxy_url: str, upstream: FakeUpstream, canary: Canary
) -> None:
    """A client SDK follows a relayed ``Location``: it would resend the prompt to a host
    the upstream chose, past redaction, budgets and the audit log."""
    elsewhere = {"location": f"http://127.0.0.1:{canary.port}/v1/chat/completions"}
    client = openai_client(proxy_url)
    for status in (301, 302, 307, 308):
        upstream.push(Status(status, {}, elsewhere))
        with pytest.raises(openai.APIStatusError) as info:
            client.chat.completions.create(model="m", messages=[])
        assert info.value.status_code == 502
        assert "location" not in info.value.response.headers
        upstream.relay_script.append(Status(status, {}, elsewhere))
        relayed = httpx.get(f"{proxy_url}/files/file-1")
        assert relayed.status_code == 502 and "location" not in relayed.headers
    assert canary.connections == 0


def test_relay_query_and_path_cannot_inject_headers(proxy_url: str, upstream: FakeUpstream) -> None:
    base = proxy_url.removesuffix("/v1")
    for target in (
        b"/v1/batches/a%0d%0aX-Injected:%201",  # refused: a path may not hold a line break
        b"/v1/batches/b?x=1%0d%0aX-Injected:%202",  # relayed, as the client encoded it
    ):
        reply = send_raw(
            base, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert int(reply.split(b" ", 2)[1]) < 500, reply[:200]
    assert [r.query for r in upstream.requests] == ["x=1%0d%0aX-Injected:%202"]
    assert all("x-injected" not in r.headers for r in upstream.requests)


@pytest.mark.parametrize("stream", [False, True])
def test_no_response_header_carries_a_provider_key(
    make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool
) -> None:
    url = make_proxy(extra="keys: {admin_key: admin-secret-key-123}")
    base = url.removesuffix("/v1")
    client = openai_client(url)
    model_call = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=stream
    ).http_response
    model_call.read()
    replies = [
        model_call,
        httpx.get(f"{url}/models", headers={"authorization": f"Bearer {CLIENT_KEY}"}),
        httpx.get(f"{url}/files", headers={"authorization": f"Bearer {CLIENT_KEY}"}),
        httpx.post(f"{url}/chat/completions", content=b"{bad json"),
        httpx.get(f"{base}/admin/keys", headers={"authorization": "Bearer wrong"}),
        httpx.get(f"{base}/readyz"),
        httpx.get(f"{base}/metrics"),
    ]
    for reply in replies:
        assert reply.status_code < 500, reply.text
        shown = " ".join(f"{k}: {v}" for k, v in reply.headers.items())
        assert UPSTREAM_KEY not in shown and "admin-secret-key-123" not in shown
        text = reply.text
        assert UPSTREAM_KEY not in text and "admin-secret-key-123" not in text, (reply.url, text)
