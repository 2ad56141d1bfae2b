"""The admin UI's keys and teams: create and revoke keys, and change what a key or team
is granted (models, budgets, rates, policy set). Every change goes through the admin
API's own functions (:mod:`hookgate.server.admin`): the same checks, the same change log
(``/admin/changes``), made by the logged-in admin."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, get_args
from urllib.parse import quote

import orjson
from aiohttp import web
from multidict import MultiDictProxy
from pydantic import ValidationError

from hookgate.budgets.limits import Window
from hookgate.config.durations import parse_duration
from hookgate.errors import HookgateError, NotFound
from hookgate.server import admin
from hookgate.server.appkeys import HOLDER, STORE
from hookgate.server.ui.auth import action, page
from hookgate.server.ui.render import render, see_other
from hookgate.server.ui.sessions import UiSession
from hookgate.store.grants import NO_GRANTS, Kind
from hookgate.store.keys import KeyRecord

WINDOWS: tuple[Window, ...] = get_args(Window)
Form = MultiDictProxy[Any]


class FormProblem(ValueError):
    """A form field that is not what it must be: the message says which and why."""


def actor(session: UiSession) -> str:
    """Who the change log says made a change from the UI."""
    return f"ui:{session.actor}"


@page
async def keys_page(request: web.Request, session: UiSession) -> web.Response:
    """Every key with its grants, and the form that creates one."""
    return await _keys(request, session)


async def _keys(
    request: web.Request, session: UiSession, *, error: str | None = None,
    form: Mapping[str, str] | None = None, status: int = 200,
) -> web.Response:  # fmt: skip
    store = request.app[STORE]
    records = sorted(await store.keys(), key=lambda r: -r.created_at)
    granted = await store.all_grants("key")
    now = time.time()
    rows = [{"record": r, "state": _state(r, now), "grants": granted.get(r.id)} for r in records]
    context = {"session": session, "rows": rows, "error": error, "form": form or {}}
    return render(request, "keys.html", context, status=status)


def _state(record: KeyRecord, now: float) -> str:
    return record.usable(now) or "active"


@action
async def create_key(request: web.Request, session: UiSession) -> web.Response:
    """Create a key; its secret is shown once, on the page this answers with."""
    form = await request.post()
    text = {name: _text(form, name) for name in ("team", "user", "name", "models", "expires_in")}
    try:
        expires = text["expires_in"]
        spec = admin.NewKey.model_validate({
            "team": text["team"], "user": text["user"] or None, "name": text["name"] or None,
            "models": _list(text["models"]) or [],
            "expires_in_s": parse_duration(expires) if expires else None,
        })  # fmt: skip
    except (ValidationError, ValueError) as exc:
        return await _keys(request, session, error=_why(exc), form=text, status=400)
    secret, record = await admin.add_key(request.app, spec, actor(session))
    context = {"session": session, "record": record, "secret": secret}
    return render(request, "key_created.html", context, status=201)


@page
async def key_page(request: web.Request, session: UiSession) -> web.Response:
    """One key: who it is for, its state, and its grants (a form)."""
    return await _key(request, session, saved=request.query.get("saved") == "1")


async def _key(
    request: web.Request, session: UiSession, *, error: str | None = None, status: int = 200,
    saved: bool = False,
) -> web.Response:  # fmt: skip
    key_id = request.match_info["id"]
    record = next((r for r in await request.app[STORE].keys() if r.id == key_id), None)
    if record is None:
        raise NotFound(f"no key with id {key_id!r}", code="key_not_found")
    grants = await request.app[STORE].grants("key", key_id) or NO_GRANTS
    context = {"session": session, "record": record, "state": _state(record, time.time()),
               "grants": grants, "error": error, "saved": saved, **_choices(request)}  # fmt: skip
    return render(request, "key.html", context, status=status)


@action
async def change_key(request: web.Request, session: UiSession) -> web.StreamResponse:
    """Change the key's grants to what the form says."""
    key_id = request.match_info["id"]
    if not any(r.id == key_id for r in await request.app[STORE].keys()):
        raise NotFound(f"no key with id {key_id!r}", code="key_not_found")
    problem = await _change(request, session, "key", key_id)
    if problem is not None:
        return await _key(request, session, error=problem, status=400)
    return see_other(f"/ui/keys/{key_id}?saved=1")


@action
async def revoke_key(request: web.Request, session: UiSession) -> web.StreamResponse:
    """Revoke the key (at once, on every replica)."""
    await admin.revoke(request.app, request.match_info["id"], actor(session))
    return see_other(f"/ui/keys/{request.match_info['id']}")


@page
async def teams_page(request: web.Request, session: UiSession) -> web.Response:
    """Every team with grants, and the form that grants a team."""
    return await _teams(request, session)


async def _teams(
    request: web.Request, session: UiSession, *, error: str | None = None, status: int = 200,
    team: str = "",
) -> web.Response:  # fmt: skip
    store = request.app[STORE]
    granted = await store.all_grants("team")
    members: dict[str, int] = {}
    for record in await store.keys():
        members[record.team] = members.get(record.team, 0) + 1
    teams = sorted(set(granted) | set(members))
    rows = [{"team": t, "grants": granted.get(t), "keys": members.get(t, 0)} for t in teams]
    context = {"session": session, "rows": rows, "error": error, "team": team,
               "grants": NO_GRANTS, **_choices(request)}  # fmt: skip
    return render(request, "teams.html", context, status=status)


@action
async def grant_team(request: web.Request, session: UiSession) -> web.StreamResponse:
    """Grant a team (named in the form) what the form says, then show it."""
    team = _text(await request.post(), "team")
    problem = await _change(request, session, "team", team)
    if problem is not None:
        return await _teams(request, session, error=problem, status=400, team=team)
    return see_other(f"/ui/teams/{quote(team, safe='')}?saved=1")


@page
async def team_page(request: web.Request, session: UiSession) -> web.Response:
    """One team: its grants (a form) and its keys."""
    return await _team(request, session, saved=request.query.get("saved") == "1")


async def _team(
    request: web.Request, session: UiSession, *, error: str | None = None, status: int = 200,
    saved: bool = False,
) -> web.Response:  # fmt: skip
    team = request.match_info["team"]
    store = request.app[STORE]
    grants = await store.grants("team", team)
    keys = [r for r in await store.keys() if r.team == team]
    if grants is None and not keys:
        raise NotFound(f"team {team!r} has no grants and no keys", code="team_not_found")
    now = time.time()
    context = {"session": session, "team": team, "grants": grants or NO_GRANTS,
               "granted": grants is not None, "error": error, "saved": saved,
               "keys": [{"record": r, "state": _state(r, now)} for r in keys],
               **_choices(request)}  # fmt: skip
    return render(request, "team.html", context, status=status)


@action
async def change_team(request: web.Request, session: UiSession) -> web.StreamResponse:
    """Change the team's grants to what the form says."""
    team = request.match_info["team"]
    problem = await _change(request, session, "team", team)
    if problem is not None:
        return await _team(request, session, error=problem, status=400)
    return see_other(f"/ui/teams/{quote(team, safe='')}?saved=1")


@action
async def drop_team(request: web.Request, session: UiSession) -> web.StreamResponse:
    """Drop the team's grants (its keys stay, with their own)."""
    await admin.change_grants(
        request.app, "team", request.match_info["team"], None, replace=False,
        actor=actor(session),
    )  # fmt: skip
    return see_other("/ui/teams")


async def _change(request: web.Request, session: UiSession, kind: Kind, subject: str) -> str | None:
    """Apply the grants form to ``subject``; the problem, or None when it was applied."""
    try:
        patch = grants_patch(await request.post())
        await admin.change_grants(
            request.app, kind, subject, patch, replace=False, actor=actor(session)
        )
    except FormProblem as exc:
        return str(exc)
    except HookgateError as exc:
        return exc.message
    return None


def grants_patch(form: Form) -> dict[str, Any]:
    """The grants form as an admin API patch: every field it shows is set (an empty one
    clears it)."""
    budgets = []
    for window in WINDOWS:
        usd, tokens = _text(form, f"budget_{window}_usd"), _text(form, f"budget_{window}_tokens")
        if usd or tokens:
            budgets.append({
                "window": window,
                "usd": _number(usd, f"the {window} budget's $", float),
                "tokens": _number(tokens, f"the {window} budget's tokens", int),
            })  # fmt: skip
    return {
        "metadata": _metadata(_text(form, "metadata")),
        "models": _list(_text(form, "models")),
        "budgets": budgets,
        "rpm": _number(_text(form, "rpm"), "requests per minute", int),
        "tpm": _number(_text(form, "tpm"), "tokens per minute", int),
        "policy_set": _text(form, "policy_set") or None,
    }


def _metadata(text: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise FormProblem("metadata must be a JSON object") from None
    if not isinstance(value, dict):
        raise FormProblem("metadata must be a JSON object")
    return value


def _number(text: str, what: str, kind: type[int] | type[float]) -> Any:
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        raise FormProblem(f"{what} must be a {'whole ' if kind is int else ''}number") from None


def _text(form: Form, name: str) -> str:
    value = form.get(name, "")
    return value.strip() if isinstance(value, str) else ""


def _list(text: str) -> list[str] | None:
    items = [item.strip() for item in text.replace("\n", ",").split(",") if item.strip()]
    return items or None


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        return f"{where}: {error['msg']}" if where else error["msg"]
    return str(exc)


def _choices(request: web.Request) -> dict[str, Any]:
    """What the grants form offers: the policy sets of the running config, the windows."""
    return {"sets": sorted(request.app[HOLDER].current.selector.known), "windows": WINDOWS}
