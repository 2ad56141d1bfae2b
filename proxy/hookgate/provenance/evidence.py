"""What a conversation holds, by source: trusted text, and each untrusted tool result's
fields — kept as hashes of canonical forms, never as text.

A tool result is split into fields (:func:`fields`): parsed as JSON, else as YAML (a
mapping or a list whose keys are names or e-mail addresses: AgentDojo's tools answer
with YAML dumps of pydantic models), else taken as free text. Each leaf keeps its path —
the tool's name, then its keys, ``[]`` for a list's items
(``get_most_recent_transactions[].sender``); a result that is a single text is
``<tool>.content`` (``read_file.content``) — so a rule can admit one field of a tool (a
transaction's ``sender``) and not another (its ``subject``, which whoever sent the
money wrote).

:class:`Evidence` keeps, per source path, 48-bit hashes of every compact canonical form
of each leaf (:mod:`.normalize`): the whole leaf and each word, e-mail address and URL in
it (marked exact), and every substring of ``gram_length`` characters of the leaf's forms.
Its :attr:`~Evidence.data` is JSON (a policy's state, which the store keeps): no value
and no text is in it, and it is bounded (:data:`MAX_SOURCE_HASHES` per source,
:data:`MAX_HASHES` in all, the oldest sources forgotten first). A leaf longer than a
source's share is winnowed (:func:`hashes`), so a value planted after any amount of
padding is still found when it is at least ``gram_length + 31`` characters long (an
e-mail address or URL of its own is found at any length, exactly). Pure.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict, deque
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import yaml

from hookgate.provenance import normalize

TRUSTED = "prompt"
"""The source name of trusted text: the user's and system's messages, trusted tools'
results."""

MAX_SOURCE_HASHES = 32_768
"""Hashes kept for one source path (about 16 KB of text)."""
MAX_TRUSTED_HASHES = 65_536
"""Hashes kept of trusted text (past it, trusted text clears no more values)."""
MAX_HASHES = 131_072
"""Hashes kept in all; past it the oldest untrusted sources are forgotten."""
MAX_WINDOW = 32
"""The widest winnowing window (see :func:`hashes`)."""
MAX_SEEN = 256
"""Trusted texts remembered as recorded (their hashes), so a resent one is not redone."""
MEMO_HASHES = 524_288
"""Hashes of recently hashed leaves remembered (about 20 MB at most; a tool result of
1 KB has some 2,000)."""
MAX_LEAVES = 2_048
"""Leaves of one tool result that are recorded (the rest are not)."""
_EXACT = "="
_PERSON = b"hookgate-prov"


_BLAKE = hashlib.blake2b(digest_size=6, person=_PERSON)


def digest(text: str) -> int:
    """A 48-bit hash of one form (JSON carries it as an integer): BLAKE2b, personalised."""
    state = _BLAKE.copy()  # a copy of a keyed state costs less than a new one
    state.update(text.encode())
    return int.from_bytes(state.digest())


def exact(form: str) -> int:
    """The hash of a whole value's or token's compact form."""
    return digest(_EXACT + form)


def hashes(text: str, gram_length: int, budget: int | None = None) -> tuple[list[int], bool]:
    """What is recorded of one leaf, in this order: its and its tokens' exact forms, then
    its grams from its start; and whether the grams were *winnowed*.

    A leaf with more hashes than ``budget`` keeps, of each window of ``w`` consecutive
    grams, the smallest (winnowing, ``w`` the smallest power of two up to
    :data:`MAX_WINDOW` that fits): any substring of ``gram_length + w - 1`` characters it
    shares with a value still shares a kept gram, so padding a field cannot push a
    planted value out of reach. Past even that, the first part is kept.

    Remembered for the last :data:`MEMO_HASHES` hashes' worth of leaves (keyed by a
    digest of the text): the proxy reads a request's whole conversation at each model
    call, so a tool result is hashed once, not again at every turn that resends it."""
    key = (hashlib.blake2b(text.encode(), digest_size=16).digest(), gram_length, budget)
    known = _MEMO.get(key)
    if known is not None:
        return list(known[0]), known[1]
    found, sparse = _hashes(text, gram_length, budget)
    _MEMO.put(key, (tuple(found), sparse))
    return found, sparse


_Key = tuple[bytes, int, int | None]
_Hashed = tuple[tuple[int, ...], bool]


class _Memo:
    """The hashes of the leaves hashed last, up to ``limit`` hashes in all (thread-safe:
    the SDK may check tool calls from several threads)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.entries: OrderedDict[_Key, _Hashed] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: _Key) -> _Hashed | None:
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
            return found

    def put(self, key: _Key, value: _Hashed) -> None:
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = value
            self.size += len(value[0])
            while self.size > self.limit and self.entries:
                self.size -= len(self.entries.popitem(last=False)[1][0])


_MEMO = _Memo(MEMO_HASHES)


def _hashes(text: str, gram_length: int, budget: int | None) -> tuple[list[int], bool]:
    """:func:`hashes`, computed."""
    forms = sorted(normalize.canonical(text))
    found = dict.fromkeys(exact(f) for f in [*forms, *sorted(normalize.tokens(text))])
    grams = [[digest(g) for g in normalize.gram_list(f, gram_length)] for f in forms]
    total = sum(map(len, grams))
    if budget is None or len(found) + total <= budget:
        for each in grams:
            found.update(dict.fromkeys(each))
        return list(found), False
    window = 2
    while window < MAX_WINDOW and len(found) + 2 * total / (window + 1) > budget:
        window *= 2
    for each in grams:
        found.update(dict.fromkeys(winnowed(each, window)))
    return list(found), True


def winnowed(grams: list[int], window: int) -> list[int]:
    """The smallest hash of each ``window`` consecutive ones (the rightmost on a tie),
    each kept once, in order."""
    kept: list[int] = []
    queue: deque[int] = deque()  # positions of a rising run of hashes
    for i, value in enumerate(grams):
        while queue and grams[queue[-1]] >= value:
            queue.pop()
        queue.append(i)
        if queue[0] <= i - window:
            queue.popleft()
        if i >= window - 1 or i == len(grams) - 1:
            pick = queue[0]
            if not kept or kept[-1] != grams[pick]:
                kept.append(grams[pick])
    return kept


def fields(tool: str, content: str) -> Iterator[tuple[str, str]]:
    """The ``(path, text)`` leaves of one tool result (see the module docstring)."""
    parsed = _parsed(content)
    if parsed is None:
        yield f"{tool}.content", content
        return
    yield from _leaves(tool, parsed)


def _parsed(content: str) -> Any:
    """A result's JSON object or list, or its YAML one of several lines whose keys are
    all names or addresses (free text such as ``Note: pay now`` parses as YAML too, and
    is free text); None for free text."""
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        if "\n" not in content.strip():
            return None  # one line (``Ann: ann@example.com``) is free text, not YAML
        if not _YAML_START.match(content):
            return None  # prose: not worth a YAML parser's time
        try:
            value = yaml.safe_load(content)
        except yaml.YAMLError:
            return None
        if not _named(value):
            return None
    return value if isinstance(value, dict | list) else None


_YAML_START = re.compile(r"\s*(?:-(?:\s|$)|[\w.+@-]+\s*:)")
"""How a YAML list, or a mapping keyed by names or addresses, begins."""


def _named(value: Any) -> bool:
    """Whether every key is a name or an e-mail address (a file's ``shared_with``)."""
    if isinstance(value, dict):
        return all(_keyed(k) and _named(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_named(v) for v in value)
    return True


def _keyed(key: Any) -> bool:
    """Whether a key is one of a structured result: a name or an e-mail address."""
    return _key(key) != "*" or normalize.EMAIL.fullmatch(str(key)) is not None


def _key(key: Any) -> str:
    """A key as a path step: a name as it is, anything else (text) as ``*``, so no text
    of a result reaches a path (paths are logged and labelled)."""
    text = str(key)
    return text if _NAME.fullmatch(text) else "*"


_NAME = re.compile(r"[A-Za-z_][\w-]{0,63}")


def _leaves(path: str, value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{_key(key)}"
            yield child, str(key)
            yield from _leaves(child, item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(f"{path}[]", item)
    elif isinstance(value, str | int) and not isinstance(value, bool):
        yield path, str(value)


class Evidence:
    """Hashes of what a conversation holds, by source (see the module docstring).

    ``data`` is the JSON kept between calls (a policy's state; changed in place):
    ``{"prompt": [hash, ...], "sources": {"tool.field.path": [hash, ...], ...},
    "seen": [hash of a trusted text recorded, ...], "sparse": [winnowed source path, ...]}``.
    Placeholders of the ``pii`` policy are replaced by the values they stand for
    (``placeholders``) before anything is hashed, so a value and its placeholder match.
    """

    def __init__(
        self,
        data: dict[str, Any] | None = None,
        *,
        gram_length: int = 8,
        placeholders: Mapping[str, str] | None = None,
    ) -> None:
        self.data: dict[str, Any] = {} if data is None else data
        self.data.setdefault(TRUSTED, [])
        self.data.setdefault("sources", {})
        self.gram_length = gram_length
        self.placeholders = dict(placeholders or {})
        self._sets: dict[str, frozenset[int]] = {}

    def resolved(self, text: str) -> str:
        """``text`` with each known ``pii`` placeholder replaced by its value."""
        for token, value in self.placeholders.items():
            if token in text:
                text = text.replace(token, value)
        return text

    def add_trusted(self, text: str) -> None:
        """Record text the user or the system wrote (or a trusted tool returned); a text
        recorded before (a system prompt every model call resends) is skipped."""
        seen: list[int] = self.data.setdefault("seen", [])
        marker = digest("\0" + text)
        if marker in seen:
            return
        seen.append(marker)
        del seen[:-MAX_SEEN]
        found, _ = hashes(self.resolved(text), self.gram_length)  # never winnowed: a
        self._add(TRUSTED, self.data, TRUSTED, found, MAX_TRUSTED_HASHES)  # gap only refuses

    def add_result(self, tool: str, content: str) -> list[str]:
        """Record an untrusted tool's result, field by field; the paths recorded."""
        sources: dict[str, list[int]] = self.data["sources"]
        paths: list[str] = []
        for n, (path, text) in enumerate(fields(tool, self.resolved(content))):
            if n >= MAX_LEAVES:
                break
            budget = MAX_SOURCE_HASHES - len(sources.get(path) or [])
            found, sparse = hashes(text, self.gram_length, budget)
            if sparse and path not in self.data.setdefault("sparse", []):
                self.data["sparse"].append(path)
            self._add(path, sources, path, found, MAX_SOURCE_HASHES)
            if path not in paths:
                paths.append(path)
        self._bound()
        return paths

    def _add(self, name: str, holder: dict[str, Any], key: str, found: list[int], cap: int) -> None:
        kept = holder.get(key) or []
        have = set(kept)
        new = [h for h in found if h not in have][: max(0, cap - len(kept))]
        if new:
            holder.pop(key, None)  # re-inserted: the newest last
            holder[key] = kept + new
            self._sets.pop(name, None)

    def _bound(self) -> None:
        sources: dict[str, list[int]] = self.data["sources"]
        total = len(self.data[TRUSTED]) + sum(len(v) for v in sources.values())
        while total > MAX_HASHES and sources:
            oldest = next(iter(sources))
            total -= len(sources.pop(oldest))
            self._sets.pop(oldest, None)

    def sparse(self, path: str) -> bool:
        """Whether a source's grams were winnowed (see :func:`hashes`): one shared gram
        then counts, as consecutive ones may not have been kept."""
        return path in self.data.get("sparse", ())

    def trusted(self) -> frozenset[int]:
        """The hashes of trusted text."""
        return self._set(TRUSTED, self.data[TRUSTED])

    def sources(self) -> Iterator[tuple[str, frozenset[int]]]:
        """Each untrusted source path and its hashes, oldest first."""
        for path, found in list(self.data["sources"].items()):
            yield path, self._set(path, found)

    def _set(self, name: str, found: list[int]) -> frozenset[int]:
        cached = self._sets.get(name)
        if cached is None or len(cached) != len(found):
            cached = self._sets[name] = frozenset(found)
        return cached
