"""A stdio MCP server that misbehaves on purpose, for the MCP gateway's fault tests (run as
a script): ``python tests/mcp_stdio_faults.py MODE PIDFILE``.

It appends its pid to PIDFILE, then reads one JSON-RPC message per line and answers
``initialize`` (except in mode ``silent``, where it answers nothing) and ``tools/call``:

* ``silent``: never writes anything;
* ``bigline``: tool ``big`` answers a line over hookgate's 64 MiB limit, other tools "small";
* ``null``: every ``tools/call`` result is ``null`` (not an object);
* ``stall``: ``tools/call`` is never answered (a client may cancel it);
* ``oddid``: before each ``tools/call`` answer, a response whose id is a list.
"""

from __future__ import annotations

import json
import os
import sys

MODE, PIDFILE = sys.argv[1], sys.argv[2]


def answer(id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    with open(PIDFILE, "a", encoding="utf-8") as pids:
        pids.write(f"{os.getpid()}\n")
    for line in sys.stdin:
        message = json.loads(line)
        method, id = message.get("method"), message.get("id")
        if MODE == "silent" or id is None or method is None:
            continue
        if method == "initialize":
            answer(id, {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "faults", "version": "1"}})  # fmt: skip
        elif method == "tools/call" and MODE == "null":
            answer(id, None)
        elif method == "tools/call" and MODE == "bigline" and message["params"]["name"] == "big":
            answer(id, {"content": [{"type": "text", "text": "x" * (65 * 1024 * 1024)}]})
        elif method == "tools/call" and MODE == "oddid":
            answer([id], {})
            answer(id, {"content": [{"type": "text", "text": "small"}]})
        elif method == "tools/call" and MODE != "stall":
            answer(id, {"content": [{"type": "text", "text": "small"}]})
        elif method == "ping":
            answer(id, {})


if __name__ == "__main__":
    main()
