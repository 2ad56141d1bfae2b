"""What real agent clients send a model: their built-in instructions and tool definitions.

A regression corpus for over-redaction: with ``pii`` on, none of these texts may come out
of the proxy changed, since none of them names a person. ``corpus/<client>.json`` holds the
request bodies a client sent on one turn (``{"client", "version", "captured", "api",
"bodies"}``, ``api`` one of ``chat``, ``responses``, ``messages``), captured from the real
client by :mod:`evals.pii.agents.capture` (``python -m evals.pii.agents``);
``corpus/mcp-server-<name>.json`` holds an MCP server's ``tools/list`` (``{"server",
"version", "captured", "tools"}``). Written without reading the detector's word lists.

* :func:`clients` — every capture, as :class:`Client` (an MCP server's tools become one
  chat request offering them, :func:`mcp_body`);
* :func:`bodies` — client name -> its request bodies;
* :func:`texts` — client name -> the prose in them (:func:`prose`): instructions, system,
  developer and user messages, tool and JSON-schema descriptions.

Claude Code is not here: its prompts are not open source, so
``tests/redaction/test_agent_prompts.py`` captures them at test time from the installed
binary.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent / "corpus"
PROMPT = "list the files in this directory"
"""The user's prompt of every capture (and of :func:`mcp_body`)."""
PROSE_KEYS = frozenset({"instructions", "system", "content", "text", "description"})
"""Keys whose string values are prose the model reads (:func:`prose`)."""


@dataclass(frozen=True)
class Client:
    """One capture: a client's (or an MCP server's) request bodies, on one API."""

    name: str
    version: str
    api: str
    """``chat``, ``responses`` or ``messages``: the endpoint the bodies go to."""
    bodies: tuple[dict[str, Any], ...]


def clients() -> list[Client]:
    """Every capture of ``corpus/``, by name."""
    out: list[Client] = []
    for path in sorted(CORPUS.glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        if "server" in document:
            body = mcp_body(document["tools"])
            out.append(Client(document["server"], document["version"], "chat", (body,)))
        else:
            bodies = tuple(document["bodies"])
            out.append(Client(document["client"], document["version"], document["api"], bodies))
    return out


def bodies() -> dict[str, list[dict[str, Any]]]:
    """Client name -> the request bodies it sent, exactly as captured."""
    return {c.name: list(c.bodies) for c in clients()}


def texts() -> dict[str, list[str]]:
    """Client name -> every prose text of its bodies (:func:`prose`), in order."""
    return {c.name: [t for body in c.bodies for t in prose(body)] for c in clients()}


def prose(body: Any) -> list[str]:
    """The prose of a request body, in order: every non-empty string under one of
    :data:`PROSE_KEYS` at any depth (Chat messages' content, Responses ``instructions`` and
    ``input_text`` parts, Messages ``system`` and text blocks, tool and JSON-schema
    descriptions, tool definitions nested in input items)."""
    return [text for key, text in _strings(body) if key in PROSE_KEYS and text]


def _strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)


def mcp_body(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A Chat Completions request offering an MCP server's tools as an agent does (each
    tool a function: its name, description and input schema), with :data:`PROMPT`."""
    functions = [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                **({"description": tool["description"]} if tool.get("description") else {}),
                "parameters": tool["inputSchema"],
            },
        }
        for tool in tools
    ]
    return {
        "model": "gpt-5.1",
        "messages": [{"role": "user", "content": PROMPT}],
        "tools": functions,
    }
