"""Approvals in both stores: durable, listed newest first by effective status, and decided
by exactly one of many approvers racing from two store clients (two replicas)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from hookgate.store.approvals import (
    Approval,
    ApprovalClosed,
    ApprovalDecision,
    ApprovalNotFound,
)
from tests.services import RedisServer

APPROVE = ApprovalDecision(decision="approve")


def approval(tool: str, created: float, expires_in_s: float = 60) -> Approval:
    return Approval(
        kind="mcp", created_at=created, expires_at=created + expires_in_s, tool=tool,
        server="crm", arguments={"to": "<EMAIL_ADDRESS_1a2b>"},
    )  # fmt: skip


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_one_of_racing_approvers_wins_and_approvals_survive_a_reopen(
    redis_server: RedisServer, tmp_path: Path, kind: str
) -> None:
    from hookgate.store.redis import RedisStore
    from hookgate.store.sqlite import SQLiteStore

    def open_store() -> Any:
        if kind == "redis":
            return RedisStore(redis_server.url)
        return SQLiteStore(f"sqlite:///{tmp_path / 'approvals.db'}")

    first, second = open_store(), open_store()
    now = time.time()
    older, newer, gone = approval("a", now - 2), approval("b", now - 1), approval("c", now - 9, 1)
    for made in (older, newer, gone):
        await first.add_approval(made)
    decisions = [
        ApprovalDecision(decision="reject", message=f"no {i}") if i % 2 else APPROVE
        for i in range(8)
    ]
    raced = await asyncio.gather(
        *(
            (first if i % 2 else second).decide_approval(older.id, d, f"approver-{i}", time.time())
            for i, d in enumerate(decisions)
        ),
        return_exceptions=True,
    )
    won = [r for r in raced if isinstance(r, Approval)]
    assert len(won) == 1 and all(isinstance(r, ApprovalClosed) for r in raced if r not in won)
    assert "already" in str(next(r for r in raced if isinstance(r, ApprovalClosed)))
    with pytest.raises(ApprovalClosed, match="expired"):
        await second.decide_approval(gone.id, APPROVE, "late", time.time())
    with pytest.raises(ApprovalNotFound):
        await second.decide_approval("nope", APPROVE, "ann", time.time())
    await first.close()
    await second.close()

    reopened = open_store()  # durable: what another client wrote, after a restart
    assert [a.tool for a in await reopened.approvals()] == ["b", "a", "c"]  # newest first
    assert [a.tool for a in await reopened.approvals("pending")] == ["b"]
    assert [a.tool for a in await reopened.approvals("expired")] == ["c"]
    decided = await reopened.approval(older.id)
    assert decided is not None and decided.decided_by == won[0].decided_by
    assert decided.status == won[0].status and decided.arguments == older.arguments
    assert [a.tool for a in await reopened.approvals(decided.status)] == ["a"]
    assert await reopened.approval("nope") is None
    await reopened.close()


def test_an_edit_needs_arguments_and_only_an_edit_takes_them() -> None:
    with pytest.raises(ValueError, match="an edit needs the new arguments"):
        ApprovalDecision(decision="edit")
    with pytest.raises(ValueError, match="only an edit takes arguments"):
        ApprovalDecision(decision="approve", arguments={})
    with pytest.raises(ValueError):
        ApprovalDecision.model_validate({"decision": "approve", "extra": 1})
