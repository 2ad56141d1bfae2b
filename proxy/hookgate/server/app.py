"""``create_app(config)``: the aiohttp application, its fixed layers and its lifecycle.

Fixed layers, placed by code and not by YAML: the error mapper is the outermost
middleware (every error becomes an OpenAI-format body and no traceback leaves the
process); the upstream call is the terminal handler of the policy onion. Importing this
module does nothing; all state lives under typed ``AppKey``s of the app it builds.
"""

from __future__ import annotations

import asyncio
import html
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Literal

import aiohttp
import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError
from prometheus_client import CollectorRegistry

from hookgate.config.loader import ConfigError, LoadedConfig
from hookgate.errors import (
    HookgateError,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    UpstreamError,
    google_quota,
)
from hookgate.ids import UniqueIds
from hookgate.providers.upstream_events import MALFORMED_EVENTS
from hookgate.server import approvals, exposure, gemini, routes, ui
from hookgate.server.appkeys import (
    GRANTS,
    HOLDER,
    JSONRPC_ID,
    LISTEN_HOST,
    LIVE,
    MCP_SESSIONS,
    METRICS,
    REQUEST_ID,
    SESSION,
    STORE,
    WAKEUPS,
    WATCHER,
    WORKER,
)
from hookgate.server.auth import speaks_google
from hookgate.server.grants_cache import GrantsCache
from hookgate.server.live import LiveTraffic
from hookgate.server.mcp import routes as mcp_routes
from hookgate.server.mcp.stdio import StdioSessions
from hookgate.server.reload import ConfigWatcher
from hookgate.server.runtime import Runtime, RuntimeHolder, build_runtime
from hookgate.server.wakeups import Wakeups
from hookgate.server.workers import Worker
from hookgate.store.base import display_url
from hookgate.store.open import open_budgets, open_store
from hookgate.telemetry.metrics import Metrics
from hookgate.wire import jsonrpc

log = logging.getLogger("hookgate")


class _MalformedHttp(logging.Filter):
    """aiohttp logs a request it cannot parse at ERROR with a traceback that quotes the
    offending bytes, which may be a credential. One plain line is enough: the client got
    its 400, and nothing of ours failed."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, RequestPayloadError) and isinstance(exc.__cause__, HttpProcessingError):
            exc = exc.__cause__  # a body aiohttp could not decode, met again as it drains it
        if isinstance(exc, HttpProcessingError):
            record.msg, record.args = (
                "refused a malformed HTTP request (%s, %s)",
                (type(exc).__name__, exc.code),
            )
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


_QUIET = _MalformedHttp()


def create_app(
    loaded: LoadedConfig,
    *,
    registry: CollectorRegistry | None = None,
    watch: bool | None = None,
    host: str | None = None,
    worker: Worker | None = None,
) -> web.Application:
    """Build the proxy for a loaded config.

    Metrics go to ``registry`` (a new one by default; never the global registry).
    ``watch`` turns hot reload of ``loaded.source`` on or off; by default it follows
    ``server.reload`` and is on only when the config came from a file. ``host`` is the
    address the app is served on (default ``server.host``): a reload that would serve
    anonymous callers there from the network is refused like a broken edit (see
    :mod:`hookgate.server.exposure`), and ``/readyz`` carries the warning when it is allowed.
    With ``server.ops`` set, the ops endpoints are left to :func:`create_ops_app`.
    ``worker``: this process is one of several (:mod:`hookgate.server.arbiter`): its
    metrics go to the workers' shared files, its budgets and rates are kept in the shared
    store (on SQLite: :mod:`hookgate.store.sqlite_budgets`), the parent watches the file (a
    reload comes as ``SIGHUP``), and worker 1 alone logs reloads, counts them and prunes
    the audit log.
    """
    server_log = logging.getLogger("aiohttp.server")
    if _QUIET not in server_log.filters:
        server_log.addFilter(_QUIET)
    app = web.Application(middlewares=[_errors], client_max_size=2**62)
    metrics = Metrics(
        registry if registry is not None else CollectorRegistry(),
        identity_limit=loaded.config.server.metric_label_limit,
        multiprocess=None if worker is None else worker.metrics_dir,
    )
    speaks = worker is None or worker.leader
    if worker is not None:
        app[WORKER] = worker
    app[METRICS] = metrics
    store = open_store(loaded.config.store)
    app[STORE] = store
    app[GRANTS] = GrantsCache(store)
    app[MCP_SESSIONS] = StdioSessions()
    app[LIVE] = LiveTraffic()
    app[WAKEUPS] = Wakeups()
    ledger, rates = open_budgets(store, shared=worker is not None)  # workers share the file
    runtime = build_runtime(loaded, lambda: app[SESSION], 1, store, ledger, rates)
    _prepare_metrics(metrics, runtime)
    holder = RuntimeHolder(runtime)
    app[HOLDER] = holder
    app[LISTEN_HOST] = host = loaded.config.server.host if host is None else host
    if watch is None:
        watch = loaded.config.server.reload and loaded.source != "<string>"
    if watch:

        def reloaded(new: Runtime | None) -> None:
            if new is not None:
                _prepare_metrics(metrics, new)
            if not speaks:  # worker 1 counts and warns for every worker
                return
            metrics.reloads.labels("success" if new is not None else "failure").inc()
            if new is not None:
                if new.config.store != app[STORE].url:
                    log.warning(
                        "store changed to %s: restart to use it", display_url(new.config.store)
                    )
                if new.config.server.ops != loaded.config.server.ops:
                    log.warning("server.ops changed: restart to use it")
                if new.config.server.workers != loaded.config.server.workers:
                    log.warning("server.workers changed: restart to use it")

        def build(new: LoadedConfig, generation: int) -> Runtime:
            problem = exposure.refusal(new.config, host)
            if problem is not None:
                raise ConfigError(new.source, [new.problem(("server", "host"), problem)])
            return build_runtime(new, lambda: app[SESSION], generation, store, ledger, rates)

        app[WATCHER] = ConfigWatcher(loaded.source, holder, build, reloaded, speaks=speaks)
    app.cleanup_ctx.append(_lifecycle)
    gemini.add_routes(app)  # first: its /v1/models/{model}:{method} is not the relay's
    routes.add_routes(app, ops=loaded.config.server.ops is None)
    mcp_routes.add_routes(app)
    approvals.add_routes(app)
    if loaded.config.server.ui and loaded.config.server.ops is None:
        ui.add_routes(app)
    return app


def create_ops_app(app: web.Application) -> web.Application:
    """The ops listener's app (``server.ops``): ``/metrics``, ``/healthz`` and ``/readyz``
    of ``app`` and the admin UI (``server.ui``), on state it shares with it, and nothing
    else (404 for any other path). Run it beside ``app``, after ``app``'s own startup."""
    ops = web.Application(middlewares=[_errors])
    ops[HOLDER], ops[STORE], ops[GRANTS] = app[HOLDER], app[STORE], app[GRANTS]
    ops[METRICS], ops[LISTEN_HOST], ops[LIVE] = app[METRICS], app[LISTEN_HOST], app[LIVE]
    ops[WAKEUPS] = app[WAKEUPS]  # a decision taken on the UI wakes the waiting call
    if WATCHER in app:
        ops[WATCHER] = app[WATCHER]
    if WORKER in app:
        ops[WORKER] = app[WORKER]
    routes.add_ops_routes(ops)
    if app[HOLDER].current.config.server.ui:
        ui.add_routes(ops)
    return ops


async def _prune_audit(app: web.Application) -> None:
    """Apply ``audit.retention_days`` now and every hour."""
    while True:
        audit = app[HOLDER].current.config.audit
        if audit.enabled and audit.retention_days > 0:
            try:
                before = time.time() - audit.retention_days * 86400
                removed = await app[STORE].prune_audit(before)
                if removed:
                    log.info(
                        "audit: removed %d records older than %g days",
                        removed,
                        audit.retention_days,
                    )
            except HookgateError as exc:
                log.warning("audit retention skipped: %s", exc.message)
        await asyncio.sleep(3600)


async def _reap_mcp(app: web.Application) -> None:
    """Stop the MCP gateway's stdio sessions idle past their server's ``idle_timeout_s``
    (or whose server left the config), every :data:`REAP_INTERVAL_S`."""
    while True:
        await asyncio.sleep(REAP_INTERVAL_S)
        await app[MCP_SESSIONS].reap(app[HOLDER].current.config.mcp_servers)


REAP_INTERVAL_S = 30.0


def _prepare_metrics(metrics: Metrics, runtime: Runtime) -> None:
    config = runtime.config
    targets = [
        f"{t.provider}/{t.model}"
        for ts in config.models.values()
        for t in ts
        if t.model is not None
    ]
    metrics.known_models([a for a in config.models if a != "*"], targets)
    metrics.declare(m for policy in runtime.policies for m in policy.metrics)
    metrics.declare([MALFORMED_EVENTS])


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, enable_cleanup_closed=True)
    # No cookie jar: the session is shared by every client, so a cookie one upstream
    # answer sets must never ride along on anyone's later requests.
    app[SESSION] = aiohttp.ClientSession(
        connector=connector,
        auto_decompress=True,
        skip_auto_headers=("User-Agent",),
        cookie_jar=aiohttp.DummyCookieJar(),
    )
    watcher = app.get(WATCHER)
    worker = app.get(WORKER)
    tasks = [asyncio.create_task(_reap_mcp(app))]
    if worker is None or worker.leader:
        tasks.append(asyncio.create_task(_prune_audit(app)))
    if watcher is not None and worker is None:  # with workers, the parent watches the file
        tasks.append(asyncio.create_task(watcher.run()))
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if watcher is not None:
            await watcher.close()
        await app[HOLDER].current.aclose()
        await app[MCP_SESSIONS].close()
        await app[SESSION].close()
        await app[STORE].close()


_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
"""A client-chosen request id is kept only if it is short and plain (no log injection)."""


request_ids = UniqueIds()


@web.middleware
async def _errors(request: web.Request, handler: routes.Handler) -> web.StreamResponse:
    given = request.headers.get("x-hookgate-request-id", "")
    request_id = given if _REQUEST_ID.fullmatch(given) else request_ids.next()
    request[REQUEST_ID] = request_id

    def answer(exc: HookgateError) -> web.Response:
        shape = _error_shape(request.path)  # only an error needs it
        return error_response(exc, request_id, shape=shape, rpc_id=request.get(JSONRPC_ID))

    try:
        return await handler(request)
    except HookgateError as exc:
        return answer(exc)
    except web.HTTPException as exc:
        return answer(_from_http(request, exc))
    except RequestPayloadError as exc:  # a body cut short, or not in its Content-Encoding
        return answer(
            InvalidRequest(f"The request body could not be read: {exc}.", code="bad_body")
        )
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception:
        log.exception("internal error in request %s", request_id)
        return answer(HookgateError(f"internal error (request {request_id})"))


ErrorShape = Literal["openai", "anthropic", "google", "jsonrpc", "html"]


def _error_shape(path: str) -> ErrorShape:
    """The error body a route's clients read: Anthropic's on its routes, Google's on the
    Gemini API's, JSON-RPC on the MCP gateway's, a page on the admin UI's, OpenAI's
    elsewhere."""
    if path == "/ui" or path.startswith("/ui/"):
        return "html"
    if routes.speaks_anthropic(path):
        return "anthropic"
    if speaks_google(path):
        return "google"
    return "jsonrpc" if path.startswith("/mcp/") else "openai"


def make_runner(app: web.Application, *, shutdown_timeout: float = 30.0) -> web.AppRunner:
    """The runner ``hookgate serve`` uses (tests use it too, to run the same server).

    ``handler_cancellation`` is on: when a client disconnects, its handler is cancelled,
    which closes the upstream request instead of letting it run on unobserved.
    """
    return web.AppRunner(
        app, handler_cancellation=True, access_log=None, shutdown_timeout=shutdown_timeout
    )


def error_response(
    exc: HookgateError, request_id: str, *, shape: ErrorShape = "openai", rpc_id: object = None
) -> web.Response:
    """The error response for ``exc``: OpenAI's format; Anthropic's on its routes (with
    ``x-should-retry: false`` on a refusal no retry can change, which Anthropic's clients,
    Claude Code among them, would otherwise retry with backoff); Google's on the Gemini
    API's (``{"error": {"code", "message", "status"}}``, a 429 of hookgate's own saying
    whether a retry can help: :func:`~hookgate.errors.google_quota`); a JSON-RPC error on the
    MCP gateway's (the HTTP status kept; ``rpc_id`` the id of the message it answers, null
    when it was not read)."""
    headers = {**exc.headers(), "x-hookgate-request-id": request_id}
    if shape == "jsonrpc":
        headers["content-type"] = "application/json"
        body = orjson.dumps(jsonrpc.error(rpc_id, jsonrpc.SERVER_ERROR, exc.message))
    elif shape == "html":
        headers.update(HTML_ERROR_HEADERS)
        body = (
            f"<!doctype html><html lang=en><meta charset=utf-8><title>{exc.status}</title>"
            f"<h1>{exc.status}</h1><p>{html.escape(exc.message)}</p><p><a href=/ui>hookgate</a>"
        ).encode()
    elif shape == "anthropic":
        headers["content-type"] = "application/json"
        body = exc.to_anthropic_bytes()
        if exc.status == 429 and exc.retry_after is None and not isinstance(exc, UpstreamError):
            # a spent budget: Anthropic's clients retry a 429 unless told not to
            headers["x-should-retry"] = "false"
    elif shape == "google":
        headers["content-type"] = "application/json"
        google = exc.to_google_body()
        if exc.status == 429 and not isinstance(exc, UpstreamError):
            google = google_quota(google, exc.retry_after)  # a spent budget: don't retry
        body = orjson.dumps(google)
    else:
        headers.setdefault("content-type", "application/json")
        body = exc.to_bytes()
    return web.Response(status=exc.status, body=body, headers=headers)


HTML_ERROR_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
}


def _from_http(request: web.Request, exc: web.HTTPException) -> HookgateError:
    if exc.status == 404:
        return NotFound(f"Unknown request URL: {request.method} {request.path}.")
    if exc.status == 413:
        return PayloadTooLarge("request body too large")
    error = HookgateError(exc.reason)
    error.status = exc.status
    error.type = "invalid_request_error"
    error.code = "method_not_allowed" if exc.status == 405 else None
    return error
