"""Composition rules of the one chaining module, without a server."""

from __future__ import annotations

from hookgate.pipeline.compose import chain_stream_transforms, compose_chain, compose_onion
from hookgate.pipeline.types import Context
from hookgate.wire.deltas import DeltaKey, StreamTransform

CTX = Context(request_id="r", api="chat.completions")


async def test_onion_first_listed_is_outermost() -> None:
    log: list[str] = []

    def middleware(name: str):  # type: ignore[no-untyped-def]
        async def run(value: int, ctx: Context, next):  # type: ignore[no-untyped-def]
            log.append(f"{name}-before")
            result = await next(value + 1, ctx)
            log.append(f"{name}-after")
            return result * 10

        return run

    async def terminal(value: int, ctx: Context) -> int:
        log.append(f"terminal({value})")
        return value

    handler = compose_onion([middleware("a"), middleware("b")], terminal)
    assert await handler(0, CTX) == 200
    assert log == ["a-before", "b-before", "terminal(2)", "b-after", "a-after"]


async def test_onion_without_middlewares_is_the_terminal() -> None:
    async def terminal(value: int, ctx: Context) -> int:
        return value

    assert compose_onion([], terminal) is terminal


async def test_short_circuit_and_retry() -> None:
    calls: list[int] = []

    async def retry_twice(value: int, ctx: Context, next):  # type: ignore[no-untyped-def]
        for attempt in range(3):
            try:
                return await next(attempt, ctx)
            except ValueError:
                continue
        raise AssertionError("unreachable")

    async def cache(value: int, ctx: Context, next):  # type: ignore[no-untyped-def]
        return "cached" if value == 5 else await next(value, ctx)

    async def flaky(value: int, ctx: Context) -> str:
        calls.append(value)
        if value < 2:
            raise ValueError
        return "ok"

    assert await compose_onion([retry_twice], flaky)(0, CTX) == "ok"
    assert calls == [0, 1, 2]
    assert await compose_onion([cache], flaky)(5, CTX) == "cached"
    assert calls == [0, 1, 2]


async def test_chain_runs_in_order_and_empty_is_none() -> None:
    async def add(suffix: str):  # type: ignore[no-untyped-def]
        async def step(value: str, ctx: Context) -> str:
            return value + suffix

        return step

    chain = compose_chain([await add("a"), await add("b"), await add("c")])
    assert chain is not None and await chain("", CTX) == "abc"
    assert compose_chain([]) is None


class Holdback(StreamTransform):
    """Holds back everything until end, then releases it marked with a name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.held = ""

    async def delta(self, key: DeltaKey, text: str) -> str:
        self.held += text
        return ""

    async def end(self, key: DeltaKey) -> str:
        out, self.held = self.held, ""
        return f"{self.name}[{out}]"


async def test_chained_stream_transforms_flush_through_later_ones() -> None:
    chained = chain_stream_transforms([Holdback("inner"), Holdback("outer")])
    assert chained is not None
    key = DeltaKey("text", 0)
    assert await chained.delta(key, "abc") == ""
    assert await chained.end(key) == "outer[inner[abc]]"
    assert chain_stream_transforms([]) is None
