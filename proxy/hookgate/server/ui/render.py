"""Rendering the admin UI's pages: Jinja2 templates (autoescaped) shipped in the package,
and the headers every page carries.

Every page is sent with a Content-Security-Policy that lets in only this origin's scripts
(the vendored htmx and ``ui.js``) and the page's own inline style (by a nonce made for
that response), no framing, no form posts elsewhere; ``Cache-Control: no-store`` (admin
data stays out of caches) and ``Referrer-Policy: same-origin`` (nothing
leaks to other sites; with ``no-referrer`` a browser sends ``Origin: null`` on the UI's
own forms, which the CSRF check must refuse).
"""

from __future__ import annotations

import datetime
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import jinja2
from aiohttp import web
from markupsafe import Markup

from hookgate.store.grants import Grants
from hookgate.version import __version__

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("hookgate.server.ui", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)

NAV = (
    ("/ui", "Overview"),
    ("/ui/live", "Live"),
    ("/ui/audit", "Audit log"),
    ("/ui/spend", "Spend"),
    ("/ui/keys", "Keys"),
    ("/ui/teams", "Teams"),
    ("/ui/policies", "Policy sets"),
    ("/ui/approvals", "Approvals"),
    ("/ui/changes", "Change log"),
)
"""The pages of the navigation bar, in order."""


def when(ts: float | None) -> Markup:
    """A time as a ``<time>`` element: UTC in the page, shown in the viewer's own zone by
    ``ui.js``."""
    if ts is None:
        return Markup("&ndash;")
    moment = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    return Markup('<time datetime="{}">{}</time>').format(
        moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        moment.strftime("%Y-%m-%d %H:%M:%S UTC"),
    )


def usd(value: float | None) -> str:
    """Dollars as an operator reads them: cents, or more digits below a cent."""
    if value is None:
        return "\u2013"  # an en dash: no amount
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.6f}"


_env.filters["when"] = when
_env.filters["segment"] = lambda text: quote(str(text), safe="")
_env.filters["usd"] = usd
_env.globals["nav"] = NAV
_env.globals["version"] = __version__


def budget_of(grants: Grants, window: str) -> dict[str, Any]:
    """The budget ``grants`` have for ``window`` ({} when none), for the grants form."""
    found = next((b for b in grants.budgets if b.window == window), None)
    return {} if found is None else found.model_dump(exclude_none=True)


_env.globals["budget_of"] = budget_of


def render(
    request: web.Request, template: str, context: Mapping[str, Any], *, status: int = 200
) -> web.Response:
    """``template`` rendered with ``context`` (plus ``path`` and the CSP ``nonce``) as a
    page with the UI's headers."""
    nonce = secrets.token_urlsafe(16)
    body = _env.get_template(template).render(**context, path=request.path, nonce=nonce)
    response = web.Response(text=body, status=status, content_type="text/html", charset="utf-8")
    secure_headers(response, nonce)
    return response


def see_other(location: str) -> web.Response:
    """A 303 to ``location`` (a path of this server) with the UI's headers."""
    response = web.Response(status=303, headers={"location": location})
    secure_headers(response)
    return response


def secure_headers(response: web.StreamResponse, nonce: str | None = None) -> None:
    """The headers every UI response carries (see the module docstring)."""
    style = f"'nonce-{nonce}'" if nonce else "'none'"
    response.headers["content-security-policy"] = (
        f"default-src 'none'; script-src 'self'; style-src {style}; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["cache-control"] = "no-store"
    response.headers["referrer-policy"] = "same-origin"
    response.headers["x-content-type-options"] = "nosniff"
    response.headers["x-frame-options"] = "DENY"
