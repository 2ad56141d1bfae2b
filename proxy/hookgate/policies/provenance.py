"""``provenance``: a value from an untrusted tool result never reaches a sensitive tool
argument without a person's yes.

YAML::

    - provenance:
        trusted_tools: [get_user_info]     # results read as trusted text (default: none)
        min_length: 8                      # a copied substring this long counts
        sinks:
          - tool: send_money               # a glob
            argument: recipient            # a glob over the argument names
            action: deny                   # deny | approval | audit
            allow_from:                    # who may supply the value (default: [prompt])
              - prompt                     #   the user's and system's text
              - "get_most_recent_transactions[].sender"   # a field of a tool's result
          - {tool: send_email, argument: recipients, action: approval}
          - {tool: "*", argument: url, action: audit}
          - tool: delete_file              # an identifier: it must be found, whole,
            argument: file_id              #   in an admitted source
            require_source: true
            allow_from: ["list_files[].id_"]

Every tool result is evidence, split into fields (:mod:`hookgate.provenance.evidence`):
``tool.field.path`` for a JSON or YAML result's leaves, ``tool.content`` for free text.
A call of a sink tool whose sink argument carries a value found in a result field its
sink does not admit — the value, or a substring of at least ``min_length`` letters and
digits of it, after case, whitespace, look-alike letters, e-mail and URL forms and
URL and base64 encodings are normalised away (:mod:`hookgate.provenance.normalize`) —
and not also in an admitted source, is a *finding*: ``deny`` refuses the call (the model
reads ``Tool call refused: ...`` naming the source and the sink, never the value),
``approval`` pauses it for a person (as ``tool_guard``'s ``approval: pause``: the SDK's
framework pause, the MCP gateway's and the proxy's approvals), ``audit`` lets it run and
records it.

Where it runs: the SDK's ``on_tool_call`` and the MCP gateway's ``tools/call``; in the
proxy, ``returned_tool_call`` checks each tool call a model returns against the request's
own conversation (the evidence is the request: no state), removing a ``deny`` finding's
call from the answer and holding an ``approval`` finding's while a person decides
(:mod:`hookgate.server.proxy_approval`). Evidence is
kept in the session's state when the call names a session (the store keeps it: the MCP
gateway's earlier calls of a session are its evidence), else in the reply's. Trusted
text: in the SDK the reply's input (its text) and the user and system messages of every
model call the gate runs; in the MCP gateway there is none (the gateway never sees the
prompt), so any value read by an earlier call of the session is untrusted unless a sink
admits its field. A ``pii`` policy's placeholders count as the values they stand for.

What is kept are 48-bit hashes of canonical forms, never text, bounded per source and
in all (:mod:`hookgate.provenance.evidence`). Telemetry — the policy's decision, the
``hookgate_provenance_findings`` metric, the audit record's findings, a span event —
names the source tool and field, the sink ``tool.argument`` and the rule, never a value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from pydantic import Field, model_validator

from hookgate.pipeline.agent import NextReply, NextTool, Reply, ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.hooks import Messages, Policy, PolicyConfig
from hookgate.pipeline.observe import Metric, Observation
from hookgate.pipeline.types import Context
from hookgate.policies.globs import listed
from hookgate.provenance import TRUSTED, Evidence, Finding, Rule, check_call
from hookgate.provenance.check import NOWHERE, Action
from hookgate.redaction.placeholders import PATTERN
from hookgate.wire.conversation import Conversation

FINDINGS = Metric(
    "hookgate_provenance_findings",
    "Tool calls whose sensitive argument carried a value from an untrusted tool result, by "
    "the tool that returned it, the sink (tool.argument), the rule and the action taken",
    ("source_tool", "sink", "rule", "action"),
)


class Sink(PolicyConfig):
    """A sensitive tool argument, and where its values may come from."""

    tool: str
    """The tools (a glob, case-insensitive) whose calls are checked."""
    argument: str = "*"
    """The arguments (a glob over their names) checked; every text in one is checked,
    inside lists and objects too."""
    action: Action = "deny"
    """A finding: ``deny`` refuses the call (the model reads why), ``approval`` pauses it
    for a person, ``audit`` runs it and records the finding."""
    allow_from: tuple[str, ...] = (TRUSTED,)
    """The sources that may supply the value: ``prompt`` (the user's and system's text,
    trusted tools' results) and field paths of tool results as globs
    (``get_most_recent_transactions[].sender``, ``search_*.url``). A value also found
    in one of them is allowed."""
    min_length: int | None = Field(None, ge=4)
    """The shortest copied substring (letters and digits) that counts for this sink;
    default: the policy's ``min_length`` (never less)."""
    require_source: bool = False
    """The value must be found whole in one of ``allow_from`` — what an identifier needs
    (a file or event id the agent read in a listing, or the user typed): a value found
    nowhere, or only in an unadmitted source, is a finding however short it is. Without
    it a value is a finding only when it is found in an unadmitted source, and values
    under three letters or digits never are."""
    name: str | None = None
    """The rule's name in telemetry; default ``tool.argument``."""


class ProvenanceConfig(PolicyConfig):
    """Settings of the ``provenance`` policy."""

    sinks: tuple[Sink, ...] = ()
    """The sensitive tool arguments, each with its action; the first that a call breaks
    decides."""
    trusted_tools: tuple[str, ...] = ()
    """Tools (globs) whose results are trusted text, like the user's (say a tool that
    returns the user's own profile)."""
    min_length: int = Field(8, ge=4)
    """The shortest substring (letters and digits, after normalisation) of an untrusted
    result that counts as copied; a shorter value counts only when it is a whole word,
    e-mail address or URL of the result."""
    approval_timeout_s: float = Field(300.0, gt=0)
    """MCP gateway and proxy: how long a call paused by an ``approval`` sink waits for a
    person (the proxy holds the model's answer meanwhile: a client must wait longer)."""

    @model_validator(mode="after")
    def _lengths(self) -> ProvenanceConfig:
        for sink in self.sinks:
            if sink.min_length is not None and sink.min_length < self.min_length:
                raise ValueError(
                    f"sink {sink.tool}.{sink.argument}: min_length {sink.min_length} is below "
                    f"the policy's min_length {self.min_length}"
                )
        return self

    def rules(self) -> tuple[Rule, ...]:
        """The sinks as :class:`~hookgate.provenance.Rule` values."""
        return tuple(
            Rule(
                name=s.name or f"{s.tool}.{s.argument}",
                tool=s.tool,
                argument=s.argument,
                action=s.action,
                allow_from=s.allow_from,
                min_length=s.min_length or self.min_length,
                require_source=s.require_source,
            )
            for s in self.sinks
        )


def new_evidence(
    config: ProvenanceConfig, placeholders: Mapping[str, str] | None = None
) -> Evidence:
    """Empty evidence that ``config``'s sinks can be checked against (``placeholders``:
    a ``pii`` policy's, placeholder → value)."""
    return Evidence(gram_length=config.min_length, placeholders=placeholders)


def record_result(evidence: Evidence, config: ProvenanceConfig, tool: str, content: str) -> None:
    """Record one tool result: a trusted tool's as trusted text, any other's by field."""
    if listed(tool, config.trusted_tools):
        evidence.add_trusted(content)
    else:
        evidence.add_result(tool, content)


class ProvenancePolicy(Policy[ProvenanceConfig]):
    """See the module docstring."""

    name: ClassVar[str] = "provenance"
    metrics = (FINDINGS,)

    def __init__(self, config: ProvenanceConfig) -> None:
        super().__init__(config)
        self._rules = config.rules()

    def evidence(self, ctx: ReplyContext) -> Evidence:
        """The evidence of ``ctx``'s session (its reply's when it names none), changed in
        place as results are recorded."""
        holder = ctx.session if ctx.session_id else ctx.state
        data: dict[str, Any] = holder.setdefault(self.slot, {})
        return Evidence(data, gram_length=self.config.min_length, placeholders=_placeholders(ctx))

    async def on_reply(self, reply: Reply, ctx: ReplyContext, next: NextReply) -> Any:
        """SDK: the reply's input, where it is text, is trusted."""
        texts = list(_input_texts(reply.input))
        if texts:
            evidence = self.evidence(ctx)
            for text in texts:
                evidence.add_trusted(text)
        return await next(reply, ctx)

    async def convert_to_llm(self, messages: Messages, ctx: Context) -> Messages:
        """SDK: the user's and system's messages of a reply's model call are trusted (in
        the proxy a request's conversation is read whole by :meth:`returned_tool_call`)."""
        if ctx.reply is not None:
            evidence = self.evidence(ctx.reply)
            for text in _trusted_texts(messages):
                evidence.add_trusted(text)
        return messages

    async def needs_approval(self, call: ToolCall, ctx: ReplyContext) -> str | None:
        finding = self._finding(call, ctx, ("approval",))
        if finding is None:
            return None
        return f"{_what(finding)}; a person must approve the call of {call.name!r}"

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        finding = self._finding(call, ctx, ("deny", "audit"))
        if finding is not None:
            self._observe(finding, ctx)
            if finding.action == "deny":
                return ToolResult.refused(f"{_why(finding)}; use a value the user gave")
        result = await next(call, ctx)
        if not result.blocked:
            record_result(self.evidence(ctx), self.config, call.name, result.content)
        return result

    async def returned_tool_call(
        self, call: ToolCall, conversation: Conversation, ctx: Context
    ) -> str | None:
        """Proxy: a tool call the model returned, checked against the request's own
        conversation — its user, system and developer text trusted, each tool result by
        field. ``deny`` removes the call, ``approval`` holds the answer while a person
        decides (:mod:`hookgate.server.proxy_approval`; removed when rejected or not
        decided in time), ``audit`` lets it through; each finding is recorded."""
        evidence = new_evidence(self.config)
        for text in conversation.trusted:
            evidence.add_trusted(text)
        for output in conversation.tool_results:
            record_result(evidence, self.config, output.tool, output.text)
        finding = check_call(call.name, call.arguments, evidence, self._rules)
        if finding is None:
            return None
        _count(finding, ctx.observation)
        if finding.action == "audit":
            return None
        if finding.action == "approval":
            reason = f"{_what(finding)}; a person must approve the call of {call.name!r}"
            if ctx.approver is None:
                return f"{reason}, and no one can be asked here"
            timeout = self.config.approval_timeout_s
            return await ctx.approver(ctx, call.name, call.arguments, call.call_id, reason, timeout)
        return _why(finding)

    def _finding(
        self, call: ToolCall, ctx: ReplyContext, actions: tuple[Action, ...]
    ) -> Finding | None:
        rules = [r for r in self._rules if r.action in actions]
        if not rules:
            return None
        finding = check_call(call.name, call.arguments, self.evidence(ctx), rules)
        if finding is not None and finding.action == "approval":
            self._observe(finding, ctx)
        return finding

    def _observe(self, finding: Finding, ctx: ReplyContext) -> None:
        if ctx.observation is not None:
            _count(finding, ctx.observation)
        if ctx.span is not None:
            ctx.span.add_event(
                "hookgate.provenance.finding",
                {
                    "hookgate.provenance.source": finding.source,
                    "hookgate.provenance.sink": finding.sink,
                    "hookgate.provenance.rule": finding.rule,
                    "hookgate.provenance.action": finding.action,
                },
            )


def _count(finding: Finding, observation: Observation) -> None:
    """A finding in the metrics and the audit record's findings (never its value)."""
    observation.count(FINDINGS, finding.source_tool, finding.sink, finding.rule, finding.action)
    key = f"provenance:{finding.source}>{finding.sink}:{finding.action}"
    observation.findings[key] = observation.findings.get(key, 0) + 1


def _what(finding: Finding) -> str:
    """Where a sink's value came from, in words (never the value)."""
    if finding.source == NOWHERE:
        return f"the value of {finding.sink} was found in no source {finding.rule!r} admits"
    return f"the value of {finding.sink} came from the result field {finding.source!r}"


def _why(finding: Finding) -> str:
    """Why a call is refused: where its value came from, and the rule."""
    if finding.source == NOWHERE:
        return _what(finding)
    return f"{_what(finding)}, and {finding.rule!r} does not take values from there"


def _placeholders(ctx: ReplyContext) -> dict[str, str]:
    """The ``pii`` policies' placeholders of the session (placeholder → value): they
    keep them in their session slot (``pii``, ``pii#2``, ...)."""
    found: dict[str, str] = {}
    for slot, values in ctx.session.items():
        if (slot == "pii" or slot.startswith("pii#")) and isinstance(values, dict):
            found.update(
                (k, v) for k, v in values.items() if isinstance(v, str) and PATTERN.fullmatch(k)
            )
    return found


def _input_texts(value: Any) -> Iterator[str]:
    """The text of a reply's input: a string, or a list of text parts."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for part in value:
            if isinstance(part, str):
                yield part
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                yield part["text"]


def _trusted_texts(messages: Messages) -> Iterator[str]:
    """The text of the user, system and developer messages of a model call."""
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") in _TRUSTED_ROLES:
            yield from _input_texts(message.get("content"))


_TRUSTED_ROLES = frozenset({"user", "system", "developer"})
