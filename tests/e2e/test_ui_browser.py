"""The admin UI as a person uses it, in a real headless Chromium: log in with the admin
key, grant a team and create its key, send traffic with the ``openai`` client, find the
key's spend and one request's audit record by its session, watch the Live page refresh,
log out; by keyboard, at 1280 by 800 and in a narrow window, in the viewer's time zone. Every
page is checked for labels, contrast and browser errors (:mod:`tests.e2e.browser`)."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from mcp import types
from playwright.sync_api import Browser, expect

from hookgate.config.loader import load_text
from hookgate.server.app import create_app
from tests.conftest import ProxyFactory, config_text
from tests.e2e.browser import OVERFLOW, Watched, browser, check_page, screenshots
from tests.fakes import FakeUpstream, LoopThread, RunningApp
from tests.mcp_servers import McpServer
from tests.server.test_mcp_gateway import ADMIN as GATEWAY_ADMIN
from tests.server.test_mcp_gateway import gateway, new_key, session
from tests.ui_client import ADMIN_KEY, ui_config

__all__ = ["browser"]  # the fixture

ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture
def base(loop_thread: LoopThread, upstream: FakeUpstream, tmp_path: Path) -> Iterator[str]:
    models = '  "*": [{provider: up, model: fixed-model}]'
    text = config_text(upstream.base_url, ui_config(tmp_path / "ui.db"), models=models)
    server = loop_thread.run(RunningApp(create_app(load_text(text))).start())
    yield server.url
    loop_thread.run(server.stop())


def log_in(watched: Watched, base: str, actor: str = "alice", key: str = ADMIN_KEY) -> None:
    page = watched.page
    page.goto(f"{base}/ui/keys")
    expect(page).to_have_url(re.compile(r"/ui/login\?next=%2Fui%2Fkeys$"))
    page.get_by_label("Your name").fill(actor)
    page.get_by_label("Admin key").fill(key)
    page.get_by_label("Admin key").press("Enter")
    expect(page).to_have_url(f"{base}/ui/keys")  # back where the admin was going


def test_a_person_grants_a_team_creates_a_key_and_finds_its_spend_and_audit_record(
    browser: Browser, base: str, tmp_path: Path
) -> None:
    shots = screenshots(tmp_path)
    watched = Watched(browser, shots, viewport={"width": 1280, "height": 800},
                      timezone_id="Asia/Tokyo")  # fmt: skip
    page = watched.page
    page.goto(f"{base}/ui/login")
    watched.shot("01-login")
    check_page(watched)
    log_in(watched, base)

    page.get_by_role("link", name="Teams").click()
    page.get_by_label("Team", exact=True).fill("research")
    page.get_by_label("Models").fill("fixed-model, m")
    page.get_by_label("day budget in USD").fill("1.5")
    page.get_by_role("button", name="Save grants").click()
    expect(page.get_by_role("status")).to_contain_text("Saved")
    watched.shot("02-team")
    check_page(watched)

    page.get_by_role("link", name="Keys").click()
    page.get_by_label("Team").fill("research")
    page.get_by_label("User").fill("bob")
    page.get_by_role("button", name="Create key").click()
    secret = page.get_by_label("The key for team research").input_value()
    key_id = page.locator("#key-id").inner_text()
    watched.shot("03-key-created")
    check_page(watched)

    with openai.OpenAI(base_url=f"{base}/v1", api_key=secret, max_retries=0) as client:
        for session in ("tour-session-1", "tour-session-7", "tour-session-1"):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "What is new today?"}],  # type: ignore[arg-type]
                extra_headers={"x-hookgate-session-id": session},
            )  # fmt: skip

    page.get_by_role("link", name="Spend").click()
    page.get_by_label("Group by").select_option("key")
    page.get_by_role("button", name="Show").click()
    row = page.locator("#spend-table tbody tr", has_text=key_id)
    report = httpx.get(f"{base}/admin/spend", params={"by": "key"}, headers=ADMIN).json()
    spent = next(d for d in report["data"] if d["key"] == key_id)
    expect(row).to_contain_text(f"${spent['usd']:,.2f}")
    expect(row.locator("td").nth(3)).to_have_text(str(spent["requests"]))
    expect(page.locator("svg.chart")).to_be_visible()
    watched.shot("04-spend")
    check_page(watched)

    page.get_by_role("link", name="Audit log").click()
    page.get_by_label("Session").fill("tour-session-7")
    page.get_by_role("button", name="Search").click()
    rows = page.locator("#audit-table tbody tr")
    expect(rows).to_have_count(1)
    stamp = rows.first.locator("time")
    expect(stamp).to_contain_text("GMT+9")  # the viewer's zone, not the server's UTC
    assert "Asia/Tokyo" in (stamp.get_attribute("title") or "")
    watched.shot("05-audit-by-session")
    rows.first.get_by_role("link").first.click()
    expect(page.locator("dl.record")).to_contain_text(key_id)
    expect(page.locator("dl.record")).to_contain_text("tour-session-7")
    watched.shot("06-audit-record")
    check_page(watched)

    page.get_by_role("link", name="Live").click()
    finished = page.locator("#live h2", has_text="Finished")
    expect(finished).to_contain_text("(3)")
    with openai.OpenAI(base_url=f"{base}/v1", api_key=secret, max_retries=0) as client:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}])  # type: ignore[arg-type]
    expect(finished).to_contain_text("(4)", timeout=10_000)  # refreshed in place, no reload
    watched.shot("07-live")
    check_page(watched)

    for path in ("/ui", "/ui/policies?team=research", "/ui/changes", f"/ui/keys/{key_id}"):
        page.goto(f"{base}{path}")
        check_page(watched)
    watched.shot("08-key")
    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(f"{base}/ui/login")
    page.goto(f"{base}/ui/keys")
    expect(page).to_have_url(re.compile(r"/ui/login"))
    assert watched.problems == []
    watched.close()


def test_keyboard_focus_and_a_narrow_window(browser: Browser, base: str, tmp_path: Path) -> None:
    shots = screenshots(tmp_path)
    watched = Watched(browser, shots, viewport={"width": 390, "height": 844})
    page = watched.page
    log_in(watched, base)
    page.keyboard.press("Tab")  # the first stop skips to the content
    focused = page.evaluate("() => document.activeElement.textContent")
    assert focused == "Skip to content"
    page.keyboard.press("Enter")
    for _ in range(3):
        page.keyboard.press("Tab")
    outline = page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement); "
        "return [s.outlineStyle, s.outlineWidth]; }"
    )
    assert outline[0] != "none" and outline[1] != "0px"  # focus is visible
    assert page.evaluate("() => document.activeElement.closest('main') !== null")
    for path in (
        "/ui",
        "/ui/keys",
        "/ui/teams",
        "/ui/audit",
        "/ui/spend",
        "/ui/live",
        "/ui/policies",
    ):
        page.goto(f"{base}{path}")
        assert page.evaluate(OVERFLOW) <= 1, path  # nothing wider than the window
        check_page(watched)
    watched.shot("09-narrow-keys")
    page.goto(f"{base}/ui/audit")
    expect(page.locator(".empty")).to_contain_text("requests appear here")  # says what to do
    watched.close()


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[McpServer]:
    server = McpServer(tmp_path)
    yield server
    server.stop()


def test_a_person_approves_one_paused_mcp_call_and_rejects_another(
    browser: Browser, make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer,
    tmp_path: Path,
) -> None:  # fmt: skip
    pause = "  - tool_guard: {approval: pause, approve: [send_email], approval_timeout_s: 120}\n"
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", pause)
    key = new_key(base)
    asked = [{"to": "ann@example.com", "body": "the quarterly report"},
             {"to": "all@example.com", "body": "everyone's salaries"}]  # fmt: skip
    results: list[types.CallToolResult] = []

    async def agent() -> None:  # the real mcp client, its two calls waiting at once
        async with session(f"{base}/mcp/crm", key) as client:
            calls = [client.call_tool("send_email", args) for args in asked]
            results.extend(await asyncio.gather(*calls))

    caller = threading.Thread(target=asyncio.run, args=(agent(),))
    caller.start()
    shots = screenshots(tmp_path)
    watched = Watched(browser, shots, viewport={"width": 1280, "height": 800})
    page = watched.page
    log_in(watched, base, key=GATEWAY_ADMIN)
    page.get_by_role("link", name="Approvals").click()
    waiting = page.locator("#waiting-table tbody tr")
    expect(waiting).to_have_count(2, timeout=15_000)  # shown as they arrive (refreshed)
    watched.shot("10-approvals-waiting")
    check_page(watched)
    assert mcp_server.calls() == []  # nothing ran yet
    page.get_by_role("link", name="Live").click()
    expect(page.locator("#live h2", has_text="In flight")).to_contain_text("(2)")
    expect(page.locator("#live table").first).to_contain_text("send_email")

    def review(body: str) -> None:
        page.goto(f"{base}/ui/approvals")
        page.locator("#waiting-table tbody tr", has_text="send_email").first.wait_for()
        links = page.get_by_role("link", name="Review send_email")
        for i in range(links.count()):
            links.nth(i).click()
            if body in page.locator("#shown-arguments").inner_text():
                return
            page.go_back()
        raise AssertionError(f"no waiting call with {body!r}")

    review("the quarterly report")
    watched.shot("11-approval")
    check_page(watched)
    page.get_by_role("button", name="Approve as asked").click()
    expect(page.get_by_role("status")).to_contain_text("Decided")
    review("everyone's salaries")
    page.get_by_label("What the agent reads").fill("Not to the whole company.")
    page.get_by_role("button", name="Reject").click()
    expect(page.get_by_role("status")).to_contain_text("Decided")
    caller.join(30)
    assert not caller.is_alive() and len(results) == 2
    sent, refused = results
    assert not sent.isError
    assert refused.isError and "Not to the whole company." in str(refused.content)
    assert [(c["tool"], c["arguments"]) for c in mcp_server.calls()] == [("send_email", asked[0])]
    decided = page.locator("#decided-table tbody tr")
    expect(decided).to_have_count(2)
    expect(decided.filter(has_text="rejected")).to_contain_text("ui:alice")
    expect(decided.filter(has_text="approved")).to_contain_text("ui:alice")
    watched.shot("12-approvals-decided")
    page.goto(f"{base}/ui/audit?api=approval")
    expect(page.locator("#audit-table tbody tr")).to_have_count(2)
    check_page(watched)
    watched.close()
