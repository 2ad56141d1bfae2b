"""Real agents' built-in instructions and tool definitions reach the model unchanged.

``pii`` must not take the ordinary words of a coding agent's system prompt or tool
descriptions ("# Personality", "Skill roots", "Use Write") for people's names. Every
request body of :mod:`evals.pii.agents` — captured from the real clients (Codex CLI,
opencode, the OpenAI Agents SDK, LangChain's ``create_agent`` with its middleware,
AgentScope's ReAct agent) and the tool lists of common MCP servers — is sent through the
real proxy with ``pii: {}`` to the fake upstream, which must receive every string of it
unchanged: not one placeholder. A failure lists each hit, the 60 characters around the
placeholder and the original word behind it.

Claude Code's prompts are not open source, so they are not in the corpus: the installed
binary (``make claude-code``) is run twice on the same prompt, straight to a fake upstream
(what it sends) and through the proxy (what the model gets), and its system prompt and
tool descriptions must arrive without a placeholder.

A positive control keeps the test honest: a customer's name and e-mail address written
into a captured Codex or opencode request are replaced, and nothing else is.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from evals.pii import agents
from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, TEST_STORE, ProxyFactory
from tests.fakes import FakeUpstream
from tests.services import claude_code

PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*_[A-Z2-7]{6,12}>")
PATHS = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}
CLIENTS = {c.name: c for c in agents.clients()}
CONTEXT = 30
"""Characters of context each side of a placeholder in a failure's snippet."""


@dataclass
class Change:
    """A string of a request body the upstream received changed."""

    where: str
    sent: str
    received: str

    def hits(self, known: dict[str, str]) -> list[tuple[str, str]]:
        """``(snippet, original)`` for each placeholder that was not in the sent text: the
        60 characters around it, and what it replaced (from this text's alignment, else
        from ``known``, the values of the request's other texts; ``?`` when neither
        tells)."""
        values = {**known, **dict(aligned(self.sent, self.received) or [])}
        return [
            (
                self.received[max(0, m.start() - CONTEXT) : m.end() + CONTEXT].replace("\n", "⏎"),
                values.get(m.group(0), "?"),
            )
            for m in PLACEHOLDER.finditer(self.received)
            if m.group(0) not in self.sent
        ]


def aligned(original: str, redacted: str) -> list[tuple[str, str]] | None:
    """``(placeholder, original substring)`` pairs: ``redacted`` as a regex (each new
    placeholder a group, a repeated one a back-reference) matched against ``original``."""
    for group in (".+?", ".+"):
        names: dict[str, str] = {}
        parts: list[str] = []
        position = 0
        for match in PLACEHOLDER.finditer(redacted):
            parts.append(re.escape(redacted[position : match.start()]))
            token = match.group(0)
            if token in names:
                parts.append(f"(?P={names[token]})")
            else:
                names[token] = f"g{len(names)}"
                parts.append(f"(?P<{names[token]}>{group})")
            position = match.end()
        parts.append(re.escape(redacted[position:]))
        found = re.fullmatch("".join(parts), original, flags=re.S)
        if found is not None:
            return [(token, found.group(name)) for token, name in names.items()]
    return None


def changes(sent: Any, received: Any, where: str = "body") -> list[Change]:
    """Every string of ``sent`` that is not the same string at the same place in
    ``received`` (a place missing from ``received`` counts as changed)."""
    if isinstance(sent, str):
        return [] if sent == received else [Change(where, sent, str(received))]
    out: list[Change] = []
    if isinstance(sent, list):
        items = received if isinstance(received, list) else []
        for i, value in enumerate(sent):
            out += changes(value, items[i] if i < len(items) else None, f"{where}[{i}]")
    elif isinstance(sent, dict):
        fields = received if isinstance(received, dict) else {}
        for key, value in sent.items():
            out += changes(value, fields.get(key), f"{where}.{key}")
    return out


def report(name: str, found: list[Change]) -> str:
    """A failure message: counts, the distinct words replaced, then every hit."""
    known = {k: v for c in found for k, v in aligned(c.sent, c.received) or []}
    hits = [(change.where, *hit) for change in found for hit in change.hits(known)]
    words = Counter(original for _, _, original in hits)
    lines = [
        f"{name}: {len(hits)} placeholders in {len(found)} changed strings; replaced "
        f"({len(words)} distinct): "
        + ", ".join(f"{w!r} x{n}" if n > 1 else repr(w) for w, n in sorted(words.items())),
    ]
    lines += [f"  {where}: …{snippet}… ({original!r})" for where, snippet, original in hits]
    lines += [
        f"  {c.where}: changed without a placeholder: {c.sent[:60]!r} -> {c.received[:60]!r}"
        for c in found
        if not PLACEHOLDER.search(c.received)
    ]
    return "\n".join(lines)


def pii_proxy(make_proxy: ProxyFactory, upstream: FakeUpstream, api: str) -> str:
    """A proxy with ``pii: {}`` in front of ``upstream``: an OpenAI provider, or for
    Messages an Anthropic one (so the body goes up as it came, not converted)."""
    if api != "messages":
        return make_proxy("policies:\n  - pii: {}\n")
    return make_proxy(
        loaded=load_text(
            "providers:\n"
            f"  claude: {{type: anthropic, base_url: '{upstream.base_url}', api_key: 'sk-ant-k'}}\n"
            'models:\n  "*": [{provider: claude}]\n'
            f"store: 'sqlite:///{TEST_STORE}'\n"
            "policies:\n  - pii: {}\n"
        )
    )


def relay(url: str, upstream: FakeUpstream, api: str, body: dict[str, Any]) -> dict[str, Any]:
    """Send ``body`` to the proxy at ``url`` as the client did; the body the upstream got."""
    upstream.push(synth.Reply(text="Done."))
    headers = {"authorization": f"Bearer {CLIENT_KEY}", "content-type": "application/json"}
    if api == "messages":
        headers |= {"x-api-key": CLIENT_KEY, "anthropic-version": "2023-06-01"}
    before = len(upstream.requests)
    answer = httpx.post(url + PATHS[api], content=orjson.dumps(body), headers=headers, timeout=120)
    assert answer.status_code == 200, answer.text
    assert len(upstream.requests) == before + 1
    received: dict[str, Any] = upstream.last.json()
    return received


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_agent_prompts_reach_the_model_unchanged(
    make_proxy: ProxyFactory, upstream: FakeUpstream, name: str
) -> None:
    client = CLIENTS[name]
    assert client.bodies and agents.texts()[name]  # the corpus is there and has prose
    url = pii_proxy(make_proxy, upstream, client.api)
    found: list[Change] = []
    for i, body in enumerate(client.bodies):
        found += changes(body, relay(url, upstream, client.api, body), f"bodies[{i}]")
    assert not found, report(f"{name} {client.version}", found)


# ---------------------------------------------------------------------------------------
# Claude Code, captured at test time (its prompts are not committed)


def run_claude(binary: str, base_url: str, home: Path) -> None:
    """``claude -p`` on :data:`agents.PROMPT` against ``base_url``, offline, in ``home``
    (emptied first: both runs see the same directory, so their prompts are alike)."""
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-client-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    done = subprocess.run(
        [binary, "-p", agents.PROMPT, "--output-format", "json", "--model", "claude-sonnet-4-6",
         "--max-turns", "2"],
        env=env, cwd=home, capture_output=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)


def claude_version(binary: str) -> str:
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.split(" ")[0] if done.returncode == 0 else "?"


def messages_bodies(fake: FakeUpstream) -> list[dict[str, Any]]:
    """The Messages requests ``fake`` received (not ``count_tokens``), in order."""
    return [r.json() for r in fake.requests if r.path == "/v1/messages"]


def test_claude_code_prompts_reach_the_model_unchanged(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, tmp_path: Path
) -> None:
    binary = claude_code()  # skips locally when missing, fails under CI=true
    for fake in (backup, upstream):
        fake.push(*[synth.Reply(text="There are no files in this directory.")] * 8)
    run_claude(binary, backup.anthropic_base_url, tmp_path / "home")
    url = pii_proxy(make_proxy, upstream, "messages")
    run_claude(binary, url.removesuffix("/v1"), tmp_path / "home")

    sent, received = messages_bodies(backup), messages_bodies(upstream)
    assert sent and len(received) == len(sent)
    main = max(received, key=lambda b: len(b.get("tools") or []))
    system = "".join(agents.prose(main.get("system")))
    descriptions = [t.get("description", "") for t in main.get("tools") or []]
    assert len(system) > 2000 and len(descriptions) >= 5, "not Claude Code's main request"
    found: list[Change] = []
    for i, (original, got) in enumerate(zip(sent, received, strict=True)):
        for part in ("system", "tools", "messages"):
            where = f"requests[{i}].{part}"
            found += [
                c for c in changes(original.get(part), got.get(part), where)
                if any(m.group(0) not in c.sent for m in PLACEHOLDER.finditer(c.received))
            ]  # fmt: skip
        # only placeholders count: a session id or a date may differ between the two runs
    assert not found, report(f"claude-code {claude_version(binary)}", found)


# ---------------------------------------------------------------------------------------
# Positive control: a real customer's name and address in a captured request

NAME, EMAIL = "Agnieszka Wróblewska", "agnieszka.w@example.pl"
INSERTED = f"Context: the customer is {NAME}, {EMAIL}"


def _main_body(name: str) -> dict[str, Any]:
    """The captured body of ``name`` with the most prose (its main request)."""
    return max(agents.bodies()[name], key=lambda b: sum(map(len, agents.prose(b))))


def _with_context(name: str) -> tuple[dict[str, Any], str, str]:
    """A captured body with :data:`INSERTED` appended to a text; the text before and after."""
    body = orjson.loads(orjson.dumps(_main_body(name)))  # a deep copy
    if name == "codex":  # the user's message (its last input_text part)
        user = [i for i in body["input"] if i.get("role") == "user"][-1]
        part = user["content"][-1]
        before = part["text"]
        part["text"] = f"{before}\n\n{INSERTED}"
    else:  # opencode: the system prompt
        system = body["messages"][0]
        before = system["content"]
        system["content"] = f"{before}\n\n{INSERTED}"
    return body, before, f"{before}\n\n{INSERTED}"


@pytest.mark.parametrize("name", ["codex", "opencode"])
def test_a_customer_in_a_captured_request_is_redacted_and_nothing_else(
    make_proxy: ProxyFactory, upstream: FakeUpstream, name: str
) -> None:
    body, before, written = _with_context(name)
    client = CLIENTS[name]
    got = relay(pii_proxy(make_proxy, upstream, client.api), upstream, client.api, body)

    raw = orjson.dumps(got).decode()
    for value in (NAME, *NAME.split(), EMAIL):
        assert value not in raw, f"{value!r} reached the upstream"
    found = changes(body, got)
    carrying = [c for c in found if c.sent == written]
    assert len(carrying) == 1, "the text carrying the customer was not redacted"
    token = PLACEHOLDER.pattern
    expected = (
        re.escape(f"{before}\n\nContext: the customer is ") + f"{token}(?: {token})*, {token}"
    )
    rest = [c for c in found if c is not carrying[0]]
    assert re.fullmatch(expected, carrying[0].received, flags=re.S), report(name, found)
    assert not rest, report(name, rest)
