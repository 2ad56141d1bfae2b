"""The standard ``OTEL_*`` environment variables hookgate reads, meaning what they mean
everywhere else. Pure (the environment aside).

Precedence, for every setting: what the YAML writes explicitly, else the variable, else
hookgate's default. ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``, the
``OTEL_EXPORTER_OTLP_*`` endpoint, protocol, headers and timeout, ``OTEL_TRACES_SAMPLER``
with ``OTEL_TRACES_SAMPLER_ARG``, and the batch settings ``OTEL_BSP_MAX_QUEUE_SIZE``,
``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` and ``OTEL_BSP_SCHEDULE_DELAY`` (milliseconds).
"""

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


def env_int(name: str, default: int) -> int:
    """A positive integer variable, or ``default`` when unset or not one (as the SDK does)."""
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default
