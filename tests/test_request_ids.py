"""Request ids: unique, 32 hex digits; a client's own id is kept only when it is plain."""

from __future__ import annotations

import os

import httpx

from hookgate.ids import UniqueIds


def test_ids_are_unique_and_uuid_sized() -> None:
    ids = UniqueIds()
    made = {ids.next() for _ in range(10_000)}
    assert len(made) == 10_000
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in made)
    assert UniqueIds().next()[:16] != ids.next()[:16]  # another process, another prefix


def test_a_forked_child_never_repeats_its_parent_s_ids() -> None:
    """A worker of ``hookgate serve --workers N`` is forked after the ids were made."""
    ids = UniqueIds()
    ids.next()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child writes its next id and leaves at once
        os.write(write, ids.next().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    theirs = os.read(read, 64).decode()
    os.close(read)
    ours = ids.next()
    assert len(theirs) == 32 and theirs[:16] != ours[:16]


def test_client_request_id_kept_only_when_plain(proxy_url: str) -> None:
    base = proxy_url.removesuffix("/v1")
    kept = httpx.get(f"{base}/nowhere", headers={"x-hookgate-request-id": "agent-run.42:7"})
    assert kept.headers["x-hookgate-request-id"] == "agent-run.42:7"
    for bad in ("x" * 65, "a b", "line\\nbreak", "<script>"):
        replaced = httpx.get(f"{base}/nowhere", headers={"x-hookgate-request-id": bad})
        assert len(replaced.headers["x-hookgate-request-id"]) == 32
