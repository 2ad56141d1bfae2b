"""How the bench's helper servers run: uvloop when installed, no access log."""

from __future__ import annotations

from aiohttp import web


def serve(app: web.Application, port: int) -> None:
    """Run ``app`` on 127.0.0.1:``port`` until interrupted."""
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)
