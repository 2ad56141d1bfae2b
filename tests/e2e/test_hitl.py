"""Human in the loop that pauses: ``tool_guard``'s ``approval: pause`` stops a real
framework's run through its own mechanism, and a new process resumes it — with an edit or
a rejection — from the framework's saved state and the reply's state in hookgate's store,
with the reply's counts intact."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from hookgate.wire import synth
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver, ReceivedSpan
from tests.sdk.harness import tracing

EDITED = {"to": "boss@corp.example", "body": "Late, sorry."}
EDIT = {"type": "edit", "edited_action": {"name": "send_email", "args": EDITED}}
REJECT = {"type": "reject", "message": "Do not e-mail the boss; tell the user to call."}
APPROVE = {"type": "approve"}


def setup(
    tmp_path: Path, upstream: FakeUpstream, *, sdk: str = "", receiver: OtlpReceiver | None = None
) -> tuple[Path, Path]:
    """A gate config (SQLite store, the pausing guard, a report of each reply's end, and
    ``sdk`` settings and a trace exporter when given) and the report's path."""
    report = tmp_path / "replies.jsonl"
    policies = (
        f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\n"
        f"{sdk}"
        "policies:\n"
        f"{tracing(receiver) if receiver is not None else ''}"
        "  - tool_guard: {approval: pause, approve: [send_*, delete_*]}\n"
        "  - model_call_limit: {max_per_session: 50}\n"
        f"  - tests.policies_for_tests:ReplyReport: {{path: '{report}'}}\n"
    )
    config = tmp_path / "agent.yaml"
    config.write_text(config_text(upstream.base_url, policies))
    return config, report


UNENDED = ("Task was destroyed", "GeneratorExit", "Exception ignored", "never awaited")
"""What a process whose replies and tasks did not all end writes to stderr at exit."""


def run_step(upstream: FakeUpstream, module: str, *args: str, asynchronous: bool = False) -> Any:
    """Run one step of the agent in a new Python process (a coroutine never awaited is an
    error there); the finished process."""
    env = {
        **os.environ,
        "HITL_MODEL_URL": upstream.base_url,
        "PYTHONWARNINGS": "error::RuntimeWarning",
    }
    if asynchronous:
        env["HITL_ASYNC"] = "1"
    command = [sys.executable, "-W", "error::RuntimeWarning", "-m", module, *args]
    return subprocess.run(command, capture_output=True, env=env, timeout=120)


def step(
    upstream: FakeUpstream, module: str, *args: str, asynchronous: bool = False
) -> dict[str, Any]:
    """Run one step in a new process that must exit 0 with every reply and task ended; its
    printed JSON."""
    done = run_step(upstream, module, *args, asynchronous=asynchronous)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr[-3000:]
    assert not [line for line in stderr.splitlines() if any(w in line for w in UNENDED)], stderr
    result: dict[str, Any] = orjson.loads(done.stdout.splitlines()[-1])
    return result


def report_lines(report: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in report.read_bytes().splitlines()] if report.exists() else []


def assert_paused(report: Path) -> None:
    """The first process ended its reply as paused, having counted the first model call."""
    (line,) = report_lines(report)
    assert line["status"] == "paused" and line["turns"] == 1 and line["tool_calls"] == 0


ASKED = {"to": "boss@corp.example", "body": "I'm late."}


def the_model_asks_to_send(upstream: FakeUpstream) -> None:
    call = synth.ToolCall("call_1", "send_email", orjson.dumps(ASKED).decode())
    upstream.push(synth.Reply(tool_calls=[call]))


def assert_resumed(upstream: FakeUpstream, report: Path, sent: Path, body: str | None) -> str:
    """The e-mail with ``body`` was sent (or, None, nothing was), and the reply that ended in
    the second process had the counts of both; returns the tool result the model read."""
    paused, ended = report_lines(report)
    if body is not None:
        assert sent.read_text() == f"boss@corp.example: {body}\n"
    else:
        assert not sent.exists()
    assert (paused["status"], ended["status"]) == ("paused", "ok")
    assert paused["reply_id"] == ended["reply_id"]
    assert ended["tool_calls"] == (0 if body is None else 1)
    # one reply across both processes: the first model call was counted before the pause
    assert ended["turns"] == 2 and ended["input_tokens"] == 20
    assert ended["session"]["model_call_limit"] == {"calls": 2}
    return str(upstream.requests[-1].json()["messages"][-1]["content"])


@pytest.mark.parametrize("decision", [APPROVE, EDIT, REJECT], ids=["approve", "edit", "reject"])
def test_a_langchain_run_pauses_and_resumes_in_a_new_process(
    upstream: FakeUpstream, tmp_path: Path, decision: dict[str, Any]
) -> None:
    config, report = setup(tmp_path, upstream)
    checkpoints = str(tmp_path / "checkpoints.db")
    module = "tests.e2e.hitl_langchain"
    the_model_asks_to_send(upstream)
    paused = step(upstream, module, str(config), checkpoints, "t1", "start")
    (request,) = paused["interrupts"]
    assert request["action_requests"] == [{
        "name": "send_email", "args": ASKED,
        "description": "the call of 'send_email' needs a human's approval",
    }]  # fmt: skip
    assert request["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
    assert not Path(checkpoints + ".sent").exists()
    assert_paused(report)

    upstream.push(synth.Reply(text="Done."))
    resumed = step(upstream, module, str(config), checkpoints, "t1", "resume",
                   orjson.dumps({"decisions": [decision]}).decode())  # fmt: skip
    assert resumed["interrupts"] == [] and resumed["answer"] == "Done."
    body = {"approve": ASKED["body"], "edit": EDITED["body"], "reject": None}[decision["type"]]
    read = assert_resumed(upstream, report, Path(checkpoints + ".sent"), body)
    assert read == ("sent to boss@corp.example" if body else REJECT["message"])
    # resumed directly: the listed approval is marked decided by the SDK, and audited
    (approval,) = approvals(tmp_path / "hookgate.db")
    status = {"approve": "approved", "edit": "edited", "reject": "rejected"}[decision["type"]]
    assert (approval["status"], approval["decided_by"]) == (status, "sdk")
    assert decision_actors(tmp_path / "hookgate.db") == ["sdk"]


def approvals(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT doc FROM approvals ORDER BY created_at").fetchall()
    return [orjson.loads(row[0]) for row in rows]


def decision_actors(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT actor FROM audit WHERE api = 'approval'").fetchall()
    return [row[0] for row in rows]


def test_a_langchain_pause_is_listed_decided_in_the_admin_api_and_resumed_from_the_store(
    upstream: FakeUpstream, tmp_path: Path, make_proxy: ProxyFactory
) -> None:
    """The paused call is an approval (kind sdk) in hookgate's list; a person edits it
    through the admin API of a proxy sharing the store, and ``gate.decisions(thread)``
    resumes the run with it (``Command(resume=...)``)."""
    config, report = setup(tmp_path, upstream)
    checkpoints = str(tmp_path / "checkpoints.db")
    module = "tests.e2e.hitl_langchain"
    the_model_asks_to_send(upstream)
    step(upstream, module, str(config), checkpoints, "t9", "start")
    admin = "admin-key-for-approvals"
    extra = f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\nkeys: {{admin_key: {admin}}}\n"
    base = make_proxy(extra).removesuffix("/v1")
    headers = {"authorization": f"Bearer {admin}", "x-hookgate-actor": "ann"}
    listed = httpx.get(f"{base}/admin/approvals?status=pending", headers=headers).json()["data"]
    (approval,) = listed
    assert (approval["kind"], approval["tool"], approval["session"]) == ("sdk", "send_email", "t9")
    assert approval["arguments"] == ASKED and approval["agent"] == "mailer"
    decision = {"decision": "edit", "arguments": EDITED}
    made = httpx.post(f"{base}/admin/approvals/{approval['id']}", json=decision, headers=headers)
    assert made.status_code == 200, made.text

    upstream.push(synth.Reply(text="Done."))
    resumed = step(upstream, module, str(config), checkpoints, "t9", "decided")
    assert resumed["interrupts"] == [] and resumed["answer"] == "Done."
    assert_resumed(upstream, report, Path(checkpoints + ".sent"), EDITED["body"])
    (after,) = approvals(tmp_path / "hookgate.db")
    assert (after["status"], after["decided_by"]) == ("edited", "ann")  # not overwritten
    assert decision_actors(tmp_path / "hookgate.db") == ["ann"]


TEAM = {"to": "team@corp.example", "body": "Boss is late."}
TEAM_EDITED = {"to": "team@corp.example", "body": "Start without me."}
THREE = [
    synth.ToolCall("call_1", "send_email", orjson.dumps(ASKED).decode()),
    synth.ToolCall("call_2", "send_email", orjson.dumps(TEAM).decode()),
    synth.ToolCall("call_3", "delete_report", orjson.dumps({"name": "q3"}).decode()),
]
MIXED = [
    {"type": "approve"},
    {"type": "edit", "edited_action": {"name": "send_email", "args": TEAM_EDITED}},
    {"type": "reject", "message": "Keep the Q3 report."},
]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_one_langchain_turn_of_three_gated_calls_pauses_once_and_takes_a_decision_each(
    upstream: FakeUpstream, tmp_path: Path, receiver: OtlpReceiver, asynchronous: bool
) -> None:
    """As LangChain's own HumanInTheLoopMiddleware (batched): one interrupt lists the three
    calls; the documented resume, one decision per action, runs the approved call, the
    edited one with its new arguments, and not the rejected one, whose rejection the model
    reads. The reply ends as paused in the first process and as ok in the second."""
    config, report = setup(tmp_path, upstream, receiver=receiver)
    checkpoints = str(tmp_path / "checkpoints.db")
    module = "tests.e2e.hitl_langchain"
    upstream.push(synth.Reply(tool_calls=THREE))
    paused = step(upstream, module, str(config), checkpoints, "t1", "start",
                  asynchronous=asynchronous)  # fmt: skip
    (request,) = paused["interrupts"]
    assert [(a["name"], a["args"]) for a in request["action_requests"]] == [
        ("send_email", ASKED), ("send_email", TEAM), ("delete_report", {"name": "q3"}),
    ]  # fmt: skip
    assert [c["action_name"] for c in request["review_configs"]] == [
        "send_email", "send_email", "delete_report",
    ]  # fmt: skip
    sent = Path(checkpoints + ".sent")
    assert not sent.exists()
    assert_paused(report)

    upstream.push(synth.Reply(text="Done."))
    decisions = orjson.dumps({"decisions": MIXED}).decode()
    resumed = step(upstream, module, str(config), checkpoints, "t1", "resume", decisions,
                   asynchronous=asynchronous)  # fmt: skip
    assert resumed["interrupts"] == [] and resumed["answer"] == "Done."
    assert sorted(sent.read_text().splitlines()) == [
        "boss@corp.example: I'm late.", "team@corp.example: Start without me.",
    ]  # fmt: skip
    read = {m["tool_call_id"]: m["content"] for m in upstream.requests[-1].json()["messages"]
            if m["role"] == "tool"}  # fmt: skip
    assert read == {"call_1": "sent to boss@corp.example", "call_2": "sent to team@corp.example",
                    "call_3": "Keep the Q3 report."}  # fmt: skip
    paused_line, ended = report_lines(report)
    assert (paused_line["status"], ended["status"]) == ("paused", "ok")
    assert ended["tool_calls"] == 2 and ended["turns"] == 2

    def both(spans: list[ReceivedSpan]) -> bool:
        return len([s for s in spans if s.name == "invoke_agent mailer"]) == 2

    replies = [s for s in receiver.wait_until(both) if s.name == "invoke_agent mailer"]
    statuses = sorted((s.start_ns, s.attributes["hookgate.reply.status"]) for s in replies)
    assert [status for _, status in statuses] == ["paused", "ok"]
    assert all(s.status_code != 2 for s in replies)  # neither is an error
    assert len({s.attributes["hookgate.reply_id"] for s in replies}) == 1


@pytest.mark.parametrize("gone", ["expired", "another_store"])
def test_a_resume_whose_paused_reply_is_gone_names_the_store_and_the_lifetime(
    upstream: FakeUpstream, tmp_path: Path, gone: str
) -> None:
    config, _ = setup(tmp_path, upstream, sdk="sdk: {paused_ttl_s: 1}\n")
    checkpoints = str(tmp_path / "checkpoints.db")
    module = "tests.e2e.hitl_langchain"
    the_model_asks_to_send(upstream)
    step(upstream, module, str(config), checkpoints, "t1", "start")
    if gone == "expired":
        time.sleep(1.2)
        store = f"sqlite:///{tmp_path / 'hookgate.db'}"
    else:
        other = tmp_path / "other"
        other.mkdir()
        config, _ = setup(other, upstream, sdk="sdk: {paused_ttl_s: 1}\n")
        store = f"sqlite:///{other / 'hookgate.db'}"
    done = run_step(upstream, module, str(config), checkpoints, "t1", "resume",
                    orjson.dumps({"decisions": [APPROVE]}).decode())  # fmt: skip
    stderr = done.stderr.decode()
    assert done.returncode != 0
    assert f"the store {store} keeps a paused reply for 1 s (sdk.paused_ttl_s)" in stderr
    assert "attach it" not in stderr
    assert not Path(checkpoints + ".sent").exists()


@pytest.mark.parametrize("answer", ["confirm", "edit", "reject"])
def test_an_agentscope_reply_parks_and_resumes_in_a_new_process(
    upstream: FakeUpstream, tmp_path: Path, answer: str
) -> None:
    config, report = setup(tmp_path, upstream)
    state = str(tmp_path / "agent-state.json")
    module = "tests.e2e.hitl_agentscope"
    the_model_asks_to_send(upstream)
    parked = step(upstream, module, str(config), state, "start")
    assert parked["ask"]["name"] == "send_email" and parked["ask"]["input"] == ASKED
    assert not Path(state + ".sent").exists()
    assert_paused(report)

    upstream.push(synth.Reply(text="Done."))
    decision: dict[str, Any] = {"confirmed": answer != "reject"}
    if answer == "edit":
        decision["args"] = EDITED
    resumed = step(upstream, module, str(config), state, "resume", orjson.dumps(decision).decode())
    assert resumed["ask"] is None and resumed["answer"] == "Done."
    body = {"confirm": ASKED["body"], "edit": EDITED["body"], "reject": None}[answer]
    read = assert_resumed(upstream, report, Path(state + ".sent"), body)
    assert ("sent to boss@corp.example" if body else "denied by user") in read
    # the parked call was listed; confirmed directly, it is marked decided by the SDK
    (approval,) = approvals(tmp_path / "hookgate.db")
    status = {"confirm": "approved", "edit": "edited", "reject": "rejected"}[answer]
    assert (approval["kind"], approval["arguments"]) == ("sdk", ASKED)
    assert (approval["status"], approval["decided_by"]) == (status, "sdk")
