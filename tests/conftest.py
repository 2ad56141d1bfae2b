"""Shared fixtures: a loop thread hosting real servers, the fake upstream, proxies on ports.

``openai`` and ``anthropic`` are imported only when a test asks for a client, so the pure
tests run without either installed."""

from __future__ import annotations

import socket
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hookgate.config.loader import LoadedConfig, load_text
from hookgate.server.app import create_app
from tests.fakes import FakeUpstream, LoopThread, RunningApp
from tests.otlp import OtlpReceiver
from tests.services import RedisServer

if TYPE_CHECKING:
    import anthropic
    import openai

UPSTREAM_KEY = "sk-upstream-secret-0123456789"
CLIENT_KEY = "sk-client-credential-abcdef"

_CLIENTS: list[openai.OpenAI | anthropic.Anthropic] = []


def openai_client(url: str, **kwargs: Any) -> openai.OpenAI:
    """A real ``openai`` client for ``url`` (no retries), closed when the session ends."""
    import openai

    client = openai.OpenAI(base_url=url, api_key=CLIENT_KEY, max_retries=0, **kwargs)
    _CLIENTS.append(client)
    return client


def anthropic_client(url: str, **kwargs: Any) -> anthropic.Anthropic:
    """A real ``anthropic`` client for the proxy at ``url`` (its base ends in ``/v1``; the
    SDK appends ``/v1/messages`` itself), no retries, closed when the session ends."""
    import anthropic

    kwargs.setdefault("api_key", CLIENT_KEY)
    client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), max_retries=0, **kwargs)
    _CLIENTS.append(client)
    return client


def pytest_sessionfinish(session: pytest.Session) -> None:
    for client in _CLIENTS:
        client.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--skip-slow", action="store_true", help="skip soak/load suites")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--skip-slow"):
        skip = pytest.mark.skip(reason="--skip-slow given")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test: bound but never
    listening, so no server started meanwhile can be given it (a port found free and then
    released can be, and then the "dead" upstream answers)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture(scope="session")
def loop_thread() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.stop()


@pytest.fixture
def upstream(loop_thread: LoopThread) -> Iterator[FakeUpstream]:
    fake = loop_thread.run(_make_fake())
    yield fake
    loop_thread.run(fake.server.stop())


@pytest.fixture
def backup(loop_thread: LoopThread) -> Iterator[FakeUpstream]:
    """A second fake upstream (a fallback target, another provider)."""
    fake = loop_thread.run(_make_fake())
    yield fake
    loop_thread.run(fake.server.stop())


async def _make_fake() -> FakeUpstream:
    fake = FakeUpstream()
    await fake.server.start()
    return fake


TEST_STORE = Path(tempfile.mkdtemp(prefix="hookgate-tests-")) / "hookgate.db"
"""The store of test proxies that do not name their own (audit records land here)."""


def config_text(upstream_url: str, extra: str = "", models: str | None = None) -> str:
    """A config with provider ``up`` at ``upstream_url``; ``extra`` is appended YAML."""
    models = models or '  "*": [{provider: up}]'
    if "store:" not in extra:
        extra = f"store: 'sqlite:///{TEST_STORE}'\n{textwrap.dedent(extra)}"
    return (
        "providers:\n"
        f'  up: {{base_url: "{upstream_url}", api_key: "{UPSTREAM_KEY}"}}\n'
        "models:\n"
        f"{models}\n"
        f"{textwrap.dedent(extra)}"
    )


ProxyFactory = Callable[..., str]


@pytest.fixture
def make_proxy(loop_thread: LoopThread, upstream: FakeUpstream) -> Iterator[ProxyFactory]:
    """``make_proxy(extra_yaml="", models=None, loaded=None) -> base URL ending in /v1``."""
    running: list[RunningApp] = []

    def make(extra: str = "", models: str | None = None, loaded: LoadedConfig | None = None) -> str:
        loaded = loaded or load_text(config_text(upstream.base_url, extra, models))
        server = loop_thread.run(RunningApp(create_app(loaded)).start())
        running.append(server)
        return f"{server.url}/v1"

    yield make
    for server in running:
        loop_thread.run(server.stop())


@pytest.fixture
def proxy_url(make_proxy: ProxyFactory) -> str:
    """A proxy with no policies in front of the fake upstream."""
    return make_proxy()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real ``redis-server`` on loopback (see :class:`tests.services.RedisServer`)."""
    server = RedisServer(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def receiver(loop_thread: LoopThread) -> Iterator[OtlpReceiver]:
    """An OTLP/HTTP trace receiver on loopback (``receiver.endpoint``)."""
    receiver = OtlpReceiver()
    loop_thread.run(receiver.server.start())
    yield receiver
    loop_thread.run(receiver.server.stop())
