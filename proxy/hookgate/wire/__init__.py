"""Pure helpers for the OpenAI wire format: SSE framing, system prompts, stream rewriting.

Nothing here imports aiohttp or OpenTelemetry, so all of it is tested without a server.
"""
