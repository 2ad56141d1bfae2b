"""The wall: a fake OpenAI-compatible provider whose model name picks how it breaks.

``fb-ok`` always answers; ``fb-ok-noprefill`` answers but refuses a conversation that ends
with an assistant message (400 ``invalid_prefill``); ``fb-sNN-...`` misbehaves as scenario
SNN says (:mod:`bench.failoverbench.scenarios`). A model name may carry a provider prefix
(``openai/fb-ok``). Every chat request is logged with the time since :meth:`Wall.reset`,
the model, its attempt number, the last message's role, the prompt's size and what the wall
did, which is the provider's half of the score.

Plain asyncio rather than a web framework: the faults are transport faults (a TCP reset
before the headers, a chunked body that never ends, a socket held open in silence).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import time
from collections import Counter
from typing import Any

from bench.failoverbench.scenarios import ANSWER, WORDS, Timing

FAULTS = {
    "ok": "ok",
    "ok-noprefill": "noprefill",
    "s01": "429_once",
    "s02": "429",
    "s03": "500_once",
    "s04": "503",
    "s05": "reset_once",
    "s06": "silence",
    "s07": "slow",
    "s08": "cut",
    "s09": "stall",
    "s10": "malformed",
    "s11": "no_done",
    "s12": "context_length",
    "s13": "content_filter",
    "s14": "cut",
    "s15": "flap",
    "s16": "503",
}


def fault_of(model: str) -> str | None:
    """The fault a model name selects (None: not one of the wall's models)."""
    name = model.rsplit("/", 1)[-1].lower()
    if not name.startswith("fb-"):
        return None
    rest = name[3:]
    return FAULTS.get(rest) or FAULTS.get(rest.split("-", 1)[0])


class _Closed(Exception):
    """The wall hung up on purpose: the connection is not reused."""


class Wall:
    """The fake provider. ``await start()``, point a gateway at :attr:`base_url`, then
    ``reset()`` before each scenario and read :attr:`log` after it."""

    def __init__(self, timing: Timing) -> None:
        self.timing = timing
        self.log: list[dict[str, Any]] = []
        self._attempts: Counter[str] = Counter()
        self._t0 = time.monotonic()
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.StreamWriter, asyncio.Task[None] | None] = {}
        self._serial = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = await asyncio.start_server(self._connection, host, port)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/v1"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            tasks = [task for task in self._connections.values() if task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._server.wait_closed()

    def reset(self) -> None:
        self.log = []
        self._attempts = Counter()
        self._t0 = time.monotonic()

    def now(self) -> float:
        return round(time.monotonic() - self._t0, 3)

    # -- HTTP/1.1, just enough ---------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections[writer] = asyncio.current_task()
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                method, path, headers = _parse_head(head)
                body = await _read_body(reader, headers)
                if method == "POST" and path.split("?")[0].endswith("/chat/completions"):
                    await self._chat(body, reader, writer)
                elif method == "GET" and path.split("?")[0].endswith("/models"):
                    data = [
                        {"id": f"fb-{k}", "object": "model", "owned_by": "wall"} for k in FAULTS
                    ]
                    await _send_json(writer, 200, {"object": "list", "data": data})
                else:
                    await _send_error(writer, 404, "not found", "invalid_request_error", None)
        except (_Closed, ConnectionError):
            pass
        except asyncio.CancelledError:
            # close() ends the connections so; a connection's task is the wall's own, and
            # Python 3.11's stream server logs a connection task that ends cancelled.
            pass
        finally:
            self._connections.pop(writer, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _chat(
        self, raw: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        body = json.loads(raw or b"{}")
        model = str(body.get("model") or "")
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        self._attempts[model] += 1
        self._serial += 1
        entry: dict[str, Any] = {
            "t": self.now(),
            "model": model,
            "attempt": self._attempts[model],
            "last_role": last.get("role"),
            "prompt_tokens": sum(len(str(m.get("content") or "").split()) + 4 for m in messages),
            "action": "",
        }
        self.log.append(entry)
        fault = fault_of(model)
        stream = bool(body.get("stream"))
        usage_wanted = bool((body.get("stream_options") or {}).get("include_usage"))
        timing = self.timing

        if fault is None:
            entry["action"] = "404"
            await _send_error(writer, 404, f"no model {model}", "invalid_request_error", None)
            return
        words = WORDS
        if last.get("role") == "assistant":
            if fault == "noprefill":
                entry["action"] = "400 prefill rejected"
                await _send_error(
                    writer,
                    400,
                    "This model does not support assistant message prefill.",
                    "invalid_request_error",
                    "invalid_prefill",
                )
                return
            prefix = str(last.get("content") or "").strip()
            if prefix and ANSWER.startswith(prefix):
                words = ANSWER[len(prefix) :].split()
                entry["continued_from"] = len(prefix.split())
        attempt = entry["attempt"]
        if fault in ("429_once", "500_once", "reset_once") and attempt > 1:
            fault = "ok"
        if fault == "429_once":
            entry["action"] = "429 retry-after"
            await _send_error(
                writer,
                429,
                "Rate limit reached.",
                "rate_limit_error",
                "rate_limit_exceeded",
                {"Retry-After": f"{timing.retry_after_s:g}"},
            )
        elif fault == "429":
            entry["action"] = "429"
            await _send_error(
                writer, 429, "Rate limit reached.", "rate_limit_error", "rate_limit_exceeded"
            )
        elif fault == "500_once":
            entry["action"] = "500"
            await _send_error(writer, 500, "The server had an error.", "server_error", None)
        elif fault == "503" or (fault == "flap" and self.now() < timing.flap_down_s):
            entry["action"] = "503"
            await _send_error(
                writer, 503, "The engine is overloaded.", "server_error", "overloaded"
            )
        elif fault == "reset_once":
            entry["action"] = "tcp reset"
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            raise _Closed
        elif fault == "silence":
            entry["action"] = f"silence {timing.silence_s:g}s"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reader.read(1), timing.silence_s)
            entry["ended_at"] = self.now()
            raise _Closed
        elif fault == "context_length":
            entry["action"] = "400 context_length_exceeded"
            await _send_error(
                writer,
                400,
                "This model's maximum context length is 8192 tokens. However, your messages "
                "resulted in 9631 tokens. Please reduce the length of the messages.",
                "invalid_request_error",
                "context_length_exceeded",
            )
        elif fault == "content_filter":
            entry["action"] = "400 content_policy_violation"
            await _send_error(
                writer,
                400,
                "Your request was rejected as a result of our safety system.",
                "invalid_request_error",
                "content_policy_violation",
            )
        else:
            if fault == "flap":
                entry["action"] = "200 (recovered)"
            if stream:
                await self._stream(writer, entry, model, words, fault, usage_wanted)
            else:
                await self._answer(writer, entry, model, words, fault)

    def _usage(self, entry: dict[str, Any], completion: int) -> dict[str, int]:
        prompt = int(entry["prompt_tokens"])
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    async def _answer(
        self,
        writer: asyncio.StreamWriter,
        entry: dict[str, Any],
        model: str,
        words: list[str],
        fault: str,
    ) -> None:
        """A non-streamed answer (the alive probe), with the stream faults' equivalents."""
        text = " ".join(words)
        body = {
            "id": f"chatcmpl-wall-{self._serial}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": self._usage(entry, len(words)),
        }
        data = json.dumps(body).encode()
        if fault == "slow":
            await asyncio.sleep(self.timing.slow_first_token_s)
        if fault in ("cut", "stall", "malformed"):
            entry["action"] = f"200 {fault} body"
            headers = {"Content-Type": "application/json", "Content-Length": str(len(data))}
            writer.write(_head(200, headers))
            if fault == "stall":
                await asyncio.sleep(self.timing.stall_s)
            else:
                writer.write(data[: len(data) // 2])
            await writer.drain()
            raise _Closed
        entry["action"] = entry["action"] or "200"
        await _send_json(writer, 200, body)

    async def _stream(
        self,
        writer: asyncio.StreamWriter,
        entry: dict[str, Any],
        model: str,
        words: list[str],
        fault: str,
        usage_wanted: bool,
    ) -> None:
        timing = self.timing
        rid = f"chatcmpl-wall-{self._serial}"
        created = int(time.time())

        async def event(data: bytes) -> None:
            block = b"data: " + data + b"\n\n"
            writer.write(b"%x\r\n%s\r\n" % (len(block), block))
            await writer.drain()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return json.dumps(
                {
                    "id": rid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                }
            ).encode()

        headers = {
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
        }
        writer.write(_head(200, headers))
        await writer.drain()
        if fault == "slow":
            entry["action"] = f"200 stream, first token after {timing.slow_first_token_s:g}s"
            await asyncio.sleep(timing.slow_first_token_s)
        await event(chunk({"role": "assistant", "content": ""}))
        continuing = "continued_from" in entry
        for i, word in enumerate(words):
            if fault == "cut" and i == timing.cut_after:
                entry["action"] = f"200 stream cut after {i} tokens"
                raise _Closed
            if fault == "stall" and i == timing.stall_after:
                entry["action"] = f"200 stream stalled after {i} tokens for {timing.stall_s:g}s"
                await asyncio.sleep(timing.stall_s)
                raise _Closed
            if fault == "malformed" and i == timing.malformed_at:
                entry["action"] = f"200 stream, malformed event before token {i}"
                await event(b'{"id": "' + rid.encode() + b'", "choices": [{"delta": {"content": ')
            await event(chunk({"content": (" " if i or continuing else "") + word}))
            await asyncio.sleep(timing.token_interval_s)
        await event(chunk({}, "stop"))
        if usage_wanted:
            usage = {
                "id": rid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": self._usage(entry, len(words)),
            }
            await event(json.dumps(usage).encode())
        if fault == "no_done":
            entry["action"] = "200 stream complete without [DONE]"
        else:
            await event(b"[DONE]")
            entry["action"] = entry["action"] or "200 stream"
        writer.write(b"0\r\n\r\n")
        await writer.drain()


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return method, path, headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":
                    pass
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = int(headers.get("content-length") or 0)
    return await reader.readexactly(length) if length else b""


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send_json(
    writer: asyncio.StreamWriter,
    status: int,
    body: dict[str, Any],
    extra: dict[str, str] | None = None,
) -> None:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Content-Length": str(len(data))}
    writer.write(_head(status, headers | (extra or {})) + data)
    await writer.drain()


async def _send_error(
    writer: asyncio.StreamWriter,
    status: int,
    message: str,
    kind: str,
    code: str | None,
    extra: dict[str, str] | None = None,
) -> None:
    error = {"message": message, "type": kind, "param": None, "code": code}
    await _send_json(writer, status, {"error": error}, extra)
