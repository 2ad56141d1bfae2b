"""Whether capitalised words are a person's name: name lists, English word frequency, and
the words around them.

Two questions, answered from three word lists (:mod:`hookgate.redaction.vocabulary`): the
given and family names of many countries (*known* words), the common words of English
(*common*: Zipf frequency 3 or more), and words that are never a name here (*stop*:
technical names, field labels, statuses).

* :meth:`NameLexicon.plausible` — may these words be a name? Every word must be a known
  name or a rare word (``Okonkwo``, ``Wróblewska``), so a phrase of ordinary words
  (``Reading Files``, ``Use Write``, ``Skill Roots``) is not a name while ``Grace Hall``
  is — unless one word is a *distinctive* name, known and no common word (``Kaveh Sow``);
  one word alone must be distinctive (``Jolanta``, not ``Read`` or ``Will``). A cue
  relaxes this (:data:`Cue`): after ``for`` or ``tell`` the rule holds; a chat-log speaker
  may be one rare word; after ``Dear``, ``my name is``, ``customer``, a sign-off or before
  a contact (``(ana@x.pl)``) any capitalised word but a pronoun is a name; after a title or
  honorific (``Ms.``, ``Pak``) any capitalised word is.
* :class:`MentionedNames` — runs of two to four capitalised words that are plausible and
  hold at least one known name (``Giulia Bernardi``, ``Björn Lindqvist``), and runs of any
  plausible name after a cue, wherever a model missed them or called them a place or an
  organisation.

Pure: regular expressions and set look-ups, no NLP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import regex

from hookgate.redaction.vocabulary import LEADING_NOT_NAMES, NAME_PARTICLES, PARTICLE_PATTERN

Cue = Literal["none", "weak", "speaker", "strong", "title"]
"""What the words before or after a candidate (or the structure around it) say: nothing,
that a name may follow (``for``, ``tell``), that it speaks in a chat log (``<Mekdes> ok``),
that a person is named (``Dear``, ``my name is``, an e-mail after it), or a title
(``Ms.``, ``Pak``), after which any word is a name."""

TITLES = frozenset(
    (  # noqa: SIM905 - a word list reads best as words
        "mr mrs ms mx miss dr prof sir madam mister mme mlle herr frau sr sra srta dott dra "
        "pan pani doña lic ing pak bapak ibu bu mas mbak kak khun malam mallam alhaji "
        "hajiya haji auntie aunty uncle mama baba chief ato wzro sheikh sayyid ustaz "
        "cik encik puan tuan datuk"
    ).split()
)
"""Titles and honorifics before a name (with or without a full stop); never part of the
name's span, and whatever follows one is a name (``Mr. He``, ``Pak Joko``)."""
HONORIFIC_SUFFIXES = ("san", "sama", "kun", "chan", "sensei", "ji", "ssi", "nim", "jee")
"""Honorifics glued to a name after a hyphen (``Sasaki-san``, ``Simran-ji``,
``Seung-min-ssi``); never part of the name's span."""

PRONOUNS = frozenset(
    (  # noqa: SIM905
        "i me my you your he him his she her it its we us our they them their this that "
        "these those who whom whose which what someone somebody everyone everybody nobody "
        "anyone anybody"
    ).split()
)
"""Never a name, whatever a list of names or a cue says (``She lives at …``)."""

ASSISTANTS = frozenset(
    [
        "claude",
        "gemini",
        "codex",
        "copilot",
        "siri",
        "alexa",
        "cortana",
        "bard",
        "grok",
        "jarvis",
        "devin",
        "kiro",
    ]
)
"""Names of AI assistants: one alone is the product in agent traffic (``ask Claude``),
never taken for a person; with a family name (``Claude Dubois``) it is one."""
_NOT_ADDRESSED = frozenset(
    (  # noqa: SIM905
        "there all world again everyone everybody folks guys team both you again sir madam "
        "friends colleagues"
    ).split()
)
"""Words after a greeting that are no one's name (``Hi there``, ``Hello World``)."""
FUNCTION_WORDS = frozenset(
    (  # noqa: SIM905
        "will may can must shall might should would could do does did is are was were have "
        "has had let so but and or if then when what who how why where no yes please the a an"
    ).split()
)
"""Words that start a sentence as often as any name: ``Will you …``, ``May I …``."""

_STRONG_BEFORE = (
    "my name is|my name's|name is|name's|i am|i'm|im|call me|this is|it's|it is|signed|"
    "dear|hi|hello|hey|greetings|good morning|good afternoon|good evening|thanks|thank you|"
    "bonjour|salut|hola|ciao|hallo|hej|hei|moin|merhaba|selam|salam|namaste|jambo|sawubona|"
    "shalom|olá|ola|oi|ahoj|cześć|szia|sveiki|tere|privet|konnichiwa|annyeong|ni hao|"
    "customer|client|patient|employee|tenant|candidate|applicant|colleague|coworker|"
    "supervisor|mentor|advisor|adviser|coach|tutor|professor|director|founder|assistant|"
    "friend of|colleague of|wife of|husband of|son of|daughter of|mother of|father of|"
    "co-worker|manager|boss|wife|husband|son|daughter|mother|father|mom|mum|dad|brother|"
    "sister|friend|partner|fiancé|fiancée|neighbour|neighbor|landlord|landlady|doctor|"
    "nurse|lawyer|attorney|teacher|student|pupil|guest|passenger|recipient|beneficiary|"
    "cardholder|account holder|subscriber|member|contractor|intern|caller|named|"
    "introducing|attn|attention|regards|kind regards|best regards|warm regards|cheers|"
    "sincerely|best|best wishes|all the best|love|yours|warmly|many thanks"
)
"""Words after which a capitalised word is a person (the end of a phrase, lower-cased)."""
_WEAK_BEFORE = (
    "from|cc|for|to|with|by|and|or|tell|ask|asked|ping|email|e-mail|mail|text|call|called|meet|met|"
    "invite|invited|thank|pay|paid|refund|remind|notify|message|contact|forward|introduce|"
    "congratulate|hire|hired|fire|fired|about|of|sign it as|signed by|assign|assigned to|"
    "cc'd|cc|loop in|include|copy|welcome|visit|visited|helped|told|let|see|saw|like|add|"
    "added|remove|removed|replace|replaced|swap|who is|who's|is|was|as|than|between|after|"
    "before|alongside|including|via|whom|whose|are|were|put|give|get|make|take|book|find|check|"
    "leave|move|keep|show|help|look up|drop|bring|send|write to|reply to|answer|update|"
    "schedule|assign|pay|thank|greet|introduce|nominate|hire|list|mention|say hi to"
)
"""Words after which a name may follow, as may anything else (``for Python``)."""
_NAMED = (
    "family name|surname|last name|first name|given name|middle name|maiden name|nickname|"
    "spelled|spelt"
)
"""Words after which the next capitalised word is a name, whatever it looks like
(``the family name He``, ``surname; Tạ``)."""
_TITLE_CUE = "|".join(sorted(TITLES, key=len, reverse=True))
_BEFORE = regex.compile(
    rf"(?i:\b(?P<title>(?:{_TITLE_CUE})\.?|{_NAMED})|\b(?P<strong>{_STRONG_BEFORE})|"
    rf"\b(?P<weak>{_WEAK_BEFORE}))"
    rf"(?:[ ,:;]*|[ ]*[,!.]?[ ]*\n[ \t]*)\Z"
)
_CONTACT_AFTER = regex.compile(
    r"[ ]?(?:[(<\[][ ]?[\w.+'-]+@|,[ ]?[\w.+'-]+@\w|[ ]?[(<\[]?[ ]?\+?\d[\d ().-]{6,}\d|"
    r"[ ]+(?:at|on)[ ]+(?:\+?\d[\d ().-]{6,}\d|[\w.+'-]+@\w)|[ ]+(?:lives|lived|living)[ ])"
)
"""A contact or a home right after a name: ``(ana@x.pl)``, ``<ana@x.pl>``, ``, +48 …``."""
_WORD = (
    r"(?:(?:Mr|Mrs|Ms|Mx|Dr|Prof|Sr|Sra|Mme)\.(?=[ ])|(?:\p{Ll}{1,2}['\u2019])?\p{Lu}\p{Ll}+"
    r"(?:\p{Lu}\p{Ll}+)?(?:-\p{L}\p{Ll}*|['\u2019](?!s\b)\p{L}\p{Ll}*)*)"
)
"""A capitalised word of a name in a Latin alphabet (``Ana``, ``Đức``, ``O'Brien``,
``d'Aubigny``, ``MacLeod``, ``García-López``), or a title."""
_RUN = regex.compile(
    rf"(?<![\p{{L}}\p{{N}}_@./\\-]){_WORD}(?:[ ]+(?:{PARTICLE_PATTERN}[ ]+)*{_WORD}){{0,4}}"
    rf"(?![\p{{L}}\p{{N}}_@/\\]|\.\p{{L}}|-\p{{L}})"
)
"""A run of capitalised words on one line, name particles between them."""
_WORD_AT = regex.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class NameLexicon:
    """The word lists a name is judged by, lower-cased."""

    given: frozenset[str]
    family: frozenset[str]
    common: frozenset[str]
    stop: frozenset[str]
    """Never a word of a name: technical names, field labels, statuses, places."""

    def known(self, word: str) -> bool:
        """A given or family name (``Jolanta``, ``Hall``), whether or not also a word."""
        key = _key(word)
        return key in self.given or key in self.family or self._parts_known(key)

    def common_word(self, word: str) -> bool:
        """An ordinary English word (``Reading``, ``Will``, ``It's``), names among them; a
        compound of ordinary words too, unless all its parts are names (``Co-Authored-By``
        is one, ``Mary-Jane`` is not)."""
        key = _key(word)
        if key in self.common:
            return True
        pieces = key.split("-")
        return (
            len(pieces) > 1
            and all(p in self.common for p in pieces)
            and not all(p in self.given or p in self.family for p in pieces)
        )

    def plausible(self, words: list[str], cue: Cue = "none") -> bool:
        """Whether ``words`` (a candidate without its title and particles) may be a name,
        given what the text says around it (see the module docstring). One rare word is not
        enough, even when the model calls it a person: ``Grep``, ``Glob`` and ``Timestamp``
        in tool descriptions are (it cost 0.8% of technical words for 0.3% fewer leaks)."""
        if cue == "title":  # "Mr. He", "Ms. Oh": a title makes any capitalised word a name
            return bool(words) and not any(
                (_key(w) in self.stop and _key(w) not in self.given) or _camel(w) for w in words
            )
        if not words or any(self._excluded(w, i) for i, w in enumerate(words)):
            return False
        namelike = [self.known(w) or not self.common_word(w) for w in words]
        if cue == "strong":  # "Hi Blessing", "Dear Hope": a cue names even a common word
            return all(_key(w) not in _NOT_ADDRESSED for w in words)
        if cue == "speaker":  # "<Mekdes> ok", "— Faith": a rare word or a given name
            if len(words) > 1:  # "Oisín MacLeod: …": one word like a name will do
                return any(namelike)
            one = _key(words[0])
            return namelike[0] and (
                not self.common_word(words[0])
                or (one in self.given and one not in FUNCTION_WORDS and one not in ASSISTANTS)
            )
        if len(words) == 1:
            return self.distinctive(words[0])
        return all(namelike) or any(self.distinctive(w) for w in words)

    def distinctive(self, word: str) -> bool:
        """A known name that is no common word: ``Jolanta``, ``Kaveh`` (not ``Will``), and
        no assistant's name (``Claude``, ``Gemini``)."""
        return self.known(word) and not self.common_word(word) and _key(word) not in ASSISTANTS

    def could_be_name(self, word: str) -> bool:
        """Whether ``word`` may be a word of some name: not excluded, and a known name or
        no common word. A sentence without one holds no name."""
        return not self._excluded(word, 1) and (self.known(word) or not self.common_word(word))

    def _excluded(self, word: str, position: int) -> bool:
        """Never a word of a name here; a pronoun after a name may be a family name
        (``Xinyi He``)."""
        if position and _key(word) in PRONOUNS and _key(word) in self.family:
            return False
        return self.stopped(word) or _camel(word) or _acronym(word)

    def stopped(self, word: str) -> bool:
        """Never part of a name: a pronoun, or a stop word that is no given name (``June`` is)."""
        key = word.lower()
        return key in PRONOUNS or (key in self.stop and key not in self.given)

    def _parts_known(self, key: str) -> bool:
        parts = [p for p in regex.split(r"[-'\u2019]", key) if len(p) > 1]
        return len(parts) > 1 and all(p in self.given or p in self.family for p in parts)


class MentionedNames:
    """Names found by the words around them and by name lists, without a model.

    ``find(text)`` yields ``(start, end)`` spans of names: a run of two to four
    capitalised words that is :meth:`~NameLexicon.plausible` and holds a known name, or a
    plausible run after a cue (``Dear``, ``Ms.``, ``customer``, ``for``, ``tell``) or before a
    contact (``(ana@x.pl)``). Leading cue words and a title are not part of the span.
    """

    def __init__(self, lexicon: NameLexicon) -> None:
        self._lexicon = lexicon

    def find(self, text: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` of every name found, in order."""
        found: list[tuple[int, int]] = []
        for run in _RUN.finditer(text):
            words = [(m.start(), m.end()) for m in _WORD_AT.finditer(text, run.start(), run.end())]
            span = self._judged(text, words)
            if span is not None:
                found.append(span)
        return found

    def _judged(self, text: str, words: list[tuple[int, int]]) -> tuple[int, int] | None:
        lexicon = self._lexicon
        cue: Cue = "none"
        # leading words that are no name: a title, a cue ("Dear", "Tell", "Customer"), an
        # ordinary word that starts a sentence ("Please")
        while words:
            word = text[words[0][0] : words[0][1]]
            key = word.lower().rstrip(".")
            if key in TITLES and len(words) > 1:
                cue = "title"  # what follows a title is the name, whatever it looks like
                words = words[1:]
                break
            if key in FUNCTION_WORDS and (key not in lexicon.given or question(text, words[0][0])):
                pass  # "Can Vojtěch approve it?", "When Piotr calls": the name follows
            elif key in LEADING_NOT_NAMES:
                pass
            elif (said := _cue_before(word + " ")) != "none" or (
                _no_name(lexicon, word)
                and (not lexicon.common_word(word) or sentence_start(text, words[0][0]))
            ):
                cue = _stronger(
                    cue,
                    said
                    if said != "none"
                    else _cue_before(text[max(0, words[0][0] - 40) : words[0][1]] + " "),
                )
            else:
                break
            words = words[1:]
        while (
            len(words) > 1
            and cue != "title"
            and _no_name(lexicon, text[words[-1][0] : words[-1][1]])
        ):
            words = words[:-1]
        if not words:
            return None
        start, end = words[0][0], words[-1][1]
        cue = _stronger(cue, cue_around(text, start, end))
        end = without_honorific(text, start, end)
        names = [text[s:e] for s, e in words if text[s:e].lower() not in NAME_PARTICLES]
        if len(names) == 1 and cue == "none":
            return None  # a lone word needs a cue; the model's own PERSON label is one
        if not lexicon.plausible(names, cue):
            return None
        if cue == "none" and not (
            any(lexicon.known(n) for n in names)
            and all(lexicon.known(n) or not lexicon.common_word(n) for n in names)
        ):
            return None
        return start, end


def is_cue(word: str) -> bool:
    """Whether ``word`` is a cue (``Dear``, ``Bonjour``, ``Tell``), never part of a name."""
    return _cue_before(word + " ") != "none"


def cue_around(text: str, start: int, end: int) -> Cue:
    """What the words before ``text[start:end]`` and a contact after it say of a name."""
    if _CONTACT_AFTER.match(text, end):
        return "strong"
    return _cue_before(text[max(0, start - 40) : start])


_INITIAL = regex.compile(r"(?:[.!?:;\n]|^[ \t]*[-*+>#|])[ \t\"'(\[*_]*\Z", regex.M)


def question(text: str, position: int) -> bool:
    """Whether the sentence at ``position`` is a question (ends with ``?``): a modal that
    starts it is a verb (``Will Mojolicious run under Plack?``), not a given name."""
    end = _SENTENCE_END.search(text, position)
    return end is not None and end.group() == "?"


_SENTENCE_END = regex.compile(r"[.!?\n]")


def sentence_start(text: str, position: int) -> bool:
    """Whether a sentence, a line or a list item starts at ``position`` (quotes, brackets
    and emphasis marks before it aside). A capitalised ordinary word there says nothing;
    mid-sentence, before a name, it may be a given name the lists lack (``signed by Luiz
    Henrique Araújo``). Reads at most 40 characters back."""
    window = text[max(0, position - 40) : position]
    return _INITIAL.search(("\n" if position <= 40 else "") + window) is not None


def _no_name(lexicon: NameLexicon, word: str) -> bool:
    """A word that is no part of a name: a title, a stop word, a common non-name, or a
    camel-cased product (``GitHub``; ``McDonald`` and ``MacLeod`` are names)."""
    key = word.lower().rstrip(".")
    return (
        key in TITLES
        or lexicon.stopped(word)
        or (lexicon.common_word(word) and not lexicon.known(word))
        or _camel(word)
    )


_CAMEL = regex.compile(r"\p{Ll}\p{Lu}")
_NAME_PREFIX = regex.compile(
    r"^(?:Mc|Mac|Nic|Fitz|O'|D'|De|Di|Da|Du|La|Le|Van|Von|Ben|Abu|Al|El)(?=\p{Lu})"
)


def _key(word: str) -> str:
    """How a word is looked up: lower case, a curly apostrophe straight, ``İ`` as ``i``."""
    return word.lower().replace("i\u0307", "i").replace("\u2019", "'")


def _acronym(word: str) -> bool:
    """``CI``, ``AWS``: capitals only (an initial ``J.`` is not one)."""
    letters = word.rstrip(".")
    return len(letters) > 1 and letters.isupper()


def _camel(word: str) -> bool:
    return _CAMEL.search(_NAME_PREFIX.sub("", word)) is not None


def _cue_before(before: str) -> Cue:
    match = _BEFORE.search(before)
    if match is None:
        return "none"
    return "title" if match.group("title") else "strong" if match.group("strong") else "weak"


def _stronger(a: Cue, b: Cue) -> Cue:
    order = ("none", "weak", "speaker", "strong", "title")
    return a if order.index(a) >= order.index(b) else b


def without_honorific(text: str, start: int, end: int) -> int:
    """The end of a name's span without an honorific glued to it (``Sasaki-san``,
    ``Simran-ji``, ``Seung-min-ssi`` end before the hyphen)."""
    match = _HONORIFIC_END.search(text, start, end)
    return match.start() if match is not None and match.start() > start else end


_HONORIFIC_END = regex.compile(rf"-(?:{'|'.join(HONORIFIC_SUFFIXES)})\Z", regex.IGNORECASE)


def name_parts(name: str) -> list[str]:
    """The parts of a person's name that may stand for it alone: each word (``Jolanta``
    and ``Wróblewska`` of ``Jolanta Wróblewska``; ``Kowal`` and ``Nowak`` of ``Kowal-Nowak``
    too) and each run of its words (``García López`` of ``Ana García López``, ``Van Minh``
    of ``Nguyen Van Minh``), so a double surname written alone gets one placeholder, as the
    analysis of that text would give it. A part never starts or ends with a particle, a
    title, an initial or a word of two letters (``van den Broek`` is no part, ``Broek``
    is). A one-word name has no parts."""
    words = [w.rstrip(",") for w in name.split()]
    if len(words) < 2:
        return []
    runs = [
        " ".join(words[i:j])
        for i in range(len(words))
        for j in range(i + 2, len(words) + 1)
        if (i, j) != (0, len(words)) and _part_word(words[i]) and _part_word(words[j - 1])
    ]
    pieces = [p for w in words for p in dict.fromkeys([w, *w.split("-")]) if _part_word(p)]
    return list(dict.fromkeys([*runs, *pieces]))


def _part_word(word: str) -> bool:
    return (
        len(word) > 2
        and word[0].isupper()
        and not word.endswith(".")
        and word.lower() not in NAME_PARTICLES
        and word.lower() not in TITLES
        and word.lower() not in PRONOUNS
    )


def email_name_parts(text: str) -> frozenset[str]:
    """The lower-cased words of three letters or more in the local parts of the e-mail
    addresses of ``text`` (``grace.hopper@x.com`` gives ``grace`` and ``hopper``)."""
    if "@" not in text:
        return frozenset()
    return frozenset(
        p
        for local in _EMAIL_LOCAL.findall(text)
        for p in _LOCAL_SPLIT.split(local.lower())
        if len(p) > 2
    )


_EMAIL_LOCAL = regex.compile(r"([\w.'-]+)@\w")
_LOCAL_SPLIT = regex.compile(r"[._'\d-]+")
