"""One governed model call of a client, whatever carried it: an HTTP request to a model
endpoint (:mod:`hookgate.server.routes`) or a ``response.create`` frame of a Responses
WebSocket (:mod:`hookgate.server.responses_socket`).

A :class:`ModelRequest` is the call from its start to its end: its context read from the
client's headers (agent, session, reply), the model and policy set checked for the
caller, the pipeline run observed (:class:`~hookgate.pipeline.runner.ObservedCall`), the
in-flight gauge, and, once it ended, its metrics and audit record.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from aiohttp import web

from hookgate.config.policy_sets import RequestFacts, Selection
from hookgate.errors import InvalidRequest
from hookgate.pipeline.observe import Outcome
from hookgate.pipeline.runner import ObservedCall, audit_record, cost, finish
from hookgate.pipeline.types import ANONYMOUS, Api, Context, JsonBody, ModelCall, ModelResponse
from hookgate.server.appkeys import LIVE, METRICS, STORE
from hookgate.server.auth import Caller, check_model
from hookgate.server.live import LiveCall, LiveTraffic
from hookgate.server.proxy_approval import ProxyApprover
from hookgate.server.runtime import Runtime
from hookgate.store.base import Store
from hookgate.telemetry.metrics import IDENTITY_LABELS, NO_IDENTITY, Metrics
from hookgate.wire.headers import AGENT_SESSION

log = logging.getLogger("hookgate")

MAX_LABEL_CHARS = 256
MAX_MODEL_CHARS = 256


def label_header(headers: Mapping[str, str], name: str) -> str | None:
    """A client-chosen id header (agent, session, reply). It lands in the store, the audit
    log and spans: printable text of at most :data:`MAX_LABEL_CHARS` characters, else 400
    (aiohttp hands bytes that are not UTF-8 on as surrogates, which no encoder takes)."""
    value = headers.get(name)
    if value is not None and not _is_label(value):
        raise InvalidRequest(
            f"the {name} header must be printable UTF-8 text of at most "
            f"{MAX_LABEL_CHARS} characters",
            param=name,
            code="invalid_header",
        )
    return value


def session_header(headers: Mapping[str, str]) -> str | None:
    """The session a request belongs to: ``x-hookgate-session-id`` (400 when it is not a
    label), else the first agent session header (:data:`~hookgate.wire.headers.AGENT_SESSION`:
    Codex's ``session-id``, opencode's ``x-session-id``, ...) that is a label; one that is
    not is the agent's own business and is passed over, never refused."""
    given = label_header(headers, "x-hookgate-session-id")
    if given is not None:
        return given
    return next(
        (v for name in AGENT_SESSION if (v := headers.get(name)) is not None and _is_label(v)),
        None,
    )


def _is_label(value: str) -> bool:
    return len(value) <= MAX_LABEL_CHARS and value.isprintable()


def request_context(headers: Mapping[str, str], request_id: str, api: Api) -> Context:
    """A model call's context before its caller is known: its ids from the headers."""
    return Context(
        request_id=request_id,
        api=api,
        agent=label_header(headers, "x-hookgate-agent"),
        session_id=session_header(headers),
        reply_id=label_header(headers, "x-hookgate-reply-id"),
    )


def select_set(
    runtime: Runtime, caller: Caller, *, route: str, agent: str | None, model: str | None = None
) -> Selection:
    """The policy set of a request on ``route`` (an API, or ``mcp``) for ``caller`` (see
    :mod:`hookgate.config.policy_sets`)."""
    identity = caller.identity
    facts = RequestFacts(
        key=None if identity is ANONYMOUS else identity.key_id, team=identity.team,
        user=identity.user, model=model, agent=agent, route=route,
    )  # fmt: skip
    return runtime.selector.select(
        facts, key_set=caller.key_grants.policy_set, team_set=caller.team_grants.policy_set
    )


def model_call_of(
    body: dict[str, Any],
    runtime: Runtime,
    api: Api,
    headers: Mapping[str, str],
    query: str = "",
) -> ModelCall:
    """The model call a client's parsed request body asks for (400 on a missing or
    unprintable ``model``, a ``stream`` that is not a boolean). ``headers`` are the
    client's, filtered here to those forwarded upstream."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("you must provide a model parameter", param="model")
    if len(model) > MAX_MODEL_CHARS or not model.isprintable():
        # It names metrics, spans and the x-hookgate-upstream header: no control characters.
        raise InvalidRequest(
            f"'model' must be a printable name of at most {MAX_MODEL_CHARS} characters",
            param="model",
        )
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise InvalidRequest("'stream' must be a boolean", param="stream")
    if api in ("embeddings", "messages.count_tokens"):
        stream = False  # these never stream; the field goes upstream as sent
    return ModelCall(
        api=api,
        # Sent re-encoded, never as received: the upstream gets exactly what the policies
        # checked. (Raw bytes with a duplicate key, {"messages": [PII], "messages": []},
        # were checked as the last one and sent with both.)
        payload=JsonBody.from_data(body),
        model=model,
        stream=stream,
        targets=runtime.router.targets(model),
        headers=runtime.forward(headers),
        query=query,
    )


class ModelRequest:
    """One model call of a client, observed from its start to its end (see the module
    docstring). Used as ``async with``: an error raised inside is the call's error, and
    leaving ends the call unless a stream :meth:`run` handed out is still open (closing
    that stream ends it)."""

    def __init__(
        self, app: web.Application, runtime: Runtime, ctx: Context, *, api: Api | None = None
    ) -> None:
        self.runtime = runtime
        self.model = ""
        self.api: Api = api or ctx.api
        """The API the client spoke (its metrics, audit record and policy-set route): the
        call's own, or the one translated to it at the door (the Gemini API's)."""
        self.observed = ObservedCall(ctx, ended=self._ended)
        self._app = app
        self._in_flight = app[METRICS].in_flight_gauge(self.api)
        self._live = app[LIVE].begin(ctx.request_id, self.api)

    async def __aenter__(self) -> ModelRequest:
        self._in_flight.inc()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if exc is not None:
                self.observed.failed(exc)
        finally:
            self._in_flight.dec()
            await self.observed.end()

    async def run(self, caller: Caller, call: ModelCall) -> ModelResponse:
        """Check ``call``'s model for ``caller``, choose its policy set and run it through
        that set's pipeline (a stream comes back observed: consume or ``aclose`` it)."""
        self.model = call.model
        check_model(caller, call.model)
        ctx = self.observed.ctx
        chosen = select_set(self.runtime, caller, route=self.api, agent=ctx.agent, model=call.model)
        pipeline = self.runtime.pipelines[chosen.name]
        approver = ProxyApprover(self._app, pipeline.policies) if (
            pipeline.checks_returned_calls
        ) else None  # fmt: skip
        if (
            caller.identity is not ctx.identity
            or chosen.name != ctx.policy_set
            or approver is not None
        ):  # an anonymous caller served by the default set keeps the context it started with
            ctx = self.observed.ctx = dataclasses.replace(
                ctx, identity=caller.identity, policy_set=chosen.name, approver=approver
            )
        ctx.observation.attributes["hookgate.policy_set"] = chosen.name
        live = self._live
        live.model, live.policy_set = call.model, chosen.name
        live.key_id, live.team = caller.identity.key_id, caller.identity.team
        live.agent, live.session = ctx.agent, ctx.session_id
        return await self.observed.run(pipeline, call, usage=pipeline.needs_usage)

    def response_headers(self, response: ModelResponse) -> dict[str, str]:
        """The headers of the answer: the upstream's, the policies' and hookgate's own."""
        ctx = self.observed.ctx
        return {
            **response.headers,
            **ctx.response_headers,
            "x-hookgate-request-id": ctx.request_id,
            "x-hookgate-upstream": response.target.label(self.model),
            "x-hookgate-attempts": str(len(ctx.observation.attempts)),
            "x-hookgate-policy-set": ctx.policy_set,
        }

    async def _ended(self, ctx: Context, outcome: Outcome) -> None:
        # Off the latency path: the server writes the response before the loop runs this.
        app = self._app
        asyncio.get_running_loop().call_soon(
            _record, app[STORE], self.runtime, app[METRICS], self.api, self.model, ctx, outcome,
            app[LIVE], self._live,
        )  # fmt: skip


def _record(
    store: Store,
    runtime: Runtime,
    metrics: Metrics,
    api: Api,
    model: str,
    ctx: Context,
    outcome: Outcome,
    live: LiveTraffic,
    call: LiveCall,
) -> None:
    """Everything a finished request reports: finish callbacks, metrics, the audit record
    (and the Live page's copy of it). Telemetry never fails a request: a failure is
    logged."""
    finish(ctx, outcome)
    cost_usd = cost(outcome, ctx, runtime.pricing)
    shown = runtime.config.server.metric_labels
    identity = NO_IDENTITY
    if shown:
        who = ctx.identity
        values = {"team": who.team, "key": who.key_id, "user": who.user, "agent": ctx.agent}
        identity = tuple((values[n] or "") if n in shown else "" for n in IDENTITY_LABELS)
    try:
        metrics.observe(api, model, outcome, ctx.observation, cost_usd, identity)
    except Exception:
        log.exception("recording metrics failed (request %s)", ctx.request_id)
    record = audit_record(ctx, outcome, api=api, model=model, cost_usd=cost_usd)
    live.end(call, record)
    if runtime.config.audit.enabled:  # queued off the response path; a failure is logged
        store.submit_audit(record)
