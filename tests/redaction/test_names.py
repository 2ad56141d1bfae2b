"""What counts as a person's name: the lexicon's rule, names found by cues and lists, a name's
parts, and the regions of a text that are technical — pure code, with the shipped word lists
and, last, through the shipped analyzer."""

from __future__ import annotations

import pytest

from hookgate.redaction.analyzer import Analyzer, AnalyzerSettings, analyzer_for
from hookgate.redaction.markup import inside, technical_spans
from hookgate.redaction.names import (
    MentionedNames,
    NameLexicon,
    cue_around,
    name_parts,
    sentence_start,
)
from hookgate.redaction.vocabulary import (
    ROLE_WORDS,
    common_words,
    family_names,
    given_names,
    not_names,
    tech_names,
)


@pytest.fixture(scope="module")
def lexicon() -> NameLexicon:
    return NameLexicon(
        given_names(),
        family_names(),
        common_words(),
        tech_names() | not_names() | ROLE_WORDS,
    )


@pytest.mark.parametrize(
    ("words", "cue", "expected"),
    [
        (["Reading", "Files"], "none", False),  # ordinary words, not a name
        (["Use", "Write"], "none", False),
        (["Skill", "Roots"], "none", False),
        (["Claude", "Code"], "none", False),
        (["Grace", "Hall"], "none", True),  # known names, though also words
        (["Kaveh", "Sow"], "none", True),  # one distinctive name carries a common word
        (["Wiktoria", "Zdziebło"], "none", True),  # rare words
        (["Jolanta"], "none", True),  # one distinctive given name
        (["Read"], "none", False),  # a family name, but a common word
        (["Grep"], "none", False),  # rare, but one rare word is not a name
        (["Blessing"], "strong", True),  # "Hi Blessing"
        (["There"], "strong", False),  # "Hi there"
        (["She"], "strong", False),  # a pronoun never
        (["GitHub-flavored", "Markdown"], "weak", False),  # camel case, a technical name
        (["Travis", "CI"], "none", False),  # an acronym
    ],
)
def test_plausible(lexicon: NameLexicon, words: list[str], cue: str, expected: bool) -> None:
    assert lexicon.plausible(words, cue) is expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Tell Giulia Bernardi what happened.", ["Giulia Bernardi"]),
        ("Dear Ms. Wróblewska, thanks.", ["Wróblewska"]),
        ("It's Jolanta again, by the way", ["Jolanta"]),
        ("The form was signed by Luiz Henrique Araújo in March.", ["Luiz Henrique Araújo"]),
        (
            "Will Smith and Grace Hall met Chase Barnes.",
            ["Will Smith", "Grace Hall", "Chase Barnes"],
        ),
        ("Reading Files and Writing Prompts", []),
        ("Use the Read tool, then Grep.", []),
        ("Send it to Kubernetes and Grafana Loki.", []),
        ("Hi there, Hello World!", []),
    ],
)
def test_mentioned_names(lexicon: NameLexicon, text: str, names: list[str]) -> None:
    found = [text[s:e] for s, e in MentionedNames(lexicon).find(text)]
    assert found == names


def test_cues() -> None:
    text = "Refund it to Ana Lima (ana@x.pl) and tell Ana Lima today"
    first = text.index("Ana")
    assert cue_around(text, first, first + 8) == "strong"  # a contact right after it
    second = text.rindex("Ana")
    assert cue_around(text, second, second + 8) == "weak"  # "tell"
    assert cue_around("Dear Ana", 5, 8) == "strong"
    assert cue_around("Best,\nAna", 6, 9) == "strong"  # a sign-off above it
    assert cue_around("The Ana", 4, 7) == "none"


def test_sentence_start() -> None:
    text = "Fine. Will you?\n- Mark it\nand Will said"
    assert sentence_start(text, text.index("Will"))
    assert sentence_start(text, text.index("Mark"))
    assert not sentence_start(text, text.rindex("Will"))
    assert sentence_start("Will", 0)
    long = "x" * 100 + ". Will"
    assert sentence_start(long, len(long) - 4)


def test_name_parts() -> None:
    assert name_parts("Ana García López") == [
        "Ana García", "García López", "Ana", "García", "López"
    ]  # fmt: skip
    assert name_parts("Lieke van den Broek") == ["Lieke", "Broek"]
    assert name_parts("Kowal-Nowak Anna") == ["Kowal-Nowak", "Kowal", "Nowak", "Anna"]
    assert name_parts("Dr. J. Smith") == ["Smith"]
    assert name_parts("Jolanta") == []


@pytest.mark.parametrize(
    ("text", "technical", "prose"),
    [
        ("# Personality\nYou are kind.", "Personality", "kind"),
        ("Run `grep -rn Reading Files` now", "Reading Files", "now"),
        ("```\nauthor = Ana\n```\nDone", "author", "Done"),
        ("| Name | Role |\n|---|---|\n| Ana Lima | lead |", "Role", "Ana Lima"),
        ("<system-reminder>Be brief</system-reminder>", "system-reminder", "Be brief"),
        ('* `find`: {"pattern": "Annie Case"}\nAsk Ana', "Annie Case", "Ask Ana"),
        ("See https://example.com/Ana/Lima and /usr/local/Bin/x", "Lima", "See"),
        ("Fonts: Asul, Barlow, Chivo, Geist, Mulish, Roboto, Rubik", "Chivo", "xx"),
    ],
)
def test_technical_spans(text: str, technical: str, prose: str) -> None:
    spans = technical_spans(text)
    at = text.index(technical)
    assert inside(spans, at, at + len(technical))
    if prose in text:
        at = text.index(prose)
        assert not inside(spans, at, at + len(prose))


def test_a_chat_log_speaker_and_a_json_record_are_not_technical() -> None:
    for text in ("<Ana Lima> thanks, looks good", '{"fullName": "Ana Lima", "id": 7}'):
        at = text.index("Ana")
        assert not inside(technical_spans(text), at, at + 8)


@pytest.fixture(scope="module")
def analyzer() -> Analyzer:
    return analyzer_for(AnalyzerSettings())


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("She lives at Kastanienweg 163, 10115 Berlin.", "STREET_ADDRESS",
         "Kastanienweg 163, 10115 Berlin"),
        ("Send it to ul. Długa 12, 00-950 Warszawa", "STREET_ADDRESS",
         "ul. Długa 12, 00-950 Warszawa"),
        ("Via Roma 45, Milano", "STREET_ADDRESS", "Via Roma 45"),
        ("My address is Rua das Flores 210.", "STREET_ADDRESS", "Rua das Flores 210"),
        ("12 rue de la Paix, 75002 Paris", "STREET_ADDRESS", "12 rue de la Paix, 75002 Paris"),
        ("current address Váci utca 9, Budapest", "STREET_ADDRESS", "Váci utca 9"),
        ("Address: Vinohradská 163, Praha", "STREET_ADDRESS", "Vinohradská 163"),
        ("Refund $6,647.82 for Björn Lindqvist", "PERSON", "Björn Lindqvist"),
        ("Context: customer Lorenzo Fabbri lives nearby", "PERSON", "Lorenzo Fabbri"),
        ("Thanks,\nŁukasz", "PERSON", "Łukasz"),
        ("<Rasha Saleh> thanks\n<Lan Ben-David> ok\n", "PERSON", "Rasha Saleh"),
        ("Please ask Dr. Marie Baker (marie.baker@x.fr) to call.", "PERSON", "Marie Baker"),
    ],
)  # fmt: skip
def test_analyzer_finds(analyzer: Analyzer, text: str, kind: str, value: str) -> None:
    assert (kind, value) in [(f.entity_type, text[f.start : f.end]) for f in analyzer.analyze(text)]


@pytest.mark.parametrize(
    "text",
    [
        "In Spring 2024 we moved String 12 to Ring 3.",
        "# Git\nReading Files\nWriting Prompts\nDeeply Understand\nWorkflow\nMy Documents",
        "Co-Authored-By: Claude Sonnet 4.6 <noreply@anthropic.com>",
        "Use min/max and format with GitHub-flavored Markdown.",
        "Working directory for the command",
    ],
)
def test_analyzer_leaves_alone(analyzer: Analyzer, text: str) -> None:
    assert analyzer.analyze(text) == ()
