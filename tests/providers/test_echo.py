"""The echo provider through the ``Provider`` interface: a model endpoint is answered
locally; a relayed request has nowhere to go (404 naming the provider); it lists no model
of its own."""

from __future__ import annotations

import httpx

from hookgate.config.loader import load_text
from tests.conftest import TEST_STORE, ProxyFactory, openai_client

ECHO_ONLY = (
    f"store: 'sqlite:///{TEST_STORE}'\n"
    "providers:\n  local: {type: echo}\n"
    'models:\n  fast: [{provider: local}]\n  "*": [{provider: local}]\n'
)


def test_a_request_relayed_to_the_echo_provider_is_a_404_naming_it(
    make_proxy: ProxyFactory,
) -> None:
    url = make_proxy(loaded=load_text(ECHO_ONLY))
    for path in ("/files", "/models/anything"):
        response = httpx.get(f"{url}{path}")
        assert response.status_code == 404, path
        message = response.json()["error"]["message"]
        assert message == (
            f"Unknown request URL: GET /v1{path} (provider 'local' answers locally and "
            "serves only model endpoints)"
        )
    reply = openai_client(url).chat.completions.create(
        model="fast", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content == "[hookgate echo] hi"


def test_the_echo_provider_behind_the_wildcard_lists_only_the_aliases(
    make_proxy: ProxyFactory,
) -> None:
    url = make_proxy(loaded=load_text(ECHO_ONLY))
    assert [m.id for m in openai_client(url).models.list()] == ["fast"]
