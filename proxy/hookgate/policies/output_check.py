"""``output_check``: validate a model's final answer, and ask again with the error.

YAML (one of ``json_schema`` and ``pattern``)::

    - output_check:
        json_schema:                     # the answer must be JSON valid against this schema
          type: object
          required: [city, forecast]
        pattern: "^[A-Z]{3}-\\\\d{4}$"    # or: the answer must match this regex (search)
        models: ["*"]                    # which model names (globs) it applies to
        retries: 2                       # times the model is asked again
        message: "Your answer is not valid: {error}. Answer again with only the corrected answer."
        on_failure: continue             # after the last retry: pass the answer on, or
                                         #   error (a 422 output_invalid)
        streams: hold                    # hold a streamed answer until it passed, or pass
                                         #   streams through unchecked

A final answer is a chat completion or Responses result that calls no tool; its text is
checked (a fenced ```json block is read as its content). When it fails, the model's answer
and the message (``{error}`` is what failed) are added to the conversation and the model is
called again, up to ``retries`` times — LangChain's ``after_model`` with ``jump_to``,
cubeloop's ``after_model_response`` that loops back to the model, expressed as the
``on_model_call`` onion calling ``next`` again. It runs in the proxy and in the SDK (every
in-process model call). A streamed answer cannot be judged before it ends, so with
``streams: hold`` (the default) it is held: the client (or the framework, as cubeloop,
which always streams) receives the stream of the answer that passed — or of the last one —
as it came from the model, once it is judged; ``streams: pass`` lets streams through
unchecked. List it before ``budget`` and ``rate_limit``, so each attempt is charged.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncGenerator, Sequence
from typing import Any, ClassVar, Literal

import jsonschema
import orjson
from pydantic import Field, field_validator, model_validator

from hookgate.errors import HookgateError
from hookgate.pipeline.hooks import Next, Policy, PolicyConfig
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.policies.globs import listed
from hookgate.policies.vocabulary import OnFailure
from hookgate.wire import prompts
from hookgate.wire.usage import ResponseFacts, StreamFacts, facts_of

RETRY = "Your answer is not valid: {error}. Answer again with only the corrected answer."


class OutputInvalid(HookgateError):
    """The model's final answer failed ``output_check`` after every retry (``on_failure:
    error``)."""

    status = 422
    type = "invalid_request_error"
    code = "output_invalid"


class OutputCheckConfig(PolicyConfig):
    """Settings of the ``output_check`` policy."""

    json_schema: dict[str, Any] | None = None
    """The answer must be JSON valid against this schema (give this or ``pattern``)."""
    pattern: str | None = None
    """The answer must match this regular expression (searched; give this or ``json_schema``)."""
    models: tuple[str, ...] = ("*",)
    """The model names (globs) it applies to."""
    retries: int = Field(2, ge=0, le=10)
    """Times the model is asked again after a failing answer."""
    message: str = RETRY
    """What the model reads with its failing answer; ``{error}`` is what failed."""
    on_failure: OnFailure = "continue"
    """After the last retry: ``continue`` passes the answer on, ``error`` is a 422
    ``output_invalid``."""
    streams: Literal["hold", "pass"] = "hold"
    """``hold`` a streamed answer until it is judged, or ``pass`` streams through unchecked."""

    @field_validator("json_schema")
    @classmethod
    def _schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            jsonschema.validators.validator_for(value).check_schema(value)
        return value

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            re.compile(value)
        return value

    @model_validator(mode="after")
    def _one_check(self) -> OutputCheckConfig:
        if (self.json_schema is None) == (self.pattern is None):
            raise ValueError("set exactly one of json_schema and pattern")
        return self


class OutputCheckPolicy(Policy[OutputCheckConfig]):
    """See the module docstring."""

    name: ClassVar[str] = "output_check"

    def __init__(self, config: OutputCheckConfig) -> None:
        super().__init__(config)
        self._pattern = re.compile(config.pattern) if config.pattern is not None else None
        self._validator = (
            jsonschema.validators.validator_for(config.json_schema)(config.json_schema)
            if config.json_schema is not None
            else None
        )

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        if (
            (call.stream and self.config.streams == "pass")
            or call.api not in ("chat.completions", "responses")
            or not listed(call.model, self.config.models)
        ):
            return await next(call, ctx)
        response, answer = await _judged(call, ctx, next)
        for retry in range(self.config.retries + 1):
            error = None if answer is None else self.error(answer)
            if error is None:
                return response
            if retry == self.config.retries:
                break
            state = ctx.state.setdefault(self.slot, {})
            state["retries"] = retry + 1
            assert answer is not None
            call = _asked_again(call, answer, self.config.message.replace("{error}", error))
            response, answer = await _judged(call, ctx, next)
        if self.config.on_failure == "error":
            raise OutputInvalid(f"the model's answer failed the output check: {error}")
        return response

    def error(self, answer: str) -> str | None:
        """What is wrong with ``answer``, or None when it passes."""
        if self._pattern is not None:
            if self._pattern.search(answer):
                return None
            return f"it does not match the pattern {self._pattern.pattern!r}"
        assert self._validator is not None
        try:
            value = orjson.loads(_unfenced(answer))
        except orjson.JSONDecodeError:
            return "it is not JSON"
        problem = jsonschema.exceptions.best_match(self._validator.iter_errors(value))
        if problem is None:
            return None
        where = "/".join(str(p) for p in problem.absolute_path)
        return f"{problem.message} (at {where})" if where else problem.message


async def _judged(call: ModelCall, ctx: Context, next: Next) -> tuple[ModelResponse, str | None]:
    """The model's response, a stream read to its end and replayed, and the text of its final
    answer (None when it calls a tool or failed)."""
    response = await next(call, ctx)
    if response.stream is None:
        if response.status >= 300 or response.payload is None:
            return response, None
        return response, _answer(facts_of(call.api, response.body, collect_text=True))
    facts = StreamFacts(call.api, collect_text=True)
    events: list[bytes] = []
    try:
        async for batch in response.stream:
            facts.feed(batch)
            events.append(batch)
    finally:
        await response.stream.aclose()
    return dataclasses.replace(response, stream=_replay(events)), _answer(facts.facts)


def _answer(facts: ResponseFacts) -> str | None:
    if "tool_calls" in facts.finish_reasons or "function_call" in facts.finish_reasons:
        return None
    return "".join(facts.text)


async def _replay(events: Sequence[bytes]) -> AsyncGenerator[bytes, None]:
    for batch in events:
        yield batch


def _asked_again(call: ModelCall, answer: str, message: str) -> ModelCall:
    messages = list(prompts.messages_of(call.api, call.body) or ())
    messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": message}]
    return call.with_body(prompts.with_messages(call.api, call.body, messages))


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.S)


def _unfenced(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text
