"""A pipeline checks its policies when it is built: a hook of the wrong kind or arity,
a missing name, one instance listed twice are errors naming the policy — from code
(``Pipeline``, ``Gate``, ``hookgate.testing``) and from YAML (a config error with its
line) — and two policies of one name keep separate state."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from hookgate import (
    Context,
    ModelCall,
    ModelResponse,
    Next,
    Policy,
    PolicyConfig,
    PolicyDefinitionError,
    StreamTransform,
)
from hookgate.config.loader import ConfigError, load_text
from hookgate.testing import Harness, chat


class AsyncStream(Policy):
    name = "async_stream"

    async def on_response_stream(self, ctx: Context) -> StreamTransform | None:  # type: ignore[override]
        return None


class SyncCall(Policy):
    name = "sync_call"

    def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:  # type: ignore[override]
        raise AssertionError("never run")


class TwoArgCall(Policy):
    name = "two_args"

    async def on_model_call(self, call: ModelCall, ctx: Context) -> ModelResponse:  # type: ignore[override]
        raise AssertionError("never run")


class Nameless(Policy):
    async def on_request(self, call: ModelCall, ctx: Context) -> None:
        return None


class CountConfig(PolicyConfig):
    header: str


class Count(Policy[CountConfig]):
    """Counts calls in its per-request state across retries; reports it in a header."""

    name = "count"

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        state = ctx.state.setdefault(self.slot, {"calls": 0})
        state["calls"] += 1
        response = await next(call, ctx)
        ctx.response_headers[self.config.header] = f"{self.slot}={state['calls']}"
        return response


@pytest.mark.parametrize(
    ("policy", "problem"),
    [
        (AsyncStream(), "on_response_stream must be a plain `def` (not async)"),
        (SyncCall(), "on_model_call must be an `async def`"),
        (TwoArgCall(), "on_model_call must take 3 argument(s) besides self"),
        (Nameless(), "sets no name"),
    ],
)
def test_a_wrong_policy_is_refused_when_the_pipeline_is_built(
    policy: Policy[Any], problem: str
) -> None:
    with pytest.raises(PolicyDefinitionError) as refused:
        Harness(policy)
    assert problem in str(refused.value)
    who = type(policy).name or f"{__name__}:{type(policy).__qualname__}"
    assert refused.value.problems[0][0] == who


def test_a_wrong_policy_in_yaml_is_a_config_error_with_its_line() -> None:
    text = textwrap.dedent(f"""
        providers: {{up: {{base_url: "http://127.0.0.1:9/v1", api_key: k}}}}
        models: {{"*": [{{provider: up}}]}}
        policies:
          - tracing: {{}}
          - {__name__}:AsyncStream: {{}}
    """)
    with pytest.raises(ConfigError) as refused:
        load_text(text)
    assert "<string>:6:" in str(refused.value)
    assert "on_response_stream must be a plain `def`" in str(refused.value)


def test_one_instance_listed_twice_is_refused() -> None:
    once = Count(CountConfig(header="x-a"))
    with pytest.raises(PolicyDefinitionError, match="the same instance is listed twice"):
        Harness(once, once)


def test_the_same_entry_twice_in_yaml_is_a_config_error() -> None:
    entry = f"  - {__name__}:Count: {{header: x-a}}\n"
    text = "providers: {up: {base_url: 'http://127.0.0.1:9/v1', api_key: k}}\n"
    text += "models: {'*': [{provider: up}]}\npolicies:\n" + entry * 2
    with pytest.raises(ConfigError, match="listed twice with the same settings"):
        load_text(text)


async def test_two_policies_of_one_name_keep_their_own_state() -> None:
    outer, inner = Count(CountConfig(header="x-outer")), Count(CountConfig(header="x-inner"))
    async with Harness(outer, inner) as harness:
        result = await harness.call(chat("hi"))
    assert (outer.slot, inner.slot) == ("count", "count#2")
    assert result.ctx.response_headers == {"x-outer": "count=1", "x-inner": "count#2=1"}
    assert result.decisions == {"count": "allow", "count#2": "allow"}


def test_yaml_gives_the_second_of_a_name_its_own_slot_in_every_set() -> None:
    text = textwrap.dedent(f"""
        providers: {{up: {{base_url: "http://127.0.0.1:9/v1", api_key: k}}}}
        models: {{"*": [{{provider: up}}]}}
        policies:
          - {__name__}:Count: {{header: x-a}}
          - {__name__}:Count: {{header: x-b}}
        policy_sets:
          solo:
            policies: [{{{__name__}:Count: {{header: x-b}}}}]
    """)
    loaded = load_text(text)
    assert [p.slot for p in loaded.sets["default"]] == ["count", "count#2"]
    (solo,) = loaded.sets["solo"]
    assert solo.slot == "count" and solo is not loaded.sets["default"][1]
