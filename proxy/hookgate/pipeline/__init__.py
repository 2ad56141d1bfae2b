"""The hook pipeline: types, the Policy contract, composition, the registry."""

from hookgate.pipeline.hooks import DeltaKey, Next, Policy, StreamTransform
from hookgate.pipeline.types import Context, Identity, JsonBody, ModelCall, ModelResponse, Target

__all__ = [
    "Context",
    "DeltaKey",
    "Identity",
    "JsonBody",
    "ModelCall",
    "ModelResponse",
    "Next",
    "Policy",
    "StreamTransform",
    "Target",
]
