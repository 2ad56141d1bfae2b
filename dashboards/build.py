"""Generate the Grafana dashboards in ``grafana/`` from the panel lists below.

Run ``python dashboards/build.py`` after editing; a test checks the JSON is up to date,
and another loads every query into a real Prometheus. Panels use only hookgate's own
metric families (see the metric list of docs/observability.md); ``$__rate_interval`` and ``$__range``
are Grafana's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

OUT = Path(__file__).resolve().parent / "grafana"
RATE = "$__rate_interval"


@dataclass
class Panel:
    title: str
    queries: list[tuple[str, str]]  # (PromQL, legend)
    unit: str = "short"
    kind: str = "timeseries"
    description: str = ""
    width: int = 12
    extra: dict[str, object] = field(default_factory=dict)


def q(quantile: float, family: str, by: str = "") -> str:
    group = f"le, {by}" if by else "le"
    return f"histogram_quantile({quantile}, sum by ({group}) (rate({family}_bucket[{RATE}])))"


DASHBOARDS: dict[str, tuple[str, list[Panel]]] = {
    "overview": ("hookgate — overview", [
        Panel("Requests per second by status",
              [(f"sum by (status) (rate(hookgate_requests_total[{RATE}]))", "{{status}}")], "reqps"),
        Panel("Error ratio (non-2xx)",
              [(f'sum(rate(hookgate_requests_total{{status!~"2.."}}[{RATE}])) / '
                f"sum(rate(hookgate_requests_total[{RATE}]))", "errors")], "percentunit"),
        Panel("Request latency", [(q(0.5, "hookgate_request_duration_seconds"), "p50"),
                                  (q(0.95, "hookgate_request_duration_seconds"), "p95"),
                                  (q(0.99, "hookgate_request_duration_seconds"), "p99")], "s"),
        Panel("Proxy overhead (total minus upstream wait)",
              [(q(0.5, "hookgate_overhead_seconds"), "p50"),
               (q(0.99, "hookgate_overhead_seconds"), "p99")], "s",
              description="The proxy's own time per request; sub-millisecond buckets."),
        Panel("Time to first token (streams)",
              [(q(0.5, "hookgate_time_to_first_token_seconds"), "p50"),
               (q(0.95, "hookgate_time_to_first_token_seconds"), "p95")], "s"),
        Panel("Upstream latency p95 by target",
              [(q(0.95, "hookgate_upstream_duration_seconds", "target"), "{{target}}")], "s"),
        Panel("Requests by model",
              [(f"sum by (model) (rate(hookgate_requests_total[{RATE}]))", "{{model}}")], "reqps"),
        Panel("Tokens per second by type",
              [(f"sum by (type) (rate(hookgate_tokens_total[{RATE}]))", "{{type}}")], "short"),
        Panel("In flight", [("sum by (api) (hookgate_requests_in_flight)", "{{api}}")], "short"),
        Panel("Config reloads", [("sum by (result) (increase(hookgate_config_reloads_total[$__range]))",
                                  "{{result}}")], "short", kind="stat"),
        Panel("Version", [("hookgate_build_info", "{{version}} (python {{python}})")],
              kind="table", width=24),
    ]),
    "cost": ("hookgate — cost and budgets", [
        Panel("Spend rate by model (USD/hour)",
              [(f"sum by (model) (rate(hookgate_cost_usd_total[{RATE}])) * 3600", "{{model}}")],
              "currencyUSD"),
        Panel("Spend in range (USD)",
              [("sum(increase(hookgate_cost_usd_total[$__range]))", "total")], "currencyUSD",
              kind="stat"),
        Panel("Spend by target (USD/hour)",
              [(f"sum by (target) (rate(hookgate_cost_usd_total[{RATE}])) * 3600", "{{target}}")],
              "currencyUSD"),
        Panel("Cost per request (USD)",
              [(f"sum(rate(hookgate_cost_usd_total[{RATE}])) / "
                f"sum(rate(hookgate_requests_total[{RATE}]))", "per request")], "currencyUSD"),
        Panel("Tokens per second by model and type",
              [(f"sum by (model, type) (rate(hookgate_tokens_total[{RATE}]))", "{{model}} {{type}}")]),
        Panel("Spend by team (USD/hour)",
              [(f"sum by (team) (rate(hookgate_cost_usd_total[{RATE}])) * 3600", "{{team}}")],
              "currencyUSD", description="Teams appear with server.metric_labels: [team]."),
        Panel("Budget remaining (USD)",
              [("min by (scope, window, value) (hookgate_budget_remaining_usd)",
                "{{scope}} {{value}} ({{window}})")], "currencyUSD"),
        Panel("Budget and rate refusals",
              [("sum by (policy, scope) (increase(hookgate_refusals_total[$__range]))",
                "{{policy}} {{scope}}")], kind="bargauge"),
        Panel("Requests with unknown price",
              [("sum by (model) (increase(hookgate_unpriced_requests_total[$__range]))", "{{model}}")],
              description="Add these models to `pricing:` so their spend is counted."),
    ]),
    "safety": ("hookgate — safety and policies", [
        Panel("Policy decisions per second",
              [(f"sum by (policy, decision) (rate(hookgate_policy_decisions_total[{RATE}]))",
                "{{policy}} {{decision}}")], "reqps", width=24),
        Panel("Blocks by policy",
              [('sum by (policy) (increase(hookgate_policy_decisions_total{decision="block"}'
                '[$__range]))', "{{policy}}")], kind="bargauge"),
        Panel("Share of requests each policy modified",
              [(f'sum by (policy) (rate(hookgate_policy_decisions_total{{decision="modify"}}[{RATE}]))'
                f" / sum by (policy) (rate(hookgate_policy_decisions_total[{RATE}]))", "{{policy}}")],
              "percentunit"),
        Panel("PII entities redacted per second, by type and action",
              [(f"sum by (entity_type, action) (rate(hookgate_pii_entities_total[{RATE}]))",
                "{{entity_type}} {{action}}")], "short",
              description="Occurrences the pii policy handled in requests (history included)."),
        Panel("PII entities by type",
              [("sum by (entity_type) (increase(hookgate_pii_entities_total[$__range]))",
                "{{entity_type}}")], kind="bargauge"),
        Panel("PII in model answers per second, by type and action",
              [(f"sum by (entity_type, action) (rate(hookgate_pii_output_entities_total[{RATE}]))",
                "{{entity_type}} {{action}}")], "short",
              description="Values the model wrote that its prompt did not hold (pii output)."),
        Panel("Requests refused by the PII guardrail",
              [('sum(increase(hookgate_policy_decisions_total{policy="pii",decision="block"}'
                '[$__range]))', "refused")], kind="bargauge",
              description="An entity whose action is block (400), or a failed analysis (503)."),
    ]),
    "reliability": ("hookgate — reliability", [
        Panel("Upstream attempts by outcome",
              [(f"sum by (target, outcome) (rate(hookgate_upstream_attempts_total[{RATE}]))",
                "{{target}} {{outcome}}")], "reqps", width=24),
        Panel("Fallbacks by target and reason",
              [(f"sum by (target, reason) (rate(hookgate_fallbacks_total[{RATE}]))",
                "{{target}} {{reason}}")], "reqps",
              description="Moves away from a target; circuit_open when its breaker was open."),
        Panel("Retries by target and reason",
              [(f"sum by (target, reason) (rate(hookgate_retries_total[{RATE}]))",
                "{{target}} {{reason}}")], "reqps"),
        Panel("Circuit state (0 closed, 1 half-open, 2 open)",
              [("max by (target) (hookgate_circuit_state)", "{{target}}")], "short"),
        Panel("Upstream failure ratio by target",
              [(f'sum by (target) (rate(hookgate_upstream_attempts_total{{outcome!="ok"}}[{RATE}])) / '
                f"sum by (target) (rate(hookgate_upstream_attempts_total[{RATE}]))", "{{target}}")],
              "percentunit"),
        Panel("Streams failed after their first byte",
              [(f"sum by (target, kind) (rate(hookgate_stream_errors_total[{RATE}]))",
                "{{target}} {{kind}}")], "reqps"),
        Panel("Errors returned to clients",
              [(f'sum by (status) (rate(hookgate_requests_total{{status!~"2.."}}[{RATE}]))',
                "{{status}}")], "reqps"),
        Panel("Trace spans dropped (exporter behind)",
              [(f"sum(rate(hookgate_trace_spans_dropped_total[{RATE}]))", "dropped")], "short"),
    ]),
}  # fmt: skip


def panel_json(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, object]:
    return {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "gridPos": {"x": x, "y": y, "w": panel.width, "h": 8},
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend,
             "datasource": {"type": "prometheus", "uid": "${datasource}"}}
            for i, (expr, legend) in enumerate(panel.queries)
        ],
        **panel.extra,
    }  # fmt: skip


def dashboard_json(uid: str, title: str, panels: list[Panel]) -> dict[str, object]:
    laid_out = []
    x = y = 0
    for i, panel in enumerate(panels, start=1):
        if x + panel.width > 24:
            x, y = 0, y + 8
        laid_out.append(panel_json(panel, i, x, y))
        x += panel.width
    return {
        "uid": f"hookgate-{uid}",
        "title": title,
        "tags": ["hookgate"],
        "schemaVersion": 39,
        "editable": True,
        "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus",
                                 "label": "Prometheus"}]},
        "panels": laid_out,
    }  # fmt: skip


def render() -> dict[str, str]:
    """File name → JSON text of every dashboard."""
    return {
        f"{uid}.json": json.dumps(dashboard_json(uid, title, panels), indent=2) + "\n"
        for uid, (title, panels) in DASHBOARDS.items()
    }


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    for name, text in render().items():
        (OUT / name).write_text(text)
        print(f"wrote dashboards/grafana/{name}")
