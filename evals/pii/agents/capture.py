"""Capture what real agent clients send a model, for the agent-prompt regression corpus.

``python -m evals.pii.agents [client ...]`` (from the repository root, in the project's
virtualenv) starts :class:`Recorder`, a fake model upstream on loopback that records every
request body and answers just enough for a client to finish one turn: Chat Completions
(JSON or SSE), the Responses API (SSE: ``response.created`` ... ``response.completed``; a
WebSocket ``GET /v1/responses`` gets 426 so Codex falls back to HTTP at once) and Anthropic
Messages. Then it runs each real client against it (once, or once per model when the
client's prompt depends on the model) with :data:`PROMPT` in an empty working directory,
and writes the bodies it sent to ``corpus/<client>.json``. All of it takes about a minute
(opencode, ten runs, most of it).

The clients: Codex CLI (``codex exec``) and opencode (``opencode run``), npm packages that
are not installed by the project (give their ``bin`` directory with ``--npm-bin`` or
``$AGENT_CAPTURE_NPM_BIN``; the pinned versions are :data:`NPM_CLIENTS`), the OpenAI Agents
SDK, LangChain's ``create_agent`` and AgentScope's ReAct ``Agent`` (from the project's
virtualenv), and the tool lists of common MCP servers (``tools/list`` over stdio; the npm
servers from the same ``bin`` directory, the PyPI ones from ``--mcp-python``, a virtualenv's
``python`` with ``mcp-server-fetch``, ``mcp-server-git`` and ``mcp-server-time``).

Claude Code is deliberately not captured here: its prompts are not open source, so they
are not committed; ``tests/redaction/test_agent_prompts.py`` captures them at test time
from the installed binary.

What is written is exactly what the client sent (the parsed JSON, every string
byte-exact), except that the machine's user name and host name are replaced by
``user``/``host`` if they appear. Every client runs in :data:`WORKDIR`, a fixed path, so a
re-capture differs only where a client changed (or put the date in its prompt).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import getpass
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from aiohttp import web

from evals.pii.agents import CORPUS, PROMPT
from hookgate.wire import synth

REPLY = "There are no files in this directory."
WORKDIR = Path(tempfile.gettempdir()) / "hookgate-agent-capture" / "project"
"""Where every client runs (emptied first): a fixed path, so re-captures stay comparable."""
HOME = WORKDIR.parent / "home"
"""The clients' home directory (emptied first), so no user configuration leaks in."""
MODEL = "gpt-5.1"
"""The model name the SDK clients ask for (the CLIs keep their own defaults)."""
NPM_CLIENTS = {
    "@openai/codex": "0.171.0",
    "opencode-ai": "1.18.33",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-sequential-thinking": "2026.8.31",
}
"""The npm packages the corpus was captured with (``npm install`` them at these versions)."""
PYPI_MCP_SERVERS = {
    "mcp-server-fetch": "2026.10.24",
    "mcp-server-git": "2026.10.19",
    "mcp-server-time": "2026.10.19",
}
"""The PyPI MCP servers the corpus was captured with (``pip install`` them in another venv)."""


@dataclass
class Request:
    """One request the recorder received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Answer = Callable[[str, dict[str, Any]], synth.Reply]
"""Chooses the reply to a model request: ``(api, body) -> reply``."""


def text_reply(api: str, body: dict[str, Any]) -> synth.Reply:
    """The default answer: a short text, no tool call, so the client's turn ends; asked
    for JSON of a schema (structured output), an instance of that schema."""
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = response_format.get("json_schema", {}).get("schema", {})
        return synth.Reply(text=json.dumps(instance(schema)), pieces=2)
    return synth.Reply(text=REPLY, pieces=2)


def instance(schema: Any) -> Any:
    """A small value valid for a JSON schema (its first choices, its required fields)."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return instance(schema[key][0])
    kind = schema.get("type")
    if kind == "object":
        properties: dict[str, Any] = schema.get("properties") or {}
        required: list[str] = schema.get("required") or list(properties)
        return {k: instance(properties.get(k)) for k in required}
    if kind == "array":  # every choice of an array of choices (every tool, to a selector)
        items = schema.get("items")
        choices = items.get("anyOf") if isinstance(items, dict) else None
        return [instance(c) for c in choices] if choices else [instance(items)]
    return {"string": "", "integer": 0, "number": 0, "boolean": False}.get(str(kind))


@dataclass
class Recorder:
    """A fake model upstream on ``127.0.0.1`` (its own event loop, in a daemon thread)."""

    requests: list[Request] = field(default_factory=list)
    answer: Answer = text_reply
    port: int = 0

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (ending in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def host_url(self) -> str:
        """The bare host URL (Anthropic's clients append ``/v1/messages`` themselves)."""
        return f"http://127.0.0.1:{self.port}"

    def model_bodies(self, api: str) -> list[dict[str, Any]]:
        """The JSON bodies of the model requests of ``api`` (``chat``, ``responses``,
        ``messages``) received so far."""
        path = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}.get(
            api, "/v1/messages"
        )
        return [r.json() for r in self.requests if r.method == "POST" and r.path.endswith(path)]

    def start(self) -> Recorder:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _start(self) -> None:
        app = web.Application(client_max_size=2**28)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        recorded = Request(
            request.method,
            request.path,
            {k.lower(): v for k, v in request.headers.items()},
            await request.read(),
        )
        self.requests.append(recorded)
        path = request.path
        if request.method == "GET" and path.endswith("/responses"):
            # Codex tries the Responses API over a WebSocket first: refuse the upgrade
            return web.json_response(
                {"error": {"message": "use HTTP", "type": "invalid_request_error"}}, status=426
            )
        if request.method == "GET" and path.endswith("/models"):
            return web.json_response({"object": "list", "data": []})
        if request.method != "POST":
            return web.json_response({"error": {"message": "not found"}}, status=404)
        try:
            body = recorded.json()
        except ValueError:
            return web.json_response({"error": {"message": "not JSON"}}, status=400)
        model = str(body.get("model", "fake"))
        if path.endswith("/messages/count_tokens"):
            return web.json_response(synth.count_tokens_object(100))
        for api in ("chat/completions", "responses", "messages"):
            if path.endswith(f"/{api}"):
                break
        else:
            return web.json_response({"error": {"message": f"no route {path}"}}, status=404)
        reply = self.answer(api, body)
        if not body.get("stream"):
            if api == "responses":
                return web.json_response(synth.response_object(model, reply))
            if api == "messages":
                return web.json_response(synth.message_object(model, reply))
            return web.json_response(synth.chat_completion(model, reply))
        if api == "responses":
            blocks: Iterator[bytes] = synth.response_stream(model, reply)
        elif api == "messages":
            blocks = synth.message_stream(model, reply)
        else:
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            blocks = synth.chat_stream(model, reply, include_usage=usage)
        out = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await out.prepare(request)
        for block in blocks:
            await out.write(block)
        await out.write_eof()
        return out


# ---------------------------------------------------------------------------------------
# What is written


@dataclass
class Captured:
    """One client's capture: what :func:`write` puts in ``corpus/<name>.json``."""

    name: str
    version: str
    api: str
    bodies: list[dict[str, Any]]

    def document(self) -> dict[str, Any]:
        return {
            "client": self.name,
            "version": self.version,
            "captured": datetime.date.today().isoformat(),
            "api": self.api,
            "bodies": self.bodies,
        }


@dataclass
class ServerTools:
    """One MCP server's ``tools/list``: what :func:`write` puts in ``corpus/<name>.json``."""

    name: str
    version: str
    tools: list[dict[str, Any]]

    def document(self) -> dict[str, Any]:
        return {
            "server": self.name,
            "version": self.version,
            "captured": datetime.date.today().isoformat(),
            "tools": self.tools,
        }


GENERIC_NAMES = frozenset({"root", "user", "localhost", "runner", "ubuntu", "debian", "admin"})
"""User and host names that are not personal (and are words of the prompts: "root")."""


def personal_names() -> dict[str, str]:
    """This machine's user name and host name -> their stand-ins, when they could identify
    someone (names of three characters or fewer, and :data:`GENERIC_NAMES`, are left:
    replacing them would rewrite ordinary words of the prompts)."""
    found = {getpass.getuser(): "user", socket.gethostname().split(".")[0]: "host"}
    return {k: v for k, v in found.items() if len(k) > 3 and k.lower() not in GENERIC_NAMES}


def scrub(value: Any, names: dict[str, str]) -> Any:
    """``value`` with each of ``names`` replaced (as a whole word) in every string."""
    if not names:
        return value
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    if isinstance(value, str):
        return pattern.sub(lambda m: names[m.group(0)], value)
    if isinstance(value, list):
        return [scrub(v, names) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v, names) for k, v in value.items()}
    return value


def write(document: dict[str, Any], name: str) -> Path:
    """Write ``corpus/<name>.json`` (scrubbed of the machine's personal names)."""
    CORPUS.mkdir(exist_ok=True)
    path = CORPUS / f"{name}.json"
    text = json.dumps(scrub(document, personal_names()), indent=1, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def unique(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``bodies`` without repeats (a retried request; the same title request per model),
    compared without their ``model``."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for body in bodies:
        key = json.dumps({k: v for k, v in body.items() if k != "model"}, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(body)
    return out


# ---------------------------------------------------------------------------------------
# The clients


def fresh(path: Path) -> Path:
    """``path`` as an empty directory."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def run(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run a client CLI with only ``env`` (and ``PATH``), stdin closed; raise when it fails."""
    node = shutil.which("node")
    path = os.pathsep.join(
        p for p in (os.path.dirname(argv[0]), node and os.path.dirname(node), "/usr/bin", "/bin")
        if p
    )  # fmt: skip
    done = subprocess.run(
        argv,
        env={"PATH": path, "LANG": "C.UTF-8", **env},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done


def version_of(argv: list[str]) -> str:
    """The last word ``argv --version`` prints (``codex-cli 0.171.0`` -> ``0.171.0``)."""
    done = subprocess.run(
        [*argv, "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.split()[-1]


CODEX_MODELS = (
    None,
    "gpt-5.5",
    "gpt-5.6-luna",
    "gpt-5.6-sol",
    "gpt-6-astra",
    "gpt-6-luna",
    "gpt-6-sol",
    "gpt-6.1-sol",
)
"""Codex's models to capture: its default first (``None``), then one of each other base
prompt and tool set it ships (its models differ in both; these cover every variant of
0.171.0's bundled models)."""


def capture_codex(recorder: Recorder, npm_bin: Path) -> Captured:
    """``codex exec`` once per :data:`CODEX_MODELS`, the built-in OpenAI provider pointed
    at the recorder; update check, analytics and plugins off (``$CODEX_HOME/config.toml``)."""
    codex = str(npm_bin / "codex")
    for model in CODEX_MODELS:
        home = fresh(HOME)
        codex_home = home / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            "check_for_update_on_startup = false\n"
            f'openai_base_url = "{recorder.base_url}"\n'
            "[analytics]\nenabled = false\n"
            "[features]\nplugins = false\n"
        )
        env = {"HOME": str(home), "CODEX_HOME": str(codex_home), "CODEX_API_KEY": "sk-capture"}
        chosen = ["-m", model] if model else []
        run([codex, "exec", *chosen, "--skip-git-repo-check", PROMPT], env, fresh(WORKDIR))
    bodies = recorder.model_bodies("responses")
    return Captured("codex", version_of([codex]), "responses", bodies)


OPENCODE_MODELS = (
    "gpt-5.1",
    "gpt-6",
    "gpt-5.1-codex",
    "gpt-4.1",
    "claude-sonnet-4-5",
    "gemini-2.5-pro",
    "kimi-k2",
    "trinity-large",
    "muse-spark",
    "qwen3-coder",
)
"""Model ids for opencode: it picks its system prompt (and some tools) by the model id's
family (GPT, GPT-6, Codex, GPT-4/o-series, Claude, Gemini, Kimi, Trinity, Muse, the
default), so each family's prompt is captured, all over Chat Completions (a custom
``@ai-sdk/openai-compatible`` provider)."""


def capture_opencode(recorder: Recorder, npm_bin: Path) -> Captured:
    """``opencode run`` with its default agent (``build``), once per :data:`OPENCODE_MODELS`."""
    opencode = str(npm_bin / "opencode")
    bodies: list[dict[str, Any]] = []
    for model in OPENCODE_MODELS:
        home = fresh(HOME)
        config = {
            "$schema": "https://opencode.ai/config.json",
            "provider": {
                "capture": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Capture",
                    "options": {"baseURL": recorder.base_url, "apiKey": "sk-capture"},
                    "models": {model: {"name": model, "tool_call": True}},
                }
            },
            "model": f"capture/{model}",
            "autoupdate": False,
            "share": "disabled",
        }
        (home / "opencode.json").write_text(json.dumps(config))
        env = {
            "HOME": str(home),
            "npm_config_offline": "true",
            "OPENCODE_CONFIG": str(home / "opencode.json"),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        }
        start = len(recorder.requests)
        run([opencode, "run", PROMPT], env, fresh(WORKDIR))
        deadline = time.monotonic() + 10  # the title request may still be in flight
        while time.monotonic() < deadline and len(recorder.requests) - start < 2:
            time.sleep(0.1)
    bodies = unique(recorder.model_bodies("chat"))
    return Captured("opencode", version_of([opencode]), "chat", bodies)


def handoff_then_text(api: str, body: dict[str, Any]) -> synth.Reply:
    """Call the first ``transfer_to_*`` tool offered (once), else answer with text: the
    second agent's request is captured too."""
    items = body.get("input") if api == "responses" else body.get("messages")
    if isinstance(items, list) and any(
        isinstance(i, dict) and i.get("type") == "function_call_output" for i in items
    ):
        return text_reply(api, body)
    for tool in body.get("tools") or []:
        name = tool.get("name") or tool.get("function", {}).get("name") or ""
        if name.startswith("transfer_to_"):
            return synth.Reply(tool_calls=[synth.ToolCall("call_handoff_1", name, "{}")])
    return text_reply(api, body)


def capture_openai_agents(recorder: Recorder) -> Captured:
    """The OpenAI Agents SDK on the Responses API: a triage agent (instructions prefixed
    with ``RECOMMENDED_PROMPT_PREFIX``, a function tool, a handoff), then the agent it hands
    off to."""
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
    from agents.extensions.handoff_prompt import RECOMMENDED_PROMPT_PREFIX
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    @function_tool
    def list_files(directory: str) -> str:
        """List the files in a directory.

        Args:
            directory: The path of the directory to list.
        """
        return "\n".join(sorted(os.listdir(directory)))

    async def main() -> None:
        async with AsyncOpenAI(base_url=recorder.base_url, api_key="sk-capture") as client:
            model = OpenAIResponsesModel(model=MODEL, openai_client=client)
            specialist = Agent(
                name="File specialist",
                handoff_description="Answers questions about files and directories.",
                instructions=f"{RECOMMENDED_PROMPT_PREFIX}\nYou answer questions about files.",
                tools=[list_files],
                model=model,
            )
            triage = Agent(
                name="Triage agent",
                instructions=(
                    f"{RECOMMENDED_PROMPT_PREFIX}\n"
                    "You route each request to the agent best suited to it."
                ),
                tools=[list_files],
                handoffs=[specialist],
                model=model,
            )
            await Runner.run(triage, PROMPT)

    recorder.answer = handoff_then_text
    try:
        asyncio.run(main())
    finally:
        recorder.answer = text_reply
    bodies = recorder.model_bodies("responses")
    return Captured("openai-agents", metadata.version("openai-agents"), "responses", bodies)


def capture_langchain(recorder: Recorder) -> Captured:
    """LangChain's ``create_agent`` with a tool and the built-in middleware that add
    prompts or tools: tool selection (its selection prompt), summarization (its summary
    prompt: the history given exceeds its trigger), the to-do list, file search and the
    shell tool."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import (
        AgentMiddleware,
        FilesystemFileSearchMiddleware,
        LLMToolSelectorMiddleware,
        ShellToolMiddleware,
        SummarizationMiddleware,
        TodoListMiddleware,
    )
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def list_files(directory: str) -> str:
        """List the files in a directory."""
        return "\n".join(sorted(os.listdir(directory)))

    model = ChatOpenAI(
        model=MODEL, base_url=recorder.base_url, api_key=lambda: "sk-capture", max_retries=0
    )
    workdir = fresh(WORKDIR)
    middleware: list[AgentMiddleware[Any, Any, Any]] = [
        LLMToolSelectorMiddleware(max_tools=10),
        SummarizationMiddleware(model, trigger=("messages", 4), keep=("messages", 2)),
        TodoListMiddleware(),
        FilesystemFileSearchMiddleware(root_path=str(workdir)),
        ShellToolMiddleware(workspace_root=workdir),
    ]
    agent = create_agent(
        model,
        tools=[list_files],
        system_prompt="You are a helpful assistant for working with files.",
        middleware=middleware,
    )
    history: list[Any] = [
        HumanMessage("What is this project?"),
        AIMessage("It is a small project with a few files."),
        HumanMessage("Which language is it written in?"),
        AIMessage("It is written in Python."),
        HumanMessage(PROMPT),
    ]
    agent.invoke({"messages": history})
    bodies = unique(recorder.model_bodies("chat"))
    return Captured("langchain", metadata.version("langchain"), "chat", bodies)


def capture_agentscope(recorder: Recorder) -> Captured:
    """AgentScope's ReAct ``Agent`` with a toolkit of its built-in tools (shell, files,
    search, tasks, asking the user), a function tool, a skill and a tool group (so its
    skill instructions and ``ResetTools`` meta tool are sent)."""
    from agentscope.agent import Agent, ReActConfig
    from agentscope.credential import OpenAICredential
    from agentscope.message import UserMsg
    from agentscope.model import OpenAIChatModel
    from agentscope.tool import (
        AskUser,
        Bash,
        Edit,
        FunctionTool,
        Glob,
        Grep,
        Read,
        TaskCreate,
        TaskGet,
        TaskList,
        TaskUpdate,
        ToolGroup,
        Toolkit,
        Write,
    )

    workdir = fresh(WORKDIR)
    skill = workdir.parent / "skills" / "tidy-files"
    fresh(skill)
    (skill / "SKILL.md").write_text(
        "---\nname: tidy-files\ndescription: Sort the files of a directory into folders.\n"
        "---\n\nMove each file into a folder named after its extension.\n"
    )

    def list_files(directory: str) -> str:
        """List the files in a directory.

        Args:
            directory (`str`):
                The path of the directory to list.
        """
        return "\n".join(sorted(os.listdir(directory)))

    async def main() -> None:
        model = OpenAIChatModel(
            credential=OpenAICredential(api_key="sk-capture", base_url=recorder.base_url),
            model=MODEL,
            stream=True,
            max_retries=0,
        )
        toolkit = Toolkit(
            tools=[
                Bash(cwd=workdir), Read(), Write(), Edit(), Glob(), Grep(), AskUser(),
                TaskCreate(), TaskGet(), TaskList(), TaskUpdate(),
                FunctionTool(list_files),  # type: ignore[arg-type]
            ],
            skills_or_loaders=[str(skill)],
            tool_groups=[
                ToolGroup(
                    name="notes",
                    description="Tools for keeping notes about the project.",
                    tools=[FunctionTool(list_files)],  # type: ignore[arg-type]
                )
            ],
        )  # fmt: skip
        agent = Agent(
            name="assistant",
            system_prompt="You are a helpful assistant for working with files.",
            model=model,
            toolkit=toolkit,
            react_config=ReActConfig(max_iters=3),
        )
        try:
            await agent.reply(UserMsg(name="user", content=PROMPT))
        finally:
            await model.client.close()

    asyncio.run(main())
    bodies = recorder.model_bodies("chat")
    return Captured("agentscope", metadata.version("agentscope"), "chat", bodies)


MCP_SERVERS: dict[str, tuple[str, list[str]]] = {
    "mcp-server-filesystem": ("@modelcontextprotocol/server-filesystem", ["{workdir}"]),
    "mcp-server-memory": ("@modelcontextprotocol/server-memory", []),
    "mcp-server-everything": ("@modelcontextprotocol/server-everything", ["stdio"]),
    "mcp-server-sequential-thinking": ("@modelcontextprotocol/server-sequential-thinking", []),
    "mcp-server-fetch": ("mcp_server_fetch", []),
    "mcp-server-git": ("mcp_server_git", ["--repository", "{workdir}"]),
    "mcp-server-time": ("mcp_server_time", ["--local-timezone", "UTC"]),
}
"""Corpus name -> (npm package, or the Python module of a PyPI server; its arguments)."""


def capture_mcp(name: str, npm_bin: Path | None, python: Path | None) -> ServerTools:
    """The ``tools/list`` of one of :data:`MCP_SERVERS`, over stdio with the ``mcp``
    client: each tool's ``name``, ``description`` and ``inputSchema`` (nothing else)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    package, arguments = MCP_SERVERS[name]
    workdir = fresh(WORKDIR)
    if name == "mcp-server-git":
        subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    args = [a.format(workdir=workdir) for a in arguments]
    if package.startswith("@"):
        if npm_bin is None:
            raise RuntimeError("give --npm-bin for the npm MCP servers")
        command, version = str(npm_bin / name), NPM_CLIENTS[package]
    else:
        if python is None:
            raise RuntimeError("give --mcp-python for the PyPI MCP servers")
        command, args = str(python), ["-m", package, *args]
        script = f"from importlib import metadata; print(metadata.version({name!r}))"
        version = subprocess.run(
            [str(python), "-c", script], capture_output=True, text=True, check=True
        ).stdout.strip()
    home = fresh(HOME)
    parameters = StdioServerParameters(
        command=command, args=args, env={"HOME": str(home), "PATH": os.environ["PATH"]},
        cwd=str(workdir),
    )  # fmt: skip

    async def main() -> list[dict[str, Any]]:
        async with (
            stdio_client(parameters) as (read, write_stream),
            ClientSession(read, write_stream) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            return [
                {"name": t.name, "description": t.description, "inputSchema": t.inputSchema}
                for t in listed.tools
            ]

    return ServerTools(name, version, asyncio.run(main()))


CLIENTS = ("codex", "opencode", "openai-agents", "langchain", "agentscope")


def capture_client(name: str, npm_bin: Path | None) -> Captured:
    """Run client ``name`` against a fresh :class:`Recorder`."""
    recorder = Recorder().start()
    try:
        if name in ("codex", "opencode"):
            if npm_bin is None:
                raise RuntimeError(f"give --npm-bin for {name}")
            if name == "codex":
                return capture_codex(recorder, npm_bin)
            return capture_opencode(recorder, npm_bin)
        if name == "openai-agents":
            return capture_openai_agents(recorder)
        if name == "langchain":
            return capture_langchain(recorder)
        return capture_agentscope(recorder)
    finally:
        recorder.stop()


def main(argv: list[str] | None = None) -> int:
    """Capture the clients and servers named (all by default); report and write each."""
    parser = argparse.ArgumentParser(prog="python -m evals.pii.agents", description=__doc__)
    parser.add_argument("names", nargs="*", help=f"of {[*CLIENTS, *MCP_SERVERS]}")
    parser.add_argument("--npm-bin", type=Path, default=os.environ.get("AGENT_CAPTURE_NPM_BIN"))
    parser.add_argument(
        "--mcp-python", type=Path, default=os.environ.get("AGENT_CAPTURE_MCP_PYTHON")
    )
    options = parser.parse_args(argv)
    names = options.names or [*CLIENTS, *MCP_SERVERS]
    failed = 0
    for name in names:
        start = time.monotonic()
        try:
            document = (
                capture_client(name, options.npm_bin).document()
                if name in CLIENTS
                else capture_mcp(name, options.npm_bin, options.mcp_python).document()
            )
        except Exception as error:  # report and go on with the others
            failed += 1
            print(f"{name}: FAILED: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        path = write(document, name)
        count = len(document.get("bodies", document.get("tools", [])))
        print(
            f"{name} {document['version']}: {count} in {path.name}"
            f" ({time.monotonic() - start:.1f}s)",
            file=sys.stderr,
        )
    return 1 if failed else 0
