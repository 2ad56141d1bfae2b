"""The examples in the README run, and the README's two commands are the ones CI uses."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from hookgate import Context, JsonBody, ModelCall, ModelResponse, Target
from hookgate.errors import PolicyBlocked

README = Path("README.md").read_text()


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.S)


async def test_policy_example_runs() -> None:
    (source,) = python_blocks()
    namespace: dict[str, Any] = {}
    exec(compile(source, "README.md", "exec"), namespace)
    policy = namespace["NoSecrets"](namespace["NoSecretsConfig"](word="hunter2"))
    target = Target("up", None)
    ok = ModelResponse(200, {}, target, payload=JsonBody.from_data({"ok": True}))

    async def upstream(call: ModelCall, ctx: Context) -> ModelResponse:
        return ok

    def call(text: str) -> ModelCall:
        body = {"model": "m", "messages": [{"role": "user", "content": text}]}
        return ModelCall(
            api="chat.completions",
            payload=JsonBody.from_data(body),
            model="m",
            stream=False,
            targets=(target,),
        )

    ctx = Context(request_id="r", api="chat.completions")
    assert await policy.on_model_call(call("hello"), ctx, upstream) is ok
    with pytest.raises(PolicyBlocked):
        await policy.on_model_call(call("my password is hunter2"), ctx, upstream)


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```sh\n(.*?)\n```", README, flags=re.S)
    run, test = commands[0].strip(), commands[1].strip()
    assert (run, test) == ("make run", "make test")
    assert Path(".ci/run").read_text().strip().endswith(f"exec {test}")
