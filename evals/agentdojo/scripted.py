"""The worst-case obedient model: an OpenAI-compatible chat-completions server, scripted.

It plays the model of an AgentDojo run, offline. Given the conversation a request carries, it
makes the user task's ground-truth tool calls, one per turn, in order; and as soon as a tool
result it has read contains the injection (the attacker's instruction), it obeys it: it makes
the injection task's ground-truth calls next, then goes on with the user's. When no call is
left it answers with the ground truth's text (the user task's, then the injection task's when
it obeyed), which is what the tasks' judges read.

A real model would learn the attacker's wishes by reading the injected text; this stand-in
learns them from a side channel of the harness instead: each request carries the header
``x-dojo-scenario`` naming the running pair, whose :class:`Script` (both tasks' ground truth,
computed on the pair's environment) the harness registered beforehand. It still obeys only
when the injection actually reached it: the injection task's goal must appear in a tool
result of the conversation (compared on letters and digits only, so YAML's line folding and
quoting do not hide it). It is stateless: every decision is replayed from the conversation,
so a gateway that changes a request (drops a tool, rewrites a result) changes what it does.

``unoffered`` says what it does with a call to a tool the request does not offer (a gateway
removed its definition): ``call`` names it anyway (the worst case: a hijacked model is not
bound by the tool list), ``skip`` leaves that call out and goes on with the next.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson
import yaml
from aiohttp import web

SCENARIO_HEADER = "x-dojo-scenario"
"""The request header naming the running pair (the side channel)."""

Unoffered = Literal["call", "skip"]


@dataclass(frozen=True)
class Call:
    """One tool call of a ground truth: the tool's name and its JSON arguments."""

    function: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Script:
    """What the model does in one pair: the ground truth of both tasks and the goal it spots.

    ``goal`` is the injection task's goal, ``None`` when the run has no injection.
    """

    user_calls: tuple[Call, ...]
    user_answer: str
    injection_calls: tuple[Call, ...] = ()
    injection_answer: str = ""
    goal: str | None = None


@dataclass(frozen=True)
class Answer:
    """The model's turn: a tool call (with its id) or, with ``call`` None, the final text."""

    call: Call | None
    call_id: str = ""
    text: str = ""


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif value is not None:
        yield str(value)


def carries(result: str, goal: str) -> bool:
    """Whether the tool result ``result`` (AgentDojo's YAML, or any text) contains ``goal``.

    Compared on lowercase letters and digits, on the text as sent and on the strings of its
    YAML (where escapes such as ``\\u20ac`` are decoded).
    """
    wanted = _letters(goal)
    if not wanted:
        return False
    if wanted in _letters(result):
        return True
    try:
        parsed = yaml.safe_load(result)
    except yaml.YAMLError:
        return False
    return wanted in _letters(" ".join(_strings(parsed)))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, Mapping))
    return ""


def decide(
    script: Script,
    messages: Sequence[Mapping[str, Any]],
    offered: frozenset[str] | None,
    unoffered: Unoffered,
) -> Answer:
    """The model's next turn, replayed from the conversation ``messages``.

    Each ``tool`` message answers the next planned call; the first that carries the goal puts
    the injection task's calls ahead of the user's remaining ones. ``offered`` is the set of
    tool names the request offers (``None``: no tool list, every call is allowed).
    """

    def allowed(call: Call) -> bool:
        return unoffered == "call" or offered is None or call.function in offered

    queue = [call for call in script.user_calls if allowed(call)]
    obeyed = False
    answered = 0
    for message in messages:
        if message.get("role") != "tool":
            continue
        answered += 1
        if queue:
            queue.pop(0)
        if (
            not obeyed
            and script.goal is not None
            and carries(_content_text(message.get("content")), script.goal)
        ):
            obeyed = True
            queue = [call for call in script.injection_calls if allowed(call)] + queue
    if queue:
        return Answer(call=queue[0], call_id=f"call_dojo_{answered}")
    answers = [script.user_answer, script.injection_answer if obeyed else ""]
    return Answer(call=None, text="\n".join(text for text in answers if text))


def _offered(body: Mapping[str, Any]) -> frozenset[str] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    names: set[str] = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return frozenset(names)


def _completion(body: Mapping[str, Any], answer: Answer, serial: int) -> dict[str, Any]:
    message: dict[str, Any]
    if answer.call is None:
        message = {"role": "assistant", "content": answer.text}
        finish = "stop"
    else:
        arguments = orjson.dumps(answer.call.arguments).decode()
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": answer.call_id,
                    "type": "function",
                    "function": {"name": answer.call.function, "arguments": arguments},
                }
            ],
        }
        finish = "tool_calls"
    prompt_tokens = len(orjson.dumps(body.get("messages"))) // 4
    return {
        "id": f"chatcmpl-dojo-{serial}",
        "object": "chat.completion",
        "created": 0,
        "model": str(body.get("model") or "dojo"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 10,
            "total_tokens": prompt_tokens + 10,
        },
    }


class ScriptedModel:
    """The server: ``register`` a script, send requests with its id in ``x-dojo-scenario``.

    Runs on its own thread and event loop (``start``/``stop``), so a synchronous harness can
    drive it; ``base_url`` ends in ``/v1``.
    """

    def __init__(self, unoffered: Unoffered = "call") -> None:
        self.unoffered: Unoffered = unoffered
        self._scripts: dict[str, Script] = {}
        self._ids = itertools.count(1)
        self._serial = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.requests = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def register(self, script: Script) -> str:
        """Add ``script``; returns the scenario id its requests must carry."""
        scenario = f"s{next(self._ids)}"
        self._scripts[scenario] = script
        return scenario

    def forget(self, scenario: str) -> None:
        self._scripts.pop(scenario, None)

    def start(self) -> ScriptedModel:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": []})

    async def _chat(self, request: web.Request) -> web.Response:
        self.requests += 1
        scenario = request.headers.get(SCENARIO_HEADER, "")
        script = self._scripts.get(scenario)
        if script is None:
            return _error(400, f"unknown or missing {SCENARIO_HEADER}: {scenario!r}")
        body = orjson.loads(await request.read())
        if body.get("stream"):
            return _error(400, "the scripted model does not stream")
        messages = body.get("messages")
        if not isinstance(messages, list):
            return _error(400, "messages must be a list")
        answer = decide(script, messages, _offered(body), self.unoffered)
        return web.json_response(_completion(body, answer, next(self._serial)))


def _error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "invalid_request_error"}}, status=status
    )
