"""hookgate in-process: the hooks a proxy cannot see, with the proxy's policies and YAML.

::

    from hookgate.sdk import Gate
    gate = Gate.from_config("policies/agent.yaml")

then hand ``gate`` to the adapter of your framework (:mod:`hookgate.sdk.adapters`), or run a
reply yourself with ``async with gate.reply():``. Adapters drive the policies through
``gate.driver`` (:class:`~hookgate.sdk.driver.Driver`). Importing this package imports
neither the server nor aiohttp.
"""

from hookgate.pipeline.agent import Reply, ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.hooks import Policy
from hookgate.sdk.client import current_headers, govern, http_client, instrument
from hookgate.sdk.driver import Driver, Split, current_reply
from hookgate.sdk.gate import Gate

__all__ = [
    "Driver",
    "Gate",
    "Policy",
    "Reply",
    "ReplyContext",
    "Split",
    "ToolCall",
    "ToolResult",
    "current_headers",
    "current_reply",
    "govern",
    "http_client",
    "instrument",
]
