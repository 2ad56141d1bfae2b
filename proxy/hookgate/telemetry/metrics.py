"""Prometheus metrics, on a registry passed in (never the global one).

Every family is created once per app. Label values are bounded: model names that are
not configured aliases (requests through ``"*"``) are admitted up to a limit and then
reported as ``other``, so a client cannot blow up the series count; no key, user id or
prompt text is ever a label. Latency histograms carry the trace id as an exemplar
(visible with the OpenMetrics exposition) when the request was traced.

With ``server.workers`` above 1, every worker process records into files of one
directory (prometheus-client's multiprocess mode, :func:`use_multiprocess`) and
``/metrics``, on whichever worker serves it, reads them all (:attr:`Metrics.exposition`):
counters and histograms are summed over every worker, those that died included (a
replacement starts its own files, so nothing is counted twice), and each gauge is merged
as its :attr:`~hookgate.pipeline.observe.Metric.merge` says; the parent calls
:func:`worker_died` for a dead worker, so its "live" gauges stop counting. Exemplars are
not kept in that mode. Replicas on several hosts are aggregated by Prometheus.
"""

from __future__ import annotations

import os
import platform
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, values
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from hookgate.pipeline.observe import Measure, Metric, Observation, Outcome
from hookgate.version import __version__

LATENCY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)  # fmt: skip
OVERHEAD_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
)  # fmt: skip
TOKEN_TYPES = ("input", "output", "cached_input", "reasoning", "cache_write")
OTHER = "other"


GaugeMode = Literal["mostrecent", "livemax", "livemin", "livesum"]
MULTIPROCESS_MODES: dict[str, GaugeMode] = {
    "last": "mostrecent",
    "max": "livemax",
    "min": "livemin",
    "sum": "livesum",
}
"""prometheus-client's gauge mode for each :attr:`Metric.merge`."""


def use_multiprocess(directory: str) -> None:
    """Record this process's metric values in files under ``directory``, where
    ``/metrics`` of any process given the same ``directory`` reads them. Call it in a
    worker before it builds its :class:`Metrics`."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]


def worker_died(directory: str, pid: int) -> None:
    """Forget the "live" gauge values of worker ``pid`` (its counters keep counting)."""
    mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]


IDENTITY_LABELS = ("team", "key", "user", "agent")
"""Who made a request, as labels of the token and spend series (each opt-in)."""
NO_IDENTITY = ("",) * len(IDENTITY_LABELS)
"""The identity of a request when ``server.metric_labels`` shows none."""


class BoundedLabel:
    """Admits known values always and at most ``limit`` others; the rest become ``other``."""

    def __init__(self, known: Iterable[str] = (), limit: int = 100) -> None:
        self._admitted = set(known)
        self._extra = 0
        self._limit = limit
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        if not value:
            return "none"
        if value in self._admitted:
            return value
        with self._lock:
            if self._extra >= self._limit:
                return OTHER
            self._extra += 1
            self._admitted.add(value)
        return value


@dataclass(slots=True)
class _RequestSeries:
    """The children a request with one combination of labels (API, model, target,
    status, identity) touches, looked up once: those every request touches at once, the
    rest when first used (so a series appears only once it has something to say)."""

    requests: Any
    duration: Any
    overhead: Any
    upstream: Any
    tokens: dict[str, Any]
    """By token type."""
    cost: Any = None
    unpriced: Any = None


class Metrics:
    """The hookgate metric families and how an :class:`Outcome` feeds them.

    The server's own families are made here; a policy's own (:class:`Metric`) are made
    the first time a request reports them, so a new policy's metric needs no change here.

    Label children are cached: ``labels()`` validates and locks on every call, and a
    request touches a dozen series. Those its labels decide (requests, durations, tokens,
    spend) are cached together per label combination (:class:`_RequestSeries`), the rest
    (time to first token, decisions, attempts, policies' own) one by one; each when first
    used (so a series appears only once it has something to say).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        label_limit: int = 100,
        identity_limit: int = 100,
        multiprocess: str | None = None,
    ) -> None:
        """``multiprocess``: the directory of :func:`use_multiprocess`, when this process
        is one worker of several."""
        self.registry = registry
        self.exposition = registry
        """What ``/metrics`` exposes: ``registry``, or with ``multiprocess`` every
        worker's values read from their files."""
        if multiprocess is not None:
            self.exposition = CollectorRegistry()
            MultiProcessCollector(self.exposition, path=multiprocess)  # type: ignore[no-untyped-call]
        self._children: dict[tuple[object, ...], Any] = {}
        self._series: dict[tuple[str, ...], _RequestSeries] = {}
        self._policy_families: dict[str, Any] = {}
        self.model_label = BoundedLabel(limit=label_limit)
        self.target_label = BoundedLabel(limit=label_limit)
        self._identity_labels = tuple(BoundedLabel(limit=identity_limit) for _ in IDENTITY_LABELS)
        Info("hookgate_build", "hookgate build information", registry=self.exposition).info(
            {"version": __version__, "python": platform.python_version()}
        )
        self.requests = Counter(
            "hookgate_requests", "Model requests by API, model alias, serving target and status",
            ["api", "model", "target", "status"], registry=registry,
        )  # fmt: skip
        self.in_flight = Gauge(
            "hookgate_requests_in_flight", "Model requests being served", ["api"],
            registry=registry, multiprocess_mode="livesum",
        )  # fmt: skip
        self.duration = Histogram(
            "hookgate_request_duration_seconds", "Whole request, until the last byte is sent",
            ["api", "model"], buckets=LATENCY_BUCKETS, registry=registry,
        )  # fmt: skip
        self.upstream_duration = Histogram(
            "hookgate_upstream_duration_seconds", "Time spent waiting on the upstream",
            ["target"], buckets=LATENCY_BUCKETS, registry=registry,
        )  # fmt: skip
        self.overhead = Histogram(
            "hookgate_overhead_seconds", "The proxy's own time: total minus upstream wait",
            ["api"], buckets=OVERHEAD_BUCKETS, registry=registry,
        )  # fmt: skip
        self.ttft = Histogram(
            "hookgate_time_to_first_token_seconds", "Streams: request start to first event sent",
            ["model", "target"], buckets=LATENCY_BUCKETS, registry=registry,
        )  # fmt: skip
        self.tokens = Counter(
            "hookgate_tokens", "Tokens reported by the provider (cached within input, "
            "reasoning within output); team, key, user and agent only with "
            "server.metric_labels", ["model", "target", "type", *IDENTITY_LABELS],
            registry=registry,
        )  # fmt: skip
        self.cost = Counter(
            "hookgate_cost_usd", "Spend in USD from reported usage and the price table; "
            "team, key, user and agent only with server.metric_labels",
            ["model", "target", *IDENTITY_LABELS], registry=registry,
        )  # fmt: skip
        self.unpriced = Counter(
            "hookgate_unpriced_requests", "Requests whose model has no price (cost unknown)",
            ["model"], registry=registry,
        )  # fmt: skip
        self.decisions = Counter(
            "hookgate_policy_decisions", "Per request and policy: allow, modify or block",
            ["policy", "decision"], registry=registry,
        )  # fmt: skip
        self.attempts = Counter(
            "hookgate_upstream_attempts", "Upstream attempts by target and outcome "
            "(ok, or the error code: upstream_timeout, http_503, ...)",
            ["target", "outcome"], registry=registry,
        )  # fmt: skip
        self.stream_errors = Counter(
            "hookgate_stream_errors", "Streams ended with an error event after their first byte",
            ["target", "kind"], registry=registry,
        )  # fmt: skip
        self.tool_calls = Counter(
            "hookgate_mcp_tool_calls", "Tool calls through the MCP gateway by server, tool and "
            "outcome (ok, refused, tool_error, jsonrpc_error, mcp_unreachable, ...)",
            ["server", "tool", "outcome"], registry=registry,
        )  # fmt: skip
        self.tool_duration = Histogram(
            "hookgate_mcp_tool_call_duration_seconds", "A tool call through the MCP gateway, "
            "policies included", ["server", "tool"], buckets=LATENCY_BUCKETS, registry=registry,
        )  # fmt: skip
        self.tool_label = BoundedLabel(limit=label_limit)
        self.reloads = Counter(
            "hookgate_config_reloads", "Config reloads by result", ["result"], registry=registry
        )

    def _child(self, family: Any, *labels: str) -> Any:
        key = (id(family), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = family.labels(*labels)
        return child

    def observe_tool(self, server: str, tool: str, error: str | None, seconds: float) -> None:
        """Record one tool call of the MCP gateway (``error`` None: it succeeded)."""
        tool = self.tool_label(tool)
        self._child(self.tool_calls, server, tool, error or "ok").inc()
        self._child(self.tool_duration, server, tool).observe(seconds)

    def in_flight_gauge(self, api: str) -> Any:
        """The in-flight gauge child of ``api`` (cached)."""
        return self._child(self.in_flight, api)

    def known_models(self, aliases: Iterable[str], targets: Iterable[str]) -> None:
        """Admit the configured aliases and target labels (they never become ``other``)."""
        self.model_label = BoundedLabel(aliases, self.model_label._limit)
        self.target_label = BoundedLabel(targets, self.target_label._limit)

    def _series_for(
        self, api: str, model: str, target: str, status: str, identity: tuple[str, ...]
    ) -> _RequestSeries:
        key = (api, model, target, status, *identity)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _RequestSeries(
                requests=self.requests.labels(api, model, target, status),
                duration=self.duration.labels(api, model),
                overhead=self.overhead.labels(api),
                upstream=self.upstream_duration.labels(target),
                tokens={},
            )
        return series

    def observe(
        self,
        api: str,
        model: str,
        outcome: Outcome,
        observation: Observation,
        cost: float | None,
        identity: tuple[str, ...] = NO_IDENTITY,
    ) -> None:
        """Record one finished request. ``identity`` is ``(team, key id, user, agent)`` as
        allowed by ``server.metric_labels`` (empty strings for those not shown); past
        ``identity_limit`` distinct values of one of them, the rest count as ``other``."""
        if identity != NO_IDENTITY:
            identity = tuple(
                bound(value) if value else ""
                for bound, value in zip(self._identity_labels, identity, strict=True)
            )
        model_label = self.model_label(model)
        target_label = self.target_label(outcome.target)
        series = self._series_for(api, model_label, target_label, str(outcome.status), identity)
        exemplar = {"trace_id": observation.trace_id} if observation.trace_id else None
        series.requests.inc()
        series.duration.observe(outcome.duration_s, exemplar)
        if outcome.upstream_s:
            series.upstream.observe(outcome.upstream_s, exemplar)
        series.overhead.observe(max(0.0, outcome.duration_s - outcome.upstream_s), exemplar)
        if outcome.ttft_s is not None:
            self._child(self.ttft, model_label, target_label).observe(outcome.ttft_s, exemplar)
        usage = outcome.usage
        if usage is not None:
            counts = (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens,
                      usage.reasoning_tokens, usage.cache_write_tokens)  # fmt: skip
            for kind, count in zip(TOKEN_TYPES, counts, strict=True):
                if count:
                    child = series.tokens.get(kind)
                    if child is None:
                        child = series.tokens[kind] = self.tokens.labels(
                            model_label, target_label, kind, *identity
                        )
                    child.inc(count)
            if cost is None:
                if series.unpriced is None:
                    series.unpriced = self.unpriced.labels(model_label)
                series.unpriced.inc()
            else:
                if series.cost is None:
                    series.cost = self.cost.labels(model_label, target_label, *identity)
                series.cost.inc(cost)
        for policy, decision in observation.decisions.items():
            self._child(self.decisions, policy, decision).inc()
        for attempt in observation.attempts:
            self._child(self.attempts, self.target_label(attempt.target), attempt.outcome).inc()
        self.observe_measures(observation.measures)
        if outcome.stream and outcome.ttft_s is not None and outcome.error_type is not None:
            self._child(self.stream_errors, target_label, outcome.error_type).inc()

    def _bounded(self, name: str, value: str, scope: str | None) -> str:
        """A policy metric's label value, bounded like the app's own: ``model`` and
        ``target`` labels, and a ``value`` label beside a ``scope`` label (a budget's
        counter: a model, or a team, key, user or agent) as that scope's label."""
        if name == "model" or (name == "value" and scope == "model"):
            return self.model_label(value)
        if name == "target":
            return self.target_label(value)
        if name == "value" and scope in IDENTITY_LABELS:
            return self._identity_labels[IDENTITY_LABELS.index(scope)](value)
        return value

    def declare(self, metrics: Iterable[Metric]) -> None:
        """Register policies' own metrics (once each: a reload keeps their series)."""
        for metric in metrics:
            self._family(metric)

    def _family(self, metric: Metric) -> Any:
        family = self._policy_families.get(metric.name)
        if family is None:
            if metric.kind == "counter":
                family = Counter(metric.name, metric.help, metric.labels, registry=self.registry)
            else:
                family = Gauge(
                    metric.name, metric.help, metric.labels, registry=self.registry,
                    multiprocess_mode=MULTIPROCESS_MODES[metric.merge],
                )  # fmt: skip
            self._policy_families[metric.name] = family
        return family

    def observe_measures(self, measures: Iterable[Measure]) -> None:
        """Record what policies reported for their own metrics (a model call's, or an
        MCP tool call's)."""
        for measure in measures:
            self._measure(measure)

    def _measure(self, measure: Measure) -> None:
        metric = measure.metric
        family = self._family(metric)
        named = dict(zip(metric.labels, measure.labels, strict=True))
        labels = [self._bounded(name, value, named.get("scope")) for name, value in named.items()]
        child: Any = self._child(family, *labels) if labels else family
        if metric.kind == "counter":
            child.inc(measure.value)
        else:
            child.set(measure.value)
