"""A scripted Responses upstream for Codex CLI, over both of its transports.

Run: ``python -m bench.codex_upstream PORT``. ``POST /v1/responses`` answers with the
Responses event stream; ``GET /v1/responses`` upgraded is the WebSocket mode (one event a
text frame; ``previous_response_id`` continues the connection's last response; a warm-up,
``generate: false``, gets an empty completed response). The model it plays asks once for
``exec_command`` with ``echo <address>``, the e-mail address of the user's message as it
arrived (the address itself, or hookgate's placeholder for it), then says
"Your address is <address>." once the command's output is in the input.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import orjson
from aiohttp import WSMsgType, web

from bench.serving import serve
from hookgate.wire import synth

ADDRESS = re.compile(r"<EMAIL_ADDRESS_[A-Z0-9]+>|[\w.+-]+@[\w-]+\.[\w.]+")


def reply(body: dict[str, Any]) -> synth.Reply:
    """The scripted model's answer to a request with this (whole) input."""
    items = body.get("input")
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items or []
    if any(i.get("type") == "function_call_output" for i in items):
        return synth.Reply(f"Your address is {_address(items)}.", pieces=5)
    command = orjson.dumps({"cmd": f"echo {_address(items)}"}).decode()
    return synth.Reply(tool_calls=[synth.ToolCall("call_echo", "exec_command", command)], pieces=9)


def _address(items: list[Any]) -> str:
    users = [i for i in items if isinstance(i, dict) and i.get("role") == "user"]
    found = ADDRESS.findall(orjson.dumps(users[-1]).decode()) if users else []
    return found[-1] if found else "nobody@example.com"


async def post(request: web.Request) -> web.StreamResponse:
    body = orjson.loads(await request.read())
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    await response.write(b"".join(synth.response_stream(str(body.get("model")), reply(body))))
    await response.write_eof()
    return response


async def socket(request: web.Request) -> web.StreamResponse:
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    last: tuple[str, list[Any]] | None = None
    async for message in ws:
        if message.type is not WSMsgType.TEXT:
            continue
        frame = orjson.loads(message.data)
        items = frame.get("input") or []
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        if last is not None and frame.get("previous_response_id") == last[0]:
            items = [*last[1], *items]
        warm_up = frame.get("generate") is False
        answer = synth.Reply(text=None) if warm_up else reply({"input": items})
        events = synth.response_events(str(frame.get("model")), answer)
        for _, data in events:
            await ws.send_str(orjson.dumps(data).decode())
        output = [data["item"] for kind, data in events if kind == "response.output_item.done"]
        last = (f"resp_{answer.id}", [*items, *output])
    return ws


def main() -> None:
    app = web.Application(client_max_size=2**26)
    app.router.add_post("/v1/responses", post)
    app.router.add_get("/v1/responses", socket)
    serve(app, int(sys.argv[1]))


if __name__ == "__main__":
    main()
