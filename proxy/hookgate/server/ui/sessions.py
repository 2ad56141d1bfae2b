"""The admin UI's login sessions and their CSRF tokens.

Logging in with ``keys.admin_key`` opens a session: a random token in a cookie
(``HttpOnly``, ``SameSite=Strict``, ``Path=/ui``, ``Secure`` when the request came over
TLS) whose SHA-256 names a record in the store (``ui-session:{digest}``: who logged in,
the session's CSRF token, when), so every replica sharing the store knows it, a restart
keeps it, and logging out (the record overwritten) ends it everywhere. The token itself
is never stored or logged. A session lasts :data:`SESSION_TTL_S`, and ends early when the
admin key changes (the record keeps a digest of the key it was opened with).

Every change (a POST) carries the session's CSRF token (a form field, or the
``x-csrf-token`` header htmx sends) and, when the browser says where it came from
(``Origin``, ``Sec-Fetch-Site``), comes from this origin. The login form has a CSRF
token of its own, in a short-lived cookie of its own (double submit), and wrong admin
keys are slowed down (:class:`LoginThrottle`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

import orjson

from hookgate.store.base import Store

COOKIE = "hookgate_ui"
LOGIN_COOKIE = "hookgate_ui_login"
SESSION_TTL_S = 8 * 3600.0
"""How long a UI session lasts after login (a working day)."""
LOGIN_TTL_S = 600.0
"""How long a login form may be left open before it is sent."""
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"


@dataclass(frozen=True, slots=True)
class UiSession:
    """A logged-in admin."""

    actor: str
    """Who logged in (the name they gave): the actor of their changes in the admin log."""
    csrf: str
    created: float


def _record_key(token: str) -> str:
    return "ui-session:" + hashlib.sha256(token.encode()).hexdigest()


async def key_digest(store: Store, admin_key: str) -> str:
    """What a session keeps of the admin key it was opened with (a changed key ends it):
    an HMAC keyed by a secret of the deployment, so a copy of the store is no help in
    guessing the key."""
    secret = await store.secret("ui-sessions")
    return hmac.new(secret, admin_key.encode(), hashlib.sha256).hexdigest()


async def open_session(store: Store, actor: str, admin_key: str) -> tuple[str, UiSession]:
    """A new session for ``actor``: its cookie token and what it holds."""
    token = secrets.token_urlsafe(32)
    session = UiSession(actor, secrets.token_urlsafe(32), time.time())
    record = {"actor": actor, "csrf": session.csrf, "created": session.created,
              "key": await key_digest(store, admin_key)}  # fmt: skip
    await store.save_state(_record_key(token), orjson.dumps(record), SESSION_TTL_S)
    return token, session


async def find_session(store: Store, token: str | None, admin_key: str) -> UiSession | None:
    """The session a cookie token opens, or None (none, ended, expired, or opened with
    another admin key)."""
    if not token or len(token) > 128 or not token.isascii():
        return None
    raw = await store.load_state(_record_key(token))
    record = orjson.loads(raw) if raw else None
    if not isinstance(record, dict) or "csrf" not in record:
        return None
    if not hmac.compare_digest(str(record.get("key", "")), await key_digest(store, admin_key)):
        return None
    return UiSession(str(record["actor"]), str(record["csrf"]), float(record["created"]))


async def close_session(store: Store, token: str) -> None:
    """End a session (every replica sharing the store sees it ended)."""
    await store.save_state(_record_key(token), b"null", 1.0)


def same_token(given: str | None, expected: str) -> bool:
    """Whether a CSRF token sent matches the expected one (constant time; a token that is
    not ASCII, as a header of raw bytes decodes, never does)."""
    if given is None or not given.isascii():
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def cross_site(origin: str | None, fetch_site: str | None, host: str) -> bool:
    """Whether the browser says a request came from another site: an ``Origin`` whose
    host is not ``host``, or ``Sec-Fetch-Site`` other than ``same-origin``/``none``."""
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return True
    if origin is None:
        return False
    return origin == "null" or origin.partition("://")[2] != host


class LoginThrottle:
    """How wrong admin keys are slowed down, in this process: each failure waits
    :data:`FAILED_LOGIN_DELAY_S`, one failure at a time (so parallel guesses queue), and an
    address with :data:`MAX_FAILURES` failures in :data:`FAILURE_WINDOW_S` is refused
    without its key being checked until the window has passed."""

    def __init__(self) -> None:
        self._failures: dict[str, list[float]] = {}
        self._turn = asyncio.Lock()

    def locked(self, address: str, now: float) -> bool:
        """Whether ``address`` may not try a key now."""
        recent = [t for t in self._failures.get(address, []) if now - t < FAILURE_WINDOW_S]
        if recent:
            self._failures[address] = recent
        else:
            self._failures.pop(address, None)
        return len(recent) >= MAX_FAILURES

    async def failed(self, address: str) -> None:
        """Count a wrong key from ``address``, and wait (in turn with other failures)."""
        self._failures.setdefault(address, []).append(time.time())
        if len(self._failures) > MAX_ADDRESSES:  # forget the oldest: memory stays bounded
            del self._failures[next(iter(self._failures))]
        async with self._turn:
            await asyncio.sleep(FAILED_LOGIN_DELAY_S)


FAILED_LOGIN_DELAY_S = 1.0
MAX_FAILURES = 5
FAILURE_WINDOW_S = 300.0
MAX_ADDRESSES = 10_000
