"""A scripted OpenAI-compatible (and Anthropic-compatible) upstream on a real loopback
port, and helpers to run servers.

``FakeUpstream`` answers model endpoints like a tool-using model by default: when the
request offers tools and no tool result is present it calls the first tool (arguments
filled from the tool's JSON schema); once a tool result is present it answers with text
quoting that result ("The tool said: ..."); without tools it says "Hello from the fake
upstream.". Tests push scripted steps (``Status``, ``Raw``, ``Events``, ``Hang``, ``Reset``,
``Echo``, ``synth.Reply``) to override the next answers. Every request is recorded.

It serves OpenAI's APIs under ``base_url`` (``.../v1``), Gemini's ``generateContent`` and
``streamGenerateContent`` under ``gemini_base_url`` (answers from ``tests/gemini_wire.py``;
the recorded body is Gemini's, the model in the path) and Anthropic's Messages API,
``POST /v1/messages`` and ``POST /v1/messages/count_tokens``, under
``anthropic_base_url`` (the bare host: Anthropic's SDKs append ``/v1/messages``
themselves). On Messages the default agent reads tools in Anthropic's shape (``name``,
``input_schema``; its tool call has id ``toolu_fake_1``) and looks for ``tool_result``
blocks in the last user message; a ``synth.Reply`` is answered as a ``message`` (or its
event stream when the body's ``stream`` is true); ``Echo`` repeats a user message's text
(its string content, or its text and tool_result blocks). ``count_tokens`` answers
``{"input_tokens": N}``, N the whitespace-separated words of the system prompt and the
messages, or a pushed step (a ``Status``; a ``synth.Reply`` answers its ``input_tokens``).

``GET /v1/responses`` upgraded is the Responses API's WebSocket mode, as OpenAI serves it:
each ``response.create`` frame is answered with the events of a streamed response, one
JSON text frame each (a pushed ``synth.Reply``, else the default agent; a ``Status`` as an
``error`` frame with its status); ``previous_response_id`` naming the connection's last
response continues it (its input and output come before the frame's input); a warm-up
(``generate: false``) gets an empty completed response and takes no pushed step. Each
frame is recorded as a request with method ``WS``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.policy
import re
import socket
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from typing import Any, TypeVar

import orjson
from aiohttp import WSMsgType, web

from hookgate.server.app import make_runner
from hookgate.wire import synth
from tests import gemini_wire

T = TypeVar("T")


class LoopThread:
    """An event loop in a daemon thread, so sync clients can call servers it runs."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run ``coro`` on the thread's loop and wait for its result."""
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


class RunningApp:
    """An aiohttp app served on 127.0.0.1 with a free port, by the same runner as ``serve``."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self.runner = make_runner(app, shutdown_timeout=5)
        self.port = 0

    async def start(self) -> RunningApp:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = self.runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        await self.runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Recorded:
    """One request the fake upstream received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Status:
    """Answer with ``status`` and a JSON body."""

    status: int
    body: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Raw:
    """Answer with exactly these bytes."""

    body: bytes
    content_type: str = "application/json"
    status: int = 200


@dataclass
class Events:
    """Stream these SSE blocks, ``delay`` seconds apart, then end (``eof``) or ``hang``."""

    blocks: list[bytes]
    delay: float = 0.0
    end: str = "eof"


@dataclass
class Hang:
    """Never answer (until the client goes away)."""


@dataclass
class Reset:
    """Send 200 headers promising a body, part of it, then drop the connection."""

    partial: bytes = b'{"id": "chatcmpl-'


@dataclass
class Echo:
    """Answer with the text the upstream received, as the model saw it (after redaction).

    The text is the text of one user message of the request (the last, or the one ``user``
    picks; or a string ``input``/``prompt``), prefixed by ``prefix``; on Messages, a user
    message's string content, or its text and tool_result blocks. With ``tool`` set the reply is
    instead a call of that tool whose arguments are ``{"text": <the text>}``. Streamed
    replies are split into ``pieces`` deltas (``0``: one character per delta).
    """

    prefix: str = "You said: "
    tool: str | None = None
    pieces: int = 0
    user: int = -1
    """Which user message to echo, as a list index over the user messages."""


Step = Status | Raw | Events | Hang | Reset | Echo | synth.Reply


class FakeUpstream:
    """See the module docstring."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.script: deque[Step] = deque()
        self.scripts: dict[str, deque[Step]] = {}
        """Steps for the requests of one model (see :meth:`push_for`)."""
        self.headers: dict[str, str] = {
            "x-request-id": "req_fake_123",
            "openai-processing-ms": "7",
            "x-ratelimit-remaining-requests": "99",
            "set-cookie": "__cf_bm=secret; path=/",
        }
        self.cancelled = threading.Event()
        self.stream_delay = 0.0
        self.files: dict[str, bytes] = {}
        self.relay_script: deque[Status] = deque()
        """Answers for the next requests to other ``/v1/*`` paths (then an echo)."""
        self.models: list[str] | Status = ["fake-model-a", "fake-model-b"]
        """What ``GET /v1/models`` answers: these ids, or this status."""
        app = web.Application(client_max_size=2**30)
        for path in ("chat/completions", "responses", "completions", "embeddings"):
            app.router.add_post(f"/v1/{path}", self._model)
            # Azure OpenAI's two URL schemes
            app.router.add_post(f"/openai/deployments/{{deployment}}/{path}", self._model)
            app.router.add_post(f"/openai/v1/{path}", self._model)
        app.router.add_post("/openai/responses", self._model)  # Azure's, beside deployments
        app.router.add_get("/v1/responses", self._responses_socket)
        for path in ("messages", "messages/count_tokens"):  # Anthropic's
            app.router.add_post(f"/v1/{path}", self._model)
        app.router.add_post("/v1beta/models/{model}:{action}", self._model)  # Gemini's
        app.router.add_get("/v1beta/models", self._gemini_models)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/v1/models/{id}", self._model_object)
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{id}/content", self._download)
        app.router.add_route("*", "/v1/{tail:.*}", self._echo_request)
        self.server = RunningApp(app)

    @property
    def base_url(self) -> str:
        return f"{self.server.url}/v1"

    @property
    def gemini_base_url(self) -> str:
        """The ``base_url`` of a ``type: gemini`` provider (Gemini's ``/v1beta``)."""
        return f"{self.server.url}/v1beta"

    @property
    def anthropic_base_url(self) -> str:
        """The ``base_url`` of an Anthropic client: the host, without ``/v1``."""
        return self.server.url

    def push(self, *steps: Step) -> None:
        """Use ``steps`` for the next requests, in order (then the default behaviour)."""
        self.script.extend(steps)

    def push_for(self, model: str, *steps: Step) -> None:
        """Use ``steps`` for the next requests naming ``model``, in order, before the shared
        script: a client's side calls (opencode's titles) do not take its agent's steps."""
        self.scripts.setdefault(model, deque()).extend(steps)

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    async def _record(self, request: web.Request) -> Recorded:
        recorded = Recorded(
            request.method,
            request.path,
            request.rel_url.raw_query_string,
            {k.lower(): v for k, v in request.headers.items()},
            await request.read(),
        )
        self.requests.append(recorded)
        return recorded

    async def _model(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        body = recorded.json()
        api = request.path.removeprefix("/openai").removeprefix("/v1/").lstrip("/")
        if "deployment" in request.match_info:
            api = api.removeprefix(f"/deployments/{request.match_info['deployment']}/")
        if "action" in request.match_info:  # Gemini: the model is in the path, not the body
            api = request.match_info["action"]
            body = {**body, "model": request.match_info["model"]}
        own = self.scripts.get(str(body.get("model")))
        if own:
            step = own.popleft()
        else:
            step = self.script.popleft() if self.script else _default_reply(api, body)
        try:
            return await self._answer(request, api, body, step)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise

    async def _answer(
        self, request: web.Request, api: str, body: dict[str, Any], step: Step
    ) -> web.StreamResponse:
        if isinstance(step, Status):
            return web.json_response(
                step.body, status=step.status, headers={**self.headers, **step.headers}
            )
        if isinstance(step, Raw):
            return web.Response(body=step.body, status=step.status, content_type=step.content_type)
        if isinstance(step, Hang):
            await asyncio.sleep(3600)
        if isinstance(step, Reset):
            out = web.StreamResponse(headers={"content-type": "application/json"})
            out.content_length = 10_000
            await out.prepare(request)
            await out.write(step.partial)
            assert request.transport is not None
            request.transport.abort()
            return out
        if isinstance(step, Echo):
            step = _echo(api, body, step)
        streamed = body.get("stream") or api == "streamGenerateContent"
        if isinstance(step, synth.Reply):
            step = _as_events(api, body, step, self.stream_delay) if streamed else step
        if isinstance(step, synth.Reply):
            return web.json_response(_as_json(api, body, step), headers=self.headers)
        assert isinstance(step, Events)
        out = web.StreamResponse(headers={**self.headers, "content-type": "text/event-stream"})
        await out.prepare(request)
        for block in step.blocks:
            await out.write(block)
            if step.delay:
                await asyncio.sleep(step.delay)
        if step.end == "hang":
            await asyncio.sleep(3600)
        await out.write_eof()
        return out

    async def _responses_socket(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("upgrade", "").lower() != "websocket":
            return await self._echo_request(request)
        headers = {k.lower(): v for k, v in request.headers.items()}
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        last: tuple[str, list[Any]] | None = None  # the connection's last response
        async for message in socket:
            if message.type is not WSMsgType.TEXT:
                continue
            self.requests.append(Recorded("WS", request.path, "", headers, message.data.encode()))
            frame = orjson.loads(message.data)
            body = {k: v for k, v in frame.items() if k not in ("type", "generate")}
            given = body.get("input")
            items: list[Any] = (
                [{"role": "user", "content": given}]
                if isinstance(given, str)
                else list(given or [])
            )
            if last is not None and body.get("previous_response_id") == last[0]:
                items = [*last[1], *items]
            body["input"] = items
            model = str(body.get("model"))
            if frame.get("generate") is False:
                step: Step = synth.Reply(input_tokens=0, output_tokens=0)
            else:
                step = self.script.popleft() if self.script else _agent_reply("responses", body)
            if isinstance(step, Status):
                error = {"type": "error", "status": step.status, **step.body}
                await socket.send_str(orjson.dumps(error).decode())
                last = None
                continue
            assert isinstance(step, synth.Reply), step
            events = synth.response_events(model, step)
            output = [d["item"] for k, d in events if k == "response.output_item.done"]
            if frame.get("generate") is False:
                events = [e for e in events if e[0] in ("response.created", "response.completed")]
            for _, data in events:
                await socket.send_str(orjson.dumps(data).decode())
                if self.stream_delay:
                    await asyncio.sleep(self.stream_delay)
            last = (f"resp_{step.id}", [*items, *output])
        return socket

    async def _gemini_models(self, request: web.Request) -> web.Response:
        await self._record(request)
        models = self.models if isinstance(self.models, list) else []
        return web.json_response({"models": [{"name": f"models/{m}"} for m in models]})

    async def _models(self, request: web.Request) -> web.Response:
        await self._record(request)
        if isinstance(self.models, Status):
            return web.json_response(self.models.body, status=self.models.status)
        data = [{"id": m, "object": "model", "created": 1, "owned_by": "fake"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _model_object(self, request: web.Request) -> web.Response:
        await self._record(request)
        model = request.match_info["id"]
        if isinstance(self.models, list) and model in self.models:
            return web.json_response(
                {"id": model, "object": "model", "created": 1, "owned_by": "fake"}
            )
        return web.json_response(
            {"error": {"message": "no such model", "code": "model_not_found"}}, status=404
        )

    async def _upload(self, request: web.Request) -> web.Response:
        # The whole body, parsed by the standard library: aiohttp's multipart reader warns
        # (unread_data, deprecated) when a read happens to span a part boundary.
        raw = await request.read()
        envelope = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
        form = BytesParser(policy=email.policy.default).parsebytes(envelope + raw)
        upload = next(
            p
            for p in form.iter_parts()
            if p.get_param("name", header="content-disposition") == "file"
        )
        content = upload.get_payload(decode=True)
        assert isinstance(content, bytes)
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(
            Recorded(
                request.method, request.path, request.rel_url.raw_query_string, headers, content
            )
        )
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return web.json_response(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(content),
                "created_at": 0,
                "filename": upload.get_filename(),
                "purpose": str(form["purpose"]),
                "status": "processed",
            },
            headers=self.headers,
        )

    async def _download(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        content = self.files[request.match_info["id"]]
        if request.match_info["id"] != "file-cut":
            return web.Response(body=content, headers=self.headers)
        out = web.StreamResponse(headers=self.headers)
        out.content_length = len(content)
        await out.prepare(request)
        await out.write(content[: len(content) // 2])
        assert request.transport is not None
        request.transport.abort()  # the upstream dies mid-body
        return out

    async def _echo_request(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        if self.relay_script:
            step = self.relay_script.popleft()
            return web.json_response(step.body, status=step.status, headers=step.headers)
        return web.json_response(
            {
                "method": recorded.method,
                "path": recorded.path,
                "query": recorded.query,
                "body_size": len(recorded.body),
            },
            headers=self.headers,
        )


def _as_json(api: str, body: dict[str, Any], reply: synth.Reply) -> dict[str, Any]:
    model = str(body.get("model"))
    if api == "generateContent":
        return gemini_wire.response(model, reply)
    if api == "messages":
        return synth.message_object(model, reply)
    if api == "messages/count_tokens":
        return synth.count_tokens_object(reply.input_tokens)
    if api == "responses":
        return synth.response_object(model, reply)
    if api == "completions":
        return synth.completion(model, reply)
    if api == "embeddings":
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else [str(i) for i in inputs or []]
        return synth.embeddings(model, texts)
    return synth.chat_completion(model, reply)


def _as_events(api: str, body: dict[str, Any], reply: synth.Reply, delay: float) -> Events:
    model = str(body.get("model"))
    if api == "streamGenerateContent":
        return Events(gemini_wire.stream(model, reply), delay)
    if api == "responses":
        return Events(list(synth.response_stream(model, reply)), delay)
    if api == "completions":
        return Events(list(synth.completion_stream(model, reply)), delay)
    if api == "messages":
        return Events(list(synth.message_stream(model, reply)), delay)
    options = body.get("stream_options") or {}
    return Events(
        list(synth.chat_stream(model, reply, include_usage=bool(options.get("include_usage")))),
        delay,
    )


def _default_reply(api: str, body: dict[str, Any]) -> synth.Reply:
    if api == "messages/count_tokens":
        return synth.Reply(input_tokens=_anthropic_words(body))
    if api == "messages":
        return _anthropic_agent_reply(body)
    if api in ("generateContent", "streamGenerateContent"):
        return gemini_wire.agent_reply(body)
    return _agent_reply(api, body)


def _agent_reply(api: str, body: dict[str, Any]) -> synth.Reply:
    """Tool call first, then text quoting the tool result."""
    items = body.get("messages") if api == "chat/completions" else body.get("input")
    if isinstance(items, list):
        result = _tool_result(items)
        if result is not None:
            return synth.Reply(text=f"The tool said: {result}")
    tools = body.get("tools")
    specs = [spec for t in tools if (spec := _tool_spec(t))] if isinstance(tools, list) else []
    if specs:  # built-in tools (web search, MCP, ...) run at the provider: no call here
        name, parameters = specs[0]
        arguments = orjson.dumps(_arguments(parameters)).decode()
        return synth.Reply(tool_calls=[synth.ToolCall("call_fake_1", name, arguments)])
    return synth.Reply(text="Hello from the fake upstream.")


def _tool_result(items: list[Any]) -> str | None:
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        if item.get("role") == "tool":
            return _text(item.get("content"))
        if item.get("type") == "function_call_output":
            return _text(item.get("output"))
        if item.get("role") == "user":
            return None
    return None


def _anthropic_agent_reply(body: dict[str, Any]) -> synth.Reply:
    """:func:`_agent_reply` on the Messages API: tool results are ``tool_result`` blocks of
    the last user message; tools are ``{"name", "input_schema"}`` (server tools, which
    carry a ``type``, run at the provider: no call here)."""
    messages = body.get("messages")
    users = [m for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
    content = users[-1].get("content") if users else None
    if isinstance(content, list):
        results = [
            _anthropic_text(block.get("content"))
            for block in content
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        if results:
            return synth.Reply(text=f"The tool said: {' '.join(results)}")
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        if (
            isinstance(tool, dict)
            and isinstance(tool.get("name"), str)
            and tool.get("type") in (None, "custom")
        ):
            arguments = orjson.dumps(_arguments(dict(tool.get("input_schema") or {}))).decode()
            return synth.Reply(tool_calls=[synth.ToolCall("toolu_fake_1", tool["name"], arguments)])
    return synth.Reply(text="Hello from the fake upstream.")


def _anthropic_text(content: Any) -> str:
    """The text of Messages content: a string, or its text blocks and the text of its
    tool_result blocks (whose content is a string or text blocks), joined with spaces."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        str(block.get("text", ""))
        if block.get("type") == "text"
        else _anthropic_text(block.get("content"))
        for block in content
        if isinstance(block, dict) and block.get("type") in ("text", "tool_result")
    ]
    return " ".join(part for part in parts if part)


def _anthropic_words(body: dict[str, Any]) -> int:
    """Whitespace-separated words of the system prompt and of every message's text."""
    texts = [_anthropic_text(body.get("system"))]
    messages = body.get("messages")
    texts += [_anthropic_text(m.get("content")) for m in messages or [] if isinstance(m, dict)]
    return sum(len(text.split()) for text in texts)


def _echo(api: str, body: dict[str, Any], echo: Echo) -> synth.Reply:
    text = echo.prefix + _user_text(api, body, echo.user)
    pieces = echo.pieces or len(text)
    if echo.tool is None:
        return synth.Reply(text=text, pieces=pieces)
    arguments = orjson.dumps({"text": text}).decode()
    call_id = "toolu_echo_1" if api == "messages" else "call_echo_1"
    call = synth.ToolCall(call_id, echo.tool, arguments)
    return synth.Reply(tool_calls=[call], pieces=echo.pieces or len(arguments))


def _user_text(api: str, body: dict[str, Any], index: int) -> str:
    if api == "completions":
        return _text(body.get("prompt"))
    if api == "messages":
        messages = body.get("messages")
        users = [m for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
        return _anthropic_text(users[index].get("content")) if users else ""
    if api in ("generateContent", "streamGenerateContent"):
        return gemini_wire.user_text(body, index)
    items = body.get("messages") if api == "chat/completions" else body.get("input")
    if isinstance(items, str):
        return items
    users = [i for i in items or [] if isinstance(i, dict) and i.get("role") == "user"]
    return _text(users[index].get("content")) if users else ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def _tool_spec(tool: Any) -> tuple[str, dict[str, Any]] | None:
    """A function tool's name and parameters; None for a tool without a name."""
    if not isinstance(tool, dict):
        return None
    function = tool.get("function", tool)
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return None
    return function["name"], dict(function.get("parameters") or {})


def _arguments(parameters: dict[str, Any]) -> dict[str, Any]:
    values = {"string": "Paris", "integer": 2, "number": 2, "boolean": True}
    properties = parameters.get("properties") or {}
    return {
        name: values.get(str(spec.get("type")), "Paris")
        for name, spec in properties.items()
        if isinstance(spec, dict)
    }


def start_serve(
    *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str, list[str]]:
    """Run ``python -m hookgate serve ARGS --port 0`` as a user would.

    Returns the process, its base URL, and the log lines up to the "listening on" line.
    The caller stops the process and closes its ``stderr``.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "hookgate", "serve", *args, "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    lines = [process.stderr.readline()]
    while "listening on" not in lines[-1]:
        assert lines[-1], f"the proxy exited before listening: {lines}"
        lines.append(process.stderr.readline())
    match = re.search(r"listening on (http://\S+)", lines[-1])
    assert match, lines
    return process, match.group(1), lines


def send_raw(url: str, raw: bytes, timeout: float = 5) -> bytes:
    """Send ``raw`` bytes to the server at ``url`` as written (no client-side parsing or
    normalisation) and return what came back before it closed or ``timeout`` passed."""
    host, _, port = url.removeprefix("http://").partition("/")[0].partition(":")
    chunks = []
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(raw)
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)
