"""Who may see the admin UI: the login and logout pages, and the guards every other page
and form goes through (see :mod:`.sessions` for the session and CSRF rules).

:func:`page` serves a GET only to a logged-in admin (anyone else is sent to the login
page, with nothing of the page); :func:`action` takes a POST only from a logged-in admin,
with the session's CSRF token, from this origin (403 otherwise, with nothing done).
"""

from __future__ import annotations

import functools
import hmac
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

from aiohttp import web

from hookgate.server.appkeys import HOLDER, STORE
from hookgate.server.ui import sessions
from hookgate.server.ui.render import render, secure_headers, see_other
from hookgate.server.ui.sessions import UiSession

log = logging.getLogger("hookgate")

UiHandler = Callable[[web.Request, UiSession], Awaitable[web.StreamResponse]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

STATIC = Path(__file__).parent / "static"
STATIC_FILES = {p.name: p for p in STATIC.iterdir() if p.suffix in (".js", ".txt")}
"""The files under ``/ui/static/`` (the vendored htmx, its licence, ``ui.js``)."""
MAX_FORM_BYTES = 256 * 1024
"""The largest form the UI reads (the model routes take far larger bodies; a form is
small, and is read whole before it is checked)."""
THROTTLE = web.AppKey("hookgate.ui.throttle", sessions.LoginThrottle)


def admin_key(request: web.Request) -> str | None:
    """The configured admin key (None: the UI is off)."""
    key = request.app[HOLDER].current.config.keys.admin_key
    return key.get_secret_value() if key is not None and key.get_secret_value() else None


async def current_session(request: web.Request) -> UiSession | None:
    """The logged-in admin of ``request``, if any."""
    key = admin_key(request)
    if key is None:
        return None
    token = request.cookies.get(sessions.COOKIE)
    return await sessions.find_session(request.app[STORE], token, key)


def page(handler: UiHandler) -> Handler:
    """A page only a logged-in admin sees; anyone else is sent to log in."""

    @functools.wraps(handler)
    async def guarded(request: web.Request) -> web.StreamResponse:
        session = await current_session(request)
        if session is None:
            target = request.path_qs if request.method == "GET" else "/ui"
            return see_other(f"/ui/login?next={quote(target, safe='')}")
        return await handler(request, session)

    return guarded


def action(handler: UiHandler) -> Handler:
    """A change only a logged-in admin makes, with the session's CSRF token, from this
    origin; 403 otherwise."""

    @functools.wraps(handler)
    async def guarded(request: web.Request) -> web.StreamResponse:
        session = await current_session(request)
        if session is None:
            return _forbidden(request, "You are not logged in (or your session ended).")
        headers = request.headers
        if sessions.cross_site(headers.get("origin"), headers.get("sec-fetch-site"), request.host):
            return _forbidden(request, "The request came from another site.")
        too_large = _too_large(request)
        if too_large is not None:
            return too_large
        form = await request.post()
        given = headers.get(sessions.CSRF_HEADER) or _field(form.get(sessions.CSRF_FIELD))
        if not sessions.same_token(given, session.csrf):
            return _forbidden(
                request, "The form's security token is missing or stale: reload the page."
            )
        return await handler(request, session)

    return guarded


def _too_large(request: web.Request) -> web.Response | None:
    """A 413 page for a form without a length or longer than :data:`MAX_FORM_BYTES`."""
    if request.content_length is not None and request.content_length <= MAX_FORM_BYTES:
        return None
    context = {"title": "Refused", "message": "The form is too large."}
    return render(request, "message.html", context, status=413)


def _field(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _forbidden(request: web.Request, message: str) -> web.Response:
    return render(request, "message.html", {"title": "Refused", "message": message}, status=403)


def _safe_next(value: str | None) -> str:
    """Where to go after logging in: a UI path of this server only (printable, no
    ``..``, no backslash), else the overview."""
    if not value or not value.isascii() or not value.isprintable() or len(value) > 2048:
        return "/ui"
    path = value.partition("?")[0]
    if "\\" in value or ".." in path.split("/") or not (path == "/ui" or path.startswith("/ui/")):
        return "/ui"
    return value


async def login_page(request: web.Request) -> web.Response:
    """The login form (with a login CSRF token in a cookie of its own)."""
    return _login_form(request, next=_safe_next(request.query.get("next")))


def _login_form(
    request: web.Request, *, next: str, error: str | None = None, actor: str = "",
    status: int = 200,
) -> web.Response:  # fmt: skip
    token = secrets.token_urlsafe(24)
    context = {"off": admin_key(request) is None, "error": error, "next": next,
               "login_csrf": token, "actor": actor}  # fmt: skip
    response = render(request, "login.html", context, status=403 if context["off"] else status)
    response.set_cookie(
        sessions.LOGIN_COOKIE, token, max_age=int(sessions.LOGIN_TTL_S), path="/ui",
        httponly=True, samesite="Strict", secure=_secure(request),
    )  # fmt: skip
    return response


async def login(request: web.Request) -> web.StreamResponse:
    """Check the admin key; open a session and go where the admin was going."""
    too_large = _too_large(request)
    if too_large is not None:
        return too_large
    form = await request.post()
    next = _safe_next(_field(form.get("next")))
    actor = (_field(form.get("actor")) or "").strip()
    key = admin_key(request)
    if key is None:
        return _login_form(request, next=next)
    expected = request.cookies.get(sessions.LOGIN_COOKIE)
    if expected is None or not sessions.same_token(_field(form.get("login_csrf")), expected):
        return _login_form(
            request, next=next, actor=actor, status=403,
            error="The login form expired or came from elsewhere: try again.",
        )  # fmt: skip
    throttle = request.app[THROTTLE]
    address = request.remote or "?"
    if throttle.locked(address, time.time()):
        return _login_form(
            request, next=next, actor=actor, status=429,
            error="Too many wrong admin keys from your address: try again in a few minutes.",
        )  # fmt: skip
    given = (_field(form.get("admin_key")) or "").encode("utf-8", "surrogateescape")
    if not hmac.compare_digest(given, key.encode()):
        log.warning("admin UI: a login with a wrong admin key from %s", address)
        await throttle.failed(address)
        return _login_form(request, next=next, actor=actor, status=401,
                           error="Incorrect admin key.")  # fmt: skip
    if not actor or len(actor) > 64 or not actor.isprintable():
        return _login_form(request, next=next, status=400,
                           error="Give your name (printable, at most 64 characters).")  # fmt: skip
    token, _ = await sessions.open_session(request.app[STORE], actor, key)
    log.info("admin UI: %s logged in from %s", actor, request.remote)
    response = see_other(next)
    response.set_cookie(
        sessions.COOKIE, token, max_age=int(sessions.SESSION_TTL_S), path="/ui",
        httponly=True, samesite="Strict", secure=_secure(request),
    )  # fmt: skip
    response.del_cookie(sessions.LOGIN_COOKIE, path="/ui")
    return response


@action
async def logout(request: web.Request, session: UiSession) -> web.StreamResponse:
    """End the session everywhere and go back to the login page."""
    token = request.cookies.get(sessions.COOKIE, "")
    await sessions.close_session(request.app[STORE], token)
    log.info("admin UI: %s logged out", session.actor)
    response = see_other("/ui/login")
    response.del_cookie(sessions.COOKIE, path="/ui")
    return response


@page
async def static(request: web.Request, session: UiSession) -> web.StreamResponse:
    """A file of :data:`STATIC_FILES` (only to a logged-in admin, like every UI path)."""
    found = STATIC_FILES.get(request.match_info["name"])
    if found is None:
        raise web.HTTPNotFound()
    kind = "text/javascript" if found.suffix == ".js" else "text/plain"
    response = web.Response(body=found.read_bytes(), content_type=kind, charset="utf-8")
    secure_headers(response)
    response.headers["cache-control"] = "private, max-age=3600"
    return response


def _secure(request: web.Request) -> bool:
    """Whether the browser reached us over TLS: directly, or through a proxy that says so
    (a forged ``X-Forwarded-Proto`` only makes the cookie stricter)."""
    return request.secure or request.headers.get("x-forwarded-proto", "").lower() == "https"
