"""Human in the loop that pauses: ``tool_guard``'s ``approval: pause`` stops a real
framework's run through its own mechanism, and a new process resumes it — with an edit or
a rejection — from the framework's saved state and the reply's state in hookgate's store,
with the reply's counts intact."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from hookgate.wire import synth
from tests.conftest import config_text
from tests.fakes import FakeUpstream

EDITED = {"to": "boss@corp.example", "body": "Late, sorry."}
EDIT = {"type": "edit", "edited_action": {"name": "send_email", "args": EDITED}}
REJECT = {"type": "reject", "message": "Do not e-mail the boss; tell the user to call."}
APPROVE = {"type": "approve"}


def setup(tmp_path: Path, upstream: FakeUpstream) -> tuple[Path, Path]:
    """A gate config (SQLite store, the pausing guard, a report of each reply) and the
    report's path."""
    report = tmp_path / "replies.jsonl"
    policies = (
        f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\n"
        "policies:\n"
        "  - tool_guard: {approval: pause, approve: [send_*]}\n"
        "  - model_call_limit: {max_per_session: 50}\n"
        f"  - tests.policies_for_tests:ReplyReport: {{path: '{report}'}}\n"
    )
    config = tmp_path / "agent.yaml"
    config.write_text(config_text(upstream.base_url, policies))
    return config, report


def step(upstream: FakeUpstream, module: str, *args: str) -> dict[str, Any]:
    """Run one step of the agent in a new Python process; its printed JSON."""
    env = {**os.environ, "HITL_MODEL_URL": upstream.base_url}
    done = subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    result: dict[str, Any] = orjson.loads(done.stdout.splitlines()[-1])
    return result


ASKED = {"to": "boss@corp.example", "body": "I'm late."}


def the_model_asks_to_send(upstream: FakeUpstream) -> None:
    call = synth.ToolCall("call_1", "send_email", orjson.dumps(ASKED).decode())
    upstream.push(synth.Reply(tool_calls=[call]))


def assert_resumed(upstream: FakeUpstream, report: Path, sent: Path, body: str | None) -> str:
    """The e-mail with ``body`` was sent (or, None, nothing was), and the reply that ended in
    the second process had the counts of both; returns the tool result the model read."""
    (line,) = [orjson.loads(x) for x in report.read_bytes().splitlines()]
    if body is not None:
        assert sent.read_text() == f"boss@corp.example: {body}\n"
    else:
        assert not sent.exists()
    assert line["tool_calls"] == (0 if body is None else 1)
    # one reply across both processes: the first model call was counted before the pause
    assert line["turns"] == 2 and line["input_tokens"] == 20
    assert line["session"]["model_call_limit"] == {"calls": 2}
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
    request = paused["interrupt"]
    assert request["action_requests"] == [{
        "name": "send_email", "args": ASKED,
        "description": "the call of 'send_email' needs a human's approval",
    }]  # fmt: skip
    assert request["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
    assert not Path(checkpoints + ".sent").exists() and not report.exists()  # paused

    upstream.push(synth.Reply(text="Done."))
    resumed = step(upstream, module, str(config), checkpoints, "t1", "resume",
                   orjson.dumps({"decisions": [decision]}).decode())  # fmt: skip
    assert resumed["interrupt"] is None and resumed["answer"] == "Done."
    body = {"approve": ASKED["body"], "edit": EDITED["body"], "reject": None}[decision["type"]]
    read = assert_resumed(upstream, report, Path(checkpoints + ".sent"), body)
    assert read == ("sent to boss@corp.example" if body else REJECT["message"])


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
    assert not Path(state + ".sent").exists() and not report.exists()

    upstream.push(synth.Reply(text="Done."))
    decision: dict[str, Any] = {"confirmed": answer != "reject"}
    if answer == "edit":
        decision["args"] = EDITED
    resumed = step(upstream, module, str(config), state, "resume", orjson.dumps(decision).decode())
    assert resumed["ask"] is None and resumed["answer"] == "Done."
    body = {"confirm": ASKED["body"], "edit": EDITED["body"], "reject": None}[answer]
    read = assert_resumed(upstream, report, Path(state + ".sent"), body)
    assert ("sent to boss@corp.example" if body else "denied by user") in read
