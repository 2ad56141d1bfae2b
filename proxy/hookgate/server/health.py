"""Readiness of one process: what ``/readyz`` says of it (with workers, every worker's is
gathered by :func:`hookgate.server.peers.readiness`)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from hookgate.server import exposure
from hookgate.server.appkeys import HOLDER, LISTEN_HOST, STORE
from hookgate.store.base import display_url

READY_STORE_TIMEOUT_S = 2.0
"""How long ``/readyz`` waits for the store to answer before calling it unready."""


async def readiness(app: web.Application) -> tuple[bool, dict[str, Any]]:
    """Whether this process is ready: a config is loaded, the store answers (keys, spend
    and the audit log live there), and no policy reports itself unready (e.g. every
    circuit open); and the body of ``/readyz``: the config generation, providers, the
    store's state and each policy's status."""
    runtime = app[HOLDER].current
    policies = {p.name: status for p in runtime.policies if (status := p.status()) is not None}
    store = app[STORE]
    try:
        store_ready = await asyncio.wait_for(store.healthy(), READY_STORE_TIMEOUT_S)
    except TimeoutError:
        store_ready = False
    ready = store_ready and all(status.get("ready", True) for status in policies.values())
    warning = exposure.warning(runtime.config, app[LISTEN_HOST])
    body = {
        "status": "ready" if ready else "unavailable",
        "config": {"source": runtime.source, "generation": runtime.generation},
        "providers": sorted(runtime.providers),
        "store": {"url": display_url(store.url), "ready": store_ready},
        "policies": policies,
        "warnings": [warning] if warning is not None else [],
    }
    return ready, body
