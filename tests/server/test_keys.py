"""Virtual keys: the auth matrix, the admin API and the CLI, on a real SQLite store."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from hookgate.config.loader import load_text
from tests.conftest import UPSTREAM_KEY, ProxyFactory, config_text
from tests.fakes import FakeUpstream

ADMIN = "admin-secret-for-tests"


def keyed_config(upstream: FakeUpstream, db: Path, extra: str = "") -> str:
    return config_text(
        upstream.base_url,
        f"store: 'sqlite:///{db}'\nkeys: {{required: true, admin_key: {ADMIN}}}\n{extra}",
        models="  fast: [{provider: up, model: m1}]\n  smart: [{provider: up, model: m2}]",
    )


@pytest.fixture
def keyed(make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path) -> str:
    return make_proxy(loaded=load_text(keyed_config(upstream, tmp_path / "keys.db")))


def admin(url: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    base = url.removesuffix("/v1")
    headers = {"authorization": f"Bearer {ADMIN}"}
    return httpx.request(method, f"{base}/admin{path}", headers=headers, **kwargs)  # type: ignore[arg-type]


def new_key(url: str, **spec: object) -> str:
    response = admin(url, "POST", "/keys", json={"team": "payments", **spec})
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def client(url: str, key: str | None) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key=key or "", max_retries=0)


def test_auth_matrix(keyed: str, upstream: FakeUpstream) -> None:
    key = new_key(keyed, models=["fast"], user="ana")
    assert key.startswith("sk-hg-")
    with client(keyed, key) as c:
        assert c.chat.completions.create(model="fast", messages=[]).choices
        with pytest.raises(openai.PermissionDeniedError) as denied:
            c.chat.completions.create(model="smart", messages=[])
        assert denied.value.code == "model_not_allowed"
        assert [m.id for m in c.models.list()] == ["fast"]
    assert upstream.last.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert key not in str(upstream.last.headers)
    for bad, code in ((None, "missing_api_key"), ("sk-hg-not-a-real-key", "invalid_api_key"),
                      ("sk-other-format", "invalid_api_key")):  # fmt: skip
        headers = {"authorization": f"Bearer {bad}"} if bad else {}
        body = {"model": "fast", "messages": []}
        response = httpx.post(f"{keyed}/chat/completions", json=body, headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == code
    # the generic relay is authenticated too, and only for keys not limited to some models:
    # it reaches the provider account's shared files, batches and stored responses
    assert httpx.get(f"{keyed}/files").status_code == 401
    scoped = httpx.get(f"{keyed}/files", headers={"authorization": f"Bearer {key}"})
    assert scoped.status_code == 403
    assert scoped.json()["error"]["code"] == "relay_not_allowed"
    unscoped = new_key(keyed)
    seen = len(upstream.requests)
    ok = httpx.get(f"{keyed}/files", headers={"authorization": f"Bearer {unscoped}"})
    assert ok.status_code == 200
    assert [r.path for r in upstream.requests[seen:]] == ["/v1/files"]


def test_revoked_and_expired_keys_are_refused_at_once(keyed: str) -> None:
    key = new_key(keyed)
    short = new_key(keyed, expires_in_s=0.3)
    with client(keyed, key) as c, client(keyed, short) as s:
        assert c.chat.completions.create(model="fast", messages=[]).choices
        assert s.chat.completions.create(model="fast", messages=[]).choices
        key_id = next(
            k["id"] for k in admin(keyed, "GET", "/keys").json()["data"] if k["expires_at"] is None
        )
        assert admin(keyed, "DELETE", f"/keys/{key_id}").json() == {"id": key_id, "revoked": True}
        with pytest.raises(openai.AuthenticationError) as revoked:
            c.chat.completions.create(model="fast", messages=[])
        assert revoked.value.code == "api_key_revoked"
        time.sleep(0.35)
        with pytest.raises(openai.AuthenticationError) as expired:
            s.chat.completions.create(model="fast", messages=[])
        assert expired.value.code == "api_key_expired"


def test_admin_api_guards_and_never_shows_secrets(
    keyed: str, make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    key = new_key(keyed, name="ci", models=["fast", "smart"])
    listing = admin(keyed, "GET", "/keys").json()["data"]
    assert listing[0]["team"] == "payments" and listing[0]["models"] == ["fast", "smart"]
    assert key not in str(listing) and "digest" not in listing[0]
    base = keyed.removesuffix("/v1")
    assert httpx.get(f"{base}/admin/keys").status_code == 401
    assert (
        httpx.get(f"{base}/admin/keys", headers={"authorization": f"Bearer {key}"}).status_code
        == 401
    )
    assert admin(keyed, "DELETE", "/keys/hgk_nope").status_code == 404
    plain = make_proxy()  # no admin key configured: the admin API is off
    response = httpx.get(
        plain.removesuffix("/v1") + "/admin/keys", headers={"authorization": "Bearer x"}
    )
    assert response.status_code == 403 and response.json()["error"]["code"] == "admin_disabled"


@pytest.mark.parametrize(
    "body",
    [
        {"team": ""},
        {"team": "a\x00b"},
        {"team": "t" * 5000},
        {"team": "t", "user": "line\nbreak"},
        {"team": "t", "models": ["*"]},  # would read as "any model" in a listing, and be none
        {"team": "t", "models": [""]},
        {"team": "t", "expires_in_s": True},  # not one second
        {"team": "t", "expires_in_s": 1e300},  # not "never"
        {"team": "t", "expires_in_s": 0},
        {"team": "t", "expires_in_s": "30d"},
    ],
)
def test_a_key_that_cannot_mean_what_it_says_is_refused(keyed: str, body: dict[str, Any]) -> None:
    response = admin(keyed, "POST", "/keys", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert admin(keyed, "GET", "/keys").json()["data"] == []


def test_admin_spend_report(keyed: str) -> None:
    key = new_key(keyed, models=["fast"])
    with client(keyed, key) as c:
        for _ in range(3):
            c.chat.completions.create(model="fast", messages=[])
    report = admin(keyed, "GET", "/spend", params={"by": "team", "since": "1h"}).json()
    assert report["by"] == "team"
    assert report["data"][0]["team"] == "payments" and report["data"][0]["requests"] == 3
    assert report["data"][0]["tokens"] == 45
    assert admin(keyed, "GET", "/spend", params={"by": "password"}).status_code == 400
    for since in ("soon", "nan", "inf", "1e400d", "-1h"):
        assert admin(keyed, "GET", "/spend", params={"since": since}).status_code == 400


def test_keys_off_means_anonymous(proxy_url: str) -> None:
    with client(proxy_url, "anything") as c:
        assert c.chat.completions.create(model="m", messages=[]).choices


def test_cli_create_list_revoke_against_a_running_proxy(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = tmp_path / "hookgate.yaml"
    config.write_text(keyed_config(upstream, tmp_path / "keys.db"))
    url = make_proxy(loaded=load_text(config.read_text()))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "hookgate", "keys", *args, "--config", str(config)]
        return subprocess.run(command, capture_output=True, text=True, timeout=30)

    created = cli(
        "create", "--team", "search", "--user", "bo", "--models", "fast", "--expires", "30d"
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("sk-hg-") and "shown only now" in created.stderr
    listed = cli("list")
    assert (
        "team=search" in listed.stdout
        and "models=fast" in listed.stdout
        and key not in listed.stdout
    )
    key_id = listed.stdout.split()[0]
    with client(url, key) as c:
        assert c.chat.completions.create(model="fast", messages=[]).choices
        assert cli("revoke", key_id).returncode == 0
        with pytest.raises(openai.AuthenticationError):
            c.chat.completions.create(model="fast", messages=[])
    assert cli("revoke", "hgk_missing").returncode == 1
    refused = cli("create", "--team", "t", "--models", "*", "--expires", "1e400d")
    assert refused.returncode == 1 and refused.stderr.startswith("not a duration: '1e400d'")
    refused = cli("create", "--team", "t\x7f", "--models", "*")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.splitlines() == [
        "hookgate: --team: Value error, must be printable text, without control characters",
        "hookgate: --models: Value error, '*' is not a model name: leave models out for a key "
        "that may call any",
    ]
    assert cli("create", "--team", "open").returncode == 0
    assert "team=open  user=-  models=(any)  active" in cli("list").stdout


@pytest.mark.parametrize("command", [["keys", "list"], ["spend"], ["audit", "export"]])
def test_cli_with_its_store_down_says_so_in_one_line(
    command: list[str], tmp_path: Path, refused_port: int
) -> None:
    config = tmp_path / "hookgate.yaml"
    config.write_text(
        f"store: 'redis://127.0.0.1:{refused_port}/0'\n"
        'providers: {a: {type: echo}}\nmodels: {"*": [{provider: a}]}\n'
    )
    command = [sys.executable, "-m", "hookgate", *command, "--config", str(config)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert result.stderr.startswith(f"hookgate: store redis://127.0.0.1:{refused_port}/0: ")
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_store_outage_is_503(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    directory = tmp_path / "not-a-db"
    directory.mkdir()
    url = make_proxy(loaded=load_text(keyed_config(upstream, directory)))
    response = httpx.post(f"{url}/chat/completions", json={"model": "fast", "messages": []},
                          headers={"authorization": "Bearer sk-hg-whatever"})  # fmt: skip
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "store_unavailable"
