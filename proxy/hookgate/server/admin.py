"""The admin HTTP API under ``/admin/``, behind ``keys.admin_key``.

``GET /admin/keys``, ``POST /admin/keys`` (``{"team", "user"?, "name"?, "models"?,
"expires_in_s"?}`` → the new key, shown once), ``DELETE /admin/keys/{id}``,
``GET /admin/spend?by=team&since=7d``.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Annotated, Any

import orjson
from aiohttp import web
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from hookgate.config.durations import parse_duration
from hookgate.errors import InvalidRequest, NotFound
from hookgate.server.appkeys import HOLDER, STORE
from hookgate.server.auth import check_admin
from hookgate.store import keys
from hookgate.store.keys import KeyRecord

MAX_EXPIRY_S = 100 * 365 * 86400.0
"""The longest a key may be made to live; leave ``expires_in_s`` out for a key that never
expires (an infinite or absurd number must not mean that by accident)."""


def _printable(text: str) -> str:
    if not text.isprintable():
        raise ValueError("must be printable text, without control characters")
    return text


def _a_model_name(model: str) -> str:
    if model == "*":
        raise ValueError("'*' is not a model name: leave models out for a key that may call any")
    return model


Label = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_printable)]
"""A team, user or key name: it reaches the audit log and, for teams, metric labels."""


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
    app.router.add_delete("/admin/keys/{id}", revoke_key)
    app.router.add_get("/admin/spend", spend_report)


async def list_keys(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    records = await request.app[STORE].keys()
    return _json({"object": "list", "data": [public(r) for r in records]})


async def create_key(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    try:
        spec = NewKey.model_validate_json(await request.read())
    except ValidationError as exc:
        raise InvalidRequest(f"invalid key request: {exc.errors()[0]['msg']}") from None
    secret, record = make_key(spec, time.time())
    await request.app[STORE].add_key(record)
    return _json({**public(record), "key": secret}, status=201)


async def revoke_key(request: web.Request) -> web.Response:
    check_admin(request, request.app[HOLDER].current)
    key_id = request.match_info["id"]
    if not await request.app[STORE].revoke_key(key_id, time.time()):
        raise NotFound(f"no key with id {key_id!r}", code="key_not_found")
    return _json({"id": key_id, "revoked": True})


SPEND_GROUPS = frozenset({"key", "team", "user", "agent", "model", "day"})


async def spend_report(request: web.Request) -> web.Response:
    """``GET /admin/spend?by=team&since=7d``: what the ledger charged (and, for requests no
    budget settled, the audit log), grouped; see :class:`~hookgate.store.base.SpendLine`."""
    check_admin(request, request.app[HOLDER].current)
    by = request.query.get("by", "team")
    if by not in SPEND_GROUPS:
        raise InvalidRequest(f"by must be one of {', '.join(sorted(SPEND_GROUPS))}", param="by")
    try:
        since = time.time() - parse_duration(request.query.get("since", "30d"))
    except ValueError:
        raise InvalidRequest(
            "since must be a duration like 30d, 12h or 90m", param="since"
        ) from None
    lines = await request.app[STORE].spend(by, since)
    return _json({"object": "list", "by": by, "data": [line.as_dict(by) for line in lines]})


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(data), content_type="application/json")
