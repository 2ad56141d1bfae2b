"""The admin web UI at ``/ui``: what an operator of hookgate opens in a browser.

Server-rendered pages (Jinja2, autoescaped) over the state the admin API and the CLI
read and change — keys, teams and their grants, spend, the audit log, live traffic,
policy sets, approvals, the change log — behind a login with ``keys.admin_key``
(:mod:`.auth`, :mod:`.sessions`). The only script is this package's own: the vendored
htmx (its licence beside it in ``static/``) for the live page's refresh, and ``ui.js``
for times in the viewer's zone. Served on the main listener, or on the ops listener when
``server.ops`` is set; ``server.ui: false`` turns it off. Why it is built this way:
docs/ui.md.
"""

from __future__ import annotations

from aiohttp import web

from hookgate.server.ui import approvals, auth, manage, pages, sessions


def add_routes(app: web.Application) -> None:
    """Register every ``/ui`` route on ``app``."""
    app[auth.THROTTLE] = sessions.LoginThrottle()
    router = app.router
    router.add_get("/ui/login", auth.login_page)
    router.add_post("/ui/login", auth.login)
    router.add_post("/ui/logout", auth.logout)
    router.add_get("/ui/static/{name}", auth.static)
    router.add_get("/ui", pages.overview)
    router.add_get("/ui/", pages.home)
    router.add_get("/ui/live", pages.live)
    router.add_get("/ui/audit", pages.audit)
    router.add_get("/ui/audit/{request_id}", pages.audit_record)
    router.add_get("/ui/spend", pages.spend)
    router.add_get("/ui/spend.csv", pages.spend_csv)
    router.add_get("/ui/policies", pages.policies)
    router.add_get("/ui/changes", pages.changes)
    router.add_get("/ui/keys", manage.keys_page)
    router.add_post("/ui/keys", manage.create_key)
    router.add_get("/ui/keys/{id}", manage.key_page)
    router.add_post("/ui/keys/{id}/grants", manage.change_key)
    router.add_post("/ui/keys/{id}/revoke", manage.revoke_key)
    router.add_get("/ui/teams", manage.teams_page)
    router.add_post("/ui/teams", manage.grant_team)
    router.add_get("/ui/teams/{team}", manage.team_page)
    router.add_post("/ui/teams/{team}/grants", manage.change_team)
    router.add_post("/ui/teams/{team}/delete", manage.drop_team)
    router.add_get("/ui/approvals", approvals.approvals_page)
    router.add_get("/ui/approvals/{id}", approvals.approval_page)
    router.add_post("/ui/approvals/{id}", approvals.decide)
