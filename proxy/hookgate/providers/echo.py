"""The built-in ``echo`` provider: answers locally, clearly labelled, in every API's shape.

It repeats the last user message as ``[hookgate echo] ...``; if the request offers tools
and no tool result has come back yet, it calls the first tool once, so an agent's tool
loop can be tried without a model. Responses carry model ``echo`` and usage counted in
words. Useful to try hookgate without a key and in users' own tests.

Anthropic's Messages API is answered in its own shape (a ``message``, or its event stream).
There a user message's text is its string content, or the text of its ``text`` blocks and
of its ``tool_result`` blocks (whose content is a string or text blocks); tool results
come back inside user messages, so after one the echo repeats the result. ``count_tokens``
answers the word count of the system prompt and the messages, the ``input_tokens`` a
Messages reply reports.

It has no models of its own to list, and nowhere to relay a request outside the model
pipeline to (:meth:`EchoProvider.relay` is a 404).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from hookgate.errors import InvalidRequest, NotFound
from hookgate.pipeline.observe import Observation, UpstreamAddress
from hookgate.pipeline.types import JsonBody, ModelCall, ModelResponse, Target
from hookgate.providers.base import Relayed
from hookgate.wire import prompts, synth

PREFIX = "[hookgate echo] "


class EchoProvider:
    """See the module docstring."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.address = UpstreamAddress("hookgate.echo")

    async def send(
        self, call: ModelCall, target: Target, observation: Observation
    ) -> ModelResponse:
        body = call.body
        model = "echo"
        headers = {
            "content-type": "text/event-stream" if call.stream else "application/json",
            "x-hookgate-echo": "true",
        }
        if call.api == "embeddings":
            inputs = body.get("input")
            if not isinstance(inputs, str | list):
                raise InvalidRequest("'input' must be a string or an array", param="input")
            texts = [inputs] if isinstance(inputs, str) else [str(i) for i in inputs]
            data = synth.embeddings(model, texts)
            return ModelResponse(
                status=200, headers=headers, target=target, payload=JsonBody.from_data(data)
            )
        if call.api == "messages.count_tokens":
            count = synth.count_tokens_object(_messages_words(body, _messages(body)))
            json_headers = {**headers, "content-type": "application/json"}
            return ModelResponse(
                status=200, headers=json_headers, target=target, payload=JsonBody.from_data(count)
            )
        reply = _messages_reply(body) if call.api == "messages" else _reply(call)
        if call.stream:
            stream = _agen(synth.answer_stream(call.api, body, reply, model))
            return ModelResponse(status=200, headers=headers, target=target, stream=stream)
        data = synth.answer_object(call.api, reply, model)
        return ModelResponse(
            status=200, headers=headers, target=target, payload=JsonBody.from_data(data)
        )

    def relay(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: AsyncIterable[bytes] | None,
    ) -> AbstractAsyncContextManager[Relayed]:
        """Raises :class:`NotFound`: only the model endpoints are answered locally."""
        raise NotFound(
            f"Unknown request URL: {method} /v1{path} (provider {self.name!r} answers "
            "locally and serves only model endpoints)"
        )

    async def models(self) -> list[dict[str, Any]]:
        """None: the echo answers under any model name."""
        return []


async def _agen(blocks: Iterable[bytes]) -> AsyncGenerator[bytes, None]:
    for block in blocks:
        yield block


def _reply(call: ModelCall) -> synth.Reply:
    if call.api == "completions":
        prompt = call.body.get("prompt")
        text = prompt if isinstance(prompt, str) else str(prompt)
        return synth.Reply(
            text=PREFIX + text, input_tokens=len(text.split()), output_tokens=len(text.split()) + 2
        )
    messages = list(prompts.messages_of(call.api, call.body) or ())
    tools = call.body.get("tools")
    if isinstance(tools, list) and tools and not any(_is_tool_result(m) for m in messages):
        name = _tool_name(tools[0])
        if name:
            return synth.Reply(tool_calls=[synth.ToolCall("call_echo_1", name, "{}")])
    text = next((_text(m) for m in reversed(messages) if _is_input(m)), "")
    words = sum(len(_text(m).split()) for m in messages if isinstance(m, Mapping))
    return synth.Reply(text=PREFIX + text, input_tokens=words, output_tokens=len(text.split()) + 2)


def _is_tool_result(message: Any) -> bool:
    return isinstance(message, Mapping) and (
        message.get("role") == "tool" or message.get("type") == "function_call_output"
    )


def _is_input(message: Any) -> bool:
    return isinstance(message, Mapping) and (
        message.get("role") == "user" or _is_tool_result(message)
    )


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
    return name if isinstance(name, str) else None


def _text(message: Any) -> str:
    if not isinstance(message, Mapping):
        return ""
    content = message.get("content", message.get("output", ""))
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _messages(body: Mapping[str, Any]) -> list[Any]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise InvalidRequest("'messages' must be an array", param="messages")
    return messages


def _messages_reply(body: Mapping[str, Any]) -> synth.Reply:
    """The Messages API counterpart of :func:`_reply`."""
    messages = _messages(body)
    words = _messages_words(body, messages)
    tools = body.get("tools")
    if isinstance(tools, list) and tools and not any(_has_tool_result(m) for m in messages):
        name = _tool_name(tools[0])
        if name:
            call = synth.ToolCall("toolu_echo_1", name, "{}")
            return synth.Reply(tool_calls=[call], input_tokens=words)
    text = next(
        (
            _block_text(m.get("content"))
            for m in reversed(messages)
            if isinstance(m, Mapping) and m.get("role") == "user"
        ),
        "",
    )
    return synth.Reply(text=PREFIX + text, input_tokens=words, output_tokens=len(text.split()) + 2)


def _messages_words(body: Mapping[str, Any], messages: list[Any]) -> int:
    """Words of the system prompt and of every message's text."""
    texts = [_block_text(body.get("system"))]
    texts += [_block_text(m.get("content")) for m in messages if isinstance(m, Mapping)]
    return sum(len(text.split()) for text in texts)


def _has_tool_result(message: Any) -> bool:
    if not isinstance(message, Mapping) or not isinstance(message.get("content"), list):
        return False
    return any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in message["content"]
    )


def _block_text(content: Any) -> str:
    """The text of Messages content: a string, or its text and tool_result blocks."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(_block_text(block.get("content")))
    return " ".join(part for part in parts if part)
