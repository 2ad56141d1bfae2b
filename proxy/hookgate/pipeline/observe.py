"""What is observed about a model call, and the interfaces telemetry plugs into.

Pure: no OpenTelemetry and no prometheus-client here. The tracing policy supplies a
:class:`Spans` implementation; the runner (:mod:`hookgate.pipeline.runner`, in the proxy
and the SDK) builds an :class:`Outcome` when a call is completely done (after the last
byte of a stream) and hands it to every ``on_finish`` callback; the proxy then to the
metrics and the audit log. Telemetry never fails a call: the runner logs and drops any
exception a callback raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from hookgate.errors import HookgateError, error_type
from hookgate.wire.usage import Charge, HostedToolCall, ResponseFacts, Usage

AttributeValue = str | bool | int | float | Sequence[str] | Sequence[int] | Sequence[float]
Attributes = Mapping[str, AttributeValue]


class Span(Protocol):
    """One span, as the pipeline needs it."""

    def set_attributes(self, attributes: Attributes) -> None: ...

    def add_event(
        self, name: str, attributes: Attributes | None = None, time_ns: int | None = None
    ) -> None:
        """Add an event, at ``time_ns`` (ns since the epoch) or now."""
        ...

    def record_error(self, error_type: str, message: str) -> None: ...

    def trace_headers(self) -> dict[str, str]:
        """W3C ``traceparent``/``tracestate`` that continue this span downstream."""
        ...

    def end(self) -> None: ...


class Spans(Protocol):
    """The request's span, as the pipeline reaches it: child spans (guardrails) and the
    trace context the upstream continues."""

    def start(self, name: str, attributes: Attributes | None = None) -> Span: ...

    def trace_headers(self) -> Mapping[str, str]:
        """W3C ``traceparent``/``tracestate`` that continue the request's span upstream."""
        ...


@dataclass(frozen=True, slots=True)
class Metric:
    """A metric a policy reports, declared where the policy is (a module constant).

    The server registers it on its Prometheus registry the first time a request reports
    it, under ``name`` (a counter is exposed as ``name_total``). Label values named
    ``model`` or ``target`` are bounded like the server's own (unknown ones become
    ``other`` past a limit); any other label must take few values (never a key, a user
    or text). A new policy's metric needs no change anywhere else.
    """

    name: str
    help: str
    labels: tuple[str, ...] = ()
    kind: Literal["counter", "gauge"] = "counter"
    merge: Literal["last", "max", "min", "sum"] = "last"
    """A gauge served by several worker processes (``server.workers``) is one series on
    ``/metrics``: the value set last by any worker, or the max, min or sum over the
    running workers. (Counters are summed over every worker, past ones included.)"""


@dataclass(frozen=True, slots=True)
class Measure:
    """One value a request reports for a :class:`Metric`: added to a counter, set on a
    gauge."""

    metric: Metric
    labels: tuple[str, ...]
    value: float


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """Something that happened during a call, for its span: a name, attributes (never
    content) and when (ns since the epoch)."""

    name: str
    attributes: Attributes
    time_ns: int


@dataclass(frozen=True, slots=True)
class UpstreamAddress:
    """Where an attempt went: the provider's kind and its host and port."""

    provider_kind: str
    host: str | None = None
    port: int | None = None


CANCELLED = "cancelled"
"""Attempt outcome of an attempt cancelled from outside (a timeout, a client gone)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One upstream attempt, as the terminal handler saw it."""

    target: str
    """``provider/model``."""
    outcome: str
    """``ok``, or the error code (``upstream_timeout``, ``http_503``, ``cancelled``, ...)."""
    address: UpstreamAddress
    started_ns: int
    ended_ns: int
    """Wall-clock bounds (ns since the epoch): until the headers, for a stream."""
    message: str | None = None
    """What went wrong (an error message of our own; never upstream content)."""


@dataclass(slots=True)
class Outcome:
    """How a request ended. Built once by the server, read by finish callbacks."""

    status: int
    stream: bool
    target: str | None
    """``provider/model`` that served (or last failed)."""
    error_type: str | None = None
    """The error ``code`` (e.g. ``upstream_timeout``) or ``http_<status>``; None on success."""
    error_message: str | None = None
    usage: Usage | None = None
    response_id: str | None = None
    response_model: str | None = None
    finish_reasons: tuple[str, ...] = ()
    duration_s: float = 0.0
    upstream_s: float = 0.0
    """Time spent waiting on the upstream (connect, headers, body, stream events)."""
    ttft_s: float | None = None
    """Time to the first streamed event written to the client."""
    output_text: str | None = None
    """The model's output text, collected only when a policy asked for it."""
    hosted_tools: tuple[HostedToolCall, ...] = ()
    """Tools the provider ran itself during the call (web search, ...)."""

    def failed(self, exc: BaseException) -> None:
        """Record the error the request ended with: its type, and the message a hookgate
        error carries (other exceptions' text stays out of telemetry)."""
        self.error_type = error_type(exc)
        if isinstance(exc, HookgateError):
            self.error_message = exc.message

    def take(self, facts: ResponseFacts, *, collect_text: bool = False) -> None:
        """Copy what the response said about itself (usage, ids, finish reasons, hosted
        tool calls; its text when ``collect_text``)."""
        self.usage, self.response_id = facts.usage, facts.response_id
        self.response_model = facts.response_model
        self.finish_reasons = tuple(facts.finish_reasons)
        self.hosted_tools = tuple(facts.hosted_tools)
        if collect_text:
            self.output_text = "".join(facts.text)


@dataclass(slots=True)
class Observation:
    """The mutable telemetry slot of one request's :class:`~hookgate.pipeline.types.Context`."""

    spans: Spans | None = None
    trace_id: str | None = None
    upstream: UpstreamAddress | None = None
    upstream_s: float = 0.0
    capture_output: bool = False
    sent_body: Mapping[str, Any] | None = None
    """The body of the latest upstream attempt as sent, after every policy (so redacted):
    what content capture records as the model's input. Held by reference."""
    stream_facts: ResponseFacts | None = None
    """Facts of the upstream stream of the attempt that answered, read from its events
    as they arrive, before any policy wraps or rewrites the stream."""
    decisions: dict[str, str] = field(default_factory=dict)
    """Policy name → ``allow``, ``modify`` or ``block`` (the strongest seen)."""
    attempts: list[Attempt] = field(default_factory=list)
    """Every upstream attempt, in order."""
    on_finish: list[Callable[[Outcome], None]] = field(default_factory=list)
    """Called by the server, in order, once the request is completely done."""
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    """Extra attributes for the request's span (e.g. budget decisions)."""
    findings: dict[str, int] = field(default_factory=dict)
    """Guardrail findings for the audit log: ``"EMAIL_ADDRESS:pseudonymize"`` →
    occurrences handled in this request. Counts only, never values."""
    charge: Charge | None = None
    """Set by the budget policy as it settles: the audit log, metrics and the span then
    report the spend the ledger holds, estimate included (see :class:`Charge`)."""
    measures: list[Measure] = field(default_factory=list)
    """What policies and providers report for their own metrics (see :class:`Metric`)."""
    events: list[SpanEvent] = field(default_factory=list)
    """Events for the call's span, in order (the tracing policy adds them)."""

    def decide(self, policy: str, decision: str) -> None:
        """Record a policy decision, keeping the strongest (block > modify > allow)."""
        if _RANK[decision] > _RANK.get(self.decisions.get(policy, ""), -1):
            self.decisions[policy] = decision

    def count(self, metric: Metric, *labels: str, by: float = 1) -> None:
        """Add ``by`` to a counter of a policy's own (see :class:`Metric`)."""
        self.measures.append(Measure(metric, labels, by))

    def gauge(self, metric: Metric, *labels: str, value: float) -> None:
        """Set a gauge of a policy's own to ``value`` (the last one set wins)."""
        self.measures.append(Measure(metric, labels, value))

    def event(self, name: str, attributes: Attributes) -> None:
        """Record an event for the call's span, timed now."""
        self.events.append(SpanEvent(name, attributes, time.time_ns()))


_RANK = {"allow": 0, "modify": 1, "block": 2}
