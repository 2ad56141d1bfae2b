"""An admin of the web UI, over HTTP: logs in as a browser does (the login form's token,
its cookie), then reads pages and sends forms with the page's CSRF token. The browser
tests drive a real Chromium; this client is for the many checks of what the server
answers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from tests.spend import PRICE

ADMIN_KEY = "ui-admin-key-for-tests-0123"


def ui_config(db: Path, extra: str = "") -> str:
    """Config YAML (beside a provider) for a proxy with the UI: its own SQLite store,
    virtual keys required, the admin key, prices for ``fixed-model``."""
    keys = f"keys: {{required: true, admin_key: {ADMIN_KEY}}}\n"
    return f"store: 'sqlite:///{db}'\n{PRICE}{keys}{extra}"


def hidden(html: str, name: str) -> str:
    """The value of the hidden input ``name`` of a page."""
    found = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert found is not None, f"no {name} field in the page"
    return found.group(1)


class Admin:
    """A logged-in admin of the UI at ``base`` (the server's root URL)."""

    def __init__(self, base: str, *, actor: str = "alice", key: str = ADMIN_KEY) -> None:
        self.base = base
        self.http = httpx.Client(base_url=base, follow_redirects=False, timeout=30)
        form = self.http.get("/ui/login")
        assert form.status_code == 200, form.text
        answer = self.http.post("/ui/login", data={
            "login_csrf": hidden(form.text, "login_csrf"), "next": "/ui", "actor": actor,
            "admin_key": key,
        })  # fmt: skip
        assert answer.status_code == 303, answer.text
        self.csrf = ""

    def get(self, path: str, **params: Any) -> httpx.Response:
        """A page (its CSRF token kept for the next form)."""
        response = self.http.get(path, params=params)
        found = re.search(r'<meta name="csrf-token" content="([^"]+)"', response.text)
        if found:
            self.csrf = found.group(1)
        return response

    def post(self, path: str, data: dict[str, str] | None = None) -> httpx.Response:
        """A form, sent as the page's form sends it (with the CSRF token, same origin)."""
        if not self.csrf:
            self.get("/ui")
        fields = {"csrf": self.csrf, **(data or {})}
        return self.http.post(path, data=fields, headers={"origin": self.base})

    def close(self) -> None:
        self.http.close()
