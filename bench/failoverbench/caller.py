"""The caller: one chat completion through the gateway, read as a careful client reads it.

The gateway owns retries and fallback; the caller asks once (the suite's ``endpoint``
system). A stream is read line by line: ``data: [DONE]`` ends it, an event that is not
JSON is skipped, an event carrying ``error`` is the error it reports (never a success with
the text so far), and a connection that ends early is an error. The call is bounded by the
scenario's deadline: past it, it is a hang.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Result:
    ok: bool
    content: str = ""
    model: str | None = None
    usage: dict[str, Any] | None = None
    error: str | None = None
    status: int | None = None
    hang: bool = False
    elapsed_s: float = 0.0

    @property
    def outcome(self) -> str:
        return "hang" if self.hang else "success" if self.ok else "error"


def _error_text(body: bytes) -> str:
    try:
        error = json.loads(body).get("error")
        return str(error.get("message") if isinstance(error, dict) else error)[:200]
    except (ValueError, AttributeError):
        return body[:200].decode("utf-8", "replace")


async def call(
    client: httpx.AsyncClient,
    base_url: str,
    model: str,
    messages: list[dict[str, str]],
    *,
    stream: bool,
    deadline_s: float,
) -> Result:
    """Ask ``base_url`` once for ``model``; a hang when nothing ends by ``deadline_s``
    (plus a second of grace, as the suite's runner allows)."""
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(
            _call(client, base_url, model, messages, stream, deadline_s), deadline_s + 1.0
        )
    except TimeoutError:
        result = Result(ok=False, hang=True, error=f"no result within {deadline_s:g}s")
    result.elapsed_s = round(time.monotonic() - started, 3)
    return result


async def _call(
    client: httpx.AsyncClient,
    base_url: str,
    model: str,
    messages: list[dict[str, str]],
    stream: bool,
    deadline_s: float,
) -> Result:
    body: dict[str, Any] = {"model": model, "messages": messages}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    timeout = httpx.Timeout(connect=10.0, read=deadline_s, write=10.0, pool=10.0)
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": "Bearer sk-failoverbench"}
    text: list[str] = []
    reported: str | None = None
    usage: dict[str, Any] | None = None
    try:
        async with client.stream("POST", url, json=body, headers=headers, timeout=timeout) as r:
            if r.status_code != 200:
                message = _error_text(await r.aread())
                return Result(
                    ok=False, status=r.status_code, error=f"HTTP {r.status_code}: {message}"
                )
            if not stream:
                answer = json.loads(await r.aread())
                content = answer["choices"][0]["message"].get("content") or ""
                return Result(
                    ok=True, content=content, model=answer.get("model"), usage=answer.get("usage")
                )
            async for line in r.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    event = json.loads(data)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                if event.get("error"):
                    message = _error_text(data.encode())
                    return Result(
                        ok=False,
                        status=200,
                        content="".join(text),
                        model=reported,
                        error=f"error event after {len(text)} text chunk(s): {message}",
                    )
                reported = event.get("model") or reported
                usage = event.get("usage") or usage
                for choice in event.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        text.append(piece)
    except (httpx.HTTPError, ValueError, KeyError, IndexError) as exc:
        return Result(
            ok=False, content="".join(text), model=reported, error=f"{type(exc).__name__}: {exc}"
        )
    return Result(ok=True, content="".join(text), model=reported, usage=usage)
