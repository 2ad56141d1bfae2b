"""Gemini CLI itself (``gemini -p``, 0.61) offline against a scripted Gemini upstream on
loopback: straight (to pin what it sends), then through hookgate with ``pii: {}`` to that
Gemini upstream (which gets every request as it gets it straight, but for the
placeholders) and, by translation, to an OpenAI chat upstream.

A tool round trip: the prompt carries an e-mail address; the scripted model asks for
``run_shell_command`` to ``echo`` it into a file (through hookgate, naming the address's
placeholder, the only form the upstream ever sees); the CLI runs the command with the
real address (the file holds it); the command's output goes back (redacted upstream);
the model's answer quoting the placeholder reaches the user with the address, streamed
as it is written. And a web search: the CLI's ``google_web_search`` calls the model with
Google Search, which hookgate passes to a Gemini model, and reads the answer's grounding.
What the CLI sends is written down in ``docs/notes/gemini-cli-wire.md``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from hookgate.config.loader import load_text
from hookgate.redaction.placeholders import placeholder
from hookgate.store.sqlite import SQLiteStore
from hookgate.wire import synth
from tests.conftest import ProxyFactory
from tests.fakes import FakeUpstream, LoopThread, Status
from tests.gemini_wire import response as gemini_response
from tests.services import client_binary

EMAIL = "jane.doe@example.com"
MODEL = "gemini-2.5-flash"
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "ide": {"enabled": False},
}
"""Gemini CLI's settings for an offline run: API-key auth, no usage statistics, no
telemetry, no update check, no IDE connection."""


def run_gemini(
    base_url: str, tmp_path: Path, prompt: str, *, status: int = 0
) -> list[tuple[float, dict[str, Any]]]:
    """``gemini -p PROMPT --approval-mode yolo -o stream-json`` against ``base_url`` (the
    API root, as ``GOOGLE_GEMINI_BASE_URL`` takes it), in ``tmp_path/work`` with a home of
    its own; its events with the time each arrived (seconds from the start). It must exit
    with ``status`` (0: success; else any failure)."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    work.mkdir(exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GEMINI_API_KEY": "client-key-not-for-google",
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "NO_PROXY": "127.0.0.1,localhost",
        "NO_COLOR": "1",
    }
    command = [client_binary("gemini"), "-p", prompt, "-m", MODEL, "--approval-mode", "yolo",
               "--skip-trust", "-o", "stream-json"]  # fmt: skip
    started = time.perf_counter()
    events: list[tuple[float, dict[str, Any]]] = []
    with subprocess.Popen(command, env=env, cwd=work, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:  # fmt: skip
        assert process.stdout is not None and process.stderr is not None
        for line in process.stdout:
            if line.startswith("{"):
                events.append((time.perf_counter() - started, json.loads(line)))
        stderr = process.stderr.read()
        code = process.wait(timeout=120)
        assert (code != 0) if status else (code == 0), (code, events, stderr)
    return events


def answer_of(events: list[tuple[float, dict[str, Any]]]) -> str:
    """What the user reads: the assistant's text of the last turn, its deltas joined."""
    texts = [e for _, e in events if e.get("type") == "message" and e.get("role") == "assistant"]
    assert texts, events
    return "".join(str(e.get("content", "")) for e in texts)


def shell(address: str) -> synth.ToolCall:
    arguments = {"command": f"echo '{address}' | tee address.txt",
                 "description": "Write the address to a file"}  # fmt: skip
    return synth.ToolCall("unused", "run_shell_command", json.dumps(arguments))


def gemini_calls(upstream: FakeUpstream) -> list[dict[str, Any]]:
    return [r.json() for r in upstream.requests if r.path.startswith("/v1beta/models/")]


@pytest.mark.slow
def test_gemini_cli_straight_at_the_upstream(upstream: FakeUpstream, tmp_path: Path) -> None:
    """What Gemini CLI sends a Gemini API (and what hookgate must take): every call a
    ``streamGenerateContent?alt=sse`` with the key in ``x-goog-api-key``, function
    declarations with ``parametersJsonSchema``, ``topK`` and a thinking budget; the
    function call comes back with an id of the CLI's and a signature placeholder."""
    upstream.stream_delay = 0.3
    upstream.push(synth.Reply(tool_calls=[shell(EMAIL)]),
                  synth.Reply(f"Done: {EMAIL} is in address.txt.", pieces=4))  # fmt: skip
    events = run_gemini(upstream.server.url, tmp_path, f"Write {EMAIL} into address.txt")
    assert answer_of(events) == f"Done: {EMAIL} is in address.txt."
    assert (tmp_path / "work" / "address.txt").read_text() == f"{EMAIL}\n"
    requests = [r for r in upstream.requests if r.path.startswith("/v1beta/")]
    assert [(r.path, r.query) for r in requests] == [
        (f"/v1beta/models/{MODEL}:streamGenerateContent", "alt=sse")
    ] * 2
    assert requests[0].headers["x-goog-api-key"] == "client-key-not-for-google"
    first, second = (r.json() for r in requests)
    assert set(first) == {"contents", "systemInstruction", "tools", "generationConfig"}
    assert set(first["generationConfig"]) == {"temperature", "topP", "topK", "thinkingConfig"}
    declarations = first["tools"][0]["functionDeclarations"]
    assert all(set(d) == {"name", "description", "parametersJsonSchema"} for d in declarations)
    call_turn, result_turn = second["contents"][-2:]
    (call_part,) = call_turn["parts"]
    assert call_part["functionCall"]["id"].startswith("run_shell_command_")
    assert call_part["thoughtSignature"] == "skip_thought_signature_validator"
    (result,) = result_turn["parts"]
    assert result["functionResponse"]["id"] == call_part["functionCall"]["id"]
    assert EMAIL in result["functionResponse"]["response"]["output"]


def pii_config(store: Path, providers: str, target: str) -> str:
    return (
        f"providers:\n{providers}"
        f'models:\n  "*": [{target}]\n'
        f"store: 'sqlite:///{store}'\n"
        "policies:\n  - pii: {}\n"
    )


def stand_in(loop_thread: LoopThread, store: Path) -> str:
    """The placeholder ``pii: {}`` gives the address, keyed by the store's secret."""
    secret = loop_thread.run(SQLiteStore(f"sqlite:///{store}").secret("pii"))
    return placeholder(secret, "EMAIL_ADDRESS", EMAIL)


@pytest.mark.slow
def test_gemini_cli_through_hookgate_to_a_gemini_upstream(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread, tmp_path: Path
) -> None:
    store = tmp_path / "hookgate.db"
    masked = stand_in(loop_thread, store)
    providers = (
        f"  google: {{type: gemini, base_url: '{upstream.gemini_base_url}', api_key: 'AIza-up'}}\n"
    )
    url = make_proxy(loaded=load_text(pii_config(store, providers, "{provider: google}")))
    upstream.stream_delay = 0.3
    upstream.push(synth.Reply(tool_calls=[shell(masked)]),
                  synth.Reply(f"Done: {masked} is in address.txt.", pieces=6))  # fmt: skip

    events = run_gemini(url.removesuffix("/v1"), tmp_path, f"Write {EMAIL} into address.txt")

    assert answer_of(events) == f"Done: {EMAIL} is in address.txt."  # the user reads it
    assert (tmp_path / "work" / "address.txt").read_text() == f"{EMAIL}\n"  # the tool got it
    calls = [r for r in upstream.requests if r.path.startswith("/v1beta/")]
    assert len(calls) == 2
    for call in calls:
        assert EMAIL.encode() not in call.body  # only its placeholder went upstream
        assert call.headers["x-goog-api-key"] == "AIza-up"
        assert call.query == "alt=sse"
    result_turn = calls[1].json()["contents"][-1]
    assert masked in result_turn["parts"][0]["functionResponse"]["response"]["output"]
    thinking = calls[0].json()["generationConfig"]["thinkingConfig"]
    assert thinking == {"thinkingBudget": 8192, "includeThoughts": True}  # as the CLI asked
    _assert_streamed(events)


@pytest.mark.slow
def test_gemini_cli_through_hookgate_to_an_openai_chat_upstream(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread, tmp_path: Path
) -> None:
    store = tmp_path / "hookgate.db"
    masked = stand_in(loop_thread, store)
    providers = f"  gpt: {{base_url: '{upstream.base_url}', api_key: 'sk-up'}}\n"
    url = make_proxy(
        loaded=load_text(pii_config(store, providers, "{provider: gpt, model: gpt-4o}"))
    )
    upstream.stream_delay = 0.3
    upstream.push(synth.Reply(tool_calls=[shell(masked)]),
                  synth.Reply(f"Done: {masked} is in address.txt.", pieces=6))  # fmt: skip

    events = run_gemini(url.removesuffix("/v1"), tmp_path, f"Write {EMAIL} into address.txt")

    assert answer_of(events) == f"Done: {EMAIL} is in address.txt."
    assert (tmp_path / "work" / "address.txt").read_text() == f"{EMAIL}\n"
    calls = [r for r in upstream.requests if r.path == "/v1/chat/completions"]
    assert len(calls) == 2
    for call in calls:
        assert EMAIL.encode() not in call.body
        body = call.json()
        assert body["model"] == "gpt-4o" and body["stream"] is True
        assert "reasoning_effort" not in body  # GPT-4o does not reason: no budget asked
        assert {t["function"]["name"] for t in body["tools"]} >= {"run_shell_command"}
    tool_message = calls[1].json()["messages"][-1]
    assert tool_message["role"] == "tool" and masked in tool_message["content"]
    _assert_streamed(events)


def _assert_streamed(events: list[tuple[float, dict[str, Any]]]) -> None:
    """The answer reached the user in pieces, spread over the upstream's writing (0.3 s
    between its events), not all at once at the end."""
    deltas = [t for t, e in events if e.get("type") == "message" and e.get("role") == "assistant"]
    assert len(deltas) >= 3, events
    assert deltas[-1] - deltas[0] > 0.6


@pytest.mark.slow
def test_gemini_cli_stops_at_a_spent_budget_instead_of_retrying(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """hookgate's 429 for a budget no wait can refill says so in the words Gemini CLI reads
    (``limit: 0``): it reports the error and exits, where a bare 429 keeps it retrying
    with backoff for minutes."""
    config = (
        f"providers:\n  google: {{type: gemini, base_url: '{upstream.gemini_base_url}'}}\n"
        f'models:\n  "*": [{{provider: google}}]\n'
        f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\n"
        "pricing:\n  gemini-2.5-flash: {input: 1000000, output: 1000000}\n"
        "policies:\n  - budget: {limits: [{scope: key, usd: 0.01}]}\n"
    )
    url = make_proxy(loaded=load_text(config))
    started = time.perf_counter()
    events = run_gemini(url.removesuffix("/v1"), tmp_path, "hi", status=1)
    assert time.perf_counter() - started < 30
    assert not upstream.requests
    results = [e for _, e in events if e.get("type") == "result"]
    assert results and "Budget exceeded" in json.dumps(results[-1])


def _with_values(body: bytes, masked: str) -> Any:
    """An upstream body with the placeholder read as the value it stands for, and what
    differs between two runs of the CLI made alike: its call ids (``{name}_{ms}_{n}``, a
    clock reading) and the shell's process group."""
    text = body.decode().replace(masked, EMAIL)
    text = re.sub(r"run_shell_command_\d+_(\d+)", r"run_shell_command_N_\1", text)
    return json.loads(re.sub(r"Process Group PGID: \d+", "Process Group PGID: N", text))


def turn(address: str) -> synth.Reply:
    """The model's first turn: a thought, a sentence and the shell call, signed."""
    thought = "The user wants the address in a file."
    return synth.Reply("I will write it.", tool_calls=[shell(address)], thinking=thought,
                       signature="c2ln")  # fmt: skip


@pytest.mark.slow
def test_gemini_cli_a_gemini_upstream_gets_what_the_cli_sent(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread, tmp_path: Path
) -> None:
    """The same tool round trip straight at a Gemini upstream, then through hookgate with
    ``pii`` to it: every request the upstream gets is the CLI's, field for field
    (``topK``, the thinking budget, ``systemInstruction.role``, the model's text and its
    signed call in the history), but for the address, which went as its placeholder."""
    store = tmp_path / "hookgate.db"
    masked = stand_in(loop_thread, store)
    prompt = f"Write {EMAIL} into address.txt"
    upstream.push(turn(EMAIL), synth.Reply(f"Done: {EMAIL}."))
    run_gemini(upstream.server.url, tmp_path, prompt)
    straight = [_with_values(r.body, masked) for r in upstream.requests
                if r.path.startswith("/v1beta/models/")]  # fmt: skip
    (tmp_path / "work" / "address.txt").unlink()
    upstream.requests.clear()

    providers = (
        f"  google: {{type: gemini, base_url: '{upstream.gemini_base_url}', api_key: 'AIza-up'}}\n"
    )
    url = make_proxy(loaded=load_text(pii_config(store, providers, "{provider: google}")))
    upstream.push(turn(masked), synth.Reply(f"Done: {masked}."))
    run_gemini(url.removesuffix("/v1"), tmp_path, prompt)
    through = [r for r in upstream.requests if r.path.startswith("/v1beta/models/")]

    assert len(through) == len(straight) == 2
    for call in through:
        assert EMAIL.encode() not in call.body
    for i, (call, sent) in enumerate(zip(through, straight, strict=True)):
        assert _with_values(call.body, masked) == sent, i


def web_search(query: str) -> synth.ToolCall:
    return synth.ToolCall("unused", "google_web_search", json.dumps({"query": query}))


@pytest.mark.slow
def test_gemini_cli_searches_the_web_through_hookgate(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread, tmp_path: Path
) -> None:
    """The model asks for ``google_web_search`` (its query naming the address's
    placeholder); the CLI makes its own ``generateContent`` call with Google Search, which
    reaches the Gemini upstream with the tool (the query as the placeholder); the answer's
    ``groundingMetadata`` comes back to the CLI, which lists its sources and cites them
    in the tool's result (the mark where the cited text ends, though the address is
    shorter than its placeholder), with the real address; the model reads that, redacted."""
    store = tmp_path / "hookgate.db"
    masked = stand_in(loop_thread, store)
    providers = (
        f"  google: {{type: gemini, base_url: '{upstream.gemini_base_url}', api_key: 'AIza-up'}}\n"
    )
    url = make_proxy(loaded=load_text(pii_config(store, providers, "{provider: google}")))
    cited = f"{masked} won the regional chess open."
    grounding = {"groundingMetadata": {
        "webSearchQueries": [f"{masked} news"],
        "groundingChunks": [{"web": {"uri": "https://news.example/chess", "title": "Chess News"}}],
        "groundingSupports": [{"segment": {"endIndex": len(cited.encode()), "text": cited},
                               "groundingChunkIndices": [0]}],
    }}  # fmt: skip
    found = synth.Reply(f"{cited} More soon.")
    upstream.push(
        synth.Reply(tool_calls=[web_search(f"{masked} news")]),
        Status(200, gemini_response("gemini-3-flash-preview", found, **grounding)),
        synth.Reply(f"{masked} won a chess open [1]."),
    )

    events = run_gemini(url.removesuffix("/v1"), tmp_path, f"Search the web for news of {EMAIL}")

    assert answer_of(events) == f"{EMAIL} won a chess open [1]."
    calls = [r for r in upstream.requests if r.path.startswith("/v1beta/models/")]
    assert len(calls) == 3
    search = calls[1]
    assert search.path.endswith(":generateContent")  # the CLI's own call, not streamed
    assert search.json()["tools"] == [{"googleSearch": {}}]
    assert search.json()["contents"] == [{"role": "user", "parts": [{"text": f"{masked} news"}]}]
    for call in calls:
        assert EMAIL.encode() not in call.body
    (result,) = calls[2].json()["contents"][-1]["parts"]
    output = result["functionResponse"]["response"]["output"]
    assert "Sources:\n[1] Chess News (https://news.example/chess)" in output
    assert f"{masked} won the regional chess open.[1] More soon." in output  # cited in place
