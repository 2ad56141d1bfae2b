"""JWT API keys: real RSA and EC keys, real JWKS files and a real JWKS server on loopback."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from hookgate.config.schema import JwtConfig
from hookgate.errors import AuthenticationFailed
from hookgate.server.jwt_auth import Claims, JwksUnavailable, JwtVerifier, looks_like_jwt
from tests.waits import eventually_async

ISSUER = "https://idp.example.test/"
AUDIENCE = "hookgate"

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
RSA_KEY_2 = rsa.generate_private_key(public_exponent=65537, key_size=2048)
FOREIGN_RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())

Private = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def jwk(key: Private, kid: str | None, **extra: str) -> dict[str, Any]:
    """The public JWK of ``key`` (PyJWT's own export), with ``kid`` and ``extra`` members."""
    if isinstance(key, rsa.RSAPrivateKey):
        data = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    else:
        data = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    if kid is not None:
        data["kid"] = kid
    return {**data, **extra}


def jwks(*keys: dict[str, Any]) -> dict[str, Any]:
    return {"keys": list(keys)}


STANDARD = jwks(jwk(RSA_KEY, "rsa-1", use="sig"), jwk(EC_KEY, "ec-1", alg="ES256"))


def token(
    key: Private = RSA_KEY,
    alg: str = "RS256",
    kid: str | None = "rsa-1",
    **claims: Any,
) -> str:
    """A token signed by ``key``; ``claims`` override the defaults, None removes one."""
    now = time.time()
    payload = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "alice",
        "team": "blue",
        "iat": int(now),
        "exp": int(now) + 300,
    }
    payload.update(claims)
    payload = {name: value for name, value in payload.items() if value is not None}
    headers = {"kid": kid} if kid is not None else None
    return jwt.encode(payload, key, algorithm=alg, headers=headers)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256_with_public_key(kid: str) -> str:
    """The key-confusion attack: HS256 with the RSA public key's PEM as the HMAC secret
    (a verifier that lets the token pick the algorithm would accept it). Built by hand:
    PyJWT itself refuses to use a PEM key as an HMAC secret."""
    pem = RSA_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = {"iss": ISSUER, "aud": AUDIENCE, "team": "blue", "exp": int(time.time()) + 300}
    signing_input = f"{header}.{b64(json.dumps(body).encode())}"
    signature = hmac.new(pem, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(signature)}"


def config(**overrides: Any) -> JwtConfig:
    fields: dict[str, Any] = {"issuer": ISSUER, "audience": AUDIENCE, **overrides}
    return JwtConfig(**fields)


def no_session() -> aiohttp.ClientSession:
    raise AssertionError("a JWKS file needs no HTTP session")


def write_jwks(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` atomically, as a key rotation should."""
    staged = path.with_suffix(".new")
    staged.write_text(json.dumps(data))
    os.replace(staged, path)


@pytest.fixture
def jwks_file(tmp_path: Path) -> Path:
    path = tmp_path / "jwks.json"
    write_jwks(path, STANDARD)
    return path


def file_verifier(path: Path, **overrides: Any) -> JwtVerifier:
    return JwtVerifier(config(jwks_file=str(path), **overrides), no_session)


async def failure(verifier: JwtVerifier, bad: str) -> AuthenticationFailed:
    with pytest.raises(AuthenticationFailed) as caught:
        await verifier.verify(bad)
    assert caught.value.status == 401
    assert bad not in caught.value.message
    return caught.value


# -- shape ---------------------------------------------------------------------------------


def test_looks_like_jwt_checks_the_shape_only() -> None:
    assert looks_like_jwt(token())
    assert looks_like_jwt(token(EC_KEY, "ES256", "ec-1"))
    assert looks_like_jwt(token(FOREIGN_RSA, kid="anything"))  # unverified: shape only
    header = b64(b'{"alg":"RS256"}')
    alg_not_text = b'{"alg": 5}'
    not_jwts = [
        "",
        "hg-0123456789abcdef0123456789abcdef",  # a virtual key
        "sk-client-credential-abcdef",
        f"{header}.e30",  # two segments
        f"{header}.e30.c2ln.c2ln",  # four
        f"{header}..c2ln",  # an empty segment
        jwt.encode({"a": 1}, "", algorithm="none"),  # no signature
        f"{header}.e30.c2l+",  # not base64url
        f"{b64(b'not json')}.e30.c2ln",
        f"{b64(b'[1]')}.e30.c2ln",  # JSON, not an object
        f"{b64(b'{}')}.e30.c2ln",  # no alg
        f"{b64(alg_not_text)}.e30.c2ln",
        f"{b64(b'[' * 100_000)}.e30.c2ln",  # too deep to parse
        "a.b.c",  # base64url characters, but "a" decodes to nothing
        f"{header}.e30.c2ln\u00e9",
    ]
    assert [t for t in not_jwts if looks_like_jwt(t)] == []


# -- valid tokens --------------------------------------------------------------------------


async def test_an_rs256_token_gives_its_claims(jwks_file: Path) -> None:
    verifier = file_verifier(jwks_file)
    exp = int(time.time()) + 120
    claims = await verifier.verify(token(exp=exp, aud=["other", AUDIENCE]))
    assert claims == Claims(
        team="blue", user="alice", subject="alice", issuer=ISSUER, expires_at=float(exp)
    )


async def test_an_es256_token_and_a_nested_team_claim(jwks_file: Path) -> None:
    verifier = file_verifier(jwks_file, team_claim="org.team", user_claim="email")
    signed = token(EC_KEY, "ES256", "ec-1", org={"team": "red"}, email="bob@example.test")
    claims = await verifier.verify(signed)
    assert (claims.team, claims.user, claims.subject) == ("red", "bob@example.test", "alice")


async def test_a_claim_name_with_dots_is_read_whole_first(jwks_file: Path) -> None:
    name = "https://example.test/team"
    verifier = file_verifier(jwks_file, team_claim=name)
    claims: dict[str, Any] = {name: "green"}
    assert (await verifier.verify(token(**claims))).team == "green"


async def test_the_user_claim_may_be_absent(jwks_file: Path) -> None:
    claims = await file_verifier(jwks_file).verify(token(sub=None))
    assert (claims.user, claims.subject, claims.team) == (None, None, "blue")


async def test_a_token_without_kid_needs_exactly_one_key_for_its_alg(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    write_jwks(path, jwks(jwk(RSA_KEY, None), jwk(EC_KEY, "ec-1")))
    verifier = file_verifier(path)
    assert (await verifier.verify(token(kid=None))).team == "blue"  # the one RSA key
    write_jwks(path, jwks(jwk(RSA_KEY, None), jwk(RSA_KEY_2, "rsa-2")))
    error = await failure(verifier, token(kid=None))
    assert error.code == "unknown_signing_key"
    assert "names no key id (kid)" in error.message and "2 keys for RS256" in error.message


# -- every failure says why ----------------------------------------------------------------

HOUR = 3600
FAILURES: list[tuple[str, Callable[[], str], str, str]] = [
    ("expired", lambda: token(exp=int(time.time()) - HOUR), "token_expired", "has expired"),
    ("nbf", lambda: token(nbf=int(time.time()) + HOUR), "token_not_yet_valid", "not valid yet"),
    ("iat", lambda: token(iat=int(time.time()) + HOUR), "token_not_yet_valid", "not valid yet"),
    ("issuer", lambda: token(iss="https://evil.test/"), "invalid_issuer", "issuer (iss)"),
    ("audience", lambda: token(aud="someone-else"), "invalid_audience", "audience (aud)"),
    ("foreign key", lambda: token(FOREIGN_RSA), "invalid_signature", "signature does not"),
    ("unknown kid", lambda: token(kid="rsa-9"), "unknown_signing_key", "(kid) 'rsa-9'"),
    ("kid of the EC key", lambda: token(kid="ec-1"), "unknown_signing_key", "no RS256 key"),
    (
        "alg none",
        lambda: jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "team": "blue"}, "", "none"),
        "algorithm_not_allowed",
        "signed with 'none'",
    ),
    ("HS256", lambda: hs256_with_public_key("rsa-1"), "algorithm_not_allowed", "'HS256'"),
    ("no team", lambda: token(team=None), "missing_claim", "no 'team' claim"),
    ("empty team", lambda: token(team=""), "missing_claim", "no 'team' claim"),
    ("team a number", lambda: token(team=7), "missing_claim", "no 'team' claim"),
    ("team with a newline", lambda: token(team="a\nb"), "invalid_claim", "'team' claim"),
    ("team too long", lambda: token(team="t" * 257), "invalid_claim", "at most 256"),
    ("user not a string", lambda: token(sub=None, email=5), "invalid_claim", "'email' claim"),
    ("no exp", lambda: token(exp=None), "missing_claim", "no 'exp' claim"),
    ("exp past any time", lambda: token(exp=10**400), "invalid_claim", "'exp' claim"),
    ("no aud", lambda: token(aud=None), "missing_claim", "no 'aud' claim"),
    ("garbage", lambda: "garbage", "invalid_token", "malformed"),
    ("three dots", lambda: "a.b.c", "invalid_token", "malformed"),
    ("not ascii", lambda: token() + "\u00e9", "invalid_token", "not ASCII"),
    ("bad payload", lambda: f"{token().split('.')[0]}.e30!.c2ln", "invalid_token", "malformed"),
]


@pytest.mark.parametrize(
    ("bad", "code", "says"), [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES]
)
async def test_a_bad_token_is_a_401_that_says_why(
    jwks_file: Path, bad: Callable[[], str], code: str, says: str
) -> None:
    verifier = file_verifier(jwks_file, user_claim="email", leeway_s=5)
    error = await failure(verifier, bad())
    assert (error.code, error.type) == (code, "invalid_request_error")
    assert says in error.message, error.message


async def test_leeway_is_allowed_on_exp_and_nbf(jwks_file: Path) -> None:
    now = int(time.time())
    just_expired = token(exp=now - 5)
    not_quite_yet = token(nbf=now + 10)
    lenient = file_verifier(jwks_file, leeway_s=30)
    assert (await lenient.verify(just_expired)).team == "blue"
    assert (await lenient.verify(not_quite_yet)).team == "blue"
    strict = file_verifier(jwks_file, leeway_s=0)
    assert (await failure(strict, just_expired)).code == "token_expired"
    assert (await failure(strict, not_quite_yet)).code == "token_not_yet_valid"


async def test_only_configured_algorithms_are_accepted(jwks_file: Path) -> None:
    verifier = file_verifier(jwks_file, algorithms=["ES256"])
    error = await failure(verifier, token())
    assert error.code == "algorithm_not_allowed"
    assert error.message.endswith("(it accepts ES256).")


async def test_a_key_declared_for_another_use_or_alg_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    enc, ps = jwk(RSA_KEY, "enc", use="enc"), jwk(RSA_KEY, "ps", alg="PS256")
    write_jwks(path, jwks(enc, ps, jwk(EC_KEY, "ec-1")))
    verifier = file_verifier(path)
    for kid in ("enc", "ps"):
        assert (await failure(verifier, token(kid=kid))).code == "unknown_signing_key"


# -- JWKS file -----------------------------------------------------------------------------


async def test_the_jwks_file_is_read_again_when_it_changes(jwks_file: Path) -> None:
    verifier = file_verifier(jwks_file)
    old, new = token(kid="rsa-1"), token(RSA_KEY_2, kid="rsa-2")
    assert (await verifier.verify(old)).team == "blue"
    assert (await failure(verifier, new)).code == "unknown_signing_key"
    write_jwks(jwks_file, jwks(jwk(RSA_KEY_2, "rsa-2")))  # rotated: rsa-1 retired
    assert (await verifier.verify(new)).team == "blue"
    assert (await failure(verifier, old)).code == "unknown_signing_key"


async def test_a_broken_jwks_file_keeps_the_keys_read_before(
    jwks_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    verifier = file_verifier(jwks_file)
    signed = token()
    assert (await verifier.verify(signed)).team == "blue"
    staged = jwks_file.with_suffix(".new")
    staged.write_text('{"keys": [')
    os.replace(staged, jwks_file)
    with caplog.at_level(logging.WARNING, logger="hookgate"):
        assert (await verifier.verify(signed)).team == "blue"
        assert (await verifier.verify(signed)).team == "blue"
    warnings = [r.getMessage() for r in caplog.records if "JWKS file" in r.getMessage()]
    assert len(warnings) == 1 and "keeping the keys read before" in warnings[0]
    assert signed not in caplog.text


@pytest.mark.parametrize(
    "content",
    [
        None,
        "not json",
        '{"keys": []}',
        '{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}',
        "[" * 100_000 + "]" * 100_000,
    ],
)
async def test_no_usable_jwks_file_is_a_503(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "jwks.json"
    if content is not None:
        path.write_text(content)
    verifier = file_verifier(path)
    with pytest.raises(JwksUnavailable) as caught:
        await verifier.verify(token())
    assert (caught.value.status, caught.value.code) == (503, "jwks_unavailable")


# -- JWKS URL ------------------------------------------------------------------------------


class JwksServer:
    """A JWKS endpoint on loopback that counts its hits."""

    def __init__(self) -> None:
        self.jwks: dict[str, Any] = STANDARD
        self.hits = 0
        self.delay = 0.0
        app = web.Application()
        app.router.add_get("/jwks", self._serve)
        self.server = TestServer(app, host="127.0.0.1")

    @property
    def url(self) -> str:
        return str(self.server.make_url("/jwks"))

    async def _serve(self, request: web.Request) -> web.Response:
        self.hits += 1
        await asyncio.sleep(self.delay)
        return web.json_response(self.jwks)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def idp() -> AsyncIterator[JwksServer]:
    served = JwksServer()
    await served.server.start_server()
    yield served
    await served.server.close()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
def clock() -> Clock:
    return Clock()


def url_verifier(
    url: str, session: aiohttp.ClientSession, clock: Clock, **overrides: Any
) -> JwtVerifier:
    settings = {"jwks_cache_s": 300, "jwks_min_refresh_s": 10, **overrides}
    return JwtVerifier(config(jwks_url=url, **settings), lambda: session, clock=clock)


async def test_the_key_set_is_cached_for_jwks_cache_s(
    idp: JwksServer, session: aiohttp.ClientSession, clock: Clock
) -> None:
    verifier = url_verifier(idp.url, session, clock)
    rsa_token, ec_token = token(), token(EC_KEY, "ES256", "ec-1")
    for _ in range(10):
        assert (await verifier.verify(rsa_token)).team == "blue"
        assert (await verifier.verify(ec_token)).team == "blue"
    assert idp.hits == 1
    clock.now += 299
    await verifier.verify(rsa_token)
    assert idp.hits == 1
    clock.now += 1  # 300 s: stale
    await verifier.verify(rsa_token)
    assert idp.hits == 2


async def test_an_unknown_kid_fetches_again_at_most_every_min_refresh(
    idp: JwksServer, session: aiohttp.ClientSession, clock: Clock
) -> None:
    verifier = url_verifier(idp.url, session, clock)
    await verifier.verify(token())
    assert idp.hits == 1
    assert (await failure(verifier, token(kid="made-up-0"))).code == "unknown_signing_key"
    assert idp.hits == 1  # the first fetch was less than jwks_min_refresh_s ago
    clock.now += 10
    assert (await failure(verifier, token(kid="made-up-1"))).code == "unknown_signing_key"
    assert idp.hits == 2  # fetched again at once
    assert (await failure(verifier, token(kid="made-up-2"))).code == "unknown_signing_key"
    assert idp.hits == 2  # within jwks_min_refresh_s: not again
    idp.jwks = jwks(*STANDARD["keys"], jwk(RSA_KEY_2, "rsa-2"))  # a key rotated in
    rotated = token(RSA_KEY_2, kid="rsa-2")
    assert (await failure(verifier, rotated)).code == "unknown_signing_key"
    clock.now += 10
    assert (await verifier.verify(rotated)).team == "blue"
    assert idp.hits == 3


async def test_concurrent_verifications_share_one_fetch(
    idp: JwksServer, session: aiohttp.ClientSession, clock: Clock
) -> None:
    verifier = url_verifier(idp.url, session, clock)
    await verifier.verify(token())
    idp.jwks = jwks(*STANDARD["keys"], jwk(RSA_KEY_2, "rsa-2"))
    idp.delay = 0.05  # every verification arrives while the fetch is under way
    clock.now += 10
    rotated = token(RSA_KEY_2, kid="rsa-2")
    results = await asyncio.gather(*(verifier.verify(rotated) for _ in range(20)))
    assert [claims.team for claims in results] == ["blue"] * 20
    assert idp.hits == 2


async def test_a_cancelled_caller_leaves_the_fetch_to_the_others(
    idp: JwksServer, session: aiohttp.ClientSession, clock: Clock
) -> None:
    verifier = url_verifier(idp.url, session, clock)
    idp.delay = 0.05
    first = asyncio.create_task(verifier.verify(token()))
    second = asyncio.create_task(verifier.verify(token()))
    await eventually_async(lambda: idp.hits == 1)  # both wait on the one fetch
    first.cancel()
    assert (await second).team == "blue"
    with pytest.raises(asyncio.CancelledError):
        await first
    assert idp.hits == 1


async def test_a_server_down_after_a_fetch_leaves_the_cached_keys_in_use(
    idp: JwksServer,
    session: aiohttp.ClientSession,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    verifier = url_verifier(idp.url, session, clock)
    signed = token()
    await verifier.verify(signed)
    await idp.server.close()
    clock.now += 301  # stale: a fetch is tried, and fails
    with caplog.at_level(logging.WARNING, logger="hookgate"):
        assert (await verifier.verify(signed)).team == "blue"
        assert (await verifier.verify(signed)).team == "blue"  # not tried again yet
    warnings = [r.getMessage() for r in caplog.records if "fetch failed" in r.getMessage()]
    assert len(warnings) == 1 and "keeping the keys fetched 301 s ago" in warnings[0]
    assert signed not in caplog.text


async def test_a_server_down_from_the_start_is_a_503(
    refused_port: int,
    session: aiohttp.ClientSession,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    verifier = url_verifier(f"http://user:pw@127.0.0.1:{refused_port}/jwks?x=1", session, clock)
    signed = token()
    with (
        caplog.at_level(logging.WARNING, logger="hookgate"),
        pytest.raises(JwksUnavailable) as caught,
    ):
        await verifier.verify(signed)
    error = caught.value
    assert (error.status, error.code, error.type) == (503, "jwks_unavailable", "server_error")
    assert error.headers() == {"retry-after": "10"}
    assert f"http://127.0.0.1:{refused_port}/jwks: fetch failed" in caplog.text
    assert "pw" not in caplog.text and signed not in caplog.text


@pytest.mark.parametrize(
    "answer",
    [
        web.Response(status=500),
        web.Response(text="not json"),
        web.json_response([1, 2]),
        web.json_response({"keys": "none"}),
        web.Response(body=b" " * (1 << 20) + b"{}"),
        web.Response(body=b"[" * 100_000 + b"]" * 100_000),
    ],
    ids=["http 500", "not json", "not an object", "keys not a list", "too large", "too deep"],
)
async def test_an_unusable_answer_is_no_key_set(
    session: aiohttp.ClientSession, clock: Clock, answer: web.Response
) -> None:
    async def serve(request: web.Request) -> web.Response:
        return answer

    app = web.Application()
    app.router.add_get("/jwks", serve)
    async with TestServer(app, host="127.0.0.1") as server:
        verifier = url_verifier(str(server.make_url("/jwks")), session, clock)
        with pytest.raises(JwksUnavailable):
            await verifier.verify(token())


# -- key id --------------------------------------------------------------------------------


async def test_the_key_id_is_stable_per_issuer_and_subject(jwks_file: Path) -> None:
    verifier = file_verifier(jwks_file)
    first, again = token(sub="alice"), token(sub="alice", team="red", exp=int(time.time()) + 99)
    key_id = verifier.key_id(await verifier.verify(first))
    assert key_id == verifier.key_id(await verifier.verify(again))
    expected = hashlib.sha256(f"{ISSUER}\0alice".encode()).hexdigest()[:12]
    assert key_id == f"jwt:{expected}"
    assert key_id != verifier.key_id(await verifier.verify(token(sub="bob")))
    other_issuer = Claims(team="blue", user=None, subject="alice", issuer="x", expires_at=None)
    assert verifier.key_id(other_issuer) != key_id
    assert all(part not in key_id for part in first.split("."))
    teams = [Claims(team=t, user=None, subject=None, issuer=ISSUER, expires_at=None) for t in "ab"]
    assert verifier.key_id(teams[0]) != verifier.key_id(teams[1])  # no sub: per team
