"""The standard ``OTEL_*`` environment variables hookgate reads, meaning what they mean
everywhere else."""

from __future__ import annotations

import os
from typing import Literal

Protocol = Literal["http/protobuf", "grpc"]


def otlp_endpoint_in_env() -> bool:
    """True when the standard variables name an OTLP endpoint for traces."""
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


def env_protocol() -> Protocol:
    """The OTLP protocol the standard variables name (``http/protobuf`` by default)."""
    value = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
    )
    return "grpc" if value.strip() == "grpc" else "http/protobuf"
