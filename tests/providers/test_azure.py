"""Azure OpenAI as a provider (``type: azure``): its two URL schemes, deployments per model,
the ``api-key`` header — through the real proxy, the openai client, a loopback upstream."""

from __future__ import annotations

import openai
import pytest

from hookgate.config.loader import ConfigError, load_text
from hookgate.wire import synth
from tests.conftest import TEST_STORE, ProxyFactory, openai_client
from tests.fakes import FakeUpstream, Status
from tests.otlp import OtlpReceiver

KEY = "azure-secret-key-0123456789"


def azure(upstream: FakeUpstream, settings: str = "") -> str:
    return (
        "providers:\n"
        f"  az: {{type: azure, base_url: '{upstream.server.url}', api_key: '{KEY}',\n"
        f"       deployments: {{gpt-4o: prod-4o}}{settings}}}\n"
        "models:\n"
        '  "*": [{provider: az}]\n'
        '  "fast": [{provider: az, model: gpt-4o}]\n'
        f"store: 'sqlite:///{TEST_STORE}'\n"
    )


def ask(url: str, model: str = "gpt-4o", *, stream: bool = False) -> str:
    client = openai_client(url)
    messages = [{"role": "user", "content": "Hi"}]
    if not stream:
        made = client.chat.completions.create(model=model, messages=messages)  # type: ignore[arg-type]
        return str(made.choices[0].message.content)
    chunks = client.chat.completions.create(model=model, messages=messages, stream=True)  # type: ignore[arg-type]
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def test_the_deployments_path_names_the_deployment_and_the_api_version(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(azure(upstream)))
    upstream.push(synth.Reply("One."), synth.Reply("Two."), synth.Reply("Three."))
    assert ask(url) == "One."  # mapped: gpt-4o → prod-4o
    assert ask(url, "fast", stream=True) == "Two."  # an alias whose target is gpt-4o
    assert ask(url, "gpt-4o-mini") == "Three."  # unmapped: the name is the deployment
    paths = [(r.path, r.query) for r in upstream.requests]
    assert paths == [
        ("/openai/deployments/prod-4o/chat/completions", "api-version=2024-10-21"),
        ("/openai/deployments/prod-4o/chat/completions", "api-version=2024-10-21"),
        ("/openai/deployments/gpt-4o-mini/chat/completions", "api-version=2024-10-21"),
    ]
    for sent in upstream.requests:
        assert sent.headers["api-key"] == KEY and "authorization" not in sent.headers
    assert upstream.requests[0].json()["model"] == "gpt-4o"  # the body is the client's


def test_the_responses_api_goes_beside_the_deployments_with_the_deployment_as_model(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(azure(upstream, ", api_version: 2025-04-01-preview")))
    answer = openai_client(url).responses.create(model="gpt-4o", input="Hi")
    assert answer.output_text
    sent = upstream.last
    assert (sent.path, sent.query) == ("/openai/responses", "api-version=2025-04-01-preview")
    assert sent.json()["model"] == "prod-4o" and sent.headers["api-key"] == KEY


def test_the_v1_path_sends_the_deployment_as_the_model(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(azure(upstream, ", azure_path: v1")))
    upstream.push(synth.Reply("One."))
    assert ask(url, stream=True) == "One."
    answer = openai_client(url).responses.create(model="gpt-4o", input="Hi")
    assert answer.output_text
    (chat, responses) = upstream.requests
    assert (chat.path, chat.query) == ("/openai/v1/chat/completions", "")
    assert responses.path == "/openai/v1/responses"
    assert chat.json()["model"] == responses.json()["model"] == "prod-4o"
    assert chat.headers["api-key"] == KEY and "authorization" not in chat.headers


def test_an_azure_error_reaches_the_client_without_the_key(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(azure(upstream, ", api_version: '2025-01-01-preview'")))
    leak = {"error": {"message": f"quota exceeded for key {KEY}", "type": "insufficient_quota"}}
    upstream.push(Status(429, leak), Status(429, leak), Status(429, leak))
    with pytest.raises(openai.RateLimitError) as raised:
        ask(url)
    assert KEY not in str(raised.value.body) and "quota exceeded" in str(raised.value.body)
    assert upstream.requests[0].query == "api-version=2025-01-01-preview"


def test_azure_settings_belong_to_azure_providers() -> None:
    text = "providers:\n  up: {base_url: 'http://127.0.0.1:9', deployments: {a: b}}\n"
    with pytest.raises(
        ConfigError, match=r"providers\.up\.deployments: a setting of type azure, not openai"
    ):
        load_text(text + 'models:\n  "*": [{provider: up}]\n')
    with pytest.raises(ConfigError, match=r"providers\.az\.base_url: Field required"):
        load_text('providers:\n  az: {type: azure}\nmodels:\n  "*": [{provider: az}]\n')


def test_spans_name_azure_as_the_provider(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver
) -> None:
    tracing = (
        f"policies:\n  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05}}\n"
    )
    url = make_proxy(loaded=load_text(azure(upstream) + tracing))
    upstream.push(synth.Reply("One."))
    assert ask(url) == "One."
    spans = receiver.wait_until(lambda spans: any(s.name.startswith("chat ") for s in spans))
    (span,) = [s for s in spans if s.name.startswith("chat ")]
    assert span.attributes["gen_ai.provider.name"] == "azure.ai.openai"
