"""Approvals in the MCP gateway: the official ``mcp`` client's ``tools/call`` waits while a
person approves, edits or rejects it through the admin API (of this replica or another
sharing the store), or until its time is up; the decision is audited with its actor and
the stored approval never holds a raw value."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import McpError

from hookgate.redaction.placeholders import placeholder
from tests.conftest import ProxyFactory
from tests.fakes import FakeUpstream
from tests.mcp_servers import McpServer
from tests.server.test_mcp_gateway import ADMIN, EMAIL, SECRET, gateway, new_key, session
from tests.waits import eventually_async

PAUSE = "  - tool_guard: {approval: pause, approve: [send_email], approval_timeout_s: %s}\n"
ADMIN_HEADERS = {"authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[McpServer]:
    server = McpServer(tmp_path)
    yield server
    server.stop()


async def waiting(base: str, count: int = 1, within_s: float = 10) -> list[dict[str, Any]]:
    """The pending approvals, once there are ``count``."""
    deadline = asyncio.get_running_loop().time() + within_s
    async with httpx.AsyncClient() as http:
        while True:
            answer = await http.get(
                f"{base}/admin/approvals", params={"status": "pending"}, headers=ADMIN_HEADERS
            )
            assert answer.status_code == 200, answer.text
            found: list[dict[str, Any]] = answer.json()["data"]
            if len(found) >= count:
                return found
            assert asyncio.get_running_loop().time() < deadline, "no approval is pending"
            await asyncio.sleep(0.05)


async def decide(base: str, approval_id: str, body: dict[str, Any], actor: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(
            f"{base}/admin/approvals/{approval_id}", json=body,
            headers={**ADMIN_HEADERS, "x-hookgate-actor": actor},
        )  # fmt: skip


def decisions_audited(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as connection:
        return connection.execute(
            "SELECT api, model, target, actor, decisions, team FROM audit WHERE api = 'approval'"
        ).fetchall()


async def test_an_approved_call_runs_once_with_its_arguments_and_the_decision_is_audited(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    db = tmp_path / "g.db"
    base = gateway(make_proxy, upstream, mcp_server, db, PAUSE % 60, keys=_KEYS)
    async with session(f"{base}/mcp/crm", new_key(base)) as client:
        call = asyncio.create_task(client.call_tool("send_email", {"to": "a@b.c", "body": "x"}))
        (approval,) = await waiting(base)
        assert approval["tool"] == "send_email" and approval["server"] == "crm"
        assert approval["kind"] == "mcp" and approval["team"] == "support"
        assert "needs a human's approval" in approval["reason"]
        assert approval["arguments"] == {"to": "a@b.c", "body": "x"}  # no pii policy: as sent
        assert mcp_server.calls() == []  # waits, not run
        made = await decide(base, approval["id"], {"decision": "approve"}, "ann")
        assert made.status_code == 200 and made.json()["status"] == "approved"
        result = await asyncio.wait_for(call, 10)
        assert not result.isError
    assert [(c["tool"], c["arguments"]) for c in mcp_server.calls()] == [
        ("send_email", {"to": "a@b.c", "body": "x"})
    ]
    await eventually_async(lambda: len(decisions_audited(db)) == 1)
    (record,) = decisions_audited(db)
    assert record[:4] == ("approval", "send_email", "mcp/crm", "ann")
    assert json.loads(record[4]) == {"approval": "approved"} and record[5] == "support"
    with sqlite3.connect(db) as connection:
        calls = connection.execute(
            "SELECT model, status, error, decisions FROM audit WHERE api = 'mcp.tools/call'"
        ).fetchall()
    assert calls == [("send_email", 200, None, '{"tool_guard":"allow"}')]
    again = await decide(base, approval["id"], {"decision": "reject"}, "bob")
    assert again.status_code == 409 and "already approved by ann" in again.text


async def test_an_edit_runs_with_placeholders_restored_and_no_raw_pii_is_stored(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    db = tmp_path / "g.db"
    policies = f"  - pii: {{secret: '{SECRET}'}}\n" + PAUSE % 60
    base = gateway(make_proxy, upstream, mcp_server, db, policies, keys=_KEYS)
    stand_in = placeholder(SECRET.encode(), "EMAIL_ADDRESS", EMAIL)
    async with session(f"{base}/mcp/crm", new_key(base)) as client:
        call = asyncio.create_task(
            client.call_tool("send_email", {"to": EMAIL, "body": f"Dear {EMAIL}, hi"})
        )
        (approval,) = await waiting(base)
        assert approval["arguments"] == {"to": stand_in, "body": f"Dear {stand_in}, hi"}
        edited = {"to": stand_in, "body": "Hello again"}
        made = await decide(base, approval["id"], {"decision": "edit", "arguments": edited}, "ann")
        assert made.json()["decided_arguments"] == edited
        result = await asyncio.wait_for(call, 10)
        assert not result.isError
    assert [(c["tool"], c["arguments"]) for c in mcp_server.calls()] == [
        ("send_email", {"to": EMAIL, "body": "Hello again"})
    ]
    with sqlite3.connect(db) as connection:
        stored = " ".join(row[0] for row in connection.execute("SELECT doc FROM approvals"))
    assert stand_in in stored and EMAIL not in stored


async def test_a_rejected_call_is_not_run_and_the_client_reads_the_message(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", PAUSE % 60, keys=_KEYS)
    async with session(f"{base}/mcp/crm", new_key(base)) as client:
        call = asyncio.create_task(client.call_tool("send_email", {"to": "a@b.c", "body": "x"}))
        (approval,) = await waiting(base)
        body = {"decision": "reject", "message": "not to that address"}
        assert (await decide(base, approval["id"], body, "ann")).status_code == 200
        result = await asyncio.wait_for(call, 10)
        assert result.isError
        assert "not to that address" in result.content[0].text  # type: ignore[union-attr]
        assert not (await client.call_tool("get_weather", {"city": "Oslo"})).isError
    assert [c["tool"] for c in mcp_server.calls()] == ["get_weather"]


async def test_a_call_no_one_decides_in_time_is_a_clear_json_rpc_error(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", PAUSE % 1, keys=_KEYS)
    async with session(f"{base}/mcp/crm", new_key(base)) as client:
        with pytest.raises(McpError, match=r"no one approved the call of 'send_email' within 1 s"):
            await client.call_tool("send_email", {"to": "a@b.c", "body": "x"})
    async with httpx.AsyncClient() as http:
        listed = await http.get(
            f"{base}/admin/approvals", params={"status": "expired"}, headers=ADMIN_HEADERS
        )
    (expired,) = listed.json()["data"]
    assert expired["status"] == "expired"
    late = await decide(base, expired["id"], {"decision": "approve"}, "ann")
    assert late.status_code == 409 and "expired" in late.text
    assert mcp_server.calls() == []


async def test_two_approvers_on_two_replicas_one_wins_and_the_waiting_replica_resumes(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    db = tmp_path / "g.db"
    base = gateway(make_proxy, upstream, mcp_server, db, PAUSE % 60, keys=_KEYS)
    other = gateway(make_proxy, upstream, mcp_server, db, PAUSE % 60, keys=_KEYS)  # same store
    async with session(f"{base}/mcp/crm", new_key(base)) as client:
        call = asyncio.create_task(client.call_tool("send_email", {"to": "a@b.c", "body": "x"}))
        (approval,) = await waiting(other)  # the other replica lists it
        answers = await asyncio.gather(
            decide(other, approval["id"], {"decision": "approve"}, "ann"),
            decide(other, approval["id"], {"decision": "reject", "message": "no"}, "bob"),
        )
        assert sorted(a.status_code for a in answers) == [200, 409]
        winner = next(a for a in answers if a.status_code == 200).json()
        result = await asyncio.wait_for(call, 10)  # decided elsewhere: seen at the next poll
        assert result.isError == (winner["status"] == "rejected")
    ran = [c["tool"] for c in mcp_server.calls()]
    assert ran == ([] if winner["status"] == "rejected" else ["send_email"])


async def test_a_waiting_client_is_told_by_progress_logging_and_elicitation(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", PAUSE % 60, keys=_KEYS)
    asked: list[str] = []
    logged: list[str] = []
    progress: list[float] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})  # seen; does not approve

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(str(params.data))

    async def progressed(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with elicited(f"{base}/mcp/crm", new_key(base), elicit, log) as client:
        call = asyncio.create_task(
            client.call_tool(
                "send_email", {"to": "a@b.c", "body": "x"}, progress_callback=progressed
            )
        )
        (approval,) = await waiting(base)
        await eventually_async(lambda: bool(asked and logged and progress))
        assert "'send_email' waits for a person to approve it" in asked[0]
        assert approval["id"] in logged[0]
        assert (await decide(base, approval["id"], {"decision": "approve"}, "ann")).is_success
        done = await asyncio.wait_for(call, 10)
        assert not done.isError, done
        # a declined elicitation withdraws the call: it is not run
        asked.clear()

        async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            asked.append(params.message)
            return types.ElicitResult(action="decline")

        client._elicitation_callback = decline  # the same session, a user who says no
        with pytest.raises(McpError, match="withdrawn"):
            await client.call_tool("send_email", {"to": "c@d.e", "body": "y"})
    assert [c["arguments"]["to"] for c in mcp_server.calls()] == ["a@b.c"]
    async with httpx.AsyncClient() as http:
        listed = await http.get(
            f"{base}/admin/approvals", params={"status": "rejected"}, headers=ADMIN_HEADERS
        )
    (withdrawn,) = listed.json()["data"]
    assert withdrawn["decided_by"] == "client"


@asynccontextmanager
async def elicited(url: str, key: str, elicit: Any, log: Any) -> AsyncIterator[ClientSession]:
    """A client session that declares ``elicitation`` (it has a callback)."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write, elicitation_callback=elicit, logging_callback=log) as client,
    ):
        await client.initialize()
        yield client


_KEYS = f"{{required: true, admin_key: {ADMIN}}}"


def test_the_admin_api_refuses_bad_bodies_unknown_ids_and_callers_without_the_admin_key(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", PAUSE % 60, keys=_KEYS)
    url = f"{base}/admin/approvals"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"authorization": f"Bearer {new_key(base)}"}).status_code == 401
    bad = httpx.get(url, params={"status": "maybe"}, headers=ADMIN_HEADERS)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "status"
    assert httpx.get(f"{url}/nope", headers=ADMIN_HEADERS).status_code == 404
    for body in ({"decision": "edit"}, {"decision": "approve", "arguments": {}}, {"x": 1}):
        refused = httpx.post(f"{url}/nope", json=body, headers=ADMIN_HEADERS)
        assert refused.status_code == 400, body
    unknown = httpx.post(f"{url}/nope", json={"decision": "approve"}, headers=ADMIN_HEADERS)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "approval_not_found"
    assert httpx.get(url, headers=ADMIN_HEADERS).json() == {"object": "list", "data": []}


async def test_a_client_that_goes_away_while_its_call_waits_withdraws_it(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    db = tmp_path / "g.db"
    base = gateway(make_proxy, upstream, mcp_server, db, PAUSE % 60, keys=_KEYS)
    async with session(f"{base}/mcp/crm", new_key(base)) as client:
        call = asyncio.create_task(client.call_tool("send_email", {"to": "a@b.c", "body": "x"}))
        (approval,) = await waiting(base)
        call.cancel()  # the agent gives up: its HTTP request is closed
    withdrawn: dict[str, Any] = {}

    async def rejected() -> None:
        async with httpx.AsyncClient() as http:
            answer = await http.get(
                f"{base}/admin/approvals/{approval['id']}", headers=ADMIN_HEADERS
            )
        withdrawn.update(answer.json())

    for _ in range(100):
        await rejected()
        if withdrawn["status"] != "pending":
            break
        await asyncio.sleep(0.05)
    assert (withdrawn["status"], withdrawn["decided_by"]) == ("rejected", "client")
    late = await decide(base, approval["id"], {"decision": "approve"}, "ann")
    assert late.status_code == 409 and "already rejected by client" in late.text
    assert mcp_server.calls() == []
