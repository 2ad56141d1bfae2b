"""``GET /v1/responses`` upgraded to a WebSocket: the Responses API's WebSocket mode,
which Codex CLI opens first (``OpenAI-Beta: responses_websockets=...``).

Every ``response.create`` frame is one model call through the same path as
``POST /v1/responses`` with ``stream: true`` (:class:`~hookgate.server.calls.ModelRequest`:
authentication, the model and policy set checked, the pipeline with its redaction,
budgets, tool guard and tracing, metrics and the audit record), with a request id of its
own (``<the upgrade's id>.<frame number>``) and the session and agent of the upgrade's
headers. The upstream is called over HTTP as for any other call; the frame logic
(expanding ``previous_response_id``, warm-ups, error frames) is
:mod:`hookgate.wire.responses_socket`'s. Frames are served one at a time, in order: a
client waits for a response's end before it sends the next turn.

A GET without an upgrade is relayed as before (see :mod:`hookgate.server.relay`). With
``server.responses_websocket: false`` the upgrade is refused with 426, on which Codex goes
on over HTTP at once. A refusal before the upgrade (a bad key, a bad id header) is an
HTTP error; after it, an ``error`` frame, and the connection stays open. When the server
shuts down (``SIGTERM``), an idle socket is closed at once and a busy one after its turn
(:class:`OpenSockets`), so a client's open connection never holds up the drain.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import orjson
from aiohttp import WSCloseCode, WSMsgType, web

from hookgate.errors import HookgateError, InvalidRequest, WebSocketRefused
from hookgate.pipeline.runner import ObservedStream
from hookgate.server.appkeys import GRANTS, HOLDER, REQUEST_ID
from hookgate.server.auth import authenticate, check_model
from hookgate.server.calls import ModelRequest, model_call_of, request_context
from hookgate.server.relay import relay
from hookgate.wire import responses_socket as frames
from hookgate.wire.responses_socket import Collector, Conversation, Turn

log = logging.getLogger("hookgate")


class OpenSockets:
    """The app's open Responses WebSockets, each idle or serving a turn. :meth:`close`
    (at shutdown) closes the idle ones at once and has the busy ones closed after their
    turn, with 1001 (going away): a client opens a new connection for its next turn."""

    def __init__(self) -> None:
        self._busy: dict[web.WebSocketResponse, bool] = {}
        self.closing = False

    def opened(self, socket: web.WebSocketResponse) -> None:
        self._busy[socket] = False

    def serving(self, socket: web.WebSocketResponse, busy: bool) -> None:
        self._busy[socket] = busy

    def closed(self, socket: web.WebSocketResponse) -> None:
        self._busy.pop(socket, None)

    async def close(self) -> None:
        self.closing = True
        idle = [socket for socket, busy in self._busy.items() if not busy]
        await asyncio.gather(*(_going_away(socket) for socket in idle))


SOCKETS = web.AppKey("hookgate.responses_sockets", OpenSockets)


def add_routes(app: web.Application) -> None:
    """Register ``GET /v1/responses`` (before any catch-all ``/v1/*`` route), and the
    closing of its open sockets at shutdown."""
    app[SOCKETS] = OpenSockets()
    app.router.add_get("/v1/responses", handle)
    app.on_shutdown.append(_close_sockets)


async def _close_sockets(app: web.Application) -> None:
    await app[SOCKETS].close()


async def _going_away(socket: web.WebSocketResponse) -> None:
    await socket.close(code=WSCloseCode.GOING_AWAY, message=b"hookgate is shutting down")


async def handle(request: web.Request) -> web.StreamResponse:
    """``GET /v1/responses``: the WebSocket mode when the client asks to upgrade, else
    the relay."""
    if request.headers.get("upgrade", "").lower() != "websocket":
        return await relay(request)
    runtime = request.app[HOLDER].current
    if not runtime.config.server.responses_websocket:
        raise WebSocketRefused(
            "This hookgate does not serve the Responses API's WebSocket mode "
            "(server.responses_websocket is false): send POST /v1/responses."
        )
    await authenticate(request, runtime, request.app[GRANTS])
    request_context(request.headers, request[REQUEST_ID], "responses")  # bad ids: 400 now
    socket = web.WebSocketResponse(max_msg_size=runtime.config.server.max_body_bytes)
    socket.headers["x-hookgate-request-id"] = request[REQUEST_ID]
    await socket.prepare(request)
    sockets = request.app[SOCKETS]
    sockets.opened(socket)
    conversation = Conversation()
    served = 0
    try:
        async for message in socket:
            if message.type is WSMsgType.TEXT:
                served += 1
                sockets.serving(socket, True)
                try:
                    await _serve(request, socket, conversation, message.data, served)
                finally:
                    sockets.serving(socket, False)
            elif message.type is WSMsgType.BINARY:
                refused = InvalidRequest("frames are JSON text; a binary frame is not one")
                await _send_error(socket, refused)
            if sockets.closing:
                await _going_away(socket)
    except ConnectionResetError:
        log.info("client left its Responses WebSocket mid-response; upstream stream closed")
    finally:
        sockets.closed(socket)
    return socket


async def _serve(
    request: web.Request,
    socket: web.WebSocketResponse,
    conversation: Conversation,
    text: str,
    number: int,
) -> None:
    """Answer one frame: a turn's events, or an error frame (the connection goes on; a
    fault of hookgate's own is logged and answered as a 500, as on HTTP)."""
    try:
        turn = conversation.request(frames.read_frame(text))
        if turn is None:
            return
        if turn.warm_up:
            await _warm_up(request, socket, conversation, turn)
        else:
            await _turn(request, socket, conversation, turn, number)
    except HookgateError as exc:
        conversation.forget()
        await _send_error(socket, exc)
    except Exception:
        request_id = f"{request[REQUEST_ID]}.{number}"
        log.exception("internal error in request %s", request_id)
        conversation.forget()
        await _send_error(socket, HookgateError(f"internal error (request {request_id})"))


async def _warm_up(
    request: web.Request, socket: web.WebSocketResponse, conversation: Conversation, turn: Turn
) -> None:
    """``generate: false``: nothing reaches a model, so no model call is made (the HTTP
    API has no such request to send); the turn is checked as a call would be (key, model)
    and kept for the next frame to continue."""
    runtime = request.app[HOLDER].current
    caller = await authenticate(request, runtime, request.app[GRANTS])
    check_model(caller, model_call_of(turn.body, runtime, "responses", request.headers).model)
    response_id, events = frames.warm_up_events(turn.body)
    for event in events:
        await socket.send_frame(orjson.dumps(event), WSMsgType.TEXT)
    conversation.remember(response_id, turn.body, [])


async def _turn(
    request: web.Request,
    socket: web.WebSocketResponse,
    conversation: Conversation,
    turn: Turn,
    number: int,
) -> None:
    """One model call: its events sent as they arrive, its output kept for the next."""
    runtime = request.app[HOLDER].current
    ctx = request_context(request.headers, f"{request[REQUEST_ID]}.{number}", "responses")
    async with ModelRequest(request.app, runtime, ctx) as call:
        caller = await authenticate(request, runtime, request.app[GRANTS])
        query = request.rel_url.raw_query_string  # a provider's query_params (Azure's)
        sent = model_call_of(turn.body, runtime, "responses", request.headers, query)
        sent = dataclasses.replace(sent, headers=frames.http_headers(sent.headers))
        response = await call.run(caller, sent)
        stream = response.stream
        assert isinstance(stream, ObservedStream)  # a streamed call answers with a stream
        collector = Collector()
        try:
            async for events in stream:
                for frame in frames.frames_of(events):
                    collector.feed(frame)
                    await socket.send_str(frame)
        finally:
            await stream.aclose()
    if collector.ended and collector.response_id is not None:
        conversation.remember(collector.response_id, turn.body, collector.output())
    else:
        conversation.forget()


async def _send_error(socket: web.WebSocketResponse, exc: HookgateError) -> None:
    if exc.status >= 500:
        log.warning("Responses WebSocket turn failed: %s (%s)", exc.message, exc.status)
    headers = {k: v for k, v in exc.headers().items() if k.lower() != "content-type"}
    frame = frames.error_frame(exc.status, orjson.loads(exc.to_bytes()), headers)
    await socket.send_frame(orjson.dumps(frame), WSMsgType.TEXT)
