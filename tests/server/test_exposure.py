"""Secure by default: no listener beyond loopback serves anonymous callers unasked; the
shared client key is enforced; the ops listener serves only the ops endpoints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import orjson
import pytest

from hookgate.config.loader import ConfigError, load_file, load_text
from hookgate.server import exposure
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream, start_serve
from tests.server.test_reload import write
from tests.services import free_port
from tests.waits import eventually

ROOT = Path(__file__).resolve().parents[2]
CLIENT_KEY = "hg-shared-client-key-0123456789abcdef"
QUESTION = [{"role": "user", "content": "hi"}]


def _serve_exit(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookgate", "serve", "--config", str(config), *args, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _stop(process: subprocess.Popen[str]) -> str:
    process.terminate()
    assert process.stderr is not None
    rest = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=30) == 0
    return rest


def test_loopback_tells_apart_the_addresses_that_reach_only_this_host() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert exposure.is_loopback(host), host
    for host in ("0.0.0.0", "::", "", "10.0.0.7", "192.168.1.2", "example.com", "hookgate"):
        assert not exposure.is_loopback(host), host


def test_a_network_listener_with_anonymous_callers_refuses_to_start(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = tmp_path / "hookgate.yaml"
    config.write_text(config_text(upstream.base_url))

    for how in (["--host", "0.0.0.0"], ["--host", "::"], ["--host", "192.0.2.1"]):
        result = _serve_exit(config, *how)
        assert result.returncode == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, lines  # one clear message, no traceback
        assert lines[0].startswith(f"{config}:1: server.host: refusing to listen on {how[1]}")
        for way_out in ("keys.required: true", "keys.static", "server.allow_anonymous: true"):
            assert way_out in lines[0]

    # The same rule for a file's own server.host, in `hookgate check` too.
    config.write_text(config_text(upstream.base_url, "server: {host: 0.0.0.0}\n"))
    result = _serve_exit(config)
    assert result.returncode == 1
    assert "refusing to listen on 0.0.0.0" in result.stderr
    checked = subprocess.run(
        [sys.executable, "-m", "hookgate", "check", str(config)], capture_output=True, text=True
    )
    assert checked.returncode == 1
    line = checked.stdout.strip()
    server_line = config.read_text().splitlines().index("server: {host: 0.0.0.0}") + 1
    assert re.fullmatch(rf"{re.escape(str(config))}:{server_line}: server\.host: refusing .*", line)


@pytest.mark.parametrize(
    ("extra", "env"),
    [
        ("keys: {required: true}\n", {}),
        ('keys: {static: ["${HG_TEST_CLIENT_KEY}"]}\n', {"HG_TEST_CLIENT_KEY": CLIENT_KEY}),
        ("server: {allow_anonymous: true}\n", {}),
    ],
    ids=["virtual-keys", "static-key", "allow-anonymous"],
)
def test_each_way_out_starts_on_every_interface(
    upstream: FakeUpstream, tmp_path: Path, extra: str, env: dict[str, str]
) -> None:
    config = tmp_path / "hookgate.yaml"
    config.write_text(config_text(upstream.base_url, extra))
    process, url, lines = start_serve(
        "--config", str(config), "--host", "0.0.0.0", env={**os.environ, **env}
    )
    try:
        port = url.rsplit(":", 1)[1]
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
        assert ready.status_code == 200
        warnings = ready.json()["warnings"]
        anonymous = "allow_anonymous" in extra
        logged = [line for line in lines if "WARNING" in line and "anonymous callers" in line]
        if anonymous:
            assert len(warnings) == 1 and "allow_anonymous" in warnings[0]
            assert len(logged) == 1 and "0.0.0.0" in logged[0]
            answer = httpx.post(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                json={"model": "m", "messages": QUESTION},
                timeout=10,
            )
            assert answer.status_code == 200
        else:
            assert warnings == [] and logged == []
            refused = httpx.post(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                json={"model": "m", "messages": QUESTION},
                timeout=10,
            )
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == "missing_api_key"
    finally:
        _stop(process)


def test_the_shared_client_key_is_enforced(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HG_TEST_CLIENT_KEY", CLIENT_KEY)
    monkeypatch.setenv("HG_TEST_OTHER_KEY", "")  # an unset ${NAME:-} entry is ignored
    db = tmp_path / "static.db"
    url = make_proxy(
        f"store: 'sqlite:///{db}'\n"
        'keys: {static: ["${HG_TEST_OTHER_KEY:-}", "${HG_TEST_CLIENT_KEY}"]}\n'
    )
    for key, code in (("", "missing_api_key"), ("wrong-key", "invalid_api_key"),
                      (CLIENT_KEY[:-1], "invalid_api_key"), (CLIENT_KEY + "x", "invalid_api_key"),
                      ("sk-hg-" + "a" * 43, "invalid_api_key")):  # fmt: skip
        response = httpx.post(
            f"{url}/chat/completions",
            json={"model": "m", "messages": QUESTION},
            headers={"authorization": f"Bearer {key}"} if key else {},
        )
        assert response.status_code == 401, key
        assert response.json()["error"]["code"] == code
        assert response.json()["error"]["type"] == "invalid_request_error"
    with openai.OpenAI(base_url=url, api_key="wrong-key", max_retries=0) as client:
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model="m", messages=QUESTION)  # type: ignore[arg-type]
        with pytest.raises(openai.AuthenticationError):
            client.models.list()
    with openai.OpenAI(base_url=url, api_key=CLIENT_KEY, max_retries=0) as client:
        reply = client.chat.completions.create(model="m", messages=QUESTION)  # type: ignore[arg-type]
        assert reply.choices[0].message.content
        assert [m.id for m in client.models.list()] == ["fake-model-a", "fake-model-b"]

    # The caller is named by the key's position, in the audit log and spend reports.
    (tmp_path / "hookgate.yaml").write_text(
        config_text(upstream.base_url, f"store: 'sqlite:///{db}'\n")
    )
    export = subprocess.run(
        [sys.executable, "-m", "hookgate", "audit", "export",
         "--config", str(tmp_path / "hookgate.yaml")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    records = [orjson.loads(line) for line in export.stdout.splitlines()]
    served = [r for r in records if r["status"] == 200]
    assert [r["key_id"] for r in served] == ["static-2"]
    assert {(r["key_id"], r["status"]) for r in records if r not in served} == {("anonymous", 401)}
    assert CLIENT_KEY not in export.stdout


def test_a_short_static_key_is_a_config_error(upstream: FakeUpstream) -> None:
    with pytest.raises(ConfigError) as caught:
        load_text(config_text(upstream.base_url, 'keys: {static: ["short-key"]}\n'))
    assert "keys.static[0]: a static key needs at least 16 characters" in str(caught.value)


def test_a_reload_may_not_open_a_network_listener_to_anonymous_callers(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = tmp_path / "hookgate.yaml"
    keyed = config_text(
        upstream.base_url,
        f"server: {{reload_interval_s: 0.05}}\nkeys: {{static: ['{CLIENT_KEY}']}}\n",
    )
    write(config, keyed)
    process, url, _ = start_serve("--config", str(config), "--host", "0.0.0.0")
    base = f"http://127.0.0.1:{url.rsplit(':', 1)[1]}"
    body = {"model": "m", "messages": QUESTION}
    try:
        write(config, config_text(upstream.base_url, "server: {reload_interval_s: 0.05}\n"))
        assert process.stderr is not None
        line = process.stderr.readline()
        while "config reload failed" not in line:
            assert line, "the proxy exited"
            line = process.stderr.readline()
        assert "refusing to listen on 0.0.0.0" in process.stderr.readline()
        assert httpx.post(f"{base}/v1/chat/completions", json=body).status_code == 401
        # An edit that keeps callers authenticated is taken.
        write(config, keyed.replace("reload_interval_s: 0.05", "reload_interval_s: 0.06"))
        eventually(lambda: httpx.get(f"{base}/readyz").json()["config"]["generation"] == 2)
    finally:
        _stop(process)


def test_the_ops_listener_serves_only_the_ops_endpoints(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = tmp_path / "hookgate.yaml"
    ops_port = free_port()
    config.write_text(
        config_text(upstream.base_url, f"server: {{ops: {{host: 127.0.0.1, port: {ops_port}}}}}\n")
    )
    process, url, lines = start_serve("--config", str(config))
    ops = f"http://127.0.0.1:{ops_port}"
    try:
        assert any(f"ops endpoints (/metrics, /healthz, /readyz) on {ops}" in ln for ln in lines)
        assert httpx.post(
            f"{url}/v1/chat/completions", json={"model": "m", "messages": QUESTION}
        ).is_success
        for path in ("/metrics", "/healthz", "/readyz"):
            on_main = httpx.get(f"{url}{path}")
            assert on_main.status_code == 404, path
            assert on_main.json()["error"]["code"] == "not_found"
            assert httpx.get(f"{ops}{path}").status_code == 200, path
        # The ops listener shares the main one's state: its metrics count the call above.
        assert 'hookgate_requests_total{api="chat.completions"' in httpx.get(f"{ops}/metrics").text
        for method, path in (("POST", "/v1/chat/completions"), ("GET", "/v1/models"),
                             ("GET", "/admin/keys"), ("GET", "/v1/files")):  # fmt: skip
            response = httpx.request(method, f"{ops}{path}", json={"model": "m"})
            assert response.status_code == 404, path
            assert response.json()["error"]["type"] == "invalid_request_error"
    finally:
        _stop(process)
    assert upstream.requests and len(upstream.requests) == 1  # only the main listener's call


def _dockerfile_host() -> str:
    cmd = next(ln for ln in (ROOT / "Dockerfile").read_text().splitlines() if ln.startswith("CMD"))
    argv = orjson.loads(cmd.removeprefix("CMD").strip())
    return str(argv[argv.index("--host") + 1])


def test_no_shipped_config_serves_anonymous_callers_from_the_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every config in the repository, on its own host and on the image's, with the
    environment a user who sets nothing has: it refuses to listen, or it needs keys."""
    for name in [k for k in os.environ if k.startswith(("HOOKGATE_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    image_host = _dockerfile_host()
    assert image_host == "0.0.0.0"
    shipped = [*sorted((ROOT / "policies").glob("*.yaml")), ROOT / "dashboards/hookgate.yaml"]
    checked, loadable = 0, 0
    for path in shipped:
        try:
            loaded = load_file(path)
        except ConfigError as exc:  # e.g. the compose config requires HOOKGATE_CLIENT_KEY
            assert "HOOKGATE_CLIENT_KEY is not set" in str(exc), exc
            continue
        loadable += 1
        for host in (loaded.config.server.host, image_host):
            if not exposure.is_loopback(host):
                checked += 1
                assert exposure.refusal(loaded.config, host) is not None, (path, host)
    assert loadable >= 3 and checked >= loadable  # each one on the image's host at least
    # With the client key the Dockerfile's example passes, the image starts and needs it.
    monkeypatch.setenv("HOOKGATE_CLIENT_KEY", CLIENT_KEY)
    for path in (ROOT / "policies/default.yaml", ROOT / "dashboards/hookgate.yaml"):
        loaded = load_file(path)
        assert exposure.refusal(loaded.config, image_host) is None
        assert not exposure.anonymous_allowed(loaded.config)
    first_line = (ROOT / "Dockerfile").read_text().splitlines()[0]
    assert "-e HOOKGATE_CLIENT_KEY" in first_line
