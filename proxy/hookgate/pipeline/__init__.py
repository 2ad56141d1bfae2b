"""The hook pipeline: types, the Policy contract, composition, the registry."""

from hookgate.pipeline.hooks import Next, Policy
from hookgate.pipeline.types import Context, Identity, JsonBody, ModelCall, ModelResponse, Target
from hookgate.wire.deltas import DeltaKey, StreamTransform

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
