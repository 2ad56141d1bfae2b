"""Reply and session state in the store, written back with merge semantics.

Policies keep state per reply (``ReplyContext.state``) and per session
(``ReplyContext.session``), keyed by policy name, and the store keeps it between the
replies of a session, across processes: ``session:{id}`` is one record shared by the
SDK's replies and the MCP gateway's tool calls of a conversation. Its writers overlap:
an SDK reply runs while the agent's tools are called through the gateway, parallel tool
calls run at once, replicas serve one conversation. A writer that read the record,
changed its copy and wrote the copy whole would wipe what the others wrote meanwhile
(the lost update). So a :class:`StateRecord` remembers what it read (the *base*), and
writes the three-way merge (:func:`merge_state`) of the base, its copy and what the
store holds by then, in one atomic read-modify-write of the store
(:meth:`~hookgate.store.base.Store.update_state`: an IMMEDIATE transaction in SQLite, a
WATCH transaction in Redis), so a writer in another process never falls between the
read and the write. Within a process, :func:`shared` gives every writer of a record the
same live copy (an SDK gate's concurrent replies of one session, the gateway's parallel
calls), whose loads and saves take turns.

Pure: no framework, no I/O of its own (the store does it).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

import orjson

from hookgate.store.base import Store

log = logging.getLogger("hookgate")

STATE_TTL_S = 7 * 24 * 3600.0
"""How long the store keeps a reply's or a session's policy state after it was last
written (the SDK's paused replies and sessions, the MCP gateway's tool calls)."""


class StateRecord:
    """One record of policy state in the store (a JSON object keyed by policy name) and
    this process's copy of it, :attr:`value`, which its writers change in place.

    :meth:`load` brings the copy up to date with the store and :meth:`save` writes back
    what changed in it since, merged with what other writers stored meanwhile; both
    keep the copy's changes the other did not see. A value JSON cannot carry (a live
    object a policy keeps) stays in the copy and is never stored (:func:`json_safe`).
    """

    def __init__(self, store: Store, key: str, ttl_s: float = STATE_TTL_S) -> None:
        self.store = store
        self.key = key
        self.ttl_s = ttl_s
        self.value: dict[str, Any] = {}
        """The live copy (hand it to a ``ReplyContext``; it stays the same object)."""
        self._base: dict[str, Any] = {}
        """What the store held when the copy last met it (loaded or saved)."""
        self._turn = asyncio.Lock()

    async def load(self) -> dict[str, Any]:
        """Merge what the store holds into :attr:`value` (keeping its unsaved changes);
        returns :attr:`value`."""
        async with self._turn:
            stored = await self.store.load_state(self.key)
            _assign(self.value, merge_state(self._base, self.value, _object(stored)))
            self._base = _object(stored)  # a copy of its own: the value's is changed in place
        return self.value

    async def save(self) -> None:
        """Write back what changed in :attr:`value` since it last met the store, merged
        with what others wrote meanwhile; :attr:`value` then has their changes too. No
        write when nothing changed."""
        async with self._turn:
            ours = orjson.loads(orjson.dumps(json_safe(self.value)))  # as of now, a copy
            if ours == self._base:
                return
            base = self._base

            def merged(stored: bytes | None) -> bytes:
                return orjson.dumps(merge_state(base, ours, _object(stored)))

            written = await self.store.update_state(self.key, merged, self.ttl_s)
            # changes made to the copy while the write was on its way are kept
            _assign(self.value, merge_state(ours, self.value, _object(written)))
            self._base = _object(written)


_live: weakref.WeakValueDictionary[tuple[int, str], StateRecord] = weakref.WeakValueDictionary()


def shared(store: Store, key: str) -> StateRecord:
    """This process's live copy of ``key`` in ``store``: the same :class:`StateRecord`
    for every writer while any holds it (so their changes meet in memory, and its loads
    and saves take turns); a new one, loaded afresh, once none does."""
    live = _live.get((id(store), key))  # the record holds its store: the id is its own
    if live is None:
        live = _live[(id(store), key)] = StateRecord(store, key)
    return live


def json_safe(state: dict[str, Any]) -> dict[str, Any]:
    """The entries of a policy-keyed state dict that JSON can carry, as the store keeps
    them (a policy that keeps a live object there keeps it in this process only)."""
    kept: dict[str, Any] = {}
    for name, value in state.items():
        try:
            orjson.dumps(value)
        except TypeError:
            log.debug("hookgate: %s's state is not JSON; it is not kept in the store", name)
            continue
        kept[name] = value
    return kept


_ABSENT: Any = object()


def merge_state(base: Any, ours: Any, theirs: Any) -> Any:
    """Three-way merge of policy state two writers changed at once: both read ``base``;
    ``ours`` is this writer's result, ``theirs`` what the other wrote meanwhile.

    What only one side changed is taken from it; objects are merged key by key (so two
    calls' placeholders are both kept, and a key one side removed stays removed); a number
    both changed gets both changes (policy state's numbers are counts, so two calls that
    each counted one leave two); any other value both changed is ours.
    """
    if ours == base:
        return theirs
    if theirs == base:
        return ours
    if isinstance(ours, dict) and isinstance(theirs, dict):
        before = base if isinstance(base, dict) else {}
        merged = {}
        for key in {**theirs, **ours}:
            value = merge_state(
                before.get(key, _ABSENT), ours.get(key, _ABSENT), theirs.get(key, _ABSENT)
            )
            if value is not _ABSENT:
                merged[key] = value
        return merged
    if all(_is_count(v) for v in (ours, theirs)) and (base is _ABSENT or _is_count(base)):
        return theirs + ours - (0 if base is _ABSENT else base)
    return ours


def _is_count(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _assign(copy: dict[str, Any], merged: dict[str, Any]) -> None:
    """Make ``copy`` equal ``merged`` in place, replacing only the entries that differ
    (a policy holding one of the others still holds the copy's)."""
    for name in [name for name in copy if name not in merged]:
        del copy[name]
    for name, value in merged.items():
        if copy.get(name, _ABSENT) != value:
            copy[name] = value


def _object(raw: bytes | None) -> dict[str, Any]:
    """A stored record as a dict ({} for none, or for one that is not a JSON object)."""
    if raw is None:
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
