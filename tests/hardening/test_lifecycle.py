"""Graceful edges: SIGTERM under load drains every stream, a config reload under load drops
no request, and ``/readyz`` says when the store is gone."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import httpx
import orjson
import pytest
from aiohttp import web

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream, RunningApp, start_serve


class Upstream:
    """Streams slowly (8 events, 0.25 s apart) and records each request's system prompt."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self.server = RunningApp(app)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        messages = body.get("messages") or [{}]
        self.prompts.append(str(messages[0].get("content", "")))
        reply = synth.Reply(text="one two three four five six seven eight", pieces=8, id="x")
        if not body.get("stream"):
            return web.json_response(synth.chat_completion("m", reply))
        out = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await out.prepare(request)
        for block in synth.chat_stream("m", reply, include_usage=False):
            await out.write(block)
            await asyncio.sleep(0.25)
        await out.write_eof()
        return out


@pytest.fixture
async def slow_upstream() -> AsyncIterator[Upstream]:
    running = Upstream()
    await running.server.start()
    yield running
    await running.server.stop()


def _config(path: Path, upstream: str, prompt: str, extra: str = "") -> None:
    path.write_text(
        f"store: 'sqlite:///{path.parent / 'life.db'}'\n"
        "server: {reload: true, reload_interval_s: 0.1, shutdown_timeout_s: 20}\n"
        f"providers: {{up: {{base_url: '{upstream}', api_key: sk-life}}}}\n"
        'models: {"*": [{provider: up}]}\n'
        f"policies:\n  - system_prompt: {{prepend: '{prompt}'}}\n{extra}"
    )


async def _stream(session: aiohttp.ClientSession, url: str) -> bytes:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    async with session.post(f"{url}/v1/chat/completions", json=body) as response:
        assert response.status == 200
        return await response.read()


async def test_sigterm_under_load_drains_every_stream(
    slow_upstream: Upstream, tmp_path: Path
) -> None:
    config = tmp_path / "hookgate.yaml"
    _config(config, f"{slow_upstream.server.url}/v1", "Be brief.")
    process, url, _ = await asyncio.to_thread(start_serve, "--config", str(config))
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            streams = [asyncio.create_task(_stream(session, url)) for _ in range(40)]
            deadline = time.monotonic() + 10
            while len(slow_upstream.prompts) < 40:  # every stream in flight (each takes 2 s)
                assert time.monotonic() < deadline, "the streams never all reached the upstream"
                await asyncio.sleep(0.02)
            assert not any(stream.done() for stream in streams)
            process.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.3)
            port = int(url.rsplit(":", 1)[1])
            with pytest.raises(OSError):  # no new connections once draining
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            bodies = await asyncio.gather(*streams)
        assert all(body.rstrip().endswith(b"data: [DONE]") for body in bodies)
        assert all(b"event: error" not in body for body in bodies)
        assert await asyncio.to_thread(process.wait, 20) == 0
    finally:  # a failure here must not leave the server running into the next test
        if process.poll() is None:
            process.kill()
            await asyncio.to_thread(process.wait, 20)
        assert process.stderr is not None
        process.stderr.close()


async def test_reload_under_load_drops_no_request(slow_upstream: Upstream, tmp_path: Path) -> None:
    config = tmp_path / "hookgate.yaml"
    upstream = f"{slow_upstream.server.url}/v1"
    _config(config, upstream, "version 0")
    process, url, _ = await asyncio.to_thread(start_serve, "--config", str(config))
    failures: list[str] = []
    done = 0
    stop = asyncio.Event()

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal done
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        while not stop.is_set():
            async with session.post(f"{url}/v1/chat/completions", json=body) as response:
                if response.status != 200:
                    failures.append(f"{response.status} {await response.text()}")
                await response.read()
            done += 1

    try:
        async with aiohttp.ClientSession() as session:
            load = [asyncio.create_task(client(session)) for _ in range(8)]
            streams = [asyncio.create_task(_stream(session, url)) for _ in range(8)]
            for version in range(1, 7):
                await asyncio.sleep(0.4)
                if version == 4:  # a broken edit: the previous config keeps serving
                    config.write_text("policies: [ {this is: not valid\n")
                else:
                    _config(config, upstream, f"version {version}")
                if version % 2:
                    process.send_signal(signal.SIGHUP)
            await asyncio.sleep(0.5)
            stop.set()
            await asyncio.gather(*load)
            bodies = await asyncio.gather(*streams)
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 20)
        assert process.stderr is not None
        log = process.stderr.read()
        process.stderr.close()
    assert failures == []
    assert done > 50
    assert all(body.rstrip().endswith(b"data: [DONE]") for body in bodies)
    assert slow_upstream.prompts[-1].startswith("version 6")  # the last edit took effect
    assert any(p.startswith("version 3") for p in slow_upstream.prompts)
    assert "Traceback" not in log


def test_readyz_reports_a_dead_store(
    make_proxy: ProxyFactory, upstream: FakeUpstream, refused_port: int
) -> None:
    port = refused_port
    store = f"store: 'redis://:store-password-42@127.0.0.1:{port}/0?password=query-secret-7'\n"
    url = make_proxy(loaded=load_text(config_text(upstream.base_url, store)))
    base = url.removesuffix("/v1")
    started = time.monotonic()
    ready = httpx.get(f"{base}/readyz", timeout=10)
    assert ready.status_code == 503
    body = ready.json()
    assert body["status"] == "unavailable" and body["store"]["ready"] is False
    assert "store-password-42" not in ready.text and "query-secret-7" not in ready.text
    assert f"redis://127.0.0.1:{port}/0" in ready.text  # still says which store
    assert time.monotonic() - started < 5
    assert httpx.get(f"{base}/healthz").status_code == 200


@pytest.mark.parametrize("mode", ["error", "continue"])
def test_a_store_outage_follows_the_budget_setting_and_says_so(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mode: str, refused_port: int
) -> None:
    port = refused_port
    extra = (
        f"store: 'redis://:store-password-42@127.0.0.1:{port}/0'\n"
        "pricing: {m: {input: 1.0, output: 2.0}}\n"
        f"policies:\n  - budget: {{limits: [{{scope: model, usd: 10}}], on_error: {mode}}}\n"
    )
    url = make_proxy(loaded=load_text(config_text(upstream.base_url, extra)))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    response = httpx.post(f"{url}/chat/completions", json=body, timeout=15)
    assert "store-password-42" not in response.text
    if mode == "error":
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["code"] == "store_unavailable"
        assert "on_error: error" in error["message"]
        assert upstream.requests == []  # nothing was spent
    else:
        assert response.status_code == 200
        assert response.headers["x-hookgate-budget"] == "unchecked: store unavailable"
        assert len(upstream.requests) == 1
