"""hookgate's own Presidio recognizers: what the shipped ones miss, and offline e-mail.

* :class:`OfflineEmailRecognizer` — Presidio's e-mail recognizer validates the domain with
  ``tldextract``, whose default extractor downloads the public-suffix list on first use.
  This one uses tldextract's bundled snapshot: no network, no failed-download traceback.
* ``PHONE_NUMBER`` patterns for North-American numbers Presidio's ``phonenumbers``-based
  recognizer rejects as unassigned (``459.502.4057``, ``001-459-502-4057x123``) and for
  international ``+CC`` forms, with a digit-count check.
* ``STREET_ADDRESS`` patterns: a house number, capitalised street words and a USPS street
  suffix, with an optional unit and ``City, ST 12345`` line; US military addresses.
* :class:`CardRecognizer` — credit cards Presidio's patterns miss (2-series Mastercard,
  19-digit Visa, 12-digit Maestro, 15-digit JCB), Luhn-checked by Presidio's own validator.
* ``SECRET`` patterns: OpenAI/Anthropic, AWS, GitHub, Slack, Google, Stripe keys, JWTs and
  PEM private-key blocks.

Patterns are data; Presidio does the matching, context boosting and scoring.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
import threading
from collections.abc import Iterable
from typing import Any

import regex
import tldextract
from presidio_analyzer import LocalRecognizer, Pattern, PatternRecognizer, RecognizerResult
from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer
from presidio_analyzer.nlp_engine import NlpArtifacts
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    UsSsnRecognizer,
)

from hookgate.redaction.names import Cue, email_name_parts
from hookgate.redaction.vocabulary import NAME_PARTICLES, PARTICLE_PATTERN

_CASE_SENSITIVE = regex.DOTALL | regex.MULTILINE

_EXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
"""tldextract with its bundled public-suffix snapshot only: never fetches."""


RESERVED_TLDS = frozenset(
    {"example", "test", "invalid", "localhost", "local", "internal", "corp", "lan", "home"}
)
"""Top-level names that are no public suffix yet end real (internal or example) addresses."""


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's e-mail recognizer, validating domains against the bundled suffix list.

    Addresses on reserved and internal names (``bob@corp.internal``, ``a@b.example``) are
    PII too, so those top-level names are accepted as well. The local part is limited to
    the characters addresses use in practice, so an address inside a URL query
    (``?email=a@b.com&x=1``) is found without the URL around it. A no-reply sender
    (``noreply@…``, ``do-not-reply@…``) is nobody's address and is left alone.
    """

    PATTERNS = [  # noqa: RUF012 - overrides the parent's class attribute of the same shape
        Pattern(
            "e-mail address",
            r"(?<![\w.%+'-])(?<!://)\w[\w.%+'-]*@(?:\w(?:[\w-]*\w)?\.)+(?:[a-z]{2,24}|[A-Z]{2,24})"
            r"(?![\w-])",
            0.5,
        )
    ]

    def __init__(self, supported_language: str) -> None:
        super().__init__(supported_language=supported_language)
        # Case matters: a top-level name is all lower or all upper case, so that
        # ``a@b.com.Thanks`` (a missing space) still yields ``a@b.com``.
        self.global_regex_flags = _CASE_SENSITIVE

    def validate_result(self, pattern_text: str) -> bool:
        if _NO_REPLY.match(pattern_text):
            return False  # a vendor's no-reply sender names no one (Co-Authored-By trailers)
        tld = pattern_text.rsplit(".", 1)[-1].lower()
        return tld in RESERVED_TLDS or _EXTRACT(pattern_text).fqdn != ""


_NO_REPLY = re.compile(r"(?i)(?:no-?reply|do-?not-?reply)@")
"""A no-reply sender (``noreply@anthropic.com``): not a person's address."""


_NANP = (
    r"(?<![\w.+-])(?:\+?1[\s.-]?|001[\s.-])?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}"
    r"(?:\s?(?:x|ext\.?)\s?\d{1,6})?(?![\w-])"
)
_INTERNATIONAL = r"(?<![\w+])\+\d{1,3}(?:[\s.-]?\(\d{1,4}\))?(?:[\s.-]?\d{1,5}){2,5}(?![\w-])"


class PhonePatternRecognizer(PatternRecognizer):
    """Phone numbers by shape, for those ``phonenumbers`` does not consider valid."""

    def __init__(self, language: str) -> None:
        super().__init__(
            supported_entity="PHONE_NUMBER",
            name="HookgatePhoneRecognizer",
            supported_language=language,
            patterns=[
                Pattern("NANP with separators", _NANP, 0.6),
                Pattern("international +CC", _INTERNATIONAL, 0.6),
                Pattern("ten digits", r"(?<![\w.+-])\d{10}(?!\w|[.-]\d)", 0.2),
            ],
            context=["phone", "call", "tel", "telephone", "mobile", "cell", "fax", "sms"],
            global_regex_flags=_CASE_SENSITIVE | regex.IGNORECASE,
        )

    def validate_result(self, pattern_text: str) -> bool:
        digits = sum(c.isdigit() for c in pattern_text.split("x")[0].split("ext")[0])
        return 8 <= digits <= 15


class NationalPhoneRecognizer(PatternRecognizer):
    """Phone numbers in national formats: a trunk ``0`` and grouped digits
    (``020 7946 0958``, ``06 12 34 56 78``, ``030 12345678``), and Brazilian ``(21) 91234-5678``.

    Nine to twelve digits, so a date such as ``05-06-2024`` is not taken for one; numbers
    that are only part of a longer token are dropped by the analyzer.
    """

    def __init__(self, language: str) -> None:
        super().__init__(
            supported_entity="PHONE_NUMBER",
            name="HookgateNationalPhoneRecognizer",
            supported_language=language,
            patterns=[
                Pattern("trunk 0, grouped", _NATIONAL, 0.5),
                Pattern("Brazil (AA) 9XXXX-XXXX", r"\(\d{2}\)\s?9?\d{4}-\d{4}\b", 0.5),
            ],
            context=["phone", "call", "tel", "telephone", "mobile", "cell", "fax", "contact"],
            global_regex_flags=_CASE_SENSITIVE,
        )

    def validate_result(self, pattern_text: str) -> bool:
        return 9 <= sum(c.isdigit() for c in pattern_text) <= 12


_NATIONAL = r"(?<![\w+.-])0\d{1,4}[ -]\d{2,8}(?:[ -]\d{2,4}){0,3}(?![\w-])"


class CaseSensitiveIbanRecognizer(IbanRecognizer):
    """Presidio's IBAN recognizer (pattern and mod-97 check) matching capitals only.

    The registry loads it case-insensitive, so in ``pay ES48 … 1716 today`` its optional
    trailing groups take ``toda`` and ``y``, and the match that remains when they are
    dropped is never reported: an IBAN followed by a short word went through."""

    def __init__(self, language: str) -> None:
        super().__init__(supported_language=language, regex_flags=_CASE_SENSITIVE)


class SsnRecognizer(UsSsnRecognizer):
    """Presidio's SSN recognizer (and its validity rules), where nine bare digits next to a
    context word (``SSN: 123456789``) reach the threshold; without one they stay below it."""

    PATTERNS = [  # noqa: RUF012 - overrides the parent's class attribute of the same shape
        *(p for p in UsSsnRecognizer.PATTERNS if p.name != "SSN4 (very weak)"),
        Pattern("SSN4 (nine digits)", r"\b[0-9]{9}\b", 0.3),
    ]

    def __init__(self, language: str) -> None:
        super().__init__(supported_language=language, name="HookgateSsnRecognizer")


class Ipv6Recognizer(PatternRecognizer):
    """IPv6 addresses, full or compressed, validated by :mod:`ipaddress`."""

    def __init__(self, language: str) -> None:
        super().__init__(
            supported_entity="IP_ADDRESS",
            name="HookgateIpv6Recognizer",
            supported_language=language,
            patterns=[Pattern("IPv6", r"(?<![\w:.])[0-9A-Fa-f:]{2,38}[0-9A-Fa-f](?![\w.])", 0.6)],
            global_regex_flags=_CASE_SENSITIVE,
        )

    def validate_result(self, pattern_text: str) -> bool:
        if pattern_text.count(":") < 2:
            return False
        try:
            ipaddress.IPv6Address(pattern_text)
        except ValueError:
            return False
        return True


STREET_SUFFIXES = (  # noqa: SIM905 - a word list reads best as words
    "Alley Aly Avenue Ave Av Bend Bluff Bluffs Boulevard Blvd Branch Bridge Brook Brooks "
    "Burg Burgs Bypass Camp Canyon Cape Causeway Center Centers Circle Cir Circles Cliff "
    "Cliffs Club Common Commons Corner Corners Course Court Ct Courts Cove Coves Creek "
    "Crescent Crest Crossing Crossroad Curve Dale Dam Divide Drive Dr Drives Estate Estates "
    "Expressway Extension Extensions Fall Falls Ferry Field Fields Flat Flats Ford Fords "
    "Forest Forge Forges Fork Forks Fort Freeway Garden Gardens Gateway Glen Glens Green "
    "Greens Grove Groves Harbor Harbors Haven Heights Highway Hwy Hill Hills Hollow Inlet "
    "Island Islands Isle Junction Junctions Key Keys Knoll Knolls Lake Lakes Land Landing "
    "Lane Ln Light Lights Loaf Lock Locks Lodge Loop Mall Manor Manors Meadow Meadows Mews "
    "Mill Mills Mission Motorway Mount Mountain Mountains Neck Orchard Oval Overpass Park "
    "Parks Parkway Pkwy Parkways Pass Passage Path Pike Pine Pines Place Pl Plain Plains "
    "Plaza Point Points Port Ports Prairie Radial Ramp Ranch Rapid Rapids Rest Ridge Ridges "
    "River Road Rd Roads Route Row Rue Run Shoal Shoals Shore Shores Skyway Spring Springs "
    "Spur Spurs Square Sq Squares Station Stravenue Stream Street St Streets Summit Terrace "
    "Ter Throughway Trace Track Trafficway Trail Tunnel Turnpike Underpass Union Unions "
    "Valley Valleys Via Viaduct View Views Village Villages Ville Vista Walk Walks Wall Way "
    "Ways Well Wells"
).split()
"""USPS street suffixes (Publication 28, appendix C1) and their common abbreviations."""

_SUFFIX = "(?:" + "|".join(sorted(STREET_SUFFIXES, key=len, reverse=True)) + r")\b\.?"
_WORD = r"(?:[A-Z][A-Za-z'.-]*|\d{1,3}(?:st|nd|rd|th))"
_CITY_LINE = rf"{_WORD}(?:[ ]{_WORD}){{0,3}},[ ][A-Z]{{2}}[ ]\d{{5}}(?:-\d{{4}})?\b"
_UNIT = r"(?:,?[ ](?:Apt\.?|Apartment|Suite|Ste\.?|Unit|\#)[ ]?[\w-]+)"
_STREET = (
    rf"\b\d{{1,6}}[A-Z]?[ ](?:[NSEW]\.?[ ]|(?:North|South|East|West)[ ])?"
    rf"(?:{_WORD}[ ]){{1,4}}{_SUFFIX}{_UNIT}?(?:,?\s{{1,3}}{_CITY_LINE})?"
)
_MILITARY = (
    r"\b(?:(?:USNS|USNV|USS|USCGC)[ ][A-Z][a-z]+|PSC[ ]\d{4},[ ]Box[ ]\d{4}"
    r"|Unit[ ]\d{4}[ ]Box[ ]\d{4}),?\s{1,3}[AFD]PO[ ]A[AEP][ ]\d{5}\b"
)


_GLUED_SUFFIXES = (  # noqa: SIM905 - a word list reads best as words
    "straße strasse str. weg gasse allee platz ring damm ufer steig pfad chaussee gracht "
    "laan straat plein kade dijk singel vej gade gata gatan vägen väg veien vei gate katu "
    "tie kuja polku utca út tér vegur stræti"
).split()
"""Street words written as the end of one word (``Kastanienweg``, ``Keizersgracht``,
``Storgatan``, ``Mannerheimintie``): German, Dutch, Nordic, Finnish, Hungarian."""
_LEADING_WORDS = (  # noqa: SIM905
    "ul. ulica al. aleja os. pl. plac Via Viale Vicolo Piazza Piazzale Corso Largo Rua "
    "Avenida Av. Avda. Calle C/ Carrer Paseo Plaza Travessa Praça Rue Avenue Boulevard Bd. "
    "Chemin Allée Place Quai Impasse Strada Calea Str. Bulevardul Cesta Jalan Jl. Ulitsa "
    "Vulytsia Odos Leoforos"
).split()
"""Street words written before the name (``ul. Długa``, ``Via Roma``, ``Rua das Flores``)."""
_SEPARATE_SUFFIXES = (  # noqa: SIM905
    "Caddesi Cad. Sokak Soka\u011f\u0131 Sok. Bulvar\u0131 Yolu utca út tér körút Straße "
    "Strasse Gasse Weg Allee Platz Ring laan straat vej gade gata gatan katu tie ulice "
    "náměstí třída cesta iela gatvė tänav"
).split()
"""Street words written as a word of their own after the name (``Váci utca``,
``Atatürk Caddesi``, ``Lange Straße``)."""
_NUMBER_FIRST = (  # noqa: SIM905
    "rue avenue boulevard bd chemin allée place quai impasse route cours"
).split()
"""French street words after the house number (``12 rue de la Paix``)."""
_LINKS = r"(?:de|da|do|das|dos|del|della|delle|di|la|le|les|des|du|d'|l'|von|van|den|der)"
_STREET_WORD = r"\p{Lu}[\p{L}'.-]*"
_STREET_NAME = rf"(?:{_LINKS}[ ]?)*{_STREET_WORD}(?:[ ](?:{_LINKS}[ ]?)*{_STREET_WORD}){{0,3}}"
_HOUSE = (
    r"(?:nr\.?[ ]?|n[º°o]\.?[ ]?|No:?[ ]?)?\d{1,4}[a-zA-Z]?(?:[/-]\d{1,4}[a-zA-Z]?)?"
    r"(?![\w-]|[.,]\d)"
)
_POSTAL = (
    r"(?:,?[ ](?:\d{2}-\d{3}|[A-Z]{1,2}-?\d{4,5}|\d{4,5})[ ]\p{Lu}\p{Ll}+(?:[ ]\p{Lu}\p{Ll}+)?)?"
)
_INTERNATIONAL_STREETS = {
    "street word at the end": (
        rf"\b\p{{Lu}}\p{{L}}{{2,}}?(?:{'|'.join(map(re.escape, _GLUED_SUFFIXES))})"
        rf"[ ]{_HOUSE}{_POSTAL}"
    ),
    "street word first": (
        rf"(?<![\w.])(?:{'|'.join(map(re.escape, _LEADING_WORDS))})[ ]{_STREET_NAME},?[ ]"
        rf"{_HOUSE}{_POSTAL}"
    ),
    "street word after a name": (
        rf"\b{_STREET_NAME}[ ](?:{'|'.join(map(re.escape, _SEPARATE_SUFFIXES))})"
        rf"[ ]?,?[ ]?{_HOUSE}"
    ),
    "a street after its label": (
        rf"(?<=(?i:address|addr\.|lives at|live at|living at|located at|moved to|ship to|"
        rf"deliver to|send it to)[: ]{{1,3}}){_STREET_NAME},?[ ]{_HOUSE}{_POSTAL}"
    ),
    "Korean road": (
        r"(?:\b\d{1,4}[ ])?\p{Lu}\p{Ll}+-(?:ro|gil|daero)(?:[ ]\d{1,4}(?:-\d{1,4})?)?\b"
    ),
    "number, then Jalan": rf"\b\d{{1,4}}[ ](?:Jalan|Jl\.)[ ]{_STREET_NAME}",
    "Latin American grid": (
        r"\b(?:Calle|Carrera|Cra\.|Avenida|Av\.|Diagonal|Transversal|Cl\.)[ ]\d{1,3}[A-Z]?"
        r"(?:[ ]?(?:No\.?|#|N°)[ ]?\d{1,4}(?:-\d{1,4})?)"
    ),
    "number, then the street word": (
        rf"\b\d{{1,4}}(?:[ ]?(?:bis|ter))?,?[ ](?:{'|'.join(_NUMBER_FIRST)})[ ]"
        rf"(?:(?:de[ ]la|de|du|des|d'|l')[ ]?)?{_STREET_WORD}(?:[ ]{_STREET_WORD}){{0,3}}"
        rf"{_POSTAL}"
    ),
}
"""Street lines outside the US: the street (one word or a few), the house number, then an
optional postal code and city (``ul. Długa 12, 00-950 Warszawa``)."""


class StreetAddressRecognizer(PatternRecognizer):
    """Postal addresses: US street lines (with unit and city line when present), city
    lines, and the street lines of many other countries (:data:`_INTERNATIONAL_STREETS`).

    A street found by a glued street word must not be an ordinary English word
    (``Spring 2024``, ``String 12``): ``common`` holds those."""

    def __init__(self, language: str, common: frozenset[str] = frozenset()) -> None:
        self._common = common
        super().__init__(
            supported_entity="STREET_ADDRESS",
            name="HookgateStreetAddressRecognizer",
            supported_language=language,
            patterns=[
                Pattern("street address", _STREET, 0.6),
                Pattern("military address", _MILITARY, 0.7),
                Pattern("city, state zip", _CITY_LINE, 0.5),
                *(Pattern(n, p, 0.6) for n, p in _INTERNATIONAL_STREETS.items()),
            ],
            context=["address", "live", "lives", "ship", "deliver", "mail", "street"],
            global_regex_flags=_CASE_SENSITIVE,
        )

    def validate_result(self, pattern_text: str) -> bool | None:
        first = pattern_text.split(" ", 1)[0]
        if first.lower() in self._common:
            return False if _GLUED_END.search(first) else None
        return None


_SECRETS = {
    "OpenAI or Anthropic key": r"\bsk-(?:[A-Za-z0-9]+-){0,3}[A-Za-z0-9_-]{20,}",
    "AWS access key id": r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    "GitHub token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b",
    "Slack token": r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    "Slack webhook": r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}",
    "Google API key": r"\bAIza[0-9A-Za-z_-]{35}",
    "Stripe key": r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",
    "JWT": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "private key block": (
        r"-----BEGIN[ A-Z]*PRIVATE KEY-----[\s\S]+?-----END[ A-Z]*PRIVATE KEY-----"
    ),
    "AWS secret access key": r"(?<=(?:aws_secret_access_key|secret_access_key)\W{1,4})"
    r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
}


class SecretRecognizer(PatternRecognizer):
    """API keys, tokens and private keys of well-known services."""

    def __init__(self, language: str) -> None:
        super().__init__(
            supported_entity="SECRET",
            name="HookgateSecretRecognizer",
            supported_language=language,
            patterns=[Pattern(name, pattern, 0.9) for name, pattern in _SECRETS.items()],
            global_regex_flags=_CASE_SENSITIVE,
        )


class EmailNameRecognizer(LocalRecognizer):
    """``PERSON``: two or three capitalised words whose surname (or given name) is a part of
    an e-mail address in the same text (``Chidinma Okafor … chidinma.okafor@x.com``,
    ``Ngozi Eze … neze@x.com``), for names no gazetteer or model knows."""

    def __init__(self, language: str, stop: frozenset[str]) -> None:
        self._stop = stop
        super().__init__(
            supported_entities=["PERSON"],
            name="HookgateEmailNameRecognizer",
            supported_language=language,
        )

    def load(self) -> None:
        """Nothing to load."""

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        if "@" not in text or nlp_artifacts is None or nlp_artifacts.tokens is None:
            return []
        locals_ = [m.lower() for m in _EMAIL_LOCAL.findall(text)]
        parts = email_name_parts(text)
        if not parts:
            return []
        doc = nlp_artifacts.tokens
        results: list[RecognizerResult] = []
        for i in range(len(doc) - 1):
            first, last = doc[i], doc[i + 1]
            if not (_title(first.text) and _title(last.text) and first.whitespace_):
                continue
            given, surname = first.text.lower(), last.text.lower()
            if given in self._stop or surname in self._stop:
                continue
            initial = given[0] + surname
            if surname in parts or (given in parts and len(given) > 3) or initial in locals_:
                end = last.idx + len(last.text)
                results.append(RecognizerResult("PERSON", first.idx, end, 0.6))
        return results


class StructuredNames:
    """``PERSON``: names that stand without sentence context, found by the structure around
    them (a model reads sentences, and misses ``"Ana Lima","ana@x.io",...``).

    * **A field of a delimited row** (``,`` ``;`` ``|`` ``/`` or a tab; quotes stripped)
      whose line also holds an e-mail address or a phone number: a field of two to four
      capitalised words (name particles between them) is a name.
    * **A label's first line**: a line of one to three capitalised words right above a
      line that holds a street address, an e-mail address or a phone number.
    * **A labelled value**: two to four capitalised words after a label that names a
      person (``Name:``, ``Customer:``, ``Assignee =``, ``Attn:``, ``From:``, ...).
    * **An address's display name**: the capitalised words before ``<someone@host>``.
    * **A signature**: a line of two or three capitalised words right below a sign-off
      (``Regards,``, ``Thanks,``, ``Best,``, ...).
    * **A transcript's speakers**: capitalised words before ``:`` at the start of a line
      (after a time stamp or in brackets), when at least two lines of the text are so.

    A candidate with a word of ``stop`` (technical names, field labels, statuses, places,
    days: ``not_names.txt``) is not a name, nor is a one-word line unless it is a known
    given name. Pure regular expressions over the text's lines; no NLP.

    Not a Presidio recognizer: the analyzer adds these spans after Presidio's own results
    are filtered, because a model's implausible span over a whole row (``Ana Lima","ana@``)
    would otherwise swallow them as duplicates and then be dropped itself.
    """

    def __init__(self, given: frozenset[str], stop: frozenset[str]) -> None:
        self._given = given
        self._stop = stop

    def find(self, text: str) -> list[tuple[int, int, Cue]]:
        """The ``(start, end, cue)`` of every name the structure gives away, in order. The
        cue says how sure the structure is (see :class:`~hookgate.redaction.names.Cue`): a
        label, a display name, a speaker, a signature or a row with a contact is ``strong``;
        a name doing or being told something is ``weak``; a list of names is ``none`` (its
        words must then look like a name on their own: a list of fonts is no list of
        people)."""
        results: list[tuple[int, int, Cue]] = []
        speakers = [*_SPEAKER.finditer(text), *_IRC_SPEAKER.finditer(text)]
        # "[Hirut] 10:43: …", "Abdikarim 10:41: …": a stamped line says it alone
        stamped = [*_BRACKET_SPEAKER.finditer(text), *_STAMPED_SPEAKER.finditer(text)]
        # (matches, cue, one word may do: "<Mekdes> ok", "[09:05] Ruwan:", "guest": "Võ")
        patterns: list[tuple[Iterable[regex.Match[str]], Cue, bool]] = [
            (_LABELLED.finditer(text), "strong", False),
            (_LABELLED_ONE.finditer(text), "speaker", True),
            (_DISPLAY_NAME.finditer(text), "strong", False),
            (_ACTOR.finditer(text), "weak", False),
            (_ADDRESSEE.finditer(text), "weak", False),
            (_SLACK_SPEAKER.finditer(text), "strong", False),
            (speakers if len(speakers) + len(stamped) > 1 else (), "speaker", False),
            (stamped, "speaker", True),
        ]
        for matches, cue, alone in patterns:
            for match in matches:
                value = match.group("value").rstrip(".")
                begin = match.start("value")
                if (title := _TITLE.match(value)) is not None:  # "Dr. Ana Lima": the name
                    value, begin = value[title.end() :], begin + title.end()
                # "Tesfaye, Selam" <…>: family name first, the comma no part of a word
                plain = value.replace(", ", " ") if cue == "strong" else value
                # a bracketed speaker may go by one word too; "Assignee: …" is a label
                lone = alone or bool(
                    cue == "speaker" and _MARKED.search(text, match.start(), begin + 1)
                )
                if self._name(plain, words=(2, 4), lone=lone):
                    results.append((begin, begin + len(value), cue))
        if "\n" not in text and not _ROW_MARK.search(text):
            return results
        lines = [(m.start(), m.group()) for m in _LINE.finditer(text)]
        for index, (start, line) in enumerate(lines):
            contact = bool(_CONTACT.search(line))
            fields = [f for f in _FIELD.finditer(line) if f.group("value")]
            names = [f for f in fields if self._name(f.group("value"), words=(2, 4))]
            # a row with a contact, or a list of at least two names ("A; B; C")
            row = contact and _DELIMITER.search(line)
            if row or (len(names) > 1 and len(names) * 2 > len(fields)):
                for field in names:
                    begin = start + field.start("value")
                    sure: Cue = "strong" if row else "none"
                    results.append((begin, begin + len(field["value"]), sure))
            label = line.strip()
            if (bare := _BARE_NAME_LINE.fullmatch(line)) is not None and not _SIGN_OFF.fullmatch(
                label
            ):  # "Jolanta," above a letter, "— Jolanta" below one
                value = bare.group("value")
                marked = bool(bare.group("mark"))  # "— Yohannes", "Jolanta,": one word will do
                if self._name(value, words=(1, 3), lone=marked):
                    results.append(
                        (
                            start + bare.start("value"),
                            start + bare.end("value"),
                            "speaker" if marked else "none",
                        )
                    )
            after = next(((s, ln) for s, ln in lines[index + 1 :] if ln.strip()), None)
            below = after[1] if after is not None else ""
            if after is not None and _SIGN_OFF.fullmatch(label):
                signed = after[1].strip()
                if self._name(signed, words=(2, 3)):
                    begin = after[0] + after[1].index(signed)
                    results.append((begin, begin + len(signed), "strong"))
            if (
                not contact
                and label
                and self._name(label, words=(1, 3))
                and (_CONTACT.search(below) or _STREET_LINE.search(below))
            ):
                begin = start + line.index(label)
                results.append((begin, begin + len(label), "strong"))
        return results

    def _name(self, value: str, *, words: tuple[int, int], lone: bool = False) -> bool:
        parts = value.split()
        named = [p for p in parts if p.lower() not in NAME_PARTICLES]
        fewest = 1 if lone else words[0]
        if not fewest <= len(named) <= words[1] or parts[0] in NAME_PARTICLES:
            return False
        if not all(_NAME_WORD.fullmatch(p) for p in named):
            return False
        if any(p.lower().strip(".") in self._stop for p in named):
            return False
        return len(named) > 1 or lone or named[0].lower() in self._given


_NAME_PART = (
    r"(?:(?:\p{Ll}{1,2}['\u2019])?\p{Lu}\p{Ll}*(?:\p{Lu}\p{Ll}+)?(?:['\u2019-]\p{L}\p{Ll}*)*"
    r"|\p{Lu}\.|(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sr|Jr)\.)"
)
"""A word of a name in any Latin-script alphabet: ``Ana``, ``Đức``, ``O'Brien``,
``d'Aubigny``, ``MacLeod``, ``García-López``, ``Ha-eun``, an initial ``J.``, a title ``Dr.``."""
_TITLE = regex.compile(r"(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sr|Jr)\.[ ]+")
_NAME_RUN = rf"{_NAME_PART}(?:[ ]+(?:{PARTICLE_PATTERN}[ ]+)*{_NAME_PART}){{1,3}}"
"""Two to four capitalised words, name particles between them; nothing else."""
_SPEAKER_RUN = rf"{_NAME_PART}(?:[ ]+(?:{PARTICLE_PATTERN}[ ]+)*{_NAME_PART}){{0,3}}"
"""One to four: a chat log's speaker may go by one name."""
_PERSON_LABELS = (
    "name|full name|customer|client|contact|patient|employee|owner|assignee|assigned to|"
    "reporter|requester|requested by|author|attn|attention|from|to|cc|signed|signed by|"
    "recipient|sender|guest|passenger|member|tenant|student|applicant|candidate|driver|"
    "manager|approver|approved by|reviewer|reviewed by|submitted by|created by|user|"
    "cardholder|card holder|account holder|beneficiary|payee|holder|speaker|host|organizer|"
    "party|opposing party|plaintiff|defendant|witness|claimant|respondent|guarantor|signatory|"
    "attendee|nominee|supervisor|parent|guardian|spouse|next of kin|emergency contact"
)
_NOT_PERSON_KEYS = (
    "file|host|db|database|service|table|app|project|product|company|org|team|queue|topic|"
    "bucket|cluster|node|pod|repo|branch|image|model|dataset|schema|column|field|metric|"
    "plan|tier|domain|server|device|package|module|class|function|event|job|task|brand|city"
)
_LABELLED = regex.compile(
    rf"(?:^|(?<=[\s,;|(\[{{]))[\"']?(?i:(?![\w-]*(?:{_NOT_PERSON_KEYS}))"
    rf"[\w-]*?(?:{_PERSON_LABELS})[\w-]*)[\"']?[ ]*(?:[:=]|[ ][-\u2013][ ])[ ]*"
    rf"[\"'\[]?(?P<value>{_NAME_RUN})",
    regex.M,
)
"""A value after a label or key that names a person (``Owner:``, ``"fullName":``,
``customer_name =``), not after one that names a thing (``hostname:``, ``file_name``)."""
_LABELLED_ONE = regex.compile(
    rf"(?:^|(?<=[\s,;|(\[{{]))[\"']?(?i:(?![\w-]*(?:{_NOT_PERSON_KEYS}))"
    rf"[\w-]*?(?:{_PERSON_LABELS})[\w-]*)[\"']?[ ]*(?:[:=]|[ ][-\u2013][ ])[ ]*"
    rf"[\"'\[]?(?P<value>{_NAME_PART})(?=[\"'\]]|[ ]*(?:[,;|}}\n]|$))",
    regex.M,
)
"""A one-word value under a person key (``"guest":"Võ"``, ``Owner: Grace``)."""
_ACTOR = regex.compile(
    rf"(?P<value>{_NAME_RUN})[ ]+(?:says|said|wrote|writes|confirmed|confirms|reported|"
    r"reports|asked|asks|mentioned|replied|approved|signed|noted|added|explained|called|"
    r"emailed|messaged|requested|told|thinks|suggested|agreed|took over|joined|left)\b"
)
"""A name doing what people do (``Oğuz Demir says ...``), where a model misses it at the
start of a sentence."""
_ADDRESSEE = regex.compile(
    rf"\b(?:to|with|cc|from|by|ask|tell|ping|thank|thanks|met|meet|assign(?:ed)? it to)"
    rf"[ ]+(?P<value>{_NAME_RUN})(?=[ ]+(?:in copy|in cc|and|about|for|at|on)\b|[,.;:!?)]|$)",
    regex.M,
)
"""A name someone writes to, copies or meets (``with Iosefa Fifita in copy``)."""
_BARE_NAME_LINE = regex.compile(
    rf"[ \t]*(?P<mark>(?:--|[-\u2013\u2014~])[ ]?)?"
    rf"(?P<value>{_NAME_PART}(?:[ ]+{_NAME_PART}){{0,2}})"
    r"(?(mark)[ ]?|(?:(?P<mark>[ ]?[,!\u2014\u2013-])|))[ \t]*"
)
"""A line that is a name alone: a letter's salutation (``Jolanta,``) or signature
(``— Jolanta``); a list of fonts or a heading is kept out by the name test."""
_IRC_SPEAKER = regex.compile(
    rf"^[ \t]*(?:[\[(][^\]\n)]{{1,20}}[\])][ \t]*)*<(?P<value>{_SPEAKER_RUN})>[ \t]", regex.M
)
"""An IRC-style log's speaker (``<Ana Lima> thanks, looks good``)."""
_SLACK_SPEAKER = regex.compile(
    rf"^[ \t]*(?P<value>{_NAME_RUN})[ \t]{{2,}}\d{{1,2}}:\d{{2}}(?:[ ]?[AP]M)?[ \t]*$",
    regex.M,
)
"""A chat export's speaker line: a name, then the time (``Nusrat Iyer  19:17``)."""
_DISPLAY_NAME = regex.compile(
    rf"(?P<value>{_NAME_RUN}|(?<=\")(?:{_NAME_PART}),[ ](?:{_NAME_PART}))[\"']?[ ]*"
    r"<[^<>@\s]+@[^<>\s]+>"
)
"""A display name before an address (``Ana Lima <ana@x>``, ``"Tesfaye, Selam" <s@x>``)."""
_SPEAKER = regex.compile(
    rf"^[ \t]*(?:[\[(][^\]\n)]{{1,20}}[\])][ \t]*)*[\[<]?(?P<value>{_SPEAKER_RUN})[\]>]?[ ]?:[ ]",
    regex.M,
)
_STAMPED_SPEAKER = regex.compile(
    rf"^[ \t]*(?P<value>{_SPEAKER_RUN})[ \t]+\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:[ ]?[AP]M)?:[ ]",
    regex.M,
)
"""A chat export's speaker before the time of the line (``Abdikarim 10:41: guest in …``)."""
_MARKED = regex.compile(r"[\[<(]")
"""A log line's mark before its speaker: a bracket, or a time in brackets."""
_BRACKET_SPEAKER = regex.compile(
    rf"^[ \t]*[\[<](?P<value>{_SPEAKER_RUN})[\]>][ \t]+\d{{1,2}}:\d{{2}}(?::\d{{2}})?"
    r"(?:[ ]?[AP]M)?:?[ ]",
    regex.M,
)
"""A log line's speaker in brackets before the time (``[Hirut] 10:43: ok``)."""
"""A chat transcript's speaker (``[07:10] Ana Lima: ...``, ``<Ana Lima>: ...``)."""
_SIGN_OFF = regex.compile(
    r"(?i:(?:best|kind|warm|many|all the)?[ ]?(?:regards|wishes|thanks|thank you|sincerely|"
    r"cheers|best|yours|yours truly|respectfully|take care|obrigad[oa]|gracias|saludos|"
    r"un saludo|atentamente|cordialement|bien à vous|merci|danke|viele grüße|grüße|"
    r"mit freundlichen grüßen|lg|groetjes|met vriendelijke groet|groeten|pozdrawiam|"
    r"pozdrav|s pozdravem|hälsningar|med vänlig hälsning|hilsen|med vennlig hilsen|"
    r"mvh|tack|kiitos|terveisin|saluti|cordiali saluti|grazie|atenciosamente|abraços|"
    r"terima kasih|salam|shukran|teşekkürler|sayg\u0131lar\u0131mla|спасибо|arigato|cảm ơn|"
    r"salamat|ngā mihi|mahalo|asante|baie dankie|cheers mate|ta))[,.!]?"
)
_LINE = re.compile(r"[^\n]+")
_ROW_MARK = re.compile(r"[,;|/\t]")
_DELIMITER = re.compile(r"[,;|\t]|\s/\s")
_FIELD = regex.compile(
    r"(?:^|[,;|\t]|\s/\s)\s*(?:[*\u2022-]\s+|\d{1,3}[.)]\s+)?(?:[\w ]{1,30}:\s*)?\"?"
    r"(?P<value>[^,;|\t/\":]+?)\"?\s*(?=$|[,;|\t]|\s/\s)"
)
"""One field of a row (a bullet, a number or a short ``Label:`` before it set aside)."""
_CONTACT = re.compile(r"[\w.+'-]+@[\w-]+(?:\.[\w-]+)+|(?<![\w.])\+?\(?\d[\d ().-]{6,}\d(?![\w.])")
_STREET_LINE = regex.compile(rf"{_STREET}|{_CITY_LINE}")
_GLUED_END = regex.compile(
    rf"\p{{L}}{{2}}(?:{'|'.join(map(re.escape, _GLUED_SUFFIXES))})$", regex.IGNORECASE
)
_NAME_WORD = regex.compile(_NAME_PART)


_EMAIL_LOCAL = re.compile(r"([\w.'-]+)@\w")
_LOCAL_SPLIT = re.compile(r"[._'\d-]+")


def _title(word: str) -> bool:
    """``Alice``, ``O'Brien``, ``García``: a capital, then at least one lower-case letter."""
    return len(word) > 1 and word[0].isupper() and any(c.islower() for c in word[1:])


_GROUPED_CARD = r"\b\d{4}([ -])\d{4}\1\d{4}\1\d{4}(?:\1?\d{1,3})?\b"


class CardRecognizer(CreditCardRecognizer):
    """Card numbers by length and grouping; Presidio's Luhn check validates them."""

    def __init__(self, language: str) -> None:
        super().__init__(
            supported_language=language,
            name="HookgateCardRecognizer",
            patterns=[
                Pattern("grouped 4-4-4-4(-3)", _GROUPED_CARD, 0.6),
                Pattern("amex/diners grouping", r"\b\d{4}([ -])\d{6}\1\d{4,5}\b", 0.6),
                Pattern("12 to 19 digits", r"(?<![\d.-])\d{12,19}(?![\d]|[.-]\d)", 0.3),
            ],
            context=["card", "credit", "debit", "visa", "mastercard", "amex", "maestro",
                     "jcb", "discover", "diners", "cc", "charged", "payment", "billing"],
        )  # fmt: skip


class ContextEnhancer(LemmaContextAwareEnhancer):
    """Presidio's context-word enhancer with its token lookup made logarithmic.

    Presidio finds the token of each result by scanning the text's tokens from the start,
    and tests each context word against the text's keyword *list*, which makes a long text
    with many results quadratic (a 97 KB tool result with 2,000 phone numbers took 6.6 s,
    5.5 of them there). Tokens are ordered, so a binary search over their offsets finds the
    same token, and the keywords are looked up in a set made once per text.
    """

    _keywords = threading.local()

    @staticmethod
    def _add_n_words(
        index: int,
        n_words: int,
        lemmas: list[str],
        lemmatized_filtered_keywords: list[str],
        is_backward: bool,
    ) -> list[str]:
        cache = ContextEnhancer._keywords
        if getattr(cache, "source", None) is not lemmatized_filtered_keywords:
            cache.source = lemmatized_filtered_keywords
            cache.words = frozenset(lemmatized_filtered_keywords)
        words: frozenset[str] = cache.words
        context: list[str] = []
        i, remaining, step = index, n_words + 1, -1 if is_backward else 1
        while 0 <= i < len(lemmas) and remaining > 0:
            lower = lemmas[i].lower()
            if lower in words:
                context.append(lower)
                remaining -= 1
            i += step
        return context

    @staticmethod
    def _find_index_of_match_token(
        word: str, start: int, tokens: Any, tokens_indices: list[int]
    ) -> int:
        i = bisect.bisect_right(tokens_indices, start) - 1
        if i >= 0 and start < tokens_indices[i] + len(tokens[i]):
            return i
        if i + 1 < len(tokens_indices):
            return i + 1
        raise ValueError(f"no token at offset {start}")


def custom_recognizer(
    entity_type: str,
    language: str,
    patterns: list[tuple[str, str, float]],
    context: list[str],
    deny_list: list[str],
) -> Any:
    """A user's recognizer from YAML: regex patterns and/or a deny-list, with context words."""
    return PatternRecognizer(
        supported_entity=entity_type,
        name=f"custom:{entity_type}",
        supported_language=language,
        patterns=[Pattern(name, pattern, score) for name, pattern, score in patterns],
        deny_list=deny_list,
        context=context,
    )
