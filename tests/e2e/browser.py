"""A real headless Chromium (Debian's ``chromium``, driven by Playwright) for the admin
UI's browser tests, and the checks a person's eyes would make: every form control has a
label, text has enough contrast, the page fits a narrow window, and the browser reported
no error (a script or style the Content-Security-Policy blocked shows up there).

Screenshots go to ``$HOOKGATE_TEST_SCREENSHOTS`` when set (to look at them), else to the
test's temporary directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.services import require

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless (skipped locally, failed under CI, when missing)."""
    from playwright.sync_api import sync_playwright

    executable = require("chromium")
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


class Watched:
    """A page whose console errors and failed requests are collected."""

    def __init__(self, browser: Browser, shots: Path, **context: Any) -> None:
        self.context = browser.new_context(**context)
        self.page: Page = self.context.new_page()
        self.problems: list[str] = []
        self.shots = shots
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.problems.append(f"console {message.type}: {message.text}")

    def shot(self, name: str) -> Path:
        """A full-page screenshot named ``name``."""
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        self.context.close()


def screenshots(tmp_path: Path) -> Path:
    """Where screenshots go (see the module docstring)."""
    chosen = os.environ.get("HOOKGATE_TEST_SCREENSHOTS")
    path = Path(chosen) if chosen else tmp_path / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


UNLABELLED = """() => [...document.querySelectorAll('input, select, textarea')]
  .filter(e => e.type !== 'hidden')
  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
               && !e.getAttribute('aria-labelledby'))
  .map(e => e.outerHTML.slice(0, 120))"""
"""Form controls a screen reader could not name."""

LOW_CONTRAST = """() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const background = el => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const low = [];
  for (const el of document.querySelectorAll('body *')) {
    const text = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    const style = getComputedStyle(el);
    if (!text || style.visibility === 'hidden' || style.display === 'none') continue;
    if (!el.getClientRects().length) continue;
    if (el.closest('.skip')) continue;
    const [a, b] = [lum(rgb(style.color).slice(0, 3)), lum(background(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const shown = el.textContent.trim().slice(0, 40);
    if (ratio < 4.5) low.push(`${el.tagName} "${shown}" ${ratio.toFixed(2)}`);
  }
  return low;
}"""
"""Text below WCAG AA's 4.5:1 contrast against its background."""

OVERFLOW = """() => document.documentElement.scrollWidth - document.documentElement.clientWidth"""
"""How far the page is wider than the window (a table may scroll inside its own box)."""


def check_page(watched: Watched) -> None:
    """The checks every page passes: labels, contrast, no browser error."""
    page = watched.page
    assert page.evaluate(UNLABELLED) == [], page.url
    assert page.evaluate(LOW_CONTRAST) == [], page.url
    assert watched.problems == [], page.url
