"""The admin UI over HTTP: closed without a session (every path, every form), sessions
and their cookie, CSRF and same-origin checks, and the pages' numbers being the admin
API's and the CLI's. The browser tests (``tests/e2e/test_ui_browser.py``) walk it in a
real Chromium."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import orjson
import pytest
from aiohttp import web

from hookgate.config.loader import load_text
from hookgate.server.app import create_app, create_ops_app
from hookgate.server.appkeys import STORE
from hookgate.store.approvals import Approval
from tests.conftest import ProxyFactory, config_text
from tests.fakes import Events, FakeUpstream, LoopThread, RunningApp
from tests.ui_client import ADMIN_KEY, Admin, hidden, ui_config

ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture
def served(
    loop_thread: LoopThread, upstream: FakeUpstream, tmp_path: Path
) -> Iterator[tuple[str, web.Application]]:
    """A proxy with the UI (and its app, to list its routes)."""
    models = '  "*": [{provider: up, model: fixed-model}]'
    text = config_text(upstream.base_url, ui_config(tmp_path / "ui.db"), models=models)
    app = create_app(load_text(text))
    server = loop_thread.run(RunningApp(app).start())
    yield server.url, app
    loop_thread.run(server.stop())


def ui_routes(app: web.Application) -> list[tuple[str, str]]:
    """Every ``(method, path)`` of the UI, path parameters filled in."""
    sample = {"id": "hgk_0000", "team": "team-x", "request_id": "req-1", "name": "ui.js"}
    found = []
    for route in app.router.routes():
        path = route.resource.canonical if route.resource is not None else ""
        if path.startswith("/ui") and route.method != "HEAD":
            found.append((route.method, re.sub(r"\{(\w+)\}", lambda m: sample[m[1]], path)))
    return found


def test_every_ui_path_and_form_is_refused_without_a_session(
    served: tuple[str, web.Application],
) -> None:
    base, app = served
    made = httpx.post(f"{base}/admin/keys", json={"team": "secret-team"}, headers=ADMIN).json()
    routes = ui_routes(app)
    assert len(routes) >= 20 and ("POST", "/ui/keys") in routes
    forged = {"hookgate_ui": "forged-token"}
    strangers = [httpx.Client(base_url=base), httpx.Client(base_url=base, cookies=forged)]
    for client in strangers:
        for method, path in routes:
            if path == "/ui/login":
                continue
            answer = client.request(method, path, data={"team": "evil", "csrf": "x"})
            if method == "GET":
                assert answer.status_code == 303, path
                assert answer.headers["location"].startswith("/ui/login?next="), path
            else:
                assert answer.status_code == 403, path
            assert "secret-team" not in answer.text and made["id"] not in answer.text, path
        client.close()
    keys = httpx.get(f"{base}/admin/keys", headers=ADMIN).json()["data"]
    assert [k["team"] for k in keys] == ["secret-team"]  # no form did anything
    assert httpx.get(f"{base}/admin/teams", headers=ADMIN).json()["data"] == []


def test_a_form_without_the_sessions_token_or_from_another_site_does_nothing(
    served: tuple[str, web.Application],
) -> None:
    base, _ = served
    admin = Admin(base)
    admin.get("/ui/keys")
    refused = [
        admin.http.post("/ui/keys", data={"team": "t1"}),  # no token
        admin.http.post("/ui/keys", data={"team": "t2", "csrf": "guess"}),
        admin.http.post("/ui/keys", data={"team": "t3", "csrf": admin.csrf},
                        headers={"origin": "https://evil.example"}),
        admin.http.post("/ui/keys", data={"team": "t4", "csrf": admin.csrf},
                        headers={"sec-fetch-site": "cross-site"}),
    ]  # fmt: skip
    assert [r.status_code for r in refused] == [403, 403, 403, 403]
    assert httpx.get(f"{base}/admin/keys", headers=ADMIN).json()["data"] == []
    assert admin.post("/ui/keys", {"team": "t5"}).status_code == 201  # the same, done right
    admin.close()


def test_the_session_cookie_is_http_only_strict_and_secure_over_tls(
    served: tuple[str, web.Application],
) -> None:
    base, _ = served
    for forwarded, secure in ((None, False), ("https", True)):
        headers = {"x-forwarded-proto": forwarded} if forwarded else {}
        with httpx.Client(base_url=base, headers=headers) as client:
            form = client.get("/ui/login")
            token = hidden(form.text, "login_csrf")
            answer = client.post(
                "/ui/login",
                data={"login_csrf": token, "actor": "alice", "admin_key": ADMIN_KEY,
                      "next": "/ui/keys"},
                headers={"cookie": f"hookgate_ui_login={token}"},  # sent even when Secure
            )  # fmt: skip
        assert answer.status_code == 303 and answer.headers["location"] == "/ui/keys"
        cookie = next(
            c for c in answer.headers.get_list("set-cookie") if c.startswith("hookgate_ui=")
        )
        attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
        assert {"httponly", "path", "samesite", "max-age"} <= attributes
        assert "SameSite=Strict" in cookie and "Path=/ui" in cookie
        assert ("secure" in attributes) is secure
    page = httpx.get(f"{base}/ui/login")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert page.headers["cache-control"] == "no-store"


def test_a_wrong_key_a_stale_login_form_and_a_login_elsewhere_open_nothing(
    served: tuple[str, web.Application],
) -> None:
    base, _ = served
    with httpx.Client(base_url=base) as client:
        form = client.get("/ui/login")
        token = hidden(form.text, "login_csrf")
        wrong = client.post(
            "/ui/login", data={"login_csrf": token, "actor": "eve", "admin_key": "guess"}
        )
        assert wrong.status_code == 401 and "Incorrect admin key" in wrong.text
        assert "hookgate_ui=" not in "".join(wrong.headers.get_list("set-cookie"))
    with httpx.Client(base_url=base) as fresh:  # the form's cookie is missing
        stale = fresh.post(
            "/ui/login", data={"login_csrf": token, "actor": "eve", "admin_key": ADMIN_KEY}
        )
        assert stale.status_code == 403 and "hookgate_ui=" not in "".join(
            stale.headers.get_list("set-cookie")
        )
    with httpx.Client(base_url=base) as client:  # next= may only be a UI path of this server
        form = client.get("/ui/login", params={"next": "https://evil.example/"})
        assert hidden(form.text, "next") == "/ui"


def test_logout_ends_the_session_on_every_replica_and_a_new_admin_key_ends_it_too(
    loop_thread: LoopThread, upstream: FakeUpstream, tmp_path: Path
) -> None:
    db = tmp_path / "shared.db"
    other = ui_config(db).replace(ADMIN_KEY, "another-admin-key")
    texts = [config_text(upstream.base_url, c) for c in (ui_config(db), ui_config(db), other)]
    servers = [loop_thread.run(RunningApp(create_app(load_text(t))).start()) for t in texts]
    try:
        admin = Admin(servers[0].url)
        cookie = admin.http.cookies["hookgate_ui"]
        for server, status in zip(servers, (200, 200, 303), strict=True):
            page = httpx.get(f"{server.url}/ui/keys", cookies={"hookgate_ui": cookie})
            assert page.status_code == status, server.url
        assert admin.post("/ui/logout").status_code == 303
        for server in servers[:2]:
            after = httpx.get(f"{server.url}/ui/keys", cookies={"hookgate_ui": cookie})
            assert after.status_code == 303
        admin.close()
    finally:
        for server in servers:
            loop_thread.run(server.stop())


def test_the_ui_is_off_without_an_admin_key_and_gone_with_ui_false(
    make_proxy: ProxyFactory,
) -> None:
    base = make_proxy().removesuffix("/v1")
    login = httpx.get(f"{base}/ui/login")
    assert login.status_code == 403 and "keys.admin_key" in login.text
    assert httpx.get(f"{base}/ui", follow_redirects=True).status_code == 403
    gone = make_proxy(f"keys: {{admin_key: {ADMIN_KEY}}}\nserver: {{ui: false}}\n").removesuffix(
        "/v1"
    )
    assert httpx.get(f"{gone}/ui/login").status_code == 404


def test_keys_and_grants_made_in_the_ui_are_the_admin_apis_with_the_ui_user_as_actor(
    served: tuple[str, web.Application],
) -> None:
    base, _ = served
    admin = Admin(base, actor="alice")
    admin.get("/ui/keys")
    created = admin.post("/ui/keys", {"team": "search", "user": "bob", "expires_in": "30d"})
    assert created.status_code == 201
    secret = re.search(r'id="secret"[^>]*value="(hgk-[^"]+|[^"]+)"', created.text)
    assert secret is not None
    key_id = re.search(r'id="key-id">([^<]+)<', created.text)
    assert key_id is not None
    key, kid = secret.group(1), key_id.group(1)
    assert key not in admin.get(f"/ui/keys/{kid}").text  # shown once
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
    question = [{"role": "user", "content": "Hello there"}]
    assert client.chat.completions.create(model="m-allowed", messages=question).choices  # type: ignore[arg-type]
    grants = {"team": "search", "models": "m-allowed, m-other", "rpm": "60",
              "budget_day_usd": "0.5", "budget_total_tokens": "100000",
              "metadata": '{"cost_center": "R7"}'}  # fmt: skip
    assert admin.post("/ui/teams", grants).status_code == 303
    with pytest.raises(openai.PermissionDeniedError):
        client.chat.completions.create(model="m-forbidden", messages=question)  # type: ignore[arg-type]
    bad = admin.post(f"/ui/keys/{kid}/grants", {"rpm": "fast"})
    assert bad.status_code == 400 and "requests per minute must be a whole number" in bad.text
    huge = admin.post(f"/ui/keys/{kid}/grants", {"tpm": "9" * 40})
    assert huge.status_code == 400 and "tpm" in huge.text
    odd = admin.post(f"/ui/keys/{kid}/grants", {"metadata": "[1, 2]"})
    assert odd.status_code == 400 and "metadata must be a JSON object" in odd.text
    unknown = admin.post(f"/ui/keys/{kid}/grants", {"policy_set": "no-such-set"})
    assert unknown.status_code == 400 and "unknown policy set" in unknown.text
    team = httpx.get(f"{base}/admin/teams/search", headers=ADMIN).json()["grants"]
    budgets = [{"window": "day", "usd": 0.5}, {"window": "total", "tokens": 100000}]
    assert team == {
        "models": ["m-allowed", "m-other"],
        "rpm": 60,
        "metadata": {"cost_center": "R7"},
        "budgets": budgets,
    }
    changes = httpx.get(f"{base}/admin/changes", headers=ADMIN).json()["data"]
    assert [(c["actor"], c["kind"], c["subject"]) for c in changes] == [
        ("ui:alice", "team", "search")
    ]
    assert "ui:alice" in admin.get("/ui/changes").text
    assert admin.post(f"/ui/keys/{kid}/revoke").status_code == 303
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="m-allowed", messages=question)  # type: ignore[arg-type]
    assert "revoked" in admin.get(f"/ui/keys/{kid}").text
    missing = admin.get("/ui/keys/hgk_nope")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    client.close()
    admin.close()


def test_spend_page_and_its_csv_are_hookgate_spend(
    served: tuple[str, web.Application],
) -> None:
    base, _ = served
    keys = [
        httpx.post(f"{base}/admin/keys", json={"team": t}, headers=ADMIN).json()
        for t in ("a", "b", "b")
    ]
    for n, made in enumerate(keys):
        with openai.OpenAI(base_url=f"{base}/v1", api_key=made["key"], max_retries=0) as client:
            for _ in range(n + 1):
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )  # type: ignore[arg-type]
    admin = Admin(base)
    for by in ("team", "key", "model", "day"):
        report = httpx.get(
            f"{base}/admin/spend", params={"by": by, "since": "1d"}, headers=ADMIN
        ).json()
        csv = admin.get("/ui/spend.csv", by=by, since="24h")
        assert csv.headers["content-type"].startswith("text/csv")
        lines = csv.text.strip().splitlines()
        assert lines[0] == f"{by},usd,tokens,requests,unbudgeted"
        rows = [line.split(",") for line in lines[1:]]
        assert [(r[0], float(r[1]), int(r[2]), int(r[3])) for r in rows] == [
            (d[by], d["usd"], d["tokens"], d["requests"]) for d in report["data"]
        ]
        page = admin.get("/ui/spend", by=by, since="24h")
        assert page.status_code == 200 and "<svg" in page.text
    assert sum(d["requests"] for d in report["data"]) == 6
    admin.close()


def test_a_request_is_found_by_its_session_and_no_page_shows_its_content(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    base = make_proxy(ui_config(tmp_path / "pii.db", "policies:\n  - pii: {}\n").replace(
        "required: true, ", ""
    )).removesuffix("/v1")  # fmt: skip
    email = "grace.hopper@navy-example.org"
    with openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0) as client:
        for session in ("sess-other", "sess-42", "sess-other"):
            client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": f"Mail {email} about it"}],  # type: ignore[arg-type]
                extra_headers={"x-hookgate-session-id": session},
            )
    admin = Admin(base)
    found = admin.get("/ui/audit", session="sess-42")
    ids = re.findall(r'<a href="/ui/audit/([^"]+)">', found.text)
    assert len(ids) == 1, found.text
    record = admin.get(f"/ui/audit/{ids[0]}")
    assert "EMAIL_ADDRESS" in record.text and "sess-42" in record.text
    everything = [found, record, admin.get("/ui/audit"), admin.get("/ui/live"), admin.get("/ui")]
    for page in everything:
        assert page.status_code == 200
        assert email not in page.text and "grace.hopper" not in page.text
    admin.close()


def test_live_shows_a_request_in_flight_then_finished(
    served: tuple[str, web.Application], upstream: FakeUpstream
) -> None:
    base, _ = served
    made = httpx.post(f"{base}/admin/keys", json={"team": "live"}, headers=ADMIN).json()
    chunk = {"id": "c", "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": {"content": "hi"}}]}  # fmt: skip
    blocks = [b"data: " + orjson.dumps(chunk) + b"\n\n", b"data: [DONE]\n\n"]
    upstream.push(Events(blocks, delay=1.5))
    admin = Admin(base)

    def call() -> None:
        with openai.OpenAI(base_url=f"{base}/v1", api_key=made["key"], max_retries=0) as client:
            stream = client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,  # type: ignore[arg-type]
                extra_headers={"x-hookgate-request-id": "live-req-1"},
            )
            for _ in stream:
                pass

    worker = threading.Thread(target=call)
    worker.start()
    deadline = time.monotonic() + 10
    while (
        made["id"]
        not in (rows := admin.http.get("/ui/live", headers={"hx-request": "true"}).text).split(
            "<h2>Finished"
        )[0]
    ):  # shown at once, its caller once authenticated
        assert time.monotonic() < deadline, "never shown in flight"
        time.sleep(0.05)
    flying = rows.split("<h2>Finished")[0]
    assert "live-req-1" in flying and made["id"] in flying and "<html" not in rows
    worker.join()
    deadline = time.monotonic() + 10
    while (
        "live-req-1"
        not in (rows := admin.http.get("/ui/live", headers={"hx-request": "true"}).text).split(
            "<h2>Finished"
        )[1]
    ):
        assert time.monotonic() < deadline, "never shown finished"
        time.sleep(0.05)
    assert "fixed-model" in rows.split("<h2>Finished")[1]  # the upstream that served it
    admin.close()


def test_the_policy_sets_page_says_what_hookgate_explain_says(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    extra = ui_config(tmp_path / "sets.db", (
        "policy_sets:\n  strict:\n    match: {teams: [payments]}\n    policies:\n"
        "      - rate_limit: {limits: [{scope: team, rpm: 5}]}\n"
    ))  # fmt: skip
    base = make_proxy(extra).removesuffix("/v1")
    admin = Admin(base)
    page = admin.get("/ui/policies", team="payments", model="m")
    assert "Policy set <strong>strict</strong>" in page.text and "matched team" in page.text
    assert "rate_limit" in page.text
    other = admin.get("/ui/policies", team="search")
    assert "Policy set <strong>default</strong>" in other.text and "no set matched" in other.text
    unknown = admin.get("/ui/policies", key="hgk_nobody")
    assert "no key with id" in unknown.text
    admin.close()


def test_an_approval_decided_in_the_ui_is_stored_with_its_actor_and_only_once(
    served: tuple[str, web.Application], loop_thread: LoopThread
) -> None:
    base, app = served
    now = time.time()
    waiting = Approval(kind="sdk", created_at=now, expires_at=now + 600, tool="refund",
                       reason="the call of 'refund' needs a human's approval",
                       arguments={"order": "A-17", "amount": 40}, group="reply-1")  # fmt: skip
    loop_thread.run(app[STORE].add_approval(waiting))
    admin = Admin(base, actor="carol")
    listed = admin.get("/ui/approvals")
    assert "refund" in listed.text and f"/ui/approvals/{waiting.id}" in listed.text
    page = admin.get(f"/ui/approvals/{waiting.id}")
    assert "A-17" in page.text and "paused by the SDK" in page.text
    bad = admin.post(f"/ui/approvals/{waiting.id}", {"decision": "edit", "arguments": "{order"})
    assert bad.status_code == 400 and "not JSON" in bad.text
    not_object = admin.post(f"/ui/approvals/{waiting.id}", {"decision": "edit", "arguments": "[1]"})
    assert not_object.status_code == 400 and "JSON object" in not_object.text
    edited = admin.post(
        f"/ui/approvals/{waiting.id}",
        {"decision": "edit", "arguments": '{"order": "A-17", "amount": 20}'},
    )
    assert edited.status_code == 303
    stored = loop_thread.run(app[STORE].approval(waiting.id))
    assert stored is not None and stored.status == "edited" and stored.decided_by == "ui:carol"
    assert stored.decided_arguments == {"order": "A-17", "amount": 20}
    again = admin.post(f"/ui/approvals/{waiting.id}", {"decision": "reject", "message": "no"})
    assert again.status_code == 409 and "already edited by ui:carol" in again.text
    assert "Decided" in admin.get("/ui/approvals", decided=waiting.id).text
    admin.close()


def test_with_an_ops_listener_the_ui_is_there_and_not_on_the_main_one(
    loop_thread: LoopThread, upstream: FakeUpstream, tmp_path: Path
) -> None:
    extra = ui_config(tmp_path / "ops.db", "server: {ops: {port: 0}}\n")
    app = create_app(load_text(config_text(upstream.base_url, extra)))
    main = loop_thread.run(RunningApp(app).start())
    ops = loop_thread.run(RunningApp(create_ops_app(app)).start())
    try:
        assert httpx.get(f"{main.url}/ui/login").status_code == 404
        admin = Admin(ops.url)
        now = time.time()
        waiting = Approval(kind="sdk", created_at=now, expires_at=now + 60, tool="refund")
        loop_thread.run(app[STORE].add_approval(waiting))
        made = admin.post(f"/ui/approvals/{waiting.id}", {"decision": "approve"})
        assert made.status_code == 303
        created = admin.post("/ui/keys", {"team": "ops-team"})
        assert created.status_code == 201
        keys = httpx.get(f"{main.url}/admin/keys", headers=ADMIN).json()["data"]
        assert [k["team"] for k in keys] == ["ops-team"]  # one state behind both listeners
        admin.close()
    finally:
        loop_thread.run(ops.stop())
        loop_thread.run(main.stop())
