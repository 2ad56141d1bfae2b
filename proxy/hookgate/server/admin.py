"""The admin HTTP API under ``/admin/``, behind ``keys.admin_key``.

Keys: ``GET /admin/keys``, ``POST /admin/keys`` (``{"team", "user"?, "name"?,
"models"?, "expires_in_s"?}`` → the new key, shown once), ``GET /admin/keys/{id}``,
``PATCH /admin/keys/{id}`` (grants, below), ``DELETE /admin/keys/{id}`` (revokes).

Teams: ``GET /admin/teams``, ``GET /admin/teams/{team}``, ``PUT /admin/teams/{team}``
(its grants, replaced), ``PATCH /admin/teams/{team}`` (the fields given changed; null
clears one), ``DELETE /admin/teams/{team}`` (its grants dropped).

Grants (:class:`~hookgate.store.grants.Grants`): ``models``, ``budgets`` (``[{"window",
"usd"?, "tokens"?}]``), ``rpm``, ``tpm``, ``policy_set`` (a set of the running config),
``metadata``. A change is stored with a record of who made it (the
``x-hookgate-actor`` header, else ``admin``), before and after: ``GET
/admin/changes?since=7d``. It applies on this replica at once and on every other one
within a second.

Reports: ``GET /admin/spend?by=team&since=7d``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from typing import Annotated, Any

import orjson
from aiohttp import web
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from hookgate.config.durations import parse_duration
from hookgate.errors import InvalidRequest, NotFound
from hookgate.server import peers
from hookgate.server.appkeys import GRANTS, HOLDER, STORE
from hookgate.server.auth import check_admin
from hookgate.store import keys
from hookgate.store.grants import Grants, GrantsRefused, Kind, Label, check_subject, patching
from hookgate.store.keys import KeyRecord

log = logging.getLogger("hookgate")

MAX_EXPIRY_S = 100 * 365 * 86400.0
"""The longest a key may be made to live; leave ``expires_in_s`` out for a key that never
expires (an infinite or absurd number must not mean that by accident)."""


def _a_model_name(model: str) -> str:
    if model == "*":
        raise ValueError("'*' is not a model name: leave models out for a key that may call any")
    return model


class NewKey(BaseModel):
    """A key to create (the admin API body and ``hookgate keys create``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    team: Label
    user: Label | None = None
    name: Label | None = None
    models: Annotated[
        list[Annotated[Label, AfterValidator(_a_model_name)]], Field(max_length=1000)
    ] = Field(default_factory=list)
    """The model names (aliases) the key may call; empty: any."""
    expires_in_s: Annotated[float, Field(gt=0, le=MAX_EXPIRY_S, strict=True)] | None = None


def make_key(spec: NewKey, now: float) -> tuple[str, KeyRecord]:
    """A new secret and the record that stores its hash."""
    secret = keys.generate()
    digest = keys.digest(secret)
    expires = None if spec.expires_in_s is None else now + spec.expires_in_s
    record = KeyRecord(
        id=keys.key_id(digest), digest=digest, team=spec.team, user=spec.user, name=spec.name,
        models=tuple(spec.models), created_at=now, expires_at=expires,
    )  # fmt: skip
    return secret, record


def public(record: KeyRecord) -> dict[str, Any]:
    """A key as the admin API and ``keys list`` show it: never the secret or its hash."""
    data = asdict(record)
    data.pop("digest")
    data["models"] = list(record.models)
    return data


def add_routes(app: web.Application) -> None:
    """Register the admin routes."""
    app.router.add_get("/admin/keys", list_keys)
    app.router.add_post("/admin/keys", create_key)
    app.router.add_get("/admin/keys/{id}", get_key)
    app.router.add_patch("/admin/keys/{id}", change_key)
    app.router.add_delete("/admin/keys/{id}", revoke_key)
    app.router.add_get("/admin/teams", list_teams)
    app.router.add_get("/admin/teams/{team}", get_team)
    app.router.add_put("/admin/teams/{team}", change_team)
    app.router.add_patch("/admin/teams/{team}", change_team)
    app.router.add_delete("/admin/teams/{team}", change_team)
    app.router.add_get("/admin/changes", list_changes)
    app.router.add_get("/admin/spend", spend_report)


async def list_keys(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    store = request.app[STORE]
    records = await store.keys()
    granted = await store.all_grants("key")
    data = [{**public(r), "grants": _shown(granted.get(r.id))} for r in records]
    return _json({"object": "list", "data": data})


async def get_key(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    record = await _key(request)
    grants = await request.app[STORE].grants("key", record.id)
    return _json({**public(record), "grants": _shown(grants)})


async def change_key(request: web.Request) -> web.Response:
    """``PATCH /admin/keys/{id}``: change the fields of the key's grants given."""
    check_admin(request, request.app[HOLDER].current)
    record = await _key(request)
    after = await _change(request, "key", record.id)
    return _json({**public(record), "grants": _shown(after)})


async def _key(request: web.Request) -> KeyRecord:
    key_id = request.match_info["id"]
    record = next((r for r in await request.app[STORE].keys() if r.id == key_id), None)
    if record is None:
        raise NotFound(f"no key with id {key_id!r}", code="key_not_found")
    return record


async def list_teams(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    granted = await request.app[STORE].all_grants("team")
    data = [{"team": team, "grants": _shown(g)} for team, g in granted.items()]
    return _json({"object": "list", "data": data})


async def get_team(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    team = request.match_info["team"]
    grants = await request.app[STORE].grants("team", team)
    if grants is None:
        raise NotFound(f"team {team!r} has no grants", code="team_not_found")
    return _json({"team": team, "grants": _shown(grants)})


async def change_team(request: web.Request) -> web.Response:
    """``PUT`` (replace), ``PATCH`` (change some fields) or ``DELETE`` a team's grants."""
    check_admin(request, request.app[HOLDER].current)
    after = await _change(request, "team", request.match_info["team"])
    return _json({"team": request.match_info["team"], "grants": _shown(after)})


async def _change(request: web.Request, kind: Kind, subject: str) -> Grants | None:
    """Apply the request's change to ``subject``'s grants; returns them after it."""
    patch = None if request.method == "DELETE" else _object(await request.read())
    return await change_grants(
        request.app,
        kind,
        subject,
        patch,
        replace=request.method == "PUT",
        actor=request_actor(request),
    )


async def change_grants(
    app: web.Application, kind: Kind, subject: str, patch: dict[str, Any] | None, *,
    replace: bool, actor: str,
) -> Grants | None:  # fmt: skip
    """Change ``subject``'s grants by ``patch`` (None: drop them; ``replace``: the patch is
    the whole new grants) with the admin API's checks, logged as made by ``actor``
    (``/admin/changes``) and applied on this replica (every worker of it) at once;
    returns them after it. The admin API and the admin UI both change grants here."""
    known = app[HOLDER].current.selector.known
    change = patching(patch, replace=replace, known_sets=known)
    try:
        made = await app[STORE].change_grants(kind, check_subject(subject), change, actor)
    except GrantsRefused as exc:
        if exc.missing:
            raise NotFound(f"{kind} {subject!r} has no grants", code=f"{kind}_not_found") from None
        raise InvalidRequest(exc.message, param=exc.param) from None
    app[GRANTS].forget(kind, subject)
    await peers.tell_all(app, "/forget", {"kind": kind, "name": subject})
    log.info("admin: %s %s %s by %s", made.action, kind, subject, made.actor)
    return made.after


def _object(raw: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError:
        raise InvalidRequest("the body must be a JSON object of grants") from None
    if not isinstance(data, dict):
        raise InvalidRequest("the body must be a JSON object of grants")
    return data


def request_actor(request: web.Request) -> str:
    """Who makes an admin API change: the ``x-hookgate-actor`` header, else ``admin``."""
    actor = request.headers.get("x-hookgate-actor", "admin")
    if not actor.isprintable() or not 0 < len(actor) <= 256:
        raise InvalidRequest(
            "x-hookgate-actor must be printable text of at most 256 characters",
            param="x-hookgate-actor",
        )
    return actor


def _shown(grants: Grants | None) -> dict[str, Any] | None:
    return None if grants is None else grants.model_dump(exclude_none=True)


async def list_changes(request: web.Request) -> web.Response:
    """``GET /admin/changes?since=7d``: the admin log, oldest first."""
    check_admin(request, request.app[HOLDER].current)
    since = time.time() - _duration(request.query.get("since", "30d"))
    changes = await request.app[STORE].admin_changes(since)
    data = [
        {**c.model_dump(exclude={"before", "after"}), "before": _shown(c.before),
         "after": _shown(c.after)}
        for c in changes
    ]  # fmt: skip
    return _json({"object": "list", "data": data})


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError:
        raise InvalidRequest(
            "since must be a duration like 30d, 12h or 90m", param="since"
        ) from None


async def create_key(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    try:
        spec = NewKey.model_validate_json(await request.read())
    except ValidationError as exc:
        raise InvalidRequest(f"invalid key request: {exc.errors()[0]['msg']}") from None
    secret, record = await add_key(request.app, spec, request_actor(request))
    return _json({**public(record), "key": secret}, status=201)


async def add_key(app: web.Application, spec: NewKey, actor: str) -> tuple[str, KeyRecord]:
    """Create a key (the admin API's ``POST /admin/keys`` and the admin UI's) as
    ``actor``: its secret, to be shown once, and its record."""
    secret, record = make_key(spec, time.time())
    await app[STORE].add_key(record)
    log.info("admin: created key %s of team %s by %s", record.id, record.team, actor)
    return secret, record


async def revoke_key(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    key_id = request.match_info["id"]
    await revoke(request.app, key_id, request_actor(request))
    return _json({"id": key_id, "revoked": True})


async def revoke(app: web.Application, key_id: str, actor: str) -> None:
    """Revoke a key as ``actor`` (404 when there is none of that id)."""
    if not await app[STORE].revoke_key(key_id, time.time()):
        raise NotFound(f"no key with id {key_id!r}", code="key_not_found")
    log.info("admin: revoked key %s by %s", key_id, actor)


SPEND_GROUPS = frozenset({"key", "team", "user", "agent", "session", "model", "day"})


async def spend_report(request: web.Request) -> web.Response:
    """``GET /admin/spend?by=team&since=7d``: what the ledger charged (and, for requests no
    budget settled, the audit log), grouped; see :class:`~hookgate.store.base.SpendLine`."""
    check_admin(request, request.app[HOLDER].current)
    by = request.query.get("by", "team")
    if by not in SPEND_GROUPS:
        raise InvalidRequest(f"by must be one of {', '.join(sorted(SPEND_GROUPS))}", param="by")
    since = time.time() - _duration(request.query.get("since", "30d"))
    lines = await request.app[STORE].spend(by, since)
    return _json({"object": "list", "by": by, "data": [line.as_dict(by) for line in lines]})


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(data), content_type="application/json")
