"""Reply and session state in the store: writers that overlap, in one process and in
several (two connections to one SQLite file or one Redis), lose none of each other's
changes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from hookgate.store.base import Store
from hookgate.store.redis import RedisStore
from hookgate.store.sqlite import SQLiteStore
from hookgate.store.state import StateRecord, shared

WRITERS = 24


def two_stores(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> list[Store]:
    """Two stores on one database, as two processes (or replicas) open it."""
    if kind == "redis":
        url = request.getfixturevalue("redis_server").url
        return [RedisStore(url), RedisStore(url)]
    return [SQLiteStore(f"sqlite:///{tmp_path / 'state.db'}") for _ in range(2)]


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_writers_of_one_record_in_two_processes_keep_each_other_s_changes(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Every writer reads the session before any writes it back (parallel tool calls,
    an SDK reply around them, on two replicas): all counts add up and every writer's
    placeholder is kept."""
    stores = two_stores(kind, tmp_path, request)
    await asyncio.gather(*(store.open() for store in stores))
    await stores[0].save_state("session:s", orjson.dumps({"tool_guard": {"calls": 1}}), 60)
    writers = [StateRecord(stores[n % 2], "session:s") for n in range(WRITERS)]
    await asyncio.gather(*(writer.load() for writer in writers))
    for n, writer in enumerate(writers):
        assert writer.value == {"tool_guard": {"calls": 1}}
        writer.value["tool_guard"]["calls"] += 1
        writer.value.setdefault("pii", {})[f"<EMAIL_{n}>"] = f"{n}@example.com"
    await asyncio.gather(*(writer.save() for writer in writers))
    kept = orjson.loads(await stores[1].load_state("session:s") or b"{}")
    assert kept["tool_guard"] == {"calls": 1 + WRITERS}
    assert kept["pii"] == {f"<EMAIL_{n}>": f"{n}@example.com" for n in range(WRITERS)}
    await asyncio.gather(*(store.close() for store in stores))


async def test_a_process_s_writers_share_one_live_copy(tmp_path: Path) -> None:
    """:func:`shared` gives one copy per record while it is held: a change made while
    the copy is being saved is kept (and saved next time), a value JSON cannot carry
    stays in the copy only, and what another process wrote arrives with a load."""
    store, other = (SQLiteStore(f"sqlite:///{tmp_path / 'state.db'}") for _ in range(2))
    copy = shared(store, "session:s")
    assert shared(store, "session:s") is copy and shared(store, "session:t") is not copy
    live: Any = object()
    copy.value.update(todo={"todos": ["a"]}, tracing=live)
    saving = asyncio.create_task(copy.save())
    await asyncio.sleep(0)  # the save has taken its copy and is writing it
    copy.value["todo"] = {"todos": ["a", "b"]}
    await saving
    assert copy.value == {"todo": {"todos": ["a", "b"]}, "tracing": live}
    assert orjson.loads(await other.load_state("session:s") or b"{}") == {"todo": {"todos": ["a"]}}
    await other.save_state("session:s", orjson.dumps({"todo": {"todos": ["a"]}, "n": 2}), 60)
    await copy.load()  # theirs merged in, our unsaved change kept
    assert copy.value == {"todo": {"todos": ["a", "b"]}, "tracing": live, "n": 2}
    await copy.save()
    assert orjson.loads(await other.load_state("session:s") or b"{}") == {
        "todo": {"todos": ["a", "b"]},
        "n": 2,
    }
    del copy
    assert shared(store, "session:s").value == {}  # none held it: a new copy, not loaded
    await store.close()
    await other.close()
