"""One text in, its redacted form out: analyzer findings turned into actions.

Runs on a worker thread (CPU-bound, synchronous). The result is a pure function of the
text, the analyzer settings, the actions and the secret, which is what lets the policy
cache it per text: turn N of a conversation re-uses the redactions of turns 1..N-1.

Actions, per entity type:

==============  ==========================================  ===========
action          the model reads                             reversible
==============  ==========================================  ===========
pseudonymize    ``<PERSON_QH3KZ7>`` (keyed hash, see below)  yes
mask            ``***********4057`` (all but the last four)  no
redact          ``<PERSON>``                                 no
hash            SHA-256 of the value, keyed by the secret    no
block           nothing: the request is refused (400)        —
keep            the value, unchanged (a type scanned for     —
                one use, e.g. prompts, and let through in
                another, e.g. answers)
==============  ==========================================  ===========

Presidio's anonymizer applies them (it also resolves overlapping findings); pseudonyms
come from :mod:`hookgate.redaction.placeholders`.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hookgate.redaction.analyzer import Analyzer
from hookgate.redaction.placeholders import Vault

Action = Literal["pseudonymize", "mask", "redact", "hash", "block", "keep"]


@dataclass(frozen=True, slots=True)
class Redaction:
    """A text as the model will read it, and what was found in it."""

    text: str
    values: Mapping[str, str]
    """placeholder → original value, for the pseudonymized entities."""
    counts: Mapping[tuple[str, str], int]
    """``(entity_type, action)`` → occurrences."""

    @property
    def blocked(self) -> frozenset[str]:
        """Entity types found whose action is ``block``."""
        return frozenset(kind for kind, action in self.counts if action == "block")


class Redactor:
    """Redacts texts with one analyzer, one action table and one secret. Thread-safe."""

    def __init__(
        self,
        analyzer: Analyzer,
        secret: bytes,
        default: Action,
        actions: Mapping[str, Action],
    ) -> None:
        from presidio_anonymizer import AnonymizerEngine

        self._analyzer = analyzer
        self.secret = secret
        self._default = default
        self._actions = dict(actions)
        self._engine = AnonymizerEngine()  # type: ignore[no-untyped-call]

    def action(self, entity_type: str) -> Action:
        """The action configured for an entity type."""
        return self._actions.get(entity_type, self._default)

    def redact(self, text: str, keep: Collection[str] = ()) -> Redaction:
        """Analyze ``text`` and apply the actions (see the module docstring). A finding
        whose value is in ``keep``, or whose type's action is ``keep``, is left alone."""
        findings = [
            f
            for f in self._analyzer.analyze(text)
            if self.action(f.entity_type) != "keep" and text[f.start : f.end] not in keep
        ]
        if not findings:
            return Redaction(text, {}, {})
        from presidio_anonymizer.entities import OperatorConfig, RecognizerResult

        vault = Vault(self.secret)
        types = {f.entity_type for f in findings}
        operators = {kind: self._operator(kind, vault, OperatorConfig) for kind in types}
        result = self._engine.anonymize(
            text=text,
            analyzer_results=[
                RecognizerResult(f.entity_type, f.start, f.end, f.score) for f in findings
            ],
            operators=operators,
        )
        counts: Counter[tuple[str, str]] = Counter(
            (item.entity_type, self.action(item.entity_type)) for item in result.items
        )
        return Redaction(result.text, vault.values, dict(counts))

    def _operator(self, kind: str, vault: Vault, config: Any) -> Any:
        action = self.action(kind)
        if action == "pseudonymize":
            return config("custom", {"lambda": functools.partial(vault.placeholder, kind)})
        if action == "mask":
            return config("custom", {"lambda": _mask})
        if action == "hash":
            return config("hash", {"hash_type": "sha256", "salt": self.secret})
        return config("replace", {"new_value": f"<{kind}>"})


def _mask(value: str) -> str:
    keep = 4 if len(value) > 8 else 0
    return "*" * (len(value) - keep) + value[len(value) - keep :]
