"""Governance, part 2: policy sets per team, key, model, agent and route from one YAML;
grants (allowlists, budgets, rates, set assignment) changed at run time through the admin
API and applied on every replica; identity from signed tokens."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import openai
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from hookgate.config.loader import load_text
from hookgate.server.app import create_app
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream, LoopThread, RunningApp
from tests.services import RedisServer
from tests.spend import PER_REQUEST_USD, PRICE, audited
from tests.waits import eventually

ADMIN = "admin-secret-for-tests"
EMAIL = "ann.lee@example.com"

SETS = """\
policies:
  - pii: {action: pseudonymize}
  - system_prompt: {prepend: "Org rules."}
policy_sets:
  payments:
    extends: default
    match: {teams: [payments]}
    policies:
      - pii: {action: block}
  research:
    extends: default
    match: {teams: [research]}
    policies:
      - system_prompt: {append: "Cite sources."}
  embeddings:
    match: {routes: [embeddings]}
  strict:
    extends: payments
    remove: [system_prompt]
"""


KEYS = f"{{required: true, admin_key: {ADMIN}}}"


def keyed(upstream: FakeUpstream, store: str, extra: str = SETS, keys: str = KEYS) -> str:
    return config_text(
        upstream.base_url,
        f"store: '{store}'\n{PRICE}keys: {keys}\n{extra}",
        models="  cheap: [{provider: up, model: fixed-model}]\n"
        '  "*": [{provider: up, model: fixed-model}]',
    )


def admin(url: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {ADMIN}", "x-hookgate-actor": "ops@example.com"}
    return httpx.request(
        method, f"{url.removesuffix('/v1')}/admin{path}", headers=headers, **kwargs
    )


def new_key(url: str, team: str, **spec: Any) -> tuple[str, str]:
    """``(secret, id)`` of a new key of ``team``."""
    created = admin(url, "POST", "/keys", json={"team": team, **spec})
    assert created.status_code == 201, created.text
    return created.json()["key"], created.json()["id"]


def ask(url: str, key: str, text: str, model: str = "cheap") -> Any:
    with openai.OpenAI(base_url=url, api_key=key, max_retries=0) as client:
        return client.chat.completions.with_raw_response.create(
            model=model, messages=[{"role": "user", "content": text}], max_tokens=5
        )


@pytest.fixture
def proxy(make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path) -> str:
    return make_proxy(loaded=load_text(keyed(upstream, f"sqlite:///{tmp_path / 'gov.db'}")))


def test_one_yaml_blocks_pii_for_one_team_and_pseudonymizes_it_for_another(
    proxy: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    payments, _ = new_key(proxy, "payments")
    research, _ = new_key(proxy, "research")
    other, _ = new_key(proxy, "ops")
    with pytest.raises(openai.BadRequestError) as blocked:
        ask(proxy, payments, f"Mail {EMAIL} the invoice.")
    assert blocked.value.code == "pii_blocked" and not upstream.requests

    answered = ask(proxy, research, f"Mail {EMAIL} the invoice.")
    assert answered.headers["x-hookgate-policy-set"] == "research"
    sent = upstream.last.json()["messages"]
    assert EMAIL not in json.dumps(sent)  # pseudonymized, as the default set does
    assert sent[0] == {"role": "system", "content": "Org rules.\n\nCite sources."}

    assert ask(proxy, other, "Hello").headers["x-hookgate-policy-set"] == "default"
    assert upstream.last.json()["messages"][0]["content"] == "Org rules."
    with openai.OpenAI(base_url=proxy, api_key=other, max_retries=0) as client:
        embedded = client.embeddings.with_raw_response.create(model="cheap", input="x")
    assert embedded.headers["x-hookgate-policy-set"] == "embeddings"  # matched on route
    eventually(lambda: audited(tmp_path / "gov.db")[2] == 4)  # written in the background
    with sqlite3.connect(tmp_path / "gov.db") as db:
        rows = db.execute("SELECT team, api, status, policy_set FROM audit ORDER BY ts")
        assert rows.fetchall() == [
            ("payments", "chat.completions", 400, "payments"),
            ("research", "chat.completions", 200, "research"),
            ("ops", "chat.completions", 200, "default"),
            ("ops", "embeddings", 200, "embeddings"),
        ]


def test_an_assignment_through_the_admin_api_wins_over_matches_and_is_logged(
    proxy: str, upstream: FakeUpstream
) -> None:
    secret, key_id = new_key(proxy, "research")
    assert ask(proxy, secret, "Hi").headers["x-hookgate-policy-set"] == "research"
    changed = admin(proxy, "PATCH", "/teams/research", json={"policy_set": "strict"})
    assert changed.status_code == 200, changed.text
    assert ask(proxy, secret, "Hi").headers["x-hookgate-policy-set"] == "strict"
    assert upstream.last.json()["messages"] == [{"role": "user", "content": "Hi"}]  # removed
    admin(proxy, "PATCH", f"/keys/{key_id}", json={"policy_set": "embeddings"})
    assert ask(proxy, secret, "Hi").headers["x-hookgate-policy-set"] == "embeddings"  # key wins

    refused = admin(proxy, "PATCH", f"/keys/{key_id}", json={"policy_set": "nope"})
    assert refused.status_code == 400 and "unknown policy set" in refused.text
    bad = admin(proxy, "PUT", "/teams/research", json={"budgets": [{"window": "week"}]})
    assert bad.status_code == 400 and bad.json()["error"]["param"].startswith("budgets")

    changes = admin(proxy, "GET", "/changes?since=1h").json()["data"]
    assert [(c["actor"], c["kind"], c["subject"], c["action"]) for c in changes] == [
        ("ops@example.com", "team", "research", "set"),
        ("ops@example.com", "key", key_id, "set"),
    ]
    assert changes[0]["before"] is None and changes[0]["after"] == {
        "policy_set": "strict", "budgets": [], "metadata": {}
    }  # fmt: skip
    deleted = admin(proxy, "DELETE", "/teams/research")
    assert deleted.status_code == 200
    assert admin(proxy, "GET", "/teams/research").status_code == 404


def test_an_intern_key_cannot_reach_a_model_outside_its_allowlist(proxy: str) -> None:
    secret, key_id = new_key(proxy, "interns")
    assert ask(proxy, secret, "Hi", model="gpt-4o").parse().choices
    admin(proxy, "PATCH", f"/keys/{key_id}", json={"models": ["cheap"]})
    assert ask(proxy, secret, "Hi", model="cheap").parse().choices
    with pytest.raises(openai.PermissionDeniedError) as denied:
        ask(proxy, secret, "Hi", model="gpt-4o")
    assert denied.value.code == "model_not_allowed"
    other, _ = new_key(proxy, "interns")
    admin(proxy, "PUT", "/teams/interns", json={"models": ["cheap"]})
    with pytest.raises(openai.PermissionDeniedError):  # the team's list binds every key
        ask(proxy, other, "Hi", model="gpt-4o")
    with openai.OpenAI(base_url=proxy, api_key=other, max_retries=0) as client:
        assert [m.id for m in client.models.list()] == ["cheap"]
    shown = admin(proxy, "GET", f"/keys/{key_id}").json()
    assert shown["grants"]["models"] == ["cheap"] and "digest" not in shown


def test_a_rate_granted_at_run_time_replaces_the_yaml_one(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    extra = "policies:\n  - rate_limit: {limits: [{scope: team, rpm: 100}]}\n"
    url = make_proxy(loaded=load_text(keyed(upstream, f"sqlite:///{tmp_path / 'r.db'}", extra)))
    secret, _ = new_key(url, "payments")
    admin(url, "PUT", "/teams/payments", json={"rpm": 2})
    ask(url, secret, "one")
    ask(url, secret, "two")
    with pytest.raises(openai.RateLimitError):
        ask(url, secret, "three")


def test_a_granted_rate_replaces_only_the_field_it_grants(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """A granted tpm leaves the YAML rpm of its scope in force."""
    extra = "policies:\n  - rate_limit: {limits: [{scope: team, rpm: 2, tpm: 100000}]}\n"
    url = make_proxy(loaded=load_text(keyed(upstream, f"sqlite:///{tmp_path / 'r.db'}", extra)))
    secret, _ = new_key(url, "payments")
    admin(url, "PUT", "/teams/payments", json={"tpm": 200000})
    ask(url, secret, "one")
    ask(url, secret, "two")
    with pytest.raises(openai.RateLimitError):
        ask(url, secret, "three")


def test_a_budget_granted_at_run_time_replaces_the_yaml_one_of_its_window(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """YAML: $0.035 per team (two requests). A granted $0.07 raises it; the spend the
    window already has stays counted."""
    extra = "policies:\n  - budget: {limits: [{scope: team, usd: 0.035}]}\n"
    url = make_proxy(loaded=load_text(keyed(upstream, f"sqlite:///{tmp_path / 'b.db'}", extra)))
    secret, _ = new_key(url, "payments")
    served = 0
    for i in range(6):
        try:
            ask(url, secret, f"Question {i}?")
            served += 1
        except openai.RateLimitError:
            if served == 2:
                admin(url, "PUT", "/teams/payments", json={"budgets": [{"usd": 0.07}]})
    assert served == 4 and len(upstream.requests) == 4


# -- replicas on Redis ------------------------------------------------------------------


@pytest.fixture
def replicas(
    loop_thread: LoopThread, upstream: FakeUpstream, redis_server: RedisServer
) -> Iterator[list[str]]:
    # The sets above, each with a budget: the default one with no YAML limit (it enforces
    # only what the admin API grants), payments with a YAML team limit of its own.
    sets = SETS.replace(
        '  - system_prompt: {prepend: "Org rules."}\n',
        '  - system_prompt: {prepend: "Org rules."}\n  - budget: {}\n',
    ).replace(
        "      - pii: {action: block}\n",
        "      - pii: {action: block}\n      - budget: {limits: [{scope: team, usd: 0.3}]}\n",
    )
    loaded = load_text(keyed(upstream, redis_server.url, sets))
    servers = [loop_thread.run(RunningApp(create_app(loaded)).start()) for _ in range(2)]
    yield [f"{server.url}/v1" for server in servers]
    for server in servers:
        loop_thread.run(server.stop())


def test_two_replicas_block_one_team_and_pseudonymize_another_from_one_yaml(
    replicas: list[str], upstream: FakeUpstream
) -> None:
    payments, _ = new_key(replicas[0], "payments")
    research, _ = new_key(replicas[1], "research")
    for url in replicas:
        with pytest.raises(openai.BadRequestError) as blocked:
            ask(url, payments, f"Mail {EMAIL} the invoice.")
        assert blocked.value.code == "pii_blocked"
        assert ask(url, research, f"Mail {EMAIL}.").headers["x-hookgate-policy-set"] == "research"
        assert EMAIL not in upstream.last.body.decode()
    assert len(upstream.requests) == 2


async def fire(urls: list[str], key: str, n: int) -> int:
    """``n`` concurrent requests spread over ``urls``; how many were served.

    A refusal that says only reservations in flight fill the budget (it carries
    ``Retry-After``) is retried, as a client honouring the header would; a refusal without
    it (the window is spent) is final. So when ``fire`` returns, the budget is spent to
    within one reservation of its limit, whatever the timing of the burst was.
    """
    clients = [openai.AsyncOpenAI(base_url=u, api_key=key, max_retries=0) for u in urls]

    async def one(i: int) -> bool:
        while True:
            try:
                await clients[i % len(clients)].chat.completions.create(
                    model="cheap",
                    messages=[{"role": "user", "content": f"Question {i}, briefly."}],
                    max_tokens=5,
                )
            except openai.RateLimitError as refused:
                if "retry-after" not in refused.response.headers:
                    return False
                await asyncio.sleep(0.05)
            else:
                return True

    served = sum(await asyncio.gather(*[one(i) for i in range(n)]))
    for client in clients:
        await client.close()
    return served


def test_grants_and_the_admin_log_are_shared_by_replicas_on_redis(replicas: list[str]) -> None:
    first, second = replicas
    secret, key_id = new_key(first, "interns")
    admin(first, "PUT", "/teams/interns", json={"models": ["cheap"], "metadata": {"cc": "42"}})
    admin(second, "PATCH", f"/keys/{key_id}", json={"rpm": 30})
    assert admin(second, "GET", "/teams").json()["data"] == [
        {
            "team": "interns",
            "grants": {"models": ["cheap"], "budgets": [], "metadata": {"cc": "42"}},
        }
    ]
    changes = admin(first, "GET", "/changes?since=1h").json()["data"]
    assert [(c["kind"], c["subject"], c["after"]) for c in changes] == [
        ("team", "interns", {"models": ["cheap"], "budgets": [], "metadata": {"cc": "42"}}),
        ("key", key_id, {"budgets": [], "rpm": 30, "metadata": {}}),
    ]
    for path in ("/changes?since=1e300", "/spend?since=1e300"):  # before the epoch: all
        assert admin(second, "GET", path).status_code == 200
    with pytest.raises(openai.PermissionDeniedError):  # within a second on the other replica
        ask(second, secret, "Hi", model="gpt-4o")


@pytest.mark.slow
def test_a_set_s_own_budget_holds_across_replicas(replicas: list[str]) -> None:
    secret, _ = new_key(replicas[0], "payments")
    served = asyncio.run(fire(replicas, secret, 200))
    assert 0.3 - 2 * PER_REQUEST_USD < served * PER_REQUEST_USD <= 0.3 + 1e-9, f"{served} served"


@pytest.mark.slow
def test_a_budget_changed_through_the_admin_api_holds_on_both_replicas(
    replicas: list[str], upstream: FakeUpstream
) -> None:
    first, second = replicas
    secret, _ = new_key(first, "search")
    admin(first, "PUT", "/teams/search", json={"budgets": [{"usd": 0.3}]})

    served = asyncio.run(fire(replicas, secret, 200))
    assert served * PER_REQUEST_USD <= 0.3 + 1e-9, f"overspent: {served} served"
    assert served * PER_REQUEST_USD > 0.3 - 2 * PER_REQUEST_USD, f"only {served} served"

    raised = time.monotonic()
    admin(first, "PATCH", "/teams/search", json={"budgets": [{"usd": 0.6}]})
    while True:  # the raise reaches the other replica within a second
        try:
            ask(second, secret, "After the raise?")
            break
        except openai.RateLimitError:
            assert time.monotonic() - raised < 1.0, "the raise did not reach the replica"
            time.sleep(0.05)
    before = len(upstream.requests)
    more = asyncio.run(fire(replicas, secret, 200))
    assert (before + more) * PER_REQUEST_USD <= 0.6 + 1e-9, "overspent after the raise"
    assert (before + more) * PER_REQUEST_USD > 0.6 - 2 * PER_REQUEST_USD, "the raise went unused"


# -- signed tokens -----------------------------------------------------------------------


@pytest.fixture
def issuer(tmp_path: Path) -> tuple[ec.EllipticCurvePrivateKey, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "k1", "alg": "ES256"}]}))
    return key, jwks


def token(key: ec.EllipticCurvePrivateKey, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": "https://idp.test", "aud": "hookgate", "exp": now + 300, "iat": now,
            "sub": "ann", "org": {"team": "payments"}, **claims}  # fmt: skip
    return jwt.encode(body, key, algorithm="ES256", headers={"kid": "k1"})


def test_a_signed_token_lands_in_its_team_set_and_a_bad_one_is_refused(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    tmp_path: Path,
    issuer: tuple[ec.EllipticCurvePrivateKey, Path],
) -> None:
    key, jwks = issuer
    keys = (
        f"{{admin_key: {ADMIN}, jwt: {{jwks_file: '{jwks}', issuer: 'https://idp.test', "
        "audience: hookgate, team_claim: org.team}}"
    )
    url = make_proxy(loaded=load_text(keyed(upstream, f"sqlite:///{tmp_path / 'j.db'}", keys=keys)))
    with pytest.raises(openai.BadRequestError) as blocked:  # payments: pii blocked
        ask(url, token(key), f"Mail {EMAIL}.")
    assert blocked.value.code == "pii_blocked"
    research = token(key, org={"team": "research"})
    assert ask(url, research, "Hi").headers["x-hookgate-policy-set"] == "research"

    expired = token(key, exp=int(time.time()) - 3600)
    with pytest.raises(openai.AuthenticationError) as refused:
        ask(url, expired, "Hi")
    assert refused.value.code == "token_expired" and "expired" in refused.value.message
    foreign = jwt.encode(
        {"iss": "https://idp.test", "aud": "hookgate", "exp": int(time.time()) + 60,
         "org": {"team": "payments"}},
        ec.generate_private_key(ec.SECP256R1()), algorithm="ES256", headers={"kid": "k1"},
    )  # fmt: skip
    with pytest.raises(openai.AuthenticationError) as forged:
        ask(url, foreign, "Hi")
    assert forged.value.code == "invalid_signature"
    with pytest.raises(openai.AuthenticationError):
        ask(url, token(key, aud="someone-else"), "Hi")


# -- attribution -------------------------------------------------------------------------


def test_spend_is_attributed_by_session_and_agent_and_labels_are_capped(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    extra = (
        "server: {metric_labels: [user, agent], metric_label_limit: 2}\n"
        "policies:\n  - budget: {limits: [{scope: team, usd: 100}, {scope: user, usd: 100}]}\n"
    )
    url = make_proxy(loaded=load_text(keyed(upstream, f"sqlite:///{tmp_path / 'a.db'}", extra)))
    for user in ("u1", "u2", "u3"):
        secret, _ = new_key(url, "search", user=user)
        with openai.OpenAI(base_url=url, api_key=secret, max_retries=0) as client:
            client.chat.completions.create(
                model="cheap", messages=[{"role": "user", "content": "Hi"}], max_tokens=5,
                extra_headers={"x-hookgate-agent": "planner", "x-hookgate-session-id": user},
            )  # fmt: skip
    by_session = admin(url, "GET", "/spend?by=session").json()["data"]
    assert sorted((line["session"], line["requests"]) for line in by_session) == [
        ("u1", 1), ("u2", 1), ("u3", 1)
    ]  # fmt: skip
    assert by_session[0]["usd"] == pytest.approx(PER_REQUEST_USD)
    by_agent = admin(url, "GET", "/spend?by=agent").json()["data"]
    assert [(line["agent"], line["requests"]) for line in by_agent] == [("planner", 3)]
    metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
    users = {
        line.split('user="')[1].split('"')[0]
        for line in metrics.splitlines()
        if line.startswith("hookgate_cost_usd_total{")
    }
    assert users == {"u1", "u2", "other"}  # two values, then the rest as "other"
    assert 'agent="planner"' in metrics
    remaining = {
        line.split('value="')[1].split('"')[0]
        for line in metrics.splitlines()
        if line.startswith('hookgate_budget_remaining_usd{scope="user"')
    }
    assert remaining == {"u1", "u2", "other"}  # a budget's counters are capped alike


async def concurrent_patches(base: str, teams: int) -> list[dict[str, Any]]:
    """Two PATCHes at once to each of ``teams`` teams, one setting rpm, one tpm; the
    grants each team has afterwards."""
    headers = {"authorization": f"Bearer {ADMIN}"}
    async with httpx.AsyncClient(base_url=f"{base.removesuffix('/v1')}/admin", headers=headers,
                                 timeout=30) as http:  # fmt: skip
        await asyncio.gather(
            *(http.patch(f"/teams/t{i}", json=patch)
              for i in range(teams) for patch in ({"rpm": 10}, {"tpm": 1000}))
        )  # fmt: skip
        got = [await http.get(f"/teams/t{i}") for i in range(teams)]
    return [answer.json()["grants"] for answer in got]


def test_concurrent_changes_of_one_team_both_stand(proxy: str) -> None:
    for grants in asyncio.run(concurrent_patches(proxy, 20)):
        assert (grants.get("rpm"), grants.get("tpm")) == (10, 1000)


def test_concurrent_changes_through_two_replicas_both_stand(replicas: list[str]) -> None:
    first, second = replicas

    async def both() -> list[list[dict[str, Any]]]:
        return list(await asyncio.gather(concurrent_patches(first, 10),
                                         concurrent_patches(second, 10)))  # fmt: skip

    for grants in [g for replica in asyncio.run(both()) for g in replica]:
        assert (grants.get("rpm"), grants.get("tpm")) == (10, 1000)


def test_an_empty_model_list_is_refused_not_taken_as_any_model(proxy: str) -> None:
    secret, key_id = new_key(proxy, "interns", models=["cheap"])
    refused = admin(proxy, "PATCH", f"/keys/{key_id}", json={"models": []})
    assert refused.status_code == 400 and "send null to clear" in refused.json()["error"]["message"]
    with pytest.raises(openai.PermissionDeniedError):  # the key's own list still holds
        ask(proxy, secret, "Hi", model="gpt-4o")
    assert admin(proxy, "PATCH", f"/keys/{key_id}", json={"models": None}).status_code == 200


def test_grants_stored_with_an_empty_model_list_still_load(proxy: str, tmp_path: Path) -> None:
    """An older version stored ``models: []``; such a document must stay readable (and
    fixable), the refusal applies only to new changes."""
    admin(proxy, "PUT", "/teams/legacy", json={"rpm": 5})
    with sqlite3.connect(tmp_path / "gov.db") as db:
        db.execute("UPDATE grants SET doc = ? WHERE name = 'legacy'", ('{"models": []}',))
    assert admin(proxy, "GET", "/teams/legacy").status_code == 200
    assert admin(proxy, "PATCH", "/teams/legacy", json={"models": None}).status_code == 200
