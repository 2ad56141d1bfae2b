"""The version of hookgate (one place; the package, the CLI and telemetry read it)."""

__version__ = "0.1.0"
