"""The ``hookgate`` command: ``serve``, ``check``, ``explain``, ``keys``, ``teams``,
``spend``, ``audit``, ``schema``.

Every subcommand finds its config by ``--config``, else ``$HOOKGATE_CONFIG``, else
``policies/default.yaml`` (in the working directory, then beside the package).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson
from pydantic import ValidationError

from hookgate.config import policy_sets
from hookgate.config.durations import parse_duration
from hookgate.config.loader import ConfigError, LoadedConfig, load_file, load_text
from hookgate.config.policy_sets import DEFAULT
from hookgate.config.schema import MAX_WORKERS, Config
from hookgate.errors import NotFound, StoreUnavailable
from hookgate.pipeline import registry
from hookgate.server import exposure
from hookgate.server.admin import SPEND_GROUPS
from hookgate.server.explain import explain
from hookgate.server.workers import Worker, worker_count
from hookgate.store.base import SpendLine, Store
from hookgate.store.grants import (
    Grants,
    GrantsRefused,
    Kind,
    check_subject,
    patching,
)
from hookgate.store.open import open_store
from hookgate.version import __version__

if TYPE_CHECKING:
    from aiohttp.web import AppRunner

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


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        help="config file (default: $HOOKGATE_CONFIG, else policies/default.yaml)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hookgate",
        description="OpenAI-compatible proxy with a policy pipeline for AI agents.",
    )
    parser.add_argument("--version", action="version", version=f"hookgate {__version__}")
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="run the proxy")
    _add_config(serve)
    serve.add_argument("--host", help="listen address (default: server.host of the config)")
    serve.add_argument("--port", type=int, help="listen port (default: server.port of the config)")
    serve.add_argument(
        "--workers",
        type=_workers,
        help="worker processes: a number, or auto (one per core); default: server.workers "
        "of the config",
    )
    serve.add_argument(
        "--log-level",
        default=os.environ.get("HOOKGATE_LOG_LEVEL", "INFO"),
        help="DEBUG, INFO, WARNING or ERROR (default: $HOOKGATE_LOG_LEVEL or INFO)",
    )
    serve.set_defaults(run=_serve)

    check = sub.add_parser("check", help="validate config files; print file:line: path: message")
    check.add_argument("files", nargs="+", type=Path)
    check.set_defaults(run=_check)

    keys_cmd = sub.add_parser("keys", help="manage virtual keys (in the config's store)")
    keys_sub = keys_cmd.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key and print it (shown once)")
    create.add_argument("--team", required=True)
    create.add_argument("--user")
    create.add_argument("--name")
    create.add_argument("--models", help="comma-separated aliases the key may use (default: all)")
    create.add_argument("--expires", help="lifetime: 30d, 12h, 90m or seconds")
    listing = keys_sub.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    revoke = keys_sub.add_parser("revoke", help="revoke a key by id (takes effect at once)")
    revoke.add_argument("id")
    granted = keys_sub.add_parser("set", help="change a key's grants (takes effect within 1s)")
    granted.add_argument("id")
    _add_grant_options(granted)
    for parser_ in (create, listing, revoke, granted):
        _add_config(parser_)
        parser_.set_defaults(run=_store_command(_keys_command))

    teams = sub.add_parser("teams", help="teams' grants: models, budgets, rates, policy set")
    teams_sub = teams.add_subparsers(dest="teams_command", required=True)
    team_list = teams_sub.add_parser("list", help="every team with grants")
    team_list.add_argument("--json", action="store_true", help="one JSON object per line")
    team_set = teams_sub.add_parser("set", help="change a team's grants (within 1s everywhere)")
    team_set.add_argument("team")
    _add_grant_options(team_set)
    team_delete = teams_sub.add_parser("delete", help="drop a team's grants")
    team_delete.add_argument("team")
    changes = teams_sub.add_parser("changes", help="the admin log: who changed what, when")
    changes.add_argument("--since", default="30d", help="how far back (default 30d)")
    for parser_ in (team_list, team_set, team_delete, changes):
        _add_config(parser_)
        parser_.set_defaults(run=_store_command(_teams_command))

    explain = sub.add_parser(
        "explain", help="which policy set and policies a request would get, and why"
    )
    _add_config(explain)
    explain.add_argument("--key", help="a key id (hgk_...): its team, user and grants are read")
    explain.add_argument("--team")
    explain.add_argument("--user")
    explain.add_argument("--model")
    explain.add_argument("--agent", help="the x-hookgate-agent header")
    explain.add_argument(
        "--route", default="chat.completions",
        help="the API: chat.completions (default), responses, messages, embeddings, ...",
    )  # fmt: skip
    explain.set_defaults(run=_store_command(_explain))

    spend = sub.add_parser(
        "spend", help="spend as the budget ledger charged it (the audit log for the rest), grouped"
    )
    spend.add_argument("--by", choices=sorted(SPEND_GROUPS), default="team")
    spend.add_argument("--since", default="30d", help="how far back: 30d, 12h, 90m (default 30d)")
    spend.add_argument("--json", action="store_true", help="one JSON object per line")
    _add_config(spend)
    spend.set_defaults(run=_store_command(_spend_report))

    audit = sub.add_parser("audit", help="the audit log")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    export = audit_sub.add_parser("export", help="write audit records as JSON lines to stdout")
    export.add_argument("--since", default="30d", help="how far back: 30d, 12h, 90m (default 30d)")
    _add_config(export)
    export.set_defaults(run=_store_command(_audit_export))

    schema = sub.add_parser("schema", help="write the config's JSON Schema (for editors)")
    schema.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    schema.set_defaults(run=_schema)
    return parser


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _workers(value: str) -> int | Literal["auto"]:
    if value == "auto":
        return "auto"
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("a number or auto") from None
    if not 1 <= count <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"from 1 to {MAX_WORKERS}")
    return count


def _serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=str(args.log_level).upper(), format=LOG_FORMAT)
    path = args.config or default_config_path()
    try:
        loaded = load_file(path)
    except ConfigError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return 1
    host = args.host or loaded.config.server.host
    problem = exposure.refusal(loaded.config, host)
    if problem is not None:
        print(loaded.problem(("server", "host"), problem), file=sys.stderr)
        return 1
    try:
        import uvloop
    except ImportError:
        runner = asyncio.run
    else:
        runner = uvloop.run
    count = worker_count(args.workers or loaded.config.server.workers)
    if count == 1:
        runner(_run_server(loaded, host, args.port))
        return 0
    return _arbiter(loaded, host, args.port, count, runner)


def _arbiter(
    first: LoadedConfig,
    host: str,
    port: int | None,
    count: int,
    runner: Callable[[Coroutine[Any, Any, None]], None],
) -> int:
    """Several workers under a parent (:mod:`hookgate.server.arbiter`). The parent closes
    the policies of the config ``first`` read and reads it again: the text it read is what
    each worker loads (and makes policies of, its own)."""
    from hookgate.server import arbiter

    arbiter.release(first)
    try:
        text, loaded = arbiter.read_config(first.source, host)
    except ConfigError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return 1
    server = loaded.config.server
    warning = exposure.warning(loaded.config, host)
    if warning is not None:
        log.warning("%s", warning)
    for name, mcp in loaded.config.mcp_servers.items():
        if mcp.command is not None:
            log.warning(
                "mcp_servers.%s runs a command: each of its sessions lives in one worker, and "
                "a client request that reaches another gets 404 (a new session)",
                name,
            )
    try:
        main = arbiter.listen(host, server.port if port is None else port)
        ops = [] if server.ops is None else arbiter.listen(server.ops.host, server.ops.port)
    except OSError as exc:
        log.error("cannot listen: %s", exc)
        return 1

    def work(
        worker: Worker,
        text: str,
        source: str,
        main: list[socket.socket],
        ops: list[socket.socket],
        ready_fd: int,
    ) -> None:
        for handler in logging.getLogger().handlers:
            handler.setFormatter(
                logging.Formatter(LOG_FORMAT.replace("%(name)s", f"%(name)s[{worker.number}]"))
            )
        loaded = load_text(text, source)
        runner(_run_server(loaded, host, port, worker=worker, sockets=(main, ops),
                           ready_fd=ready_fd))  # fmt: skip

    def serving() -> None:
        if ops:
            log.info(
                "ops endpoints (/metrics, /healthz, /readyz) on %s",
                ", ".join(arbiter.url_of(s) for s in ops),
            )
        log.info(
            "hookgate %s listening on %s (config %s, %d workers)",
            __version__, ", ".join(arbiter.url_of(s) for s in main), loaded.source, count,
        )  # fmt: skip

    status = arbiter.Arbiter(text, loaded, host, count, work, main, ops, serving).run()
    log.info("stopped")
    return status


async def _run_server(
    loaded: LoadedConfig,
    host: str,
    port: int | None,
    *,
    worker: Worker | None = None,
    sockets: tuple[list[socket.socket], list[socket.socket]] | None = None,
    ready_fd: int | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT, then drain. One process binds its listeners; a
    worker (``worker``) serves the ``sockets`` its parent bound (main, ops), and its
    siblings on a socket of its own, and tells the parent on ``ready_fd`` once serving."""
    from aiohttp import web

    from hookgate.server import arbiter, heap, peers
    from hookgate.server.app import create_app, create_ops_app, make_runner
    from hookgate.server.appkeys import WATCHER
    from hookgate.telemetry.metrics import use_multiprocess

    server = loaded.config.server
    if worker is None:
        warning = exposure.warning(loaded.config, host)
        if warning is not None:
            log.warning("%s", warning)
    else:
        use_multiprocess(worker.metrics_dir)
    app = create_app(loaded, host=host, worker=worker)
    runner = make_runner(app, shutdown_timeout=server.shutdown_timeout_s)
    await runner.setup()
    runners = [runner]
    if server.ops is not None:
        ops_runner = web.AppRunner(create_ops_app(app), access_log=None)
        await ops_runner.setup()
        await _listen(
            ops_runner, server.ops.host, server.ops.port, None if sockets is None else sockets[1]
        )
        runners.append(ops_runner)
        if worker is None:
            ops = ", ".join(_url(a) for a in ops_runner.addresses)
            log.info("ops endpoints (/metrics, /healthz, /readyz) on %s", ops)
    await _listen(
        runner, host, server.port if port is None else port, None if sockets is None else sockets[0]
    )
    if worker is not None:
        peer_runner = web.AppRunner(peers.peer_app(app), access_log=None)
        await peer_runner.setup()
        await peers.start_peer_site(peer_runner, worker)
        runners.append(peer_runner)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    watcher = app.get(WATCHER)
    if watcher is not None:
        loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(watcher.reload()))
    elif worker is not None:  # the parent forwards SIGHUP; nothing to reload
        loop.add_signal_handler(signal.SIGHUP, lambda: None)
    if worker is None:
        addresses = ", ".join(_url(a) for a in runner.addresses)
        log.info("hookgate %s listening on %s (config %s)", __version__, addresses, loaded.source)
        orphaned = None
    else:
        arbiter.release_signals()
        assert ready_fd is not None
        arbiter.tell_ready(ready_fd, worker)
        orphaned = asyncio.create_task(_stop_when_orphaned(worker, stop))
    heap.settle()
    await stop.wait()
    if orphaned is not None:
        orphaned.cancel()
    log.info("shutting down: draining in-flight requests (up to %ss)", server.shutdown_timeout_s)
    for running in runners:  # the main listener drains first; ops answers meanwhile
        await running.cleanup()
    if worker is None:
        log.info("stopped")


async def _listen(
    runner: AppRunner, host: str, port: int, sockets: list[socket.socket] | None
) -> None:
    """Serve ``runner`` on ``host:port``, or on ``sockets`` a parent bound (a worker)."""
    from aiohttp import web

    if sockets is None:
        await web.TCPSite(runner, host, port).start()
    for sock in sockets or ():
        await web.SockSite(runner, sock).start()


async def _stop_when_orphaned(worker: Worker, stop: asyncio.Event) -> None:
    """Stop a worker whose parent is gone (killed: it can no longer stop its workers)."""
    while True:
        await asyncio.sleep(1.0)
        if os.getppid() != worker.parent:
            break
    log.error("the parent process is gone: stopping")
    stop.set()


def _store_command(
    work: Callable[[argparse.Namespace, Store], Awaitable[int]],
) -> Callable[[argparse.Namespace], int]:
    """A subcommand that opens the config's store, runs ``work``, and closes the store."""

    def run(args: argparse.Namespace) -> int:
        try:
            loaded = load_file(args.config or default_config_path())
        except ConfigError as exc:
            for line in exc.lines:
                print(line, file=sys.stderr)
            return 1
        args.loaded = loaded
        try:
            return asyncio.run(_with_store(loaded.config.store, args, work))
        except StoreUnavailable as exc:  # one line, never a traceback
            print(f"hookgate: {exc.message}", file=sys.stderr)
            return 1
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                option = _OPTIONS.get(str(error["loc"][0]), str(error["loc"][0]))
                print(f"hookgate: {option}: {error['msg']}", file=sys.stderr)
            return 2

    return run


_OPTIONS = {"team": "--team", "user": "--user", "name": "--name", "models": "--models",
            "expires_in_s": "--expires"}  # fmt: skip
"""``NewKey`` fields by the option that sets them, for error messages."""


async def _with_store(
    url: str, args: argparse.Namespace, work: Callable[[argparse.Namespace, Store], Awaitable[int]]
) -> int:
    store = open_store(url)
    try:
        return await work(args, store)
    finally:
        await store.close()


async def _keys_command(args: argparse.Namespace, store: Store) -> int:
    from hookgate.server.admin import NewKey, make_key, public

    if args.keys_command == "create":
        models = [m.strip() for m in (args.models or "").split(",") if m.strip()]
        expires = _duration(args.expires) if args.expires else None
        spec = NewKey(
            team=args.team, user=args.user, name=args.name, models=models, expires_in_s=expires
        )
        secret, record = make_key(spec, time.time())
        await store.add_key(record)
        print(secret)
        print(f"id {record.id} team {record.team}; the key is shown only now", file=sys.stderr)
        return 0
    if args.keys_command == "list":
        for record in await store.keys():
            if args.json:
                print(orjson.dumps(public(record)).decode())
                continue
            state = record.usable(time.time()) or "active"
            allowed = ",".join(record.models) or "(any)"
            print(f"{record.id}  team={record.team}  user={record.user or '-'}  "
                  f"models={allowed}  {state}")  # fmt: skip
        return 0
    if args.keys_command == "set":
        if not any(r.id == args.id for r in await store.keys()):
            print(f"no key with id {args.id}", file=sys.stderr)
            return 1
        after = await _change_grants(args, store, "key", args.id, _grant_patch(args))
        print(f"key {args.id}: {after} (applies on every replica within a second)")
        return 0
    if not await store.revoke_key(args.id, time.time()):
        print(f"no key with id {args.id}", file=sys.stderr)
        return 1
    print(f"revoked {args.id}")
    return 0


def _add_grant_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", help="comma-separated aliases it may use ('' for any)")
    parser.add_argument(
        "--budget", action="append", metavar="WINDOW:usd=N,tokens=N",
        help="a budget of its spend, e.g. day:usd=50 or total:tokens=2000000 (repeatable; "
        "'none' clears them)",
    )  # fmt: skip
    parser.add_argument("--rpm", type=int, help="requests per minute (0 clears)")
    parser.add_argument("--tpm", type=int, help="tokens per minute (0 clears)")
    parser.add_argument("--policy-set", help="the policy set its requests get ('' clears)")
    parser.add_argument("--meta", action="append", metavar="KEY=VALUE", help="a label (repeatable)")


def _grant_patch(args: argparse.Namespace) -> dict[str, Any]:
    """The grants fields the options set (None clears a field)."""
    patch: dict[str, Any] = {}
    if args.models is not None:
        patch["models"] = [m.strip() for m in args.models.split(",") if m.strip()] or None
    if args.budget is not None:
        patch["budgets"] = None if args.budget == ["none"] else [_budget(b) for b in args.budget]
    for field in ("rpm", "tpm"):
        value = getattr(args, field)
        if value is not None:
            patch[field] = value or None
    if args.policy_set is not None:
        patch["policy_set"] = args.policy_set or None
    if args.meta:
        patch["metadata"] = dict(item.partition("=")[::2] for item in args.meta)
    return patch


def _budget(text: str) -> dict[str, Any]:
    window, _, caps = text.partition(":")
    budget: dict[str, Any] = {"window": window}
    for cap in caps.split(","):
        name, _, value = cap.partition("=")
        try:
            if name not in ("usd", "tokens"):
                raise ValueError(name)
            budget[name] = float(value) if name == "usd" else int(value)
        except ValueError:
            raise SystemExit(
                f"--budget {text!r}: write WINDOW:usd=N,tokens=N (e.g. day:usd=50)"
            ) from None
    return budget


async def _change_grants(
    args: argparse.Namespace, store: Store, kind: Kind, subject: str, patch: dict[str, Any] | None
) -> Grants | None:
    """Apply a change as the admin API does (the same checks, the same atomic change),
    recorded as made by ``cli:<OS user>``; a refused one exits with why."""
    change = patching(patch, replace=False, known_sets=frozenset(args.loaded.sets))
    try:
        made = await store.change_grants(
            kind, check_subject(subject), change, f"cli:{getpass.getuser()}"
        )
    except GrantsRefused as exc:
        raise SystemExit(f"hookgate: {kind} {subject}: {exc.message}") from None
    return made.after


async def _teams_command(args: argparse.Namespace, store: Store) -> int:
    command = args.teams_command
    if command == "list":
        for team, grants in (await store.all_grants("team")).items():
            listed = grants.model_dump(exclude_none=True, exclude_defaults=True)
            line = orjson.dumps({"team": team, **listed}).decode() if args.json else None
            print(line or f"{team}  {listed}")
        return 0
    if command == "changes":
        for change in await store.admin_changes(time.time() - _duration(args.since)):
            print(change.model_dump_json(exclude_none=True))
        return 0
    patch = None if command == "delete" else _grant_patch(args)
    after = await _change_grants(args, store, "team", args.team, patch)
    result = "deleted" if after is None else after.model_dump(exclude_none=True)
    print(f"team {args.team}: {result} (applies on every replica within a second)")
    return 0


async def _explain(args: argparse.Namespace, store: Store) -> int:
    """Print the policy set a request would get and its policies, in pipeline order."""
    loaded: LoadedConfig = args.loaded
    try:
        found = await explain(
            loaded.config, loaded.sets, store, key=args.key, team=args.team, user=args.user,
            model=args.model, agent=args.agent, route=args.route,
        )  # fmt: skip
    except NotFound as exc:
        print(exc.message.replace("'", ""), file=sys.stderr)
        return 1
    if found.chosen is None:
        print(f"refused: {found.refusal}")
        return 0
    print(f"policy set: {found.chosen.name} ({found.chosen.reason})")
    for line in found.policies:
        print(f"  {line.name:<16} [{line.runs_in}] {orjson.dumps(line.settings).decode()}")
    for kind, grants in found.granted.items():
        print(f"granted to the {kind}: {grants}")
    for warning in found.warnings:
        print(f"warning: {warning}")
    return 0


async def _spend_report(args: argparse.Namespace, store: Store) -> int:
    lines = await store.spend(args.by, time.time() - _duration(args.since))
    if args.json:
        for line in lines:
            print(orjson.dumps(line.as_dict(args.by)).decode())
        return 0
    print(f"{args.by:<24} {'usd':>14} {'tokens':>12} {'requests':>9} {'unbudgeted':>10}")
    for line in lines:
        print(f"{line.group:<24} {line.usd:>14.6f} {line.tokens:>12} {line.requests:>9} "
              f"{line.unbudgeted:>10}")  # fmt: skip
    total = SpendLine("total", sum(x.usd for x in lines), sum(x.tokens for x in lines),
                      sum(x.requests for x in lines), sum(x.unbudgeted for x in lines))  # fmt: skip
    print(f"{total.group:<24} {total.usd:>14.6f} {total.tokens:>12} {total.requests:>9} "
          f"{total.unbudgeted:>10}")  # fmt: skip
    if total.unbudgeted:
        print(f"({total.unbudgeted} requests no budget settled are counted from the audit log)")
    return 0


async def _audit_export(args: argparse.Namespace, store: Store) -> int:
    for record in await store.audit_records(time.time() - _duration(args.since)):
        sys.stdout.write(orjson.dumps(record).decode() + "\n")
    return 0


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError:
        raise SystemExit(f"not a duration: {text!r} (e.g. 30d, 12h, 90m)") from None


def _url(address: Any) -> str:
    host, port = address[0], address[1]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _check(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        try:
            loaded = load_file(path)
        except ConfigError as exc:
            for line in exc.lines:
                print(line)
            status = 1
        else:
            problem = exposure.refusal(loaded.config, loaded.config.server.host)
            if problem is not None:
                print(loaded.problem(("server", "host"), problem))
                status = 1
                continue
            where = {
                side: ", ".join(p.name for p in loaded.policies if side in p.runs_in) or "-"
                for side in ("proxy", "sdk")
            }
            print(f"{path}: ok (proxy runs: {where['proxy']}; SDK runs: {where['sdk']})")
            for name, policies in loaded.sets.items():
                if name != DEFAULT:
                    print(f"  set {name}: {', '.join(p.name for p in policies) or '-'}")
            for warning in policy_sets.lint(loaded.config.policy_sets):
                print(loaded.problem(warning.loc, f"warning: {warning.message}"))
    return status


def json_schema() -> dict[str, Any]:
    """The config's JSON Schema, with each built-in policy's settings spelled out."""
    schema = Config.model_json_schema()
    entries: list[dict[str, Any]] = []
    for name in sorted(registry.BUILTIN):
        settings = registry.resolve(name).Config.model_json_schema()
        for ref, definition in settings.pop("$defs", {}).items():  # refs are root-relative
            if schema["$defs"].setdefault(ref, definition) != definition:
                raise ValueError(f"two config models are both named {ref}")
        entries.append(
            {
                "type": "object",
                "properties": {name: {"anyOf": [settings, {"type": "null"}]}},
                "required": [name],
                "additionalProperties": False,
            }
        )
    custom: dict[str, Any] = {
        "type": "object",
        "minProperties": 1,
        "maxProperties": 1,
        "propertyNames": {"pattern": r"^[\w.]+:\w+$"},
    }
    schema["properties"]["policies"]["items"] = {"anyOf": [*entries, custom]}
    placed = {"before": {"type": "string"}, "after": {"type": "string"}}
    set_entries = [
        *({**entry, "properties": {**entry["properties"], **placed}} for entry in entries),
        {
            **custom,
            "maxProperties": 2,  # a custom policy, perhaps placed
            "propertyNames": {"pattern": r"^([\w.]+:\w+|before|after)$"},
        },
    ]
    schema["$defs"]["PolicySetConfig"]["properties"]["policies"]["items"] = {"anyOf": set_entries}
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
