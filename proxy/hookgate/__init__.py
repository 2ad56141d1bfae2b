"""hookgate: an observability and governance sidecar for AI agents.

An OpenAI-compatible proxy (``hookgate serve``) and an in-process SDK
(:mod:`hookgate.sdk`) run one policy pipeline configured in YAML. This module is the
public API of a policy author: the :class:`Policy` base class and its settings base
:class:`PolicyConfig`, the frozen inputs its hooks receive, the one walker over the texts
of every message shape (:func:`texts_of`, :func:`map_messages`), the errors a policy
raises to refuse a request, and the metric a policy declares; :mod:`hookgate.testing`
runs a policy on a call with no server. Everything else is reached through documented
subpackages: :mod:`hookgate.sdk` (``Gate`` and the framework adapters),
:mod:`hookgate.config` (loading YAML) and :func:`hookgate.server.app.create_app` (the
proxy as an aiohttp app).

Importing it starts nothing: no server, no thread, no network.
"""

from hookgate.budgets.ledger import Ledger
from hookgate.budgets.pricing import Pricing
from hookgate.budgets.rates import RateLimiter
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
    Decision,
    NextReply,
    NextTool,
    PolicyTool,
    Reply,
    ReplyAbandoned,
    ReplyContext,
    ReplyPaused,
    ToolCall,
    ToolInputError,
    ToolResult,
)
from hookgate.pipeline.hooks import (
    Messages,
    Next,
    NoSettings,
    Policy,
    PolicyConfig,
    PolicyDefinitionError,
)
from hookgate.pipeline.observe import Metric, Observation, Outcome, Span
from hookgate.pipeline.services import Services
from hookgate.pipeline.types import (
    Api,
    Approver,
    Context,
    Identity,
    JsonBody,
    ModelCall,
    ModelResponse,
    Target,
)
from hookgate.policies.vocabulary import OnFailure
from hookgate.store.base import Store
from hookgate.version import __version__
from hookgate.wire.conversation import Conversation, ToolOutput
from hookgate.wire.deltas import DeltaKey, StreamTransform
from hookgate.wire.sse import EventStream
from hookgate.wire.texts import map_messages, texts_of
from hookgate.wire.translate.gemini_native import GeminiRequest
from hookgate.wire.usage import Usage

__all__ = [
    "Api",
    "Approver",
    "AuthenticationFailed",
    "BudgetExceeded",
    "Context",
    "Conversation",
    "Decision",
    "DeltaKey",
    "EventStream",
    "GeminiRequest",
    "GuardrailUnavailable",
    "HookgateError",
    "Identity",
    "InvalidRequest",
    "JsonBody",
    "Ledger",
    "Messages",
    "Metric",
    "ModelCall",
    "ModelResponse",
    "Next",
    "NextReply",
    "NextTool",
    "NoSettings",
    "Observation",
    "OnFailure",
    "Outcome",
    "PermissionDenied",
    "Policy",
    "PolicyBlocked",
    "PolicyConfig",
    "PolicyDefinitionError",
    "PolicyTool",
    "Pricing",
    "RateLimited",
    "RateLimiter",
    "Reply",
    "ReplyAbandoned",
    "ReplyContext",
    "ReplyPaused",
    "Services",
    "Span",
    "Store",
    "StreamTransform",
    "Target",
    "ToolCall",
    "ToolInputError",
    "ToolOutput",
    "ToolResult",
    "UpstreamError",
    "Usage",
    "__version__",
    "map_messages",
    "texts_of",
]
