"""The values hooks receive and return: frozen, changed only through ``replace``-style methods.

A body travels as :class:`JsonBody`: a parsed JSON object, encoded at most once. A request
body is the object the server parsed and checked, encoded once when it goes upstream
(never the client's bytes: a duplicate key could carry a value past the policies); an
upstream answer keeps the bytes it was parsed from, so an answer no policy changes is
relayed as it came. A policy that changes a body returns a new one
(``call.with_body(...)``); hooks never mutate a body in place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import orjson

from hookgate.budgets.limits import Limit
from hookgate.budgets.rates import Rate
from hookgate.pipeline.agent import ReplyContext
from hookgate.pipeline.observe import Observation
from hookgate.wire import prompts
from hookgate.wire.sse import EventStream
from hookgate.wire.translate.gemini_native import GeminiRequest

Api = Literal[
    "chat.completions", "responses", "completions", "embeddings", "messages",
    "messages.count_tokens", "generate_content",
]  # fmt: skip
"""The endpoint a model call is for; decides the body's shape. The first four are
OpenAI's; ``messages`` and ``messages.count_tokens`` are Anthropic's Messages API
(``POST /v1/messages`` and ``POST /v1/messages/count_tokens``). ``generate_content`` is
Gemini's (``models/{model}:generateContent``): no client calls it, a Gemini provider is
sent calls translated to it."""


class JsonBody:
    """A parsed JSON object and, once known, its encoded bytes (encoded at most once)."""

    __slots__ = ("_data", "_raw")

    def __init__(self, raw: bytes | None, data: Mapping[str, Any]) -> None:
        self._raw = raw
        self._data = data

    @classmethod
    def parsed(cls, raw: bytes, data: Mapping[str, Any]) -> JsonBody:
        """Wrap bytes together with the object already parsed from them."""
        return cls(raw, data)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> JsonBody:
        """Wrap a new object; it is encoded on first call to :meth:`to_bytes`."""
        return cls(None, data)

    @property
    def data(self) -> Mapping[str, Any]:
        """The parsed object. Treat it as read-only."""
        return self._data

    def to_bytes(self) -> bytes:
        """The encoded object: the original bytes when the body was never replaced."""
        if self._raw is None:
            self._raw = orjson.dumps(self._data)
        return self._raw


@dataclass(frozen=True, slots=True)
class Target:
    """One upstream a model alias may be served by."""

    provider: str
    model: str | None
    """Upstream model name; ``None`` keeps the client's name."""
    priority: int = 0
    weight: float = 1.0
    context_window: int | None = None
    max_output_tokens: int | None = None
    """The model's most output tokens, when the config says (else the shipped table's)."""
    reasoning: bool | None = None
    """Whether the model reasons, when the config says (else the shipped table's)."""
    prefill: bool | None = None
    """Whether the model continues a final assistant message, when the config says (else
    the shipped table's)."""

    def label(self, requested: str) -> str:
        """``provider/model`` as reported in headers, spans and metrics."""
        return f"{self.provider}/{self.model or requested}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """One model request on its way upstream (built with keywords only).

    ``targets`` is the alias's ordered target list; the terminal handler sends to
    ``targets[0]``. A policy that wants another target (fallback, load balancing) calls
    ``next(call.with_targets((t,)), ctx)`` once per attempt.
    """

    api: Api
    payload: JsonBody
    model: str
    """The model name the client asked for (the alias)."""
    stream: bool
    targets: tuple[Target, ...]
    headers: Mapping[str, str] = field(default_factory=dict)
    """Client headers that will be forwarded upstream (already filtered)."""
    query: str = ""
    """The client's query string, as sent (``api-version=...``), forwarded upstream."""
    gemini: GeminiRequest | None = None
    """For a call a Gemini API client made (run as Chat Completions): its settings chat
    cannot carry (``topK``, ``safetySettings``, its exact ``thinkingConfig`` and tool
    schemas, Google Search...), which a Gemini target gets back and every other ignores
    (:mod:`hookgate.wire.translate.gemini_native`). Copies made by ``with_*`` and
    ``dataclasses.replace`` keep it; a new call a policy makes (a summary) has none."""

    @property
    def body(self) -> Mapping[str, Any]:
        """The request body as a read-only mapping."""
        return self.payload.data

    @property
    def messages(self) -> Sequence[Any]:
        """The call's messages in the client's shape, as ``convert_to_llm`` gets them:
        chat ``messages``, Responses ``input`` items (a string as one user message), or
        Anthropic Messages ``messages``; empty for embeddings and completions. Raises
        :class:`~hookgate.errors.InvalidRequest` when the body's list is malformed."""
        return prompts.messages_of(self.api, self.body) or ()

    def with_body(self, body: Mapping[str, Any]) -> ModelCall:
        """A copy carrying a new body (encoded once, when it is sent)."""
        return dataclasses.replace(self, payload=JsonBody.from_data(body))

    def with_targets(self, targets: tuple[Target, ...]) -> ModelCall:
        """A copy that will be sent to ``targets[0]``."""
        return dataclasses.replace(self, targets=targets)

    def with_headers(self, headers: Mapping[str, str]) -> ModelCall:
        """A copy forwarding ``headers`` upstream instead."""
        return dataclasses.replace(self, headers=headers)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """What came back for a :class:`ModelCall`: a JSON body, or an SSE stream (built with
    keywords only).

    Exactly one of ``payload`` and ``stream`` is set. ``stream`` yields raw SSE events
    as they arrive (see :class:`EventStream`); the provider layer guarantees a
    stream that ends without its protocol's terminal event raises
    :class:`~hookgate.errors.UpstreamReset` instead of ending quietly.
    """

    status: int
    headers: Mapping[str, str]
    """Upstream headers worth relaying to the client (``x-request-id``, ratelimits)."""
    target: Target
    payload: JsonBody | None = None
    stream: EventStream | None = None

    @property
    def body(self) -> Mapping[str, Any]:
        """The JSON body of a non-streamed response, already parsed (treat it as
        read-only); a streamed response has none (:class:`TypeError`)."""
        if self.payload is None:
            raise TypeError("a streamed response has no body; use on_response_stream")
        return self.payload.data

    def with_body(self, body: Mapping[str, Any]) -> ModelResponse:
        """A copy carrying a new JSON body."""
        return dataclasses.replace(self, payload=JsonBody.from_data(body))


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is calling. Without virtual keys every caller is ``anonymous``.

    ``limits`` and ``rates`` are what the admin API granted the key and its team
    (:mod:`hookgate.store.grants`): the ``budget`` and ``rate_limit`` policies enforce
    them beside their YAML ones, each replacing a YAML one of the same scope and window.
    """

    key_id: str = "anonymous"
    team: str | None = None
    user: str | None = None
    limits: tuple[Limit, ...] = ()
    rates: tuple[Rate, ...] = ()


ANONYMOUS = Identity()


class Approver(Protocol):
    """Asks a person whether a tool call a model returned may reach the client, and waits
    (up to ``timeout_s``) for the answer: None when approved, else the text the model
    reads instead of the call (the approver's rejection, or that no one decided in
    time)."""

    async def __call__(
        self, ctx: Context, tool: str, arguments: Mapping[str, Any], call_id: str | None,
        reason: str, timeout_s: float,
    ) -> str | None: ...  # fmt: skip


@dataclass(frozen=True, slots=True)
class Context:
    """Per-request facts every hook may read, plus mutable slots.

    ``state`` is keyed by policy slot: a policy keeps what its pre- and post-steps share
    there (``ctx.state.setdefault(self.slot, {})``; see :class:`~hookgate.Policy`).
    ``response_headers`` collects ``x-hookgate-*`` headers policies want the client to
    see.
    """

    request_id: str
    api: Api
    identity: Identity = ANONYMOUS
    agent: str | None = None
    session_id: str | None = None
    reply_id: str | None = None
    policy_set: str = "default"
    """The policy set whose pipeline serves the request (see
    :mod:`hookgate.config.policy_sets`)."""
    state: dict[str, Any] = field(default_factory=dict)
    response_headers: dict[str, str] = field(default_factory=dict)
    observation: Observation = field(default_factory=Observation)
    """Telemetry of this request (spans, timings, policy decisions); see
    :mod:`hookgate.pipeline.observe`."""
    reply: ReplyContext | None = None
    """In the SDK: the agent reply this model call belongs to (None in the proxy)."""
    approver: Approver | None = None
    """In the proxy: asks a person about a tool call the model returned (the server sets
    it; None where no one can be asked)."""
