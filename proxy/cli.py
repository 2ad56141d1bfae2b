"""The ``hookgate`` command: ``serve``, ``check``, ``schema``.

Every subcommand finds its config by ``--config``, else ``$HOOKGATE_CONFIG``, else
``policies/default.yaml`` (in the working directory, then beside the package).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import orjson

from proxy import __version__
from proxy.config.loader import ConfigError, LoadedConfig, load_file
from proxy.config.schema import Config
from proxy.pipeline import registry

log = logging.getLogger("hookgate")

DEFAULT_CONFIG = Path("policies/default.yaml")


def default_config_path() -> Path:
    """``$HOOKGATE_CONFIG``, else ``policies/default.yaml`` here or beside the package."""
    env = os.environ.get("HOOKGATE_CONFIG")
    if env:
        return Path(env)
    if DEFAULT_CONFIG.exists():
        return DEFAULT_CONFIG
    return Path(__file__).resolve().parent.parent / DEFAULT_CONFIG


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    result: int = args.run(args)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hookgate",
        description="OpenAI-compatible proxy with a policy pipeline for AI agents.",
    )
    parser.add_argument("--version", action="version", version=f"hookgate {__version__}")
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="run the proxy")
    serve.add_argument(
        "--config",
        type=Path,
        help="config file (default: $HOOKGATE_CONFIG, else policies/default.yaml)",
    )
    serve.add_argument("--host", help="listen address (default: server.host of the config)")
    serve.add_argument("--port", type=int, help="listen port (default: server.port of the config)")
    serve.add_argument(
        "--log-level",
        default=os.environ.get("HOOKGATE_LOG_LEVEL", "INFO"),
        help="DEBUG, INFO, WARNING or ERROR (default: $HOOKGATE_LOG_LEVEL or INFO)",
    )
    serve.set_defaults(run=_serve)

    check = sub.add_parser("check", help="validate config files; print file:line: path: message")
    check.add_argument("files", nargs="+", type=Path)
    check.set_defaults(run=_check)

    schema = sub.add_parser("schema", help="write the config's JSON Schema (for editors)")
    schema.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    schema.set_defaults(run=_schema)
    return parser


def _serve(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=str(args.log_level).upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    path = args.config or default_config_path()
    try:
        loaded = load_file(path)
    except ConfigError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return 1
    try:
        import uvloop
    except ImportError:
        runner = asyncio.run
    else:
        runner = uvloop.run
    runner(_run_server(loaded, args.host, args.port))
    return 0


async def _run_server(loaded: LoadedConfig, host: str | None, port: int | None) -> None:
    from aiohttp import web

    from proxy.server.app import WATCHER, create_app, make_runner

    server = loaded.config.server
    app = create_app(loaded)
    runner = make_runner(app, shutdown_timeout=server.shutdown_timeout_s)
    await runner.setup()
    site = web.TCPSite(runner, host or server.host, server.port if port is None else port)
    await site.start()
    addresses = ", ".join(_url(a) for a in runner.addresses)
    log.info("hookgate %s listening on %s (config %s)", __version__, addresses, loaded.source)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    watcher = app.get(WATCHER)
    if watcher is not None:
        loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(watcher.reload()))
    await stop.wait()
    log.info("shutting down: draining in-flight requests (up to %ss)", server.shutdown_timeout_s)
    await runner.cleanup()
    log.info("stopped")


def _url(address: Any) -> str:
    host, port = address[0], address[1]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _check(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        try:
            load_file(path)
        except ConfigError as exc:
            for line in exc.lines:
                print(line)
            status = 1
        else:
            print(f"{path}: ok")
    return status


def json_schema() -> dict[str, Any]:
    """The config's JSON Schema, with each built-in policy's settings spelled out."""
    schema = Config.model_json_schema()
    entries = []
    for name in sorted(registry.BUILTIN):
        settings = registry.resolve(name).Config.model_json_schema()
        entries.append(
            {
                "type": "object",
                "properties": {name: {"anyOf": [settings, {"type": "null"}]}},
                "required": [name],
                "additionalProperties": False,
            }
        )
    custom = {
        "type": "object",
        "minProperties": 1,
        "maxProperties": 1,
        "propertyNames": {"pattern": r"^[\w.]+:\w+$"},
    }
    schema["properties"]["policies"]["items"] = {"anyOf": [*entries, custom]}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "hookgate config"
    return schema


def _schema(args: argparse.Namespace) -> int:
    text = orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    if args.output is None:
        sys.stdout.buffer.write(text)
    else:
        args.output.write_bytes(text)
    return 0
