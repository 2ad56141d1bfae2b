"""``tracing``: one OpenTelemetry CLIENT span per model call, GenAI conventions, OTLP export.

YAML (every key optional)::

    - tracing:
        exporter: auto            # auto | otlp | console | none (auto: otlp when an
                                  #   endpoint is set here or in OTEL_EXPORTER_OTLP_*)
        protocol: http/protobuf   # or grpc; default from OTEL_EXPORTER_OTLP_PROTOCOL
        endpoint: null            # default from OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT
        headers: {}               # e.g. {authorization: "Bearer ${COLLECTOR_TOKEN}"}
        timeout_s: 10             # default from OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT
        service_name: hookgate    # default from OTEL_SERVICE_NAME, then service.name in
                                  #   OTEL_RESOURCE_ATTRIBUTES, then hookgate
        sample_ratio: 1.0         # parent-based: a client's sampled trace is always kept;
                                  #   default from OTEL_TRACES_SAMPLER(_ARG), else always on
        capture_content: false    # prompts/completions as span attributes (after redaction)
        max_queue_size: 2048      # spans beyond it are dropped and counted, never waited on
                                  #   (default from OTEL_BSP_MAX_QUEUE_SIZE, else 2048; also
                                  #   max_export_batch_size, schedule_delay_s: OTEL_BSP_*)

Every standard ``OTEL_*`` variable means what it means everywhere else: a setting written
here wins, else the variable, else hookgate's default (:mod:`hookgate.telemetry.settings`).
The resource carries every attribute of ``OTEL_RESOURCE_ATTRIBUTES``.

The span is named ``{gen_ai.operation.name} {gen_ai.request.model}``, continues the
client's W3C trace (``traceparent``/``tracestate``), and is the context the upstream
receives. When any upstream attempt failed (a retry, a fallback, an error), each attempt
becomes a child span with its own bounds and ``error.type``. It ends when the request is done
(for a stream: after its last event), with response id, model, finish reasons, token
usage, the upstream's ``server.address`` and, on failure, ``error.type``. List it first
so that it wraps every other policy. Content is off by default; when on, the span carries
the messages as the model saw them (after any redaction policy) and the output before any
restoring policy runs. The span starts in ``on_request``, before every other hook, so
guardrail spans of later policies are its children.

With nothing to export to (``exporter: none``, or ``auto`` with no endpoint: the shipped
default), the call's span is made for its ids alone — the trace id of the audit record and
the metrics' exemplars, the ``traceparent`` the upstream receives — and gathers no
attributes (``python -m bench.instructions``: the as-shipped default's cost; see
docs/performance.md).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from opentelemetry import trace
from opentelemetry.trace import SpanKind
from pydantic import Field

from hookgate.pipeline.agent import (
    NextReply,
    NextTool,
    Reply,
    ReplyContext,
    ReplyPaused,
    ToolCall,
    ToolResult,
)
from hookgate.pipeline.hooks import Next, Policy, PolicyConfig
from hookgate.pipeline.observe import Attempt, AttributeValue, Metric, Outcome
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.telemetry import semconv
from hookgate.telemetry.settings import env_int, env_protocol, otlp_endpoint_in_env
from hookgate.telemetry.shipper import SpanShipper
from hookgate.telemetry.tracing import (
    CallSpan,
    OtelSpan,
    OtelSpans,
    make_provider,
    parent_context,
    service_resource,
    start_call_span,
)
from hookgate.wire import prompts
from hookgate.wire.usage import HostedToolCall, facts_of

log = logging.getLogger("hookgate")

SPANS_DROPPED = Metric(
    "hookgate_trace_spans_dropped", "Spans dropped because the export queue was full"
)


class TracingConfig(PolicyConfig):
    """Settings of the ``tracing`` policy."""

    exporter: Literal["auto", "otlp", "console", "none"] = "auto"
    """``auto``: OTLP when an endpoint is configured (here or by ``OTEL_EXPORTER_OTLP_*``),
    else spans are made (trace ids, exemplars, propagation) but not exported."""
    protocol: Literal["http/protobuf", "grpc"] | None = None
    """OTLP over ``http/protobuf`` or ``grpc``. Default: ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL``,
    else ``http/protobuf``."""
    endpoint: str | None = None
    """The collector. Default: ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT``."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Headers of every export request. Default: ``OTEL_EXPORTER_OTLP_(TRACES_)HEADERS``."""
    timeout_s: Annotated[float, Field(gt=0)] | None = None
    """Default: ``OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT``, else 10 s."""
    service_name: str | None = None
    """Default: ``OTEL_SERVICE_NAME``, else ``service.name`` in
    ``OTEL_RESOURCE_ATTRIBUTES``, else ``hookgate``."""
    sample_ratio: Annotated[float, Field(ge=0, le=1)] | None = None
    """Parent-based ratio. Default: ``OTEL_TRACES_SAMPLER``/``_ARG``, else always on."""
    capture_content: bool = False
    """Prompts and completions as span attributes, as the model saw them (after redaction)."""
    max_queue_size: Annotated[int, Field(gt=0)] | None = None
    """Finished spans waiting for the export worker; beyond it they are dropped and counted.
    Default: ``OTEL_BSP_MAX_QUEUE_SIZE``, else 2048."""
    max_export_batch_size: Annotated[int, Field(gt=0)] | None = None
    """Spans per export request; a queue this long is handed to the worker at once.
    Default: ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``, else 512."""
    schedule_delay_s: Annotated[float, Field(gt=0)] | None = None
    """The longest a span waits in the queue before it is handed to the worker, in
    seconds. Default: ``OTEL_BSP_SCHEDULE_DELAY`` (milliseconds, as OpenTelemetry counts
    it), else 1 s."""


@functools.cache
def _say_spans_are_not_exported() -> None:
    """Once per process: a worker of ``hookgate serve --workers N`` is forked from the
    parent, which said it when it read the config, so a server says it once (and a reload
    does not repeat it)."""
    log.info("tracing: no OTLP endpoint configured; spans are not exported")


class TracingPolicy(Policy[TracingConfig]):
    """See the module docstring."""

    name = "tracing"
    metrics = (SPANS_DROPPED,)

    def __init__(self, config: TracingConfig) -> None:
        super().__init__(config)
        kind = config.exporter
        if kind == "auto":
            kind = "otlp" if config.endpoint or otlp_endpoint_in_env() else "none"
            if kind == "none":
                _say_spans_are_not_exported()
        resource = service_resource(config.service_name)
        max_queue = config.max_queue_size or env_int("OTEL_BSP_MAX_QUEUE_SIZE", 2048)
        max_batch = config.max_export_batch_size or env_int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)
        delay_s = config.schedule_delay_s or env_int("OTEL_BSP_SCHEDULE_DELAY", 1000) / 1000
        self.shipper = (
            None
            if kind == "none"
            else SpanShipper(
                {"kind": kind, "protocol": config.protocol or env_protocol(),
                 "endpoint": config.endpoint, "headers": dict(config.headers),
                 "timeout_s": config.timeout_s, "resource": dict(resource.attributes),
                 "max_batch": max_batch},
                max_queue_size=max_queue,
                max_batch=max_batch,
                schedule_delay_s=delay_s,
            )
        )  # fmt: skip
        self.provider = make_provider(resource, config.sample_ratio, self.shipper)
        self.tracer = self.provider.get_tracer("hookgate")

    async def on_request(self, call: ModelCall, ctx: Context) -> None:
        exported = self.shipper is not None
        attributes: dict[str, AttributeValue] = {}
        if exported:  # else the span's ids are all anyone reads: no attributes are gathered
            attributes = semconv.request_attributes(call.api, call.model, call.body, ctx.session_id)
            attributes["hookgate.request_id"] = ctx.request_id
            if ctx.agent:
                attributes["hookgate.agent"] = ctx.agent
        reply = ctx.reply.span if ctx.reply is not None else None
        parent = (
            trace.set_span_in_context(reply.otel)
            if isinstance(reply, OtelSpan)
            else parent_context(dict(call.headers))
        )
        span = start_call_span(
            self.provider, self.shipper, semconv.span_name(call.api, call.model), parent,
            attributes,
        )  # fmt: skip
        observation = ctx.observation
        spans = observation.spans = OtelSpans(self.tracer, span.context)
        if span.context.trace_flags.sampled:
            observation.trace_id = format(span.context.trace_id, "032x")
        observation.capture_output = self.config.capture_content and call.stream
        state: dict[str, str] = {}
        ctx.state[self.slot] = state
        api = call.api
        if exported:
            observation.on_finish.append(
                lambda outcome: self._finish(span, spans, outcome, ctx, api)
            )

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        """With content capture: record what the model said, before outer policies
        rewrite it (what it saw is read in :meth:`_finish` from the body as sent)."""
        response = await next(call, ctx)
        if self.config.capture_content and response.payload is not None and response.status < 300:
            ctx.state[self.slot]["output"] = "".join(
                facts_of(call.api, response.body, collect_text=True).text
            )
        return response

    async def on_reply(self, reply: Reply, ctx: ReplyContext, next: NextReply) -> Any:
        """SDK: an ``invoke_agent {name}`` span around the whole reply; its
        ``hookgate.reply.status`` says how the reply ended (``ok``, ``error``, ``paused``:
        :data:`~hookgate.telemetry.semconv.REPLY_STATUSES`).

        Its context is what the reply's model requests carry as ``traceparent`` (see
        :mod:`hookgate.sdk.client`), so the proxy's spans are its children.
        """
        attributes: dict[str, AttributeValue] = {
            semconv.OPERATION_NAME: "invoke_agent",
            semconv.AGENT_NAME: ctx.agent,
            "hookgate.reply_id": ctx.reply_id,
        }
        if ctx.session_id:
            attributes[semconv.CONVERSATION_ID] = ctx.session_id
        span = self.tracer.start_span(
            f"invoke_agent {ctx.agent}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        ctx.span = OtelSpan(span)
        status = "error"  # unless it returns, or pauses for a human
        try:
            with trace.use_span(
                span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                result = await next(reply, ctx)
            status = "ok"
            return result
        except ReplyPaused:
            status = "paused"  # not an error: the reply continues when its run resumes
            raise
        except BaseException as exc:  # an error, a cancelled run
            ctx.span.record_error(type(exc).__name__, str(exc) or type(exc).__name__)
            raise
        finally:
            span.set_attributes(
                semconv.reply_attributes(ctx.turns, ctx.tool_calls, ctx.usage, status)
            )
            span.end()

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        """An ``execute_tool {name}`` span: in the SDK a child of the reply's span; in
        the MCP gateway, of the trace the caller sent (``ctx.parent_trace``).

        With ``capture_content`` the arguments and result are recorded as the model wrote
        and will read them (after any redaction by policies listed after this one). What
        the policies listed after this one found (``provenance``: source, sink, rule and
        action, never a value) is ``hookgate.findings``, where the caller records findings
        (the MCP gateway).
        """
        attributes: dict[str, AttributeValue] = {
            semconv.OPERATION_NAME: "execute_tool",
            semconv.TOOL_NAME: call.name,
            semconv.TOOL_TYPE: "function",
        }
        if call.call_id:
            attributes[semconv.TOOL_CALL_ID] = call.call_id
        if self.config.capture_content:
            attributes[semconv.TOOL_CALL_ARGUMENTS] = semconv.json_text(call.arguments)
        if isinstance(ctx.span, OtelSpan):
            parent = trace.set_span_in_context(ctx.span.otel)
        elif ctx.parent_trace:  # the MCP gateway's caller
            parent = parent_context(ctx.parent_trace)
        else:
            parent = trace.set_span_in_context(trace.get_current_span())
        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        try:
            result = await next(call, ctx)
        except Exception as exc:
            OtelSpan(span).record_error(type(exc).__name__, str(exc) or type(exc).__name__)
            span.end()
            raise
        if result.blocked:
            span.set_attribute("hookgate.tool.blocked", True)
        if ctx.observation is not None and ctx.observation.findings:  # the MCP gateway's
            span.set_attribute("hookgate.findings", sorted(ctx.observation.findings))
        if result.error:
            OtelSpan(span).record_error("tool_error", "the tool call failed or was refused")
        if self.config.capture_content:
            span.set_attribute(semconv.TOOL_CALL_RESULT, result.content)
        span.end()
        return result

    def _finish(
        self, span: CallSpan, spans: OtelSpans, outcome: Outcome, ctx: Context, api: str
    ) -> None:
        observation = ctx.observation
        attributes = semconv.outcome_attributes(outcome, observation.upstream)
        attributes.update(observation.attributes)
        state = ctx.state[self.slot]
        sent = observation.sent_body
        if self.config.capture_content and sent is not None:
            messages = prompts.messages_of(api, sent)
            if messages is not None:
                attributes[semconv.INPUT_MESSAGES] = semconv.input_messages(messages)
            stop = semconv.stop_sequences(sent)
            if stop is not None:
                attributes[semconv.REQUEST_STOP_SEQUENCES] = stop
        text = outcome.output_text if outcome.output_text is not None else state.get("output")
        if text:
            attributes[semconv.OUTPUT_MESSAGES] = semconv.output_messages(
                text, outcome.finish_reasons
            )
        span.set_attributes(attributes)
        for event in observation.events:
            span.add_event(event.name, event.attributes, event.time_ns)
        if outcome.stream and outcome.ttft_s is not None and outcome.error_type is not None:
            span.add_event("hookgate.stream_error", {"error.type": outcome.error_type})
        if outcome.error_type is not None:
            span.record_error(outcome.error_type, outcome.error_message or outcome.error_type)
        if any(attempt.outcome != "ok" for attempt in observation.attempts):
            _attempt_spans(spans, observation.attempts)
        _hosted_tool_spans(spans, outcome.hosted_tools)
        span.end()
        if self.shipper is not None and (dropped := self.shipper.take_dropped()):
            observation.count(SPANS_DROPPED, by=dropped)

    async def aclose(self) -> None:
        """Export what is queued and stop the export worker (bounded: see
        :data:`~hookgate.telemetry.shipper.SHUTDOWN_S`), off the event loop."""
        await asyncio.to_thread(self.provider.shutdown)


def _hosted_tool_spans(spans: OtelSpans, calls: Sequence[HostedToolCall]) -> None:
    """An ``execute_tool {name}`` span under the model call's for each tool the provider
    ran itself (its output items say that it ran, not when: the spans mark the call's end).
    A file search reads a datastore; the others are extensions."""
    for call in calls:
        attributes: dict[str, AttributeValue] = {
            semconv.OPERATION_NAME: "execute_tool",
            semconv.TOOL_NAME: call.name,
            semconv.TOOL_TYPE: "datastore" if call.type == "file_search" else "extension",
            "hookgate.tool.hosted": call.type,
        }
        if call.call_id:
            attributes[semconv.TOOL_CALL_ID] = call.call_id
        span = spans.start(f"execute_tool {call.name}", attributes)
        if call.status in ("failed", "incomplete"):
            span.record_error("tool_error", f"the provider's {call.type} call {call.status}")
        span.end()


def _attempt_spans(spans: OtelSpans, attempts: Sequence[Attempt]) -> None:
    """One ``attempt {target}`` child span per attempt, from the recorded bounds."""
    for attempt in attempts:
        address = attempt.address
        attributes: dict[str, AttributeValue] = {
            semconv.PROVIDER_NAME: address.provider_kind,
            "hookgate.target": attempt.target,
        }
        if address.host is not None:
            attributes[semconv.SERVER_ADDRESS] = address.host
        if address.port is not None:
            attributes[semconv.SERVER_PORT] = address.port
        child = spans.start(
            f"attempt {attempt.target}", attributes, kind=SpanKind.CLIENT,
            start_ns=attempt.started_ns,
        )  # fmt: skip
        if attempt.outcome != "ok":
            child.record_error(attempt.outcome, attempt.message or attempt.outcome)
        child.end(attempt.ended_ns)
