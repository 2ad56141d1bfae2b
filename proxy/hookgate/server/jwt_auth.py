"""Signed tokens (JWT) as API keys: :class:`JwtVerifier` checks one and says who sent it.

What is checked, in order (``keys.jwt``, :class:`~hookgate.config.schema.JwtConfig`):

1. The token is a compact JWS in ASCII whose header is JSON (else ``invalid_token``).
2. Its ``alg`` is one of ``algorithms`` (``algorithm_not_allowed``), decided from the
   header alone, before any key is looked up: ``none`` and shared-secret ``HS*`` never
   reach a key, so a public key can never be used as an HMAC secret.
3. A key of the key set fits it: same ``kid`` (a token without ``kid`` only when exactly
   one key fits its ``alg``), a ``kty``/``crv`` matching the ``alg``, no other ``alg``,
   ``use`` absent or ``sig``, no private part (``unknown_signing_key``).
4. PyJWT checks the signature with that key (``invalid_signature``), then ``exp``,
   ``iss`` and ``aud`` are required and ``exp``/``nbf``/``iat`` are checked with
   ``leeway_s`` of clock skew (``token_expired``, ``token_not_yet_valid``,
   ``invalid_issuer``, ``invalid_audience``, ``missing_claim``). No signature or claim
   check is written here: PyJWT does them all, against the system clock.
5. The team is the claim ``team_claim`` names, a non-empty string (``missing_claim``
   naming it); the user is ``user_claim``'s claim, a string or absent. A claim name is
   looked up whole first, then as a dotted path into nested objects (``org.team``), so
   namespaced names such as ``https://example.com/team`` work too. Team, user and
   ``sub`` must be printable text of at most 256 characters (``invalid_claim``).

Every failure is an :class:`~hookgate.errors.AuthenticationFailed` (401) whose message
says which check failed, except one: with no key set in hand (the file unreadable, the
URL never fetched) the token cannot be checked at all, and that is a
:class:`JwksUnavailable` (503, ``jwks_unavailable``), since the caller's token may be
fine.

Key sets. ``jwks_file`` is read with the standard library and read again whenever its
mtime, size or inode changes (one ``os.stat`` per verification); rotate keys by
replacing the file. ``jwks_url`` is fetched (GET, 5 s timeout, at most 1 MiB, a JSON
object with ``keys``) with the caller's aiohttp session and kept ``jwks_cache_s``
seconds. A token naming a key the set lacks fetches it again at once, unless the last
attempt was less than ``jwks_min_refresh_s`` ago, so a flood of tokens with made-up key
ids costs the identity provider at most one request per that interval. Concurrent
verifications share one fetch in flight. A failed read or fetch keeps the set in hand,
if any (with a warning). ``clock`` times these cache rules only.

Logs: warnings name the file or the URL (without user info, query or fragment) and
why a read or fetch failed, and the key ids of keys skipped. No token, claim or key
material is ever logged; error messages quote a token's ``kid`` only when it is short
printable text, and no other part of it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import logging
import math
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import jwt
from jwt import PyJWK
from yarl import URL

from hookgate.config.schema import JwtConfig
from hookgate.errors import AuthenticationFailed, HookgateError

log = logging.getLogger("hookgate")

FETCH_TIMEOUT_S = 5.0
MAX_JWKS_BYTES = 1 << 20
MAX_CLAIM_CHARS = 256
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
_KTY = {"RS": "RSA", "PS": "RSA", "ES": "EC"}
_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


class JwksUnavailable(HookgateError):
    """No key set is in hand (the file cannot be read, the URL was never fetched), so no
    token can be checked: a 503, since the caller's token may well be valid."""

    status = 503
    type = "server_error"
    code = "jwks_unavailable"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Claims:
    """Who a verified token says the caller is."""

    team: str
    user: str | None
    subject: str | None
    issuer: str
    expires_at: float | None


def looks_like_jwt(token: str) -> bool:
    """Whether ``token`` has a JWT's shape: three non-empty base64url segments, the first a
    JSON object with ``alg``. Cheap and unverified: it only routes a credential."""
    segments = token.split(".")
    if len(segments) != 3 or not all(_SEGMENT.fullmatch(s) for s in segments):
        return False
    try:
        header = json.loads(base64.urlsafe_b64decode(segments[0] + "=" * (-len(segments[0]) % 4)))
    except (binascii.Error, ValueError, RecursionError):
        return False
    return isinstance(header, dict) and isinstance(header.get("alg"), str)


class JwtVerifier:
    """Checks tokens against ``config``; see the module's docstring for the rules."""

    def __init__(
        self,
        config: JwtConfig,
        session: Callable[[], aiohttp.ClientSession],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        algorithms = tuple(config.algorithms)
        self._keys: _FileKeys | _UrlKeys
        if config.jwks_url is not None:
            self._keys = _UrlKeys(config.jwks_url, config, algorithms, session, clock)
        elif config.jwks_file is not None:
            self._keys = _FileKeys(config.jwks_file, algorithms)
        else:  # JwtConfig's validator makes this unreachable
            raise ValueError("keys.jwt names neither jwks_file nor jwks_url")

    async def verify(self, token: str) -> Claims:
        """The claims of a valid token; :class:`AuthenticationFailed` saying why not, or
        :class:`JwksUnavailable` when no key set is in hand."""
        header = _header(token)
        alg = _allowed_alg(header, self._config.algorithms)
        key = await self._keys.key_for(header.get("kid"), alg)
        return self._claims(self._decode(token, key))

    def key_id(self, claims: Claims) -> str:
        """A stable public id of the caller, safe to log: ``jwt:`` and 12 hex digits of the
        SHA-256 of issuer and subject (of issuer and team when the token has no ``sub``)."""
        who = claims.subject if claims.subject is not None else f"\0team\0{claims.team}"
        digest = hashlib.sha256(f"{claims.issuer}\0{who}".encode()).hexdigest()
        return f"jwt:{digest[:12]}"

    def _decode(self, token: str, key: PyJWK) -> dict[str, Any]:
        config = self._config
        try:
            return jwt.decode(
                token,
                key,
                algorithms=config.algorithms,
                audience=config.audience,
                issuer=config.issuer,
                leeway=config.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise _failure(exc, config.leeway_s) from None

    def _claims(self, payload: Mapping[str, Any]) -> Claims:
        config = self._config
        return Claims(
            team=_team(payload, config.team_claim),
            user=_optional_text(payload, config.user_claim),
            subject=_optional_text(payload, "sub"),
            issuer=config.issuer,
            expires_at=_expiry(payload["exp"]),  # PyJWT required exp and read it so
        )


# -- the token ---------------------------------------------------------------------------


def _header(token: str) -> dict[str, Any]:
    if not token.isascii():
        raise _malformed("it is not ASCII text")
    try:
        return jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise _malformed(str(exc)) from None


def _allowed_alg(header: Mapping[str, Any], allowed: Sequence[str]) -> str:
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in allowed:
        shown = f"'{alg}'" if isinstance(alg, str) and _shown(alg) else "its algorithm"
        raise AuthenticationFailed(
            f"The token is signed with {shown}, which this proxy does not accept "
            f"(it accepts {', '.join(allowed)}).",
            code="algorithm_not_allowed",
        )
    return alg


def _failure(exc: jwt.PyJWTError, leeway: float) -> AuthenticationFailed:
    """The 401 for a PyJWT failure, saying which check failed."""
    skew = f"beyond the {leeway:g} s of clock skew allowed"
    if isinstance(exc, jwt.ExpiredSignatureError):
        return AuthenticationFailed(
            f"The token has expired (its exp is past, {skew}).", code="token_expired"
        )
    if isinstance(exc, jwt.ImmatureSignatureError):
        return AuthenticationFailed(
            f"The token is not valid yet (its nbf or iat is in the future, {skew}).",
            code="token_not_yet_valid",
        )
    if isinstance(exc, jwt.InvalidIssuerError):
        return AuthenticationFailed(
            "The token's issuer (iss) is not the one this proxy trusts.", code="invalid_issuer"
        )
    if isinstance(exc, jwt.InvalidAudienceError):
        return AuthenticationFailed(
            "The token's audience (aud) does not name this proxy.", code="invalid_audience"
        )
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return AuthenticationFailed(
            f"The token has no '{exc.claim}' claim, which is required.", code="missing_claim"
        )
    if isinstance(exc, jwt.InvalidSignatureError):
        return AuthenticationFailed(
            "The token's signature does not verify with its signing key.",
            code="invalid_signature",
        )
    if isinstance(exc, jwt.InvalidAlgorithmError):
        return AuthenticationFailed(
            f"The token's algorithm does not fit its signing key ({exc}).",
            code="algorithm_not_allowed",
        )
    return _malformed(str(exc))


def _malformed(why: str) -> AuthenticationFailed:
    return AuthenticationFailed(f"The token is malformed: {why}.", code="invalid_token")


def _team(payload: Mapping[str, Any], name: str) -> str:
    value = _lookup(payload, name)
    if not isinstance(value, str) or not value:
        raise AuthenticationFailed(
            f"The token has no '{name}' claim (a non-empty string naming the caller's team), "
            "which is required.",
            code="missing_claim",
        )
    return _printable(value, name)


def _optional_text(payload: Mapping[str, Any], name: str) -> str | None:
    value = _lookup(payload, name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise AuthenticationFailed(
            f"The token's '{name}' claim is not a string.", code="invalid_claim"
        )
    return _printable(value, name)


def _expiry(exp: Any) -> float:
    """``exp`` (which PyJWT checked is a number in the future) as a float; a number too
    large for one is not an expiry."""
    try:
        return float(int(exp))
    except OverflowError:
        raise AuthenticationFailed(
            "The token's 'exp' claim is not a usable time.", code="invalid_claim"
        ) from None


def _printable(value: str, name: str) -> str:
    if len(value) > MAX_CLAIM_CHARS or not value.isprintable():
        raise AuthenticationFailed(
            f"The token's '{name}' claim must be printable text of at most "
            f"{MAX_CLAIM_CHARS} characters.",
            code="invalid_claim",
        )
    return value


def _lookup(payload: Mapping[str, Any], name: str) -> Any:
    """The claim ``name``: a top-level claim of that exact name, else a dotted path."""
    if name in payload:
        return payload[name]
    value: Any = payload
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _shown(text: str) -> bool:
    """Whether token text may be quoted in a message: short and printable."""
    return len(text) <= 64 and text.isprintable()


def _unknown_key(kid: str | None, alg: str, count: int) -> AuthenticationFailed:
    if kid is None:
        why = (
            f"it names no key id (kid) and the key set has {count} keys for {alg}, not one"
            if count
            else f"the key set has no key for {alg}"
        )
    else:
        named = f"'{kid}'" if _shown(kid) else "it names"
        why = f"the key set has no {alg} key with the key id (kid) {named}"
    return AuthenticationFailed(
        f"The token's signing key is unknown: {why}.", code="unknown_signing_key"
    )


# -- key sets ----------------------------------------------------------------------------


class _JwksError(Exception):
    """Why a key set could not be read, fetched or used (for the log)."""


class _KeySet:
    """The keys of one JWKS usable for verification, per accepted algorithm."""

    __slots__ = ("_by_alg",)

    def __init__(self, data: object, algorithms: Sequence[str]) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
            raise _JwksError('not a JSON object with a "keys" list')
        jwks = [jwk for jwk in data["keys"] if isinstance(jwk, dict)]
        self._by_alg = {alg: _keys_for(jwks, alg) for alg in algorithms}
        if not any(self._by_alg.values()):
            raise _JwksError(f"no key usable for {', '.join(algorithms)}")

    def find(self, kid: str | None, alg: str) -> PyJWK | None:
        """The key for a token's ``kid`` and ``alg``; without ``kid``, the only one."""
        keys = self._by_alg.get(alg, [])
        if kid is None:
            return keys[0] if len(keys) == 1 else None
        return next((key for key in keys if key.key_id == kid), None)

    def count(self, alg: str) -> int:
        return len(self._by_alg.get(alg, []))


def _keys_for(jwks: list[dict[str, Any]], alg: str) -> list[PyJWK]:
    keys = []
    for jwk in jwks:
        if not _fits(jwk, alg):
            continue
        try:
            keys.append(PyJWK(jwk, algorithm=alg))
        except jwt.PyJWTError as exc:
            kid = jwk.get("kid")
            log.warning("JWKS: skipped key %r for %s: %s", kid, alg, type(exc).__name__)
    return keys


def _fits(jwk: Mapping[str, Any], alg: str) -> bool:
    """Whether ``jwk`` is a public signing key for ``alg`` (by its own declaration)."""
    kty = _KTY.get(alg[:2])
    return (
        kty is not None
        and jwk.get("kty") == kty
        and (kty != "EC" or jwk.get("crv") == _CURVE.get(alg))
        and jwk.get("alg", alg) == alg
        and jwk.get("use", "sig") == "sig"
        and "d" not in jwk
    )


class _FileKeys:
    """A JWKS file, read again when its mtime, size or inode changes."""

    def __init__(self, path: str, algorithms: Sequence[str]) -> None:
        self._path = path
        self._algorithms = algorithms
        self._stamp: tuple[int, int, int] | None = (-1, -1, -1)
        self._keys: _KeySet | None = None
        self._error = ""

    async def key_for(self, kid: str | None, alg: str) -> PyJWK:
        self._reload()
        keys = self._current()
        key = keys.find(kid, alg)
        if key is None:
            raise _unknown_key(kid, alg, keys.count(alg))
        return key

    def _reload(self) -> None:
        try:
            stat = os.stat(self._path)
        except OSError as exc:
            self._failed(None, exc.strerror or type(exc).__name__)
            return
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if stamp == self._stamp:
            return
        try:
            keys = _KeySet(json.loads(_read(self._path)), self._algorithms)
        except (OSError, ValueError, RecursionError, _JwksError) as exc:
            self._failed(stamp, str(exc) or type(exc).__name__)
        else:
            self._stamp, self._keys, self._error = stamp, keys, ""

    def _failed(self, stamp: tuple[int, int, int] | None, why: str) -> None:
        if stamp == self._stamp:
            return  # said already
        self._stamp, self._error = stamp, why
        keeping = "no keys in hand" if self._keys is None else "keeping the keys read before"
        log.warning("JWKS file %s: cannot use it (%s); %s", self._path, why, keeping)

    def _current(self) -> _KeySet:
        if self._keys is None:
            raise JwksUnavailable(
                "The proxy cannot read the signing keys (JWKS) to check the token; try again later."
            )
        return self._keys


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        data = file.read(MAX_JWKS_BYTES + 1)
    if len(data) > MAX_JWKS_BYTES:
        raise _JwksError(f"larger than {MAX_JWKS_BYTES} bytes")
    return data


class _UrlKeys:
    """A JWKS URL, cached; fetched again when stale or when a token names a key it lacks,
    at most once per ``jwks_min_refresh_s``, one fetch in flight at a time."""

    def __init__(
        self,
        url: str,
        config: JwtConfig,
        algorithms: Sequence[str],
        session: Callable[[], aiohttp.ClientSession],
        clock: Callable[[], float],
    ) -> None:
        self._url = url
        self._shown_url = str(URL(url).with_user(None).with_query(None).with_fragment(None))
        self._cache_s = config.jwks_cache_s
        self._min_refresh_s = config.jwks_min_refresh_s
        self._algorithms = algorithms
        self._session = session
        self._clock = clock
        self._keys: _KeySet | None = None
        self._fetched_at = -math.inf
        self._attempted_at = -math.inf
        self._inflight: asyncio.Task[None] | None = None

    async def key_for(self, kid: str | None, alg: str) -> PyJWK:
        stale = self._keys is None or self._clock() - self._fetched_at >= self._cache_s
        refreshed = stale and await self._refresh()
        key = self._current().find(kid, alg)
        if key is None and not refreshed and await self._refresh():
            key = self._current().find(kid, alg)
        if key is None:
            raise _unknown_key(kid, alg, self._current().count(alg))
        return key

    async def _refresh(self) -> bool:
        """Join the fetch in flight or start one; False when the last attempt was less than
        ``jwks_min_refresh_s`` ago (nothing fetched)."""
        task = self._inflight
        if task is None:
            if self._clock() - self._attempted_at < self._min_refresh_s:
                return False
            self._attempted_at = self._clock()
            task = self._inflight = asyncio.create_task(self._fetch())
        await asyncio.shield(task)  # a cancelled caller leaves the fetch to the others
        return True

    async def _fetch(self) -> None:
        try:
            keys = _KeySet(await self._get(), self._algorithms)
        except _JwksError as exc:
            self._failed(str(exc))
        else:
            self._keys, self._fetched_at = keys, self._clock()
        finally:
            self._inflight = None

    async def _get(self) -> object:
        timeout = aiohttp.ClientTimeout(total=FETCH_TIMEOUT_S)
        headers = {"accept": "application/json"}
        try:
            async with self._session().get(self._url, timeout=timeout, headers=headers) as resp:
                if resp.status != 200:
                    raise _JwksError(f"HTTP {resp.status}")
                body = await _read_capped(resp)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _JwksError(str(exc) or type(exc).__name__) from exc
        try:
            return json.loads(body)
        except (ValueError, RecursionError) as exc:  # 1 MiB of nesting is within the cap
            raise _JwksError("the body is not JSON") from exc

    def _failed(self, why: str) -> None:
        if self._keys is None:
            keeping = "no keys in hand"
        else:
            keeping = f"keeping the keys fetched {self._clock() - self._fetched_at:.0f} s ago"
        log.warning("JWKS %s: fetch failed (%s); %s", self._shown_url, why, keeping)

    def _current(self) -> _KeySet:
        if self._keys is None:
            wait = self._attempted_at + self._min_refresh_s - self._clock()
            raise JwksUnavailable(
                "The proxy cannot fetch the signing keys (JWKS) to check the token; "
                "try again later.",
                retry_after=max(wait, 1.0),
            )
        return self._keys


async def _read_capped(resp: aiohttp.ClientResponse) -> bytes:
    body = bytearray()
    async for chunk in resp.content.iter_chunked(64 * 1024):
        body += chunk
        if len(body) > MAX_JWKS_BYTES:
            raise _JwksError(f"the body is larger than {MAX_JWKS_BYTES} bytes")
    return bytes(body)
