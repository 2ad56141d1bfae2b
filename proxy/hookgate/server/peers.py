"""What a worker process knows of its siblings (``server.workers`` above 1).

Each worker (:class:`Worker`) serves, beside the listeners it shares with the others, a
small app of its own on a Unix socket in the server's run directory
(:func:`peer_app`): its readiness and its live traffic. A worker asked for ``/readyz``
or the admin UI's Live page asks every other worker for theirs (:func:`ask_all`), so
the answer is the whole server's whichever worker serves it. A worker that decides an
approval or changes grants tells the others (:func:`tell_all`), so a tool call waiting
on another worker wakes at once (it would see the decision at its next poll of the
store anyway) and the change applies there at once (else within the grants' TTL).
Nothing there is reachable from the network (the socket's directory is the parent's,
mode 0700).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from hookgate.server import health
from hookgate.server.appkeys import GRANTS, LIVE, WAKEUPS, WORKER
from hookgate.server.live import RECENT, LiveCall
from hookgate.server.workers import Worker
from hookgate.store.base import AuditRecord

ASK_TIMEOUT_S = 2.0
"""How long a worker waits for a sibling's answer before reporting it as not answering."""


def peer_app(app: web.Application) -> web.Application:
    """The app a worker serves to its siblings, on ``app``'s state."""
    peer = web.Application()

    async def ready(request: web.Request) -> web.Response:
        is_ready, body = await health.readiness(app)
        return web.Response(body=orjson.dumps({"ready": is_ready, "pid": os.getpid(), **body}))

    async def live(request: web.Request) -> web.Response:
        traffic = app[LIVE]
        body = {"flying": [dataclasses.asdict(c) for c in traffic.in_flight()],
                "recent": [dataclasses.asdict(c) for c in traffic.recent()]}  # fmt: skip
        return web.Response(body=orjson.dumps(body))

    async def wake(request: web.Request) -> web.Response:
        app[WAKEUPS].wake(str((await request.json())["id"]))
        return web.Response()

    async def forget(request: web.Request) -> web.Response:
        said = await request.json()
        app[GRANTS].forget("key" if said["kind"] == "key" else "team", str(said["name"]))
        return web.Response()

    peer.router.add_get("/ready", ready)
    peer.router.add_get("/live", live)
    peer.router.add_post("/wake", wake)
    peer.router.add_post("/forget", forget)
    return peer


async def tell_all(app: web.Application, path: str, body: dict[str, str]) -> None:
    """``POST path`` with ``body`` to every other worker's :func:`peer_app` (nothing
    without workers; a worker that does not answer is passed over)."""
    worker = app.get(WORKER)
    if worker is not None:
        await asyncio.gather(*(_ask(worker.socket_path(n), path, body) for n in worker.others()))


async def start_peer_site(runner: web.AppRunner, worker: Worker) -> web.UnixSite:
    """Serve ``runner`` (a :func:`peer_app`) on this worker's socket (a dead
    predecessor's is replaced)."""
    path = worker.socket_path(worker.number)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    site = web.UnixSite(runner, path)
    await site.start()
    return site


async def ask_all(worker: Worker, path: str) -> dict[int, Any]:
    """``GET path`` of every other worker's :func:`peer_app`: each answer's JSON by worker
    number, None for a worker that did not answer within :data:`ASK_TIMEOUT_S` (it is
    being replaced, or stuck)."""
    numbers = worker.others()
    answers = await asyncio.gather(*(_ask(worker.socket_path(n), path) for n in numbers))
    return dict(zip(numbers, answers, strict=True))


async def _ask(socket_path: str, path: str, body: dict[str, str] | None = None) -> Any:
    """The JSON a sibling answers to ``GET path`` (``POST`` with ``body``), None if none."""
    try:
        async with (
            asyncio.timeout(ASK_TIMEOUT_S),
            aiohttp.ClientSession(connector=aiohttp.UnixConnector(socket_path)) as session,
            session.request(
                "GET" if body is None else "POST", f"http://worker{path}", json=body
            ) as response,
        ):
            response.raise_for_status()
            return orjson.loads(await response.read() or b"null")
    except (OSError, TimeoutError, aiohttp.ClientError, orjson.JSONDecodeError):
        return None


async def readiness(app: web.Application, worker: Worker) -> tuple[bool, dict[str, Any]]:
    """The whole server's readiness: this worker's (:func:`health.readiness`) with a
    ``workers`` list of every worker's, ready only when every worker is."""
    own_ready, body = await health.readiness(app)
    answers = await ask_all(worker, "/ready")
    workers = [_worker_status(worker.number, own_ready, {"pid": os.getpid(), **body})]
    for number, answer in answers.items():
        workers.append(_worker_status(number, bool(answer and answer.get("ready")), answer))
    workers.sort(key=lambda w: int(w["worker"]))
    ready = all(w["status"] == "ready" for w in workers)
    body["status"] = "ready" if ready else "unavailable"
    body["worker"] = worker.number
    body["workers"] = workers
    return ready, body


def _worker_status(number: int, ready: bool, answer: dict[str, Any] | None) -> dict[str, Any]:
    if answer is None:
        return {"worker": number, "status": "not answering"}
    status: dict[str, Any] = {
        "worker": number,
        "pid": answer.get("pid"),
        "status": "ready" if ready else "unavailable",
        "generation": answer.get("config", {}).get("generation"),
    }
    if not ready:
        status["store"] = answer.get("store")
        status["policies"] = answer.get("policies")
    return status


async def live_calls(
    app: web.Application, worker: Worker | None
) -> tuple[list[LiveCall], list[LiveCall]]:
    """The Live page's requests in flight (oldest first) and recently finished (newest
    first, at most :data:`~hookgate.server.live.RECENT`): this process's, or with workers
    every worker's (a worker that does not answer is left out)."""
    own = app[LIVE]
    flying, recent = own.in_flight(), list(own.recent())
    if worker is None:
        return flying, recent
    for answer in (await ask_all(worker, "/live")).values():
        if answer is not None:
            flying.extend(_call(c) for c in answer["flying"])
            recent.extend(_call(c) for c in answer["recent"])
    flying.sort(key=lambda c: c.started)
    recent.sort(key=_ended_at, reverse=True)
    return flying, recent[:RECENT]


def _ended_at(call: LiveCall) -> float:
    record = call.record
    return call.started if record is None else record.ts + record.latency_ms / 1000


def _call(data: dict[str, Any]) -> LiveCall:
    record = data.pop("record")
    return LiveCall(**data, record=None if record is None else AuditRecord(**record))
