"""A paused SDK reply's calls in the approvals list: shown as the gate's ``pii`` policy
shows them (never the raw value), decided by a person, read back in LangChain's resume
shape, and marked decided by ``sdk`` when the framework resumes with its own decisions."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookgate.pipeline.agent import Decision, ToolCall
from hookgate.policies.pii import PiiConfig, PiiPolicy
from hookgate.policies.tool_guard import ToolGuardConfig, ToolGuardPolicy
from hookgate.redaction.placeholders import placeholder
from hookgate.sdk import Gate
from hookgate.store.approvals import ApprovalDecision
from hookgate.store.sqlite import SQLiteStore

SECRET = "a-fixed-secret-for-placeholders"
EMAIL = "ann.lee@example.com"


async def test_paused_calls_are_listed_with_placeholders_and_decided_for_the_resume(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'sdk.db'}")
    pii = PiiPolicy(PiiConfig.model_validate({"secret": SECRET}))
    guard = ToolGuardPolicy(ToolGuardConfig(approval="pause", approve=("send_*",)))
    gate = Gate([pii, guard], agent="mailer", store=store)
    stand_in = placeholder(SECRET.encode(), "EMAIL_ADDRESS", EMAIL)
    calls = [
        ToolCall("send_email", {"to": EMAIL, "body": "Hi"}, "c1"),
        ToolCall("send_fax", {"to": "office"}, "c2"),
    ]
    ctx = await gate.driver.open_reply(session_id="thread-1")
    gated = [(c, reason) for c in calls if (reason := await gate.driver.approval(c, ctx))]
    await gate.driver.pause(ctx, calls=gated)

    listed = await store.approvals("pending")
    assert [(a.tool, a.index, a.kind, a.group) for a in sorted(listed, key=lambda a: a.index)] == [
        ("send_email", 0, "sdk", ctx.reply_id), ("send_fax", 1, "sdk", ctx.reply_id),
    ]  # fmt: skip
    email = next(a for a in listed if a.tool == "send_email")
    assert email.arguments == {"to": stand_in, "body": "Hi"} and email.session == "thread-1"
    assert EMAIL not in (tmp_path / "sdk.db").read_bytes().decode("utf-8", "replace")

    assert await gate.decisions("thread-1") is None  # both still wait
    edit = ApprovalDecision(decision="edit", arguments={"to": stand_in, "body": "Hello"})
    await store.decide_approval(email.id, edit, "ann", email.created_at + 1)
    assert await gate.decisions(ctx.reply_id) is None  # the fax still waits
    # the framework resumed with decisions of its own: the pending one is marked by sdk
    await gate.driver.approvals.resumed(  # type: ignore[union-attr]
        ctx, ctx.reply_id, [Decision("approve"), Decision("reject", message="no faxes")]
    )
    assert await gate.decisions("thread-1") == {"decisions": [
        {"type": "edit", "edited_action": {"name": "send_email",
                                           "args": {"to": stand_in, "body": "Hello"}}},
        {"type": "reject", "message": "no faxes"},
    ]}  # fmt: skip
    fax = next(a for a in await store.approvals() if a.tool == "send_fax")
    assert (fax.status, fax.decided_by) == ("rejected", "sdk")
    with pytest.raises(LookupError):
        await gate.decisions("no-such-reply")
    await gate.aclose()
    await store.close()
