"""Telemetry as a side channel: GenAI attribute mapping, OpenTelemetry tracing, metrics."""
