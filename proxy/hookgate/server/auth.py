"""Who is calling: virtual keys on the model and relay routes, the admin key on ``/admin/``."""

from __future__ import annotations

import hmac
import time

from aiohttp import web

from hookgate.errors import AuthenticationFailed, PermissionDenied
from hookgate.pipeline.types import ANONYMOUS, Identity
from hookgate.server.runtime import Runtime
from hookgate.store import keys
from hookgate.store.base import Store
from hookgate.store.keys import KeyRecord


def bearer(request: web.Request) -> str:
    """The credential of a request: ``Authorization: Bearer ...``, else ``x-api-key``
    (Anthropic's clients) or ``api-key`` (Azure OpenAI's)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    headers = request.headers
    return (headers.get("x-api-key") or headers.get("api-key") or "").strip()


async def authenticate(
    request: web.Request, runtime: Runtime, store: Store
) -> tuple[Identity, KeyRecord | None]:
    """The caller's identity; raises 401 when a key is needed and the one sent is not valid.

    A shared client key (``keys.static``) is checked first, in memory; then, with
    ``keys.required``, a virtual key in the store. With neither configured every caller
    is anonymous and no store is touched.
    """
    required = runtime.config.keys.required
    static = runtime.static_keys
    if not required and not static:
        return ANONYMOUS, None
    token = bearer(request)
    if not token:
        raise AuthenticationFailed(
            "You didn't provide an API key. Send "
            + ("a hookgate virtual key" if required else "the proxy's client key")
            + " as 'Authorization: Bearer ...' or 'x-api-key: ...'.",
            code="missing_api_key",
        )
    caller = static.match(token) if static else None
    if caller is not None:
        return Identity(key_id=caller), None
    if not required:
        raise AuthenticationFailed("Incorrect API key provided.")
    record = (
        await store.key_by_digest(keys.digest(token))
        if token.startswith(keys.PREFIX) and token.isascii()  # keys are ASCII: see keys.generate
        else None
    )
    if record is None:
        raise AuthenticationFailed("Incorrect API key provided.")
    why = record.usable(time.time())
    if why is not None:
        raise AuthenticationFailed(f"API key {record.id} is {why}.", code=f"api_key_{why}")
    return Identity(key_id=record.id, team=record.team, user=record.user), record


def check_model(record: KeyRecord | None, model: str) -> None:
    """403 when the key may not use ``model``."""
    if record is not None and not record.allows(model):
        raise PermissionDenied(
            f"API key {record.id} may not use model '{model}'.",
            param="model",
            code="model_not_allowed",
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
