"""The ``pii`` policy: Presidio redaction before the model, exact restoration after it.

Request side (every text the model reads; see :mod:`hookgate.wire.texts`):
``convert_to_llm`` for chat ``messages`` and Responses ``input``, ``on_system_prompt`` for
Responses ``instructions``, and ``on_model_call`` for the texts outside the messages
(:func:`~hookgate.wire.texts.map_fields`: tool and schema descriptions, ``stop``,
``user``, ...), a legacy completions ``prompt`` and, with ``embeddings: true``, an
embeddings ``input``. Each distinct text is analyzed once and
its redaction cached (bounded LRU): an agent resending its history pays only for its new
text. Analysis runs on worker threads, never on the event loop.

Response side: non-streamed bodies are restored in ``on_response``; streams by a
:class:`~hookgate.redaction.restore.RestoringStream`. Only placeholders this request produced
are restored; tool-call arguments get JSON-escaped values.

Output (``output:``, off by default; LangChain's ``PIIMiddleware(apply_to_output=True)``):
after restoring, the answer text is scanned for values the prompt did not contain — a
value the request's own placeholders stood for is the user's and stays — with actions of
its own (``mask``, ``redact``, ``block``, or ``keep`` for a type). A stream is scanned a
sentence at a time (:mod:`hookgate.redaction.output`), so nothing is shown before it is
checked; ``block`` refuses a non-streamed answer (400 ``pii_output_blocked``) and ends a
stream with that error before the segment that held the value. Tool-call arguments are
not scanned: a tool needs the real values.

Fails closed: an analyzer error or timeout refuses the request (503
``guardrail_unavailable``) unless ``on_error: continue``. Telemetry gets counts by entity type
and action only (``ctx.observation.findings``, the ``hookgate_pii_entities`` and
``hookgate_pii_output_entities`` metrics, an ``apply_guardrail pii`` span), never values.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from pydantic import Field, SecretStr, field_validator

from hookgate.errors import GuardrailUnavailable, PolicyBlocked
from hookgate.pipeline.agent import NextTool, ReplyContext, ToolCall, ToolResult
from hookgate.pipeline.compose import ChainedStreamTransform
from hookgate.pipeline.hooks import Messages, Next, Policy, PolicyConfig
from hookgate.pipeline.observe import Metric
from hookgate.pipeline.services import Services
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.policies.vocabulary import OnFailure
from hookgate.redaction.analyzer import AnalyzerSettings, analyzer_for
from hookgate.redaction.names import FUNCTION_WORDS, TITLES, name_parts, sentence_start
from hookgate.redaction.output import ScanningStream
from hookgate.redaction.placeholders import Vault
from hookgate.redaction.redactor import Action, Redaction, Redactor
from hookgate.redaction.restore import Restorer, RestoringStream
from hookgate.redaction.vocabulary import PARTICLE_PATTERN, common_words
from hookgate.telemetry import semconv
from hookgate.wire import texts
from hookgate.wire.deltas import StreamTransform

log = logging.getLogger("hookgate")

ENTITIES = Metric(
    "hookgate_pii_entities",
    "PII entities found in requests by the pii policy, by entity type and the action taken "
    "(every occurrence sent upstream, history included)",
    ("entity_type", "action"),
)

OUTPUT_ENTITIES = Metric(
    "hookgate_pii_output_entities",
    "PII entities found in model answers by the pii policy's output scan, by entity type "
    "and the action taken",
    ("entity_type", "action"),
)

T = TypeVar("T")
R = TypeVar("R")

_REQUEST = ("analysis", "sent unredacted", "refused", "the request was not sent")
"""How a failed check is logged and refused: what failed, what became of the request when
allowed and when refused, and the refusal's consequence."""
_ANSWER = ("answer scan", "answered unscanned", "withheld", "the answer was not shown")


class OutputSettings(PolicyConfig):
    """``output:`` of the ``pii`` policy: scanning what the model writes."""

    action: Literal["mask", "redact", "block"] = "mask"
    """What to do with a value found in an answer whose type has no entry in ``actions``."""
    actions: dict[str, Literal["mask", "redact", "block", "keep"]] = Field(default_factory=dict)
    """Entity type → action; ``keep`` lets a type through in answers (say ``LOCATION``)."""


class PiiConfig(AnalyzerSettings):
    """YAML settings of ``- pii: {...}`` (analyzer settings plus the ones below)."""

    action: Action = "pseudonymize"
    """What to do with an entity whose type has no entry in ``actions``."""
    actions: dict[str, Action] = Field(default_factory=dict)
    """Entity type → action, e.g. ``{SECRET: block, CREDIT_CARD: mask}``."""
    on_error: OnFailure = "error"
    """``error`` refuses a request the analyzer failed on (503); ``continue`` sends it as
    is."""
    secret: SecretStr | None = Field(None, min_length=16)
    """Key of the placeholder hash (and of ``hash``). Unset: a random secret created once
    and kept in the store, shared by every replica on that store."""
    output: OutputSettings | None = None
    """Also scan the model's answers (see the module docstring); off when unset."""
    embeddings: bool = False
    """Also redact embeddings ``input`` (the vectors then encode placeholders)."""
    cache_size: int = Field(20_000, ge=0)
    """Redacted texts kept (LRU); 0 turns the cache off."""
    workers: int = Field(1, ge=1, le=64)
    """Analyzer threads."""
    timeout_s: float = Field(30.0, gt=0)
    """Longest wait for the analysis of one request's new texts. One worker analyzes about
    30 KB of new text per second with the small English model (more when the text is dense
    with phone numbers); only text not seen before in any request is analyzed."""

    @field_validator("secret", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value  # `${HOOKGATE_PII_SECRET:-}` when unset


class PiiPolicy(Policy[PiiConfig]):
    """See the module docstring."""

    name = "pii"
    metrics = (ENTITIES, OUTPUT_ENTITIES)

    def __init__(self, config: PiiConfig) -> None:
        super().__init__(config)
        settings = AnalyzerSettings.model_validate(
            config.model_dump(include=set(AnalyzerSettings.model_fields))
        )
        try:
            self._analyzer = analyzer_for(settings)
        except ImportError as exc:
            raise ValueError(
                f"the pii policy needs Presidio: pip install 'hookgate[pii]' ({exc})"
            ) from None
        except OSError as exc:  # spaCy: model package not installed
            raise ValueError(f"pii: cannot load spaCy model {config.model!r}: {exc}") from None
        self._pool = ThreadPoolExecutor(config.workers, thread_name_prefix="hookgate-pii")
        self._cache: OrderedDict[str, Redaction] = OrderedDict()
        self._redactor: Redactor | None = None
        self._secret_lock = asyncio.Lock()
        self._store_secret: Callable[[], Any] | None = None
        if config.secret is not None:
            self._redactor = self._make_redactor(config.secret.get_secret_value().encode())
        out = config.output
        # output actions use no secret (no pseudonyms, no hashes)
        self._output = Redactor(self._analyzer, b"", out.action, out.actions) if out else None

    def attach(self, services: Services) -> None:
        self._store_secret = lambda: services.store.secret("pii")

    # request side ---------------------------------------------------------------

    async def on_system_prompt(self, prompt: str, ctx: Context) -> str:
        # Chat system messages are among the messages convert_to_llm sees; Responses
        # ``instructions`` are not, so they are redacted here.
        if ctx.api != "responses" or not prompt:
            return prompt
        return await self._redact(ctx, prompt, lambda fn: fn(prompt))

    async def convert_to_llm(self, messages: Messages, ctx: Context) -> Messages:
        return await self._redact(ctx, messages, lambda fn: texts.map_messages(messages, fn))

    async def on_model_call(self, call: ModelCall, ctx: Context, next: Next) -> ModelResponse:
        body = call.body
        mapped = await self._redact(ctx, body, lambda fn: texts.map_fields(body, fn))
        field = {"completions": "prompt", "embeddings": "input"}.get(call.api)
        if field == "input" and not self.config.embeddings:
            field = None
        if field is not None and field in mapped:
            value = mapped[field]
            prompt = await self._redact(ctx, value, lambda fn: texts.map_prompt(value, fn))
            if prompt is not value:
                mapped = {**mapped, field: prompt}
        return await next(call if mapped is body else call.with_body(dict(mapped)), ctx)

    # response side --------------------------------------------------------------

    async def on_response(self, response: ModelResponse, ctx: Context) -> ModelResponse:
        restorer = self._restorer(ctx)
        body = response.body
        if restorer is not None:

            def restore(text: str, json: bool) -> str:
                return restorer.json_string(text) if json else restorer.text(text)

            body = texts.map_response(body, restore)
        if self._output is not None:
            wanted = _analyzable(_visited(lambda fn: texts.map_answer(body, fn)))
            if wanted:
                scanned = await self._scan_output(ctx, wanted, _kept(restorer))
                body = texts.map_answer(body, lambda text: scanned.get(text, text))
        return response if body is response.body else response.with_body(body)

    def on_response_stream(self, ctx: Context) -> StreamTransform | None:
        restorer = self._restorer(ctx)
        restoring = None if restorer is None else RestoringStream(restorer)
        if self._output is None:
            return restoring
        keep = _kept(restorer)

        async def scan(text: str) -> str:
            if not _worth_analyzing(text):
                return text
            return (await self._scan_output(ctx, [text], keep))[text]

        scanning = ScanningStream(scan)
        return scanning if restoring is None else ChainedStreamTransform([restoring, scanning])

    # SDK: tool results -----------------------------------------------------------------

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        """SDK: redact a tool's result before it re-enters the agent's context; restore
        placeholders in the arguments of later calls, so tools get real values.

        The session keeps the placeholders it made (in memory, per session); they are the
        same keyed hashes the proxy makes for the same values.
        """
        values: dict[str, str] = ctx.session.setdefault(self.slot, {})
        if values:
            restorer = Restorer(dict(values))
            call = call.with_arguments(texts.map_leaves(call.arguments, restorer.text))
        result = await next(call, ctx)
        if not _worth_analyzing(result.content):
            return result
        redactor = await self._get_redactor()
        try:
            done, _ = await self._analyze(redactor, [result.content])
        except Exception as exc:
            reason = _reason(exc)
            if self.config.on_error == "continue":
                log.warning("pii: tool result analysis failed (%s); passed unredacted", reason)
                return result
            log.error("pii: tool result analysis failed (%s); result withheld", reason)
            return ToolResult.refused(
                f"the result could not be checked for personal data ({reason})"
            )
        redaction = done[result.content]
        if redaction.blocked:
            kinds = ", ".join(sorted(redaction.blocked))
            return ToolResult.refused(f"the result contains data not sent to models: {kinds}")
        values.update(redaction.values)
        if not redaction.counts:
            return result
        return result.with_content(redaction.text)

    # approvals: what a person deciding a paused call sees ------------------------------

    async def shown_to_approver(
        self, arguments: Mapping[str, Any], ctx: ReplyContext
    ) -> Mapping[str, Any]:
        """The arguments with every entity found replaced as for a model (a ``block``
        entity's whole text withheld); the placeholders made are kept in the session's
        state, as tool results' are, so an edit's come back as values
        (:meth:`from_approver`). An analyzer failure raises: nothing unredacted is shown."""
        wanted = _analyzable(_visited(lambda fn: texts.map_leaves(arguments, fn)))
        if not wanted:
            return arguments
        try:
            done, _ = await self._analyze(await self._get_redactor(), wanted)
        except Exception as exc:  # fails closed: nothing unchecked is shown or stored
            raise GuardrailUnavailable(
                f"the arguments of the paused call could not be checked for personal data "
                f"({_reason(exc)})"
            ) from None
        values: dict[str, str] = ctx.session.setdefault(self.slot, {})
        shown: dict[str, str] = {}
        for text, redaction in done.items():
            if redaction.blocked:
                shown[text] = f"[withheld: {', '.join(sorted(redaction.blocked))}]"
            elif redaction.counts:
                values.update(redaction.values)
                shown[text] = redaction.text
        return texts.map_leaves(arguments, lambda text: shown.get(text, text))  # type: ignore[no-any-return]

    async def from_approver(
        self, arguments: Mapping[str, Any], ctx: ReplyContext
    ) -> Mapping[str, Any]:
        values = ctx.session.get(self.slot)
        if not values:
            return arguments
        return texts.map_leaves(arguments, Restorer(dict(values)).text)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # internals --------------------------------------------------------------------

    async def _scan_output(
        self, ctx: Context, wanted: list[str], keep: frozenset[str]
    ) -> dict[str, str]:
        """Each answer text as the reader may see it. Raises ``PolicyBlocked`` for a
        ``block`` type and, failing closed, ``GuardrailUnavailable``."""
        assert self._output is not None
        try:
            done = await self._on_workers(_redact_all, self._output, wanted, keep)
        except Exception as exc:
            return self._failed(ctx, {t: t for t in wanted}, exc, _ANSWER)
        observation = ctx.observation
        blocked: set[str] = set()
        for redaction in done.values():
            blocked |= redaction.blocked
            for (kind, action), n in redaction.counts.items():
                finding = f"output:{kind}:{action}"
                observation.findings[finding] = observation.findings.get(finding, 0) + n
                observation.count(OUTPUT_ENTITIES, kind, action, by=n)
        if blocked:
            raise PolicyBlocked(
                "the answer contains data this deployment does not show: "
                + ", ".join(sorted(blocked)),
                code="pii_output_blocked",
            )
        return {text: redaction.text for text, redaction in done.items()}

    def _restorer(self, ctx: Context) -> Restorer | None:
        """Restores this request's placeholders and, in the SDK, those the reply's tool
        results were given (the model may quote them; the user must read the values)."""
        vault: Vault | None = ctx.state.get(self.slot)
        values = dict(ctx.reply.session.get(self.slot, {})) if ctx.reply is not None else {}
        if vault is not None:
            values.update(vault.values)
        return Restorer(values) if values else None

    async def _redact(self, ctx: Context, value: T, walk: Callable[[texts.TextFn], T]) -> T:
        """Redact every text ``walk`` visits in ``value``; the same object if none changed."""
        found = _visited(walk)
        wanted = _analyzable(found)
        if not wanted:
            return value
        started = time.perf_counter()
        redactor = await self._get_redactor()
        try:
            done, fresh = await self._analyze(redactor, wanted)
        except Exception as exc:  # any analyzer failure fails closed
            return self._failed(ctx, value, exc)
        vault: Vault = ctx.state.setdefault(self.slot, Vault(redactor.secret))
        occurrences = Counter(found)
        counts: dict[tuple[str, str], int] = {}
        blocked: set[str] = set()
        renamed: dict[str, str] = {}
        for text, redaction in done.items():
            blocked |= redaction.blocked
            for key, n in redaction.counts.items():
                counts[key] = counts.get(key, 0) + n * occurrences[text]
            renames = vault.merge(dict(redaction.values))
            if renames:
                renamed[text] = _renamed(redaction.text, renames)
        outputs = {text: renamed.get(text, r.text) for text, r in done.items() if r.counts}
        propagate = _Propagation.of(vault)
        if propagate is not None:  # a value found in one text is redacted in all of them
            for text in wanted:
                own = done.get(text)
                if own is not None and _cut_short(text, own, vault.values):
                    # a name found whole elsewhere was found only in part here ("Yoon Jae"
                    # of "Yoon Jae-won"): every value, longest first, on the original text
                    for key, n in own.counts.items():
                        counts[key] -= n * occurrences[text]
                    out, spread = propagate(text)
                else:
                    out, spread = propagate(outputs.get(text, text))
                if spread:
                    outputs[text] = out
                    for key, n in spread.items():
                        counts[key] = counts.get(key, 0) + n * occurrences[text]
        self._observe(ctx, counts, started, len(wanted), len(fresh), blocked)
        if blocked:
            kinds = ", ".join(sorted(blocked))
            raise PolicyBlocked(
                f"the request contains data this deployment does not send to models: {kinds}",
                code="pii_blocked",
            )
        if not outputs:
            return value
        return walk(lambda text: outputs.get(text, text))

    async def _analyze(
        self, redactor: Redactor, wanted: list[str]
    ) -> tuple[dict[str, Redaction], list[str]]:
        """The redaction of every text (cached ones from the cache), and which were new."""
        done, fresh = self._cached(wanted)
        if fresh:
            analyzed = await self._on_workers(_redact_all, redactor, fresh)
            done.update(analyzed)
            self._remember(analyzed)
        return done, fresh

    def _cached(self, wanted: Iterable[str]) -> tuple[dict[str, Redaction], list[str]]:
        done: dict[str, Redaction] = {}
        fresh: list[str] = []
        for text in wanted:
            redaction = self._cache.get(text)
            if redaction is None:
                fresh.append(text)
            else:
                self._cache.move_to_end(text)
                done[text] = redaction
        return done, fresh

    def _remember(self, analyzed: Mapping[str, Redaction]) -> None:
        if not self.config.cache_size:
            return
        self._cache.update(analyzed)
        while len(self._cache) > self.config.cache_size:
            self._cache.popitem(last=False)

    def _failed(
        self, ctx: Context, value: T, exc: Exception, told: tuple[str, ...] = _REQUEST
    ) -> T:
        """``value`` unchecked (``on_error: continue``, logged) or, failing closed, a 503."""
        what, allowed, refused, consequence = told
        reason = _reason(exc)
        ctx.observation.attributes[semconv.PII_ERROR] = reason
        if self.config.on_error == "continue":
            log.warning("pii: %s failed (%s); request %s %s", what, reason, ctx.request_id, allowed)
            return value
        log.error("pii: %s failed (%s); request %s %s", what, reason, ctx.request_id, refused)
        raise GuardrailUnavailable(f"PII {what} failed ({reason}); {consequence}")

    async def _on_workers(self, fn: Callable[..., R], *args: Any) -> R:
        """``fn(*args)`` on the analyzer threads, within ``timeout_s``."""
        future = self._pool.submit(fn, *args)
        return await asyncio.wait_for(asyncio.wrap_future(future), self.config.timeout_s)

    def _observe(
        self,
        ctx: Context,
        counts: Mapping[tuple[str, str], int],
        started: float,
        texts_seen: int,
        analyzed: int,
        blocked: set[str],
    ) -> None:
        observation = ctx.observation
        for (kind, action), n in counts.items():
            finding = f"{kind}:{action}"
            observation.findings[finding] = observation.findings.get(finding, 0) + n
            observation.count(ENTITIES, kind, action, by=n)
        spans = ctx.observation.spans
        if spans is None:
            return
        span = spans.start(
            "apply_guardrail pii",
            {
                semconv.OPERATION_NAME: "apply_guardrail",
                semconv.PII_ENTITIES: sum(counts.values()),
                semconv.PII_ENTITY_TYPES: sorted({kind for kind, _ in counts}),
                semconv.PII_TEXTS: texts_seen,
                semconv.PII_ANALYZED: analyzed,
                semconv.PII_DECISION: "block" if blocked else "modify" if counts else "allow",
                semconv.PII_SECONDS: round(time.perf_counter() - started, 6),
            },
        )
        span.end()

    async def _get_redactor(self) -> Redactor:
        if self._redactor is None:
            async with self._secret_lock:
                if self._redactor is None:
                    if self._store_secret is None:
                        raise GuardrailUnavailable("pii: no secret configured and no store")
                    secret = await self._store_secret()
                    self._redactor = self._make_redactor(secret)
        return self._redactor

    def _make_redactor(self, secret: bytes) -> Redactor:
        return Redactor(self._analyzer, secret, self.config.action, self.config.actions)


class _Propagation:
    """Replaces every word-bounded occurrence of a request's pseudonymized values, and of
    the parts of its people's names.

    A name the analyzer found in one message (``Ngozi Eze`` next to her e-mail address) may
    be missed in another (a table cell); the same value then still gets its placeholder.
    A part of a name found anywhere in the request (``Jolanta`` or ``Wróblewska`` of
    ``Jolanta Wróblewska``, also after a title) gets its own placeholder wherever it stands
    alone: the keyed hash of the part, so it is the same in every turn and restores
    exactly. A part that is also a function word (``Will``, ``May``) is not replaced where
    a sentence starts with it; any other (``Blessing``, ``Grace``) is.
    """

    def __init__(self, values: Mapping[str, str], parts: Mapping[str, str]) -> None:
        self._tokens = {value: token for token, value in values.items() if len(value) > 2}
        self._parts = {part: token for token, part in parts.items() if part not in self._tokens}
        ordered = sorted([*self._tokens, *self._parts], key=len, reverse=True)  # longest wins
        self._pattern = re.compile(
            r"(?<![\w-])(?:" + "|".join(re.escape(v) for v in ordered) + r")(?![\w-])"
        )

    @classmethod
    def of(cls, vault: Vault) -> _Propagation | None:
        values = dict(vault.values)  # the values found, before the parts join the vault
        parts = {
            vault.placeholder("PERSON", part): part
            for token, value in values.items()
            if token.startswith("<PERSON_")
            for part in name_parts(value)
        }
        if not parts and not any(len(v) > 2 for v in values.values()):
            return None
        return cls(values, parts)

    def __call__(self, text: str) -> tuple[str, dict[tuple[str, str], int]]:
        found: dict[tuple[str, str], int] = {}

        def swap(match: re.Match[str]) -> str:
            value = match.group(0)
            token = self._tokens.get(value)
            if token is None:
                if _joined(text, match.start(), match.end()) or (
                    value.lower() in FUNCTION_WORDS and sentence_start(text, match.start())
                ):
                    return value  # "Will you …" is no mention of Will Smith
                token = self._parts[value]
            key = (token[1 : token.rindex("_")], "pseudonymize")
            found[key] = found.get(key, 0) + 1
            return token

        return self._pattern.sub(swap, text), found


def _joined(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is one word of a longer name (``Jolanta Nowak``,
    ``Sanne ter Horst``): a capitalised neighbour that is no common word, particles between.
    Such a name is someone else's, or the whole name; a part alone would cut it."""
    before = _WORD_BEFORE.search(text, max(0, start - 80), start)
    after = _WORD_AFTER.match(text, end)
    return any(
        m is not None
        and m.group(1)[0].isupper()
        and m.group(1).lower().rstrip(".") not in common_words()
        and m.group(1).lower().rstrip(".") not in TITLES
        for m in (before, after)
    )


_WORD_BEFORE = re.compile(rf"([^\W\d_][\w'-]*)[ ]+(?:{PARTICLE_PATTERN}[ ]+)*\Z")
_WORD_AFTER = re.compile(rf"[ ]+(?:{PARTICLE_PATTERN}[ ]+)*([^\W\d_][\w'-]*)")


def _cut_short(text: str, redaction: Redaction, values: Mapping[str, str]) -> bool:
    """Whether ``text``'s own redaction replaced part of a longer value of the request that
    ``text`` holds whole — and replaced it only by pseudonyms, so the text may be redone
    from the original by replacing values alone (a mask or a hash would be lost)."""
    if not redaction.values or any(action != "pseudonymize" for _, action in redaction.counts):
        return False
    found = set(redaction.values.values())
    return any(
        longer not in found and longer in text and any(v in longer for v in found)
        for longer in values.values()
    )


def _redact_all(
    redactor: Redactor, fresh: list[str], keep: frozenset[str] = frozenset()
) -> dict[str, Redaction]:
    return {text: redactor.redact(text, keep) for text in fresh}


def _visited(walk: Callable[[texts.TextFn], object]) -> list[str]:
    """Every text ``walk`` visits, in order, repeats included."""
    found: list[str] = []

    def collect(text: str) -> str:
        found.append(text)
        return text

    walk(collect)
    return found


def _analyzable(found: Iterable[str]) -> list[str]:
    """The distinct texts of ``found`` worth analyzing, in order."""
    return [t for t in dict.fromkeys(found) if _worth_analyzing(t)]


def _kept(restorer: Restorer | None) -> frozenset[str]:
    """The values an answer may show as they are: those the request's placeholders (and,
    in the SDK, the reply's) stood for — the user's own."""
    return frozenset(restorer.values.values()) if restorer is not None else frozenset()


def _reason(exc: Exception) -> str:
    """How an analysis failed, for logs and errors (never the text)."""
    return "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__


def _worth_analyzing(text: str) -> bool:
    return len(text) > 2 and not text.isspace()


def _renamed(text: str, renames: Mapping[str, str]) -> str:
    for old, new in renames.items():
        text = text.replace(old, new)
    return text
