"""What the gateway records of a ``tools/call``: its metrics and its audit record (who
called which tool of which server, how it ended and what the policies found; never its
arguments or result).

The audit record is built here alone (:func:`tool_call_record`): api ``mcp.tools/call``,
the tool as model, ``mcp/{server}`` as target, each tool-call policy's decision in the
model calls' vocabulary (``allow``, ``modify``, ``block``; see
:mod:`hookgate.pipeline.tool_calls`) and their findings (counts by name, never values).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import orjson
from aiohttp import web

from hookgate.pipeline.agent import ReplyContext
from hookgate.pipeline.observe import Observation
from hookgate.server.appkeys import HOLDER, LIVE, METRICS, REQUEST_ID, STORE
from hookgate.server.auth import Caller
from hookgate.server.live import LiveCall
from hookgate.store.audit_query import MCP_API
from hookgate.store.base import AuditRecord


def record_tool_call(
    request: web.Request, server: str, tool: str, caller: Caller, reply: ReplyContext,
    started: float, status: int, error: str | None, policy_set: str,
    observation: Observation, live: LiveCall,
) -> None:  # fmt: skip
    """Measure one tool call (``started``: its ``perf_counter``; the policies' own
    metrics from ``observation``), end it on the Live page (``live``) and, when the audit
    log is on, queue its record."""
    seconds = time.perf_counter() - started
    metrics = request.app[METRICS]
    metrics.observe_tool(server, tool, error, seconds)
    metrics.observe_measures(observation.measures)
    record = tool_call_record(
        request[REQUEST_ID], server, tool, caller, reply, seconds, status, error,
        policy_set, observation.decisions, observation.findings,
    )  # fmt: skip
    request.app[LIVE].end(live, record)
    if request.app[HOLDER].current.config.audit.enabled:
        request.app[STORE].submit_audit(record)


def tool_call_record(
    request_id: str, server: str, tool: str, caller: Caller, reply: ReplyContext,
    seconds: float, status: int, error: str | None, policy_set: str,
    decisions: Mapping[str, str], findings: Mapping[str, int],
) -> AuditRecord:  # fmt: skip
    """The audit record of one tool call."""
    identity = caller.identity
    return AuditRecord(
        ts=time.time(), request_id=request_id, api=MCP_API, model=tool,
        status=status, latency_ms=round(seconds * 1000, 3), target=f"mcp/{server}",
        error=error, key_id=identity.key_id, team=identity.team, user=identity.user,
        agent=reply.agent, session=reply.session_id, reply=reply.reply_id, attempts=1,
        policy_set=policy_set,
        decisions=orjson.dumps(decisions).decode(), findings=orjson.dumps(findings).decode(),
    )  # fmt: skip
