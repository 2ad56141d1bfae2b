"""The admin UI's read-only pages: overview, live traffic, the audit log, spend, policy
sets (``hookgate explain``) and the admin change log. Each reads what the admin API and
the CLI read (the store, the running config, the live traffic of this process, or of
every worker with ``server.workers``), so the numbers agree."""

from __future__ import annotations

import csv
import io
import time
from typing import Any, get_args

import orjson
from aiohttp import web
from pydantic import ValidationError

from hookgate.budgets.limits import window_start
from hookgate.config.durations import parse_duration
from hookgate.errors import NotFound
from hookgate.pipeline.types import Api
from hookgate.server import exposure, peers
from hookgate.server.admin import SPEND_GROUPS
from hookgate.server.appkeys import HOLDER, LISTEN_HOST, STORE, WATCHER, WORKER
from hookgate.server.explain import explain
from hookgate.server.ui.auth import page
from hookgate.server.ui.charts import bars
from hookgate.server.ui.render import render, secure_headers, see_other
from hookgate.server.ui.sessions import UiSession
from hookgate.store.audit_query import AuditQuery
from hookgate.store.base import display_url

NEAR_LIMIT = 0.8
"""A granted budget this spent (a fraction) is shown as near its limit."""
SINCE_CHOICES = ("1h", "24h", "7d", "30d", "90d")


@page
async def overview(request: web.Request, session: UiSession) -> web.Response:
    """Requests and errors in the last hour, spend today, budgets near their limit, each
    policy's status (breakers), the config generation, reload and exposure warnings."""
    app = request.app
    runtime = app[HOLDER].current
    store = app[STORE]
    now = time.time()
    audit_on = runtime.config.audit.enabled
    requests, errors = await store.audit_counts(now - 3600) if audit_on else (0, 0)
    today = await store.spend("day", window_start("day", now))
    statuses = {p.name: s for p in runtime.policies if (s := p.status()) is not None}
    sets: dict[str, int] = {name: 0 for name in runtime.pipelines}
    for kind in ("key", "team"):
        for grants in (await store.all_grants(kind)).values():
            if grants.policy_set in sets:
                sets[grants.policy_set] += 1
    context = {
        "session": session, "audit_on": audit_on, "requests": requests, "errors": errors,
        "spent_today": sum(line.usd for line in today),
        "requests_today": sum(line.requests for line in today),
        "near": await _budgets_near_limit(app, now), "statuses": statuses,
        "generation": runtime.generation, "source": runtime.source,
        "warnings": _warnings(app), "sets": sets,
        "in_flight": len((await peers.live_calls(app, app.get(WORKER)))[0]),
        "store": display_url(store.url), "providers": sorted(runtime.providers),
    }  # fmt: skip
    return render(request, "overview.html", context)


async def _budgets_near_limit(app: web.Application, now: float) -> list[dict[str, Any]]:
    """Every budget the admin API granted, with how much of it the current window spent,
    the fullest first (those at :data:`NEAR_LIMIT` and above are flagged)."""
    store = app[STORE]
    rows: list[dict[str, Any]] = []
    for kind in ("key", "team"):
        for subject, grants in (await store.all_grants(kind)).items():
            for budget in grants.budgets:
                usd, tokens = await store.usage_total(
                    kind, subject, window_start(budget.window, now)
                )
                used = max(
                    usd / budget.usd if budget.usd else 0.0,
                    tokens / budget.tokens if budget.tokens else 0.0,
                )
                rows.append({"kind": kind, "subject": subject, "window": budget.window,
                             "usd": usd, "limit_usd": budget.usd, "tokens": tokens,
                             "limit_tokens": budget.tokens, "used": used,
                             "near": used >= NEAR_LIMIT})  # fmt: skip
    return sorted(rows, key=lambda r: -r["used"])[:20]


def _warnings(app: web.Application) -> list[str]:
    """What ``/readyz`` warns of, and the last config reload's failure if it failed."""
    warnings = []
    warning = exposure.warning(app[HOLDER].current.config, app[LISTEN_HOST])
    if warning is not None:
        warnings.append(warning)
    watcher = app.get(WATCHER)
    if watcher is not None and watcher.failure is not None:
        warnings.append(watcher.failure)
    return warnings


@page
async def home(request: web.Request, session: UiSession) -> web.Response:
    """``/ui/`` is the overview's address with a slash too many."""
    return see_other("/ui")


@page
async def live(request: web.Request, session: UiSession) -> web.Response:
    """Requests in flight and the last few hundred (refreshed every two seconds)."""
    template = "live_rows.html" if request.headers.get("hx-request") else "live.html"
    flying, recent = await peers.live_calls(request.app, request.app.get(WORKER))
    context = {"session": session, "flying": flying, "recent": recent, "now": time.time()}
    return render(request, template, context)


AUDIT_FILTERS = ("request_id", "key_id", "team", "user", "model", "agent", "session", "api",
                 "status", "decision", "mcp_server", "tool")  # fmt: skip


@page
async def audit(request: web.Request, session: UiSession) -> web.Response:
    """The audit log, newest first, filtered, a page at a time (keyset paging)."""
    given = {
        name: v.strip() for name in AUDIT_FILTERS if (v := request.query.get(name, "")).strip()
    }
    problem = None
    since, until = request.query.get("since", ""), request.query.get("until", "")
    try:
        window = _window(since, until)
        query = AuditQuery.model_validate(
            {**given, **window, "cursor": request.query.get("cursor") or None}
        )
    except ValidationError as exc:
        problem = "; ".join(f"{e['loc'][0] if e['loc'] else ''}: {e['msg']}" for e in exc.errors())
        query = AuditQuery()
    except ValueError as exc:
        problem, query = str(exc), AuditQuery()
    found = await request.app[STORE].audit_page(query)
    records = [_shown(r) for r in found.records]
    base = {**given, **({"since": since} if since else {}), **({"until": until} if until else {})}
    context = {
        "session": session, "records": records, "filters": given, "since": since,
        "until": until, "problem": problem, "next": found.next, "base": base,
        "apis": sorted(set(get_args(Api)) | {"mcp.tools/call"}),
        "audit_on": request.app[HOLDER].current.config.audit.enabled,
        "paged": bool(request.query.get("cursor")),
    }  # fmt: skip
    return render(request, "audit.html", context)


def _window(since: str, until: str) -> dict[str, float]:
    """The time filter: ``since`` a duration back (``24h``) or a local date-time the form
    sent as epoch seconds; ``until`` likewise."""
    now = time.time()
    window = {}
    for name, text in (("since", since), ("until", until)):
        if not text:
            continue
        try:
            window[name] = now - parse_duration(text)
        except ValueError:
            raise ValueError(f"{name} must be a duration like 24h, 7d or 90m") from None
    return window


def _shown(record: dict[str, Any]) -> dict[str, Any]:
    """An audit record as the page shows it (its decisions and findings parsed)."""
    shown = dict(record)
    for name in ("decisions", "findings"):
        try:
            value = orjson.loads(record.get(name) or "{}")
        except orjson.JSONDecodeError:
            value = {}
        shown[name] = value if isinstance(value, dict) else {}
    return shown


@page
async def audit_record(request: web.Request, session: UiSession) -> web.Response:
    """One request's audit record (the redacted record: never content, never a key)."""
    request_id = request.match_info["request_id"]
    try:
        query = AuditQuery(request_id=request_id, limit=10)
    except ValidationError:
        raise NotFound(f"no audit record of request {request_id!r}") from None
    found = await request.app[STORE].audit_page(query)
    if not found.records:
        context = {"session": session, "title": "No such record",
                   "message": f"The audit log has no record of request {request_id}."}  # fmt: skip
        return render(request, "message.html", context, status=404)
    context = {"session": session, "records": [_shown(r) for r in found.records]}
    return render(request, "audit_record.html", context)


def _spend_args(request: web.Request) -> tuple[str, str, float]:
    by = request.query.get("by", "team")
    if by not in SPEND_GROUPS:
        by = "team"
    since = request.query.get("since", "30d")
    try:
        back = parse_duration(since) if since.isalnum() else None
    except ValueError:
        back = None
    if back is None:
        since, back = "30d", parse_duration("30d")
    return by, since, time.time() - back


@page
async def spend(request: web.Request, session: UiSession) -> web.Response:
    """Spend grouped as ``hookgate spend --by`` groups it, and by day as a chart."""
    by, since, start = _spend_args(request)
    store = request.app[STORE]
    lines = await store.spend(by, start)
    days = sorted(await store.spend("day", start), key=lambda line: line.group)
    chart = bars([(d.group[5:], d.usd) for d in days], title=f"Spend per day, last {since}")
    context = {
        "session": session, "by": by, "since": since, "lines": lines, "days": days,
        "chart": chart, "groups": sorted(SPEND_GROUPS), "choices": SINCE_CHOICES,
        "total": sum(line.usd for line in lines),
    }  # fmt: skip
    return render(request, "spend.html", context)


@page
async def spend_csv(request: web.Request, session: UiSession) -> web.Response:
    """The spend page's table as CSV (the columns of ``hookgate spend --json``)."""
    by, since, start = _spend_args(request)
    lines = await request.app[STORE].spend(by, start)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([by, "usd", "tokens", "requests", "unbudgeted"])
    for line in lines:
        row = line.as_dict(by)
        writer.writerow([_cell(str(row[by])), row["usd"], row["tokens"], row["requests"],
                         row["unbudgeted"]])  # fmt: skip
    response = web.Response(text=out.getvalue(), content_type="text/csv", charset="utf-8")
    response.headers["content-disposition"] = f'attachment; filename="spend-by-{by}-{since}.csv"'
    secure_headers(response)
    return response


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet will not run as a formula (a label may start with ``=``)."""
    if text == "-":  # the group of requests without the field
        return text
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@page
async def policies(request: web.Request, session: UiSession) -> web.Response:
    """Which policy set a key, team, model or agent gets, and why (``hookgate explain``)."""
    runtime = request.app[HOLDER].current
    asked = {name: v.strip() for name in ("key", "team", "user", "model", "agent", "route")
             if (v := request.query.get(name, "")).strip()}  # fmt: skip
    found, problem = None, None
    if asked:
        try:
            found = await explain(runtime.config, runtime.sets, request.app[STORE], **asked)
        except NotFound as exc:
            problem = exc.message
    sets = {name: [p.name for p in listed] for name, listed in runtime.sets.items()}
    matches = {name: s.match.model_dump(exclude_none=True) if s.match else None
               for name, s in runtime.config.policy_sets.items()}  # fmt: skip
    routes = sorted(set(get_args(Api)) | {"mcp"})
    context = {"session": session, "asked": asked, "found": found, "problem": problem,
               "sets": sets, "matches": matches, "routes": routes}  # fmt: skip
    return render(request, "policies.html", context)


@page
async def changes(request: web.Request, session: UiSession) -> web.Response:
    """The admin change log (``/admin/changes``), newest first."""
    since = request.query.get("since", "30d")
    try:
        back = parse_duration(since)
    except ValueError:
        since, back = "30d", parse_duration("30d")
    found = await request.app[STORE].admin_changes(time.time() - back)
    context = {"session": session, "changes": list(reversed(found)), "since": since,
               "choices": SINCE_CHOICES}  # fmt: skip
    return render(request, "changes.html", context)
