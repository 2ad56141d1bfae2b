"""The only chaining code: an onion composer and a transformer chain.

Both are built once, when a config loads, and then called per request with no further
lookups. Order is the caller's: pass policies in the order they should run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from hookgate.wire.deltas import DeltaKey, StreamTransform

Req = TypeVar("Req")
Resp = TypeVar("Resp")
Ctx = TypeVar("Ctx")
T = TypeVar("T")

Handler = Callable[[Req, Ctx], Awaitable[Resp]]
Middleware = Callable[[Req, Ctx, Handler[Req, Ctx, Resp]], Awaitable[Resp]]
Transformer = Callable[[T, Ctx], Awaitable[T]]


def compose_onion(
    middlewares: Sequence[Middleware[Req, Ctx, Resp]], terminal: Handler[Req, Ctx, Resp]
) -> Handler[Req, Ctx, Resp]:
    """Wrap ``terminal`` so that ``middlewares[0]`` is outermost.

    With ``[a, b]`` a request flows ``a → b → terminal`` and the result ``terminal → b → a``.
    With no middlewares the terminal itself is returned: zero overhead.
    """
    handler = terminal
    for middleware in reversed(middlewares):
        handler = _bind(middleware, handler)
    return handler


def _bind(
    middleware: Middleware[Req, Ctx, Resp], inner: Handler[Req, Ctx, Resp]
) -> Handler[Req, Ctx, Resp]:
    async def handler(request: Req, ctx: Ctx) -> Resp:
        return await middleware(request, ctx, inner)

    return handler


def compose_chain(transformers: Sequence[Transformer[T, Ctx]]) -> Transformer[T, Ctx] | None:
    """Chain transformers in the given order; ``None`` when there are none.

    Returning ``None`` for an empty chain lets callers skip the work of preparing the
    value (e.g. extracting a system prompt) when no policy wants it.
    """
    if not transformers:
        return None
    if len(transformers) == 1:
        return transformers[0]
    steps = tuple(transformers)

    async def chain(value: T, ctx: Ctx) -> T:
        for step in steps:
            value = await step(value, ctx)
        return value

    return chain


class ChainedStreamTransform(StreamTransform):
    """Several stream transforms run in sequence: each one's output feeds the next.

    ``end`` flushes the first transform, feeds what it released through the later
    transforms' ``delta``, then flushes the next, and so on, so nothing a transform
    held back is lost or skips a later transform.
    """

    def __init__(self, transforms: Sequence[StreamTransform]) -> None:
        self._transforms = tuple(transforms)

    async def delta(self, key: DeltaKey, text: str) -> str:
        for transform in self._transforms:
            text = await transform.delta(key, text)
        return text

    async def end(self, key: DeltaKey) -> str:
        released = ""
        for transform in self._transforms:
            released = await transform.delta(key, released) if released else ""
            released += await transform.end(key)
        return released


def chain_stream_transforms(transforms: Sequence[StreamTransform]) -> StreamTransform | None:
    """One transform running ``transforms`` in order; ``None`` when there are none."""
    if not transforms:
        return None
    if len(transforms) == 1:
        return transforms[0]
    return ChainedStreamTransform(transforms)
