"""Typed keys for what the app and each request carry."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from hookgate.server.grants_cache import GrantsCache
from hookgate.server.live import LiveTraffic
from hookgate.server.mcp.stdio import StdioSessions
from hookgate.server.reload import ConfigWatcher
from hookgate.server.runtime import RuntimeHolder
from hookgate.server.wakeups import Wakeups
from hookgate.server.workers import Worker
from hookgate.store.base import Store
from hookgate.telemetry.metrics import Metrics

HOLDER = web.AppKey("hookgate.runtime", RuntimeHolder)
"""The current config generation; see :mod:`hookgate.server.runtime`."""

SESSION = web.AppKey("hookgate.session", aiohttp.ClientSession)
"""The one upstream ``ClientSession`` of the app (keep-alive pool)."""

STORE = web.AppKey("hookgate.store", Store)
"""Durable state, from the config the app started with (a reload does not move it)."""

GRANTS = web.AppKey("hookgate.grants", GrantsCache)
"""The run-time grants of keys and teams, as this replica last read them."""

MCP_SESSIONS = web.AppKey("hookgate.mcp_sessions", StdioSessions)
"""The MCP gateway's stdio sessions: the server processes it runs."""

LIVE = web.AppKey("hookgate.live", LiveTraffic)
"""The requests this process is serving and has just served (the admin UI's Live page)."""

WAKEUPS = web.AppKey("hookgate.wakeups", Wakeups)
"""The approvals this process's tool calls wait on (see :mod:`hookgate.server.wakeups`)."""

METRICS = web.AppKey("hookgate.metrics", Metrics)
"""The app's metric families (on the registry given to ``create_app``)."""

WATCHER = web.AppKey("hookgate.watcher", ConfigWatcher)
"""Reloads the config file when it changes (absent: the config is not watched)."""

WORKER = web.AppKey("hookgate.worker", Worker)
"""This process's place among the workers (absent: one process, ``server.workers: 1``)."""

LISTEN_HOST = web.AppKey("hookgate.listen_host", str)
"""The address the model routes are served on (see :mod:`hookgate.server.exposure`)."""

REQUEST_ID = web.RequestKey("hookgate.request_id", str)
"""Request key holding the id reported in ``x-hookgate-request-id``."""

JSONRPC_ID = web.RequestKey("hookgate.jsonrpc_id", object)
"""Request key holding the id of the JSON-RPC message an MCP request carried (its error
response answers that id)."""
