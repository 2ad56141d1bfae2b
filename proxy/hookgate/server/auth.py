"""Who is calling: static keys, signed tokens (JWT) and virtual keys on the model and relay
routes, with what the admin API granted them; the admin key on ``/admin/``."""

from __future__ import annotations

import dataclasses
import hmac
import time
from dataclasses import dataclass

from aiohttp import web

from hookgate.budgets.rates import Rate
from hookgate.errors import AuthenticationFailed, PermissionDenied
from hookgate.pipeline.types import ANONYMOUS, Identity
from hookgate.server.grants_cache import GrantsCache
from hookgate.server.jwt_auth import looks_like_jwt
from hookgate.server.runtime import Runtime
from hookgate.store import keys
from hookgate.store.grants import NO_GRANTS, Grants
from hookgate.store.keys import KeyRecord


def speaks_google(path: str) -> bool:
    """Whether ``path`` is one of the Gemini API's routes (``/v1beta/...``, or a model
    method such as ``/v1/models/{model}:generateContent``, where ``google-genai`` 3 sends
    it by default), whose clients send their key as ``?key=`` too and read Google's
    error shape."""
    if path.startswith("/v1beta/"):
        return True
    return path.startswith("/v1/models/") and ":" in path.rpartition("/")[2]


def bearer(request: web.Request) -> str:
    """The credential of a request: ``Authorization: Bearer ...``, else ``x-api-key``
    (Anthropic's clients), ``api-key`` (Azure OpenAI's) or ``x-goog-api-key`` (Google's);
    on the Gemini API's routes (:func:`speaks_google`) also the ``key`` query parameter,
    as Google's API takes it."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    headers = request.headers
    key = headers.get("x-api-key") or headers.get("api-key") or headers.get("x-goog-api-key")
    if not key and speaks_google(request.path):
        key = request.query.get("key")
    return (key or "").strip()


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling and what they were granted (see :mod:`hookgate.store.grants`)."""

    identity: Identity
    record: KeyRecord | None = None
    """The virtual key, when the caller used one."""
    key_grants: Grants = NO_GRANTS
    team_grants: Grants = NO_GRANTS

    @property
    def key_models(self) -> tuple[str, ...]:
        """The key's allowlist: granted at run time, else given at creation (empty: any)."""
        if self.key_grants.models is not None:
            return tuple(self.key_grants.models)
        return self.record.models if self.record is not None else ()

    @property
    def limited(self) -> bool:
        """Whether the key or its team may use only some models."""
        return bool(self.key_models or self.team_grants.models)

    def allows(self, model: str) -> bool:
        """May the caller use ``model``? Both the key's and its team's lists must allow it."""
        team = self.team_grants.models
        return (not self.key_models or model in self.key_models) and (not team or model in team)


ANONYMOUS_CALLER = Caller(ANONYMOUS)


async def authenticate(request: web.Request, runtime: Runtime, grants: GrantsCache) -> Caller:
    """The caller and its grants; raises 401 when a key is needed and the one sent is not
    valid (a JWT that fails a check says which).

    A shared client key (``keys.static``) is checked first, in memory; then a JWT, with
    ``keys.jwt``; then, with ``keys.required``, a virtual key in the store. With none of
    them configured every caller is anonymous and no store is touched.
    """
    config = runtime.config.keys
    static = runtime.static_keys
    if not config.required and not static and runtime.jwt is None:
        return ANONYMOUS_CALLER
    token = bearer(request)
    if not token:
        raise AuthenticationFailed(
            "You didn't provide an API key. Send "
            + ("a hookgate virtual key" if config.required else "the proxy's client key")
            + " as 'Authorization: Bearer ...' or 'x-api-key: ...'.",
            code="missing_api_key",
        )
    caller = static.match(token) if static else None
    if caller is not None:
        return Caller(Identity(key_id=caller))
    if runtime.jwt is not None and looks_like_jwt(token):
        claims = await runtime.jwt.verify(token)
        identity = Identity(key_id=runtime.jwt.key_id(claims), team=claims.team, user=claims.user)
        return await _granted(identity, None, grants)
    if not config.required:
        raise AuthenticationFailed("Incorrect API key provided.")
    record = (
        await grants.store.key_by_digest(keys.digest(token))
        if token.startswith(keys.PREFIX) and token.isascii()  # keys are ASCII: see keys.generate
        else None
    )
    if record is None:
        raise AuthenticationFailed("Incorrect API key provided.")
    why = record.usable(time.time())
    if why is not None:
        raise AuthenticationFailed(f"API key {record.id} is {why}.", code=f"api_key_{why}")
    identity = Identity(key_id=record.id, team=record.team, user=record.user)
    return await _granted(identity, record, grants)


async def _granted(identity: Identity, record: KeyRecord | None, cache: GrantsCache) -> Caller:
    """``identity`` with what the admin API granted its key and team."""
    key = await cache.get("key", identity.key_id)
    team = NO_GRANTS if identity.team is None else await cache.get("team", identity.team)
    rates = tuple(
        Rate(scope, g.rpm, g.tpm)
        for scope, g in (("key", key), ("team", team))
        if g.rpm is not None or g.tpm is not None
    )
    limits = key.limits("key") + team.limits("team")
    identity = dataclasses.replace(identity, limits=limits, rates=rates)
    return Caller(identity, record, key, team)


def check_model(caller: Caller, model: str) -> None:
    """403 when the caller's key or team may not use ``model``."""
    if not caller.allows(model):
        who = (
            f"API key {caller.identity.key_id}"
            if caller.key_models and model not in caller.key_models
            else f"team {caller.identity.team}"
        )
        raise PermissionDenied(
            f"{who} may not use model '{model}'.", param="model", code="model_not_allowed"
        )


def check_admin(request: web.Request, runtime: Runtime) -> None:
    """The admin key, compared in constant time; 403 when the admin API is off."""
    admin = runtime.config.keys.admin_key
    if admin is None or not admin.get_secret_value():
        raise PermissionDenied("The admin API is off: set keys.admin_key.", code="admin_disabled")
    # surrogateescape: aiohttp decodes header bytes that are not UTF-8 to surrogates
    given = bearer(request).encode("utf-8", "surrogateescape")
    if not hmac.compare_digest(given, admin.get_secret_value().encode()):
        raise AuthenticationFailed("Incorrect admin key.", code="invalid_admin_key")
