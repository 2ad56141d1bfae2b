"""hookgate: an observability and governance sidecar for AI agents.

An OpenAI-compatible proxy (``hookgate serve``) and an in-process SDK
(:mod:`hookgate.sdk`) run one policy pipeline configured in YAML. This module is the
public API of a policy author: the :class:`Policy` base class, the frozen inputs its
hooks receive, the errors a policy raises to refuse a request, and the metric a policy
declares. Everything else is reached through documented subpackages:
:mod:`hookgate.sdk` (``Gate`` and the framework adapters), :mod:`hookgate.config`
(loading YAML) and :func:`hookgate.server.app.create_app` (the proxy as an aiohttp app).

Importing it starts nothing: no server, no thread, no network.
"""

from hookgate.errors import (
    AuthenticationFailed,
    BudgetExceeded,
    GuardrailUnavailable,
    HookgateError,
    InvalidRequest,
    PermissionDenied,
    PolicyBlocked,
    RateLimited,
    UpstreamError,
)
from hookgate.pipeline.agent import (
    NextReply,
    NextTool,
    Reply,
    ReplyContext,
    ToolCall,
    ToolResult,
)
from hookgate.pipeline.hooks import Messages, Next, Policy
from hookgate.pipeline.observe import Metric, Observation, Outcome
from hookgate.pipeline.services import Services
from hookgate.pipeline.types import (
    Api,
    Context,
    Identity,
    JsonBody,
    ModelCall,
    ModelResponse,
    Target,
)
from hookgate.version import __version__
from hookgate.wire.deltas import DeltaKey, StreamTransform
from hookgate.wire.usage import Usage

__all__ = [
    "Api",
    "AuthenticationFailed",
    "BudgetExceeded",
    "Context",
    "DeltaKey",
    "GuardrailUnavailable",
    "HookgateError",
    "Identity",
    "InvalidRequest",
    "JsonBody",
    "Messages",
    "Metric",
    "ModelCall",
    "ModelResponse",
    "Next",
    "NextReply",
    "NextTool",
    "Observation",
    "Outcome",
    "PermissionDenied",
    "Policy",
    "PolicyBlocked",
    "RateLimited",
    "Reply",
    "ReplyContext",
    "Services",
    "StreamTransform",
    "Target",
    "ToolCall",
    "ToolResult",
    "UpstreamError",
    "Usage",
    "__version__",
]
