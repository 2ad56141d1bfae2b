"""hookgate: an OpenAI-compatible proxy with a policy pipeline for AI agents.

The import package is ``proxy``. Importing it does nothing but define names; the server
is built by :func:`hookgate.server.app.create_app` and run by ``hookgate serve``.
"""

__version__ = "0.1.0"
