"""The MCP gateway: hookgate in front of MCP servers, with the tool policies in the path.

A proxy cannot see an agent's own tools, but it can stand between an agent and the MCP
servers it reaches over HTTP. Each server of ``mcp_servers`` is served at
``/mcp/{name}`` over Streamable HTTP. The caller authenticates as on the model routes
(virtual keys, JWT, static keys), and its policy set is chosen as there, with route
``mcp``.

Two methods run through the policies of that set:

* ``tools/list``: a tool any policy's :meth:`~hookgate.pipeline.hooks.Policy.tool_offered`
  refuses (``tool_guard``'s ``allow``/``deny``) is left out of the answer.
* ``tools/call``: one :meth:`~hookgate.pipeline.hooks.Policy.on_tool_call` onion, the same
  hooks the SDK runs around an agent's tools, whose innermost step is the call to the
  server. ``tool_guard`` refuses a denied tool (even called by name), bad arguments or a
  call over a reply's or session's limit; ``pii`` restores placeholders in the arguments
  and redacts the result before the agent (and its model) reads it, with the placeholders
  the model routes make; ``tracing`` makes an ``execute_tool {name}`` span, a child of the
  W3C context in the request's ``params._meta`` (``traceparent``) or headers, which the
  reply context carries (``ReplyContext.parent_trace``: the gateway never touches
  OpenTelemetry); ``rate_limit``'s ``tool_limits`` refuse calls over a rate. A call that
  needs a person's approval (``tool_guard``'s ``approval: pause``) waits, up to
  ``approval_timeout_s``, while a person approves, edits or rejects it through
  ``/admin/approvals`` or the web UI (:mod:`.approval`; an approval function,
  ``approval: mypkg.hitl:ask``, is asked as in the SDK). A refused call is answered with
  a tool result whose ``isError`` is true and whose text says why, so the model can adapt.

Messages other than those two (``initialize``, notifications, ``resources/*``,
``prompts/*``, answers to the server's own requests) and ``GET``/``DELETE`` are relayed
unchanged. Bad input gets JSON-RPC errors (a body that is not JSON: ``-32700``; not one
message: ``-32600``; a ``tools/call`` without an id or a tool name: ``-32600``/``-32602``);
a server that cannot be reached, times out or breaks its stream is a ``-32000`` error
naming the server, never a hang.

One job per module:

* :mod:`.routes` — ``/mcp/{name}``: authenticate, find the server, pick its transport.
* :mod:`.gateway` — what every transport shares: bad JSON-RPC, the policy set,
  ``tools/list`` filtered and ``tools/call`` run, with state and records.
* :mod:`.streamable` — servers reached by ``url``: Streamable HTTP relayed, with the
  gateway's own resumption of a ``tools/call`` stream the server closed.
* :mod:`.stdio_gateway` and :mod:`.stdio` — servers hookgate runs (``command``): the
  requests of a client session, and the session's process (started, supervised,
  numbered and replayed messages, reaped).
* :mod:`.tools` — the tool policies: which tools are listed, and one call through the
  ``on_tool_call`` onion, transport-free.
* :mod:`.approval` — a call that waits for a person: its approval stored (arguments as
  ``pii`` shows them), the client told (progress, logging, elicitation), the decision
  awaited (store polled, woken in-process), timed out, or withdrawn by the client.
* :mod:`.state` — the reply a call belongs to, and its reply's and session's policy state
  read from and written back to the store (:mod:`hookgate.store.state`: the SDK's own
  ``session:{id}`` record, merged, so parallel calls and the SDK keep each other's
  placeholders and counts).
* :mod:`.audit` — each call's metrics (``hookgate_mcp_tool_calls_total``,
  ``hookgate_mcp_tool_call_duration_seconds``) and audit record (api ``mcp.tools/call``,
  model = the tool, target = ``mcp/{server}``; never arguments or results).
* :mod:`.errors` — a server's failure (answered as a JSON-RPC error), a session gone (404).

The stdio servers' processes (:mod:`.stdio`) are inside the package: they exist only to
serve ``/mcp/{name}`` for a ``command`` server, and nothing else in hookgate starts or
reads them; the app only creates their supervisor and reaps it.
"""
