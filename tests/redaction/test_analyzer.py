"""The shipped analyzer settings against realistic text, with the real Presidio and spaCy model."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from hookgate.redaction.analyzer import Analyzer, AnalyzerSettings, analyzer_for

FOUND = [
    ("Please call Alice Johnson tomorrow.", "PERSON", "Alice Johnson"),
    ("Siobhan O'Brien approved it.", "PERSON", "Siobhan O'Brien"),
    ("Write to ann.lee+tag@mail.example.co.uk today", "EMAIL_ADDRESS", "ann.lee+tag@mail.example.co.uk"),
    ("My number is 459.502.4057.", "PHONE_NUMBER", "459.502.4057"),
    ("Ring (459)502-4057 now", "PHONE_NUMBER", "(459)502-4057"),
    ("Office: +1-459-502-4057x123", "PHONE_NUMBER", "+1-459-502-4057x123"),
    ("Old: 001-459-502-4057 then", "PHONE_NUMBER", "001-459-502-4057"),
    ("London office +44 20 7946 0958 works", "PHONE_NUMBER", "+44 20 7946 0958"),
    ("Berlin +49 30 901820 desk", "PHONE_NUMBER", "+49 30 901820"),
    ("Card 4111-1111-1111-1111 was declined", "CREDIT_CARD", "4111-1111-1111-1111"),
    ("SSN 512-34-7890 on file", "US_SSN", "512-34-7890"),
    ("Pay to GB82 WEST 1234 5698 7654 32 please", "IBAN_CODE", "GB82 WEST 1234 5698 7654 32"),
    ("The host 203.0.113.77 refused", "IP_ADDRESS", "203.0.113.77"),
    ("Ship to 742 Evergreen Terrace, Springfield, IL 62704 fast", "STREET_ADDRESS",
     "742 Evergreen Terrace, Springfield, IL 62704"),
    ("Ship to 0487 Hull Village Suite 759\nLake Joshuaside, NM 75106", "STREET_ADDRESS",
     "0487 Hull Village Suite 759\nLake Joshuaside, NM 75106"),
    ("key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f ok", "SECRET",
     "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-" + "x1Y2z3" * 10, "SECRET", "sk-ant-api03-" + "x1Y2z3" * 10),
    ("aws AKIAIOSFODNN7EXAMPLE key", "SECRET", "AKIAIOSFODNN7EXAMPLE"),
    ("token ghp_" + "a1B2c3D4e5" * 4, "SECRET", "ghp_" + "a1B2c3D4e5" * 4),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "SECRET",
     "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("google AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "SECRET",
     "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "SECRET", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    # look-alike characters: a fullwidth at sign, non-breaking hyphens and spaces
    ("mail ana.lima\uff20example.com", "EMAIL_ADDRESS", "ana.lima\uff20example.com"),
    ("SSN 512\u201134\u20117890", "US_SSN", "512\u201134\u20117890"),
    ("card 4111\u00a01111\u00a01111\u00a01111", "CREDIT_CARD", "4111\u00a01111\u00a01111\u00a01111"),
    ("pem:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAbCd==\n-----END RSA PRIVATE KEY-----\n",
     "SECRET", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAbCd==\n-----END RSA PRIVATE KEY-----"),
    # names without sentence context, given away by the structure around them
    ('"Wanjiru Kamau","wanjiru.k@mail.example","(555) 201-4433","Nairobi"', "PERSON", "Wanjiru Kamau"),
    ("Thandiwe Nkosi | tkn@corp.example | 10.0.0.4", "PERSON", "Thandiwe Nkosi"),
    ("Bongani Dlamini / b.dlamini@x.example / +27 82 555 0199", "PERSON", "Bongani Dlamini"),
    ("Name;Email\nTevita Fifita;tfifita@example.org", "PERSON", "Tevita Fifita"),
    ("Siosaia Taufa\n42 Harbour View Road\nAuckland", "PERSON", "Siosaia Taufa"),
    ("Ship to:\nKiri Te Kanawa\nkiri@example.org", "PERSON", "Kiri Te Kanawa"),
    ("Assignee: Ngozi Adebayo-Okoro\nStatus: Open", "PERSON", "Ngozi Adebayo-Okoro"),
    ("From: Tjaša Novak <tjasa@example.si>", "PERSON", "Tjaša Novak"),
    ("Thanks,\nRangi Parata", "PERSON", "Rangi Parata"),
    ("Customer = Lwazi Mthembu, order 4431", "PERSON", "Lwazi Mthembu"),
    ('{"fullName": "Batbayar Mammadli", "mobile": "+7 701 227 4257"}', "PERSON", "Batbayar Mammadli"),
    ("Participants: Jędrzej Dąbrowska; Folasade Nwosu; Zihan Georgiou", "PERSON", "Zihan Georgiou"),
    ("Oğuz Demir says the address is old", "PERSON", "Oğuz Demir"),
    ("Reply to Dervla, with Iosefa Fifita in copy.", "PERSON", "Iosefa Fifita"),
    ("* Seo Min-jun | mseo@mailbox.example | 62.108.109.115", "PERSON", "Seo Min-jun"),
    ("Nusrat Iyer  19:17\ncan someone check", "PERSON", "Nusrat Iyer"),
    ("[07:10] Tõnis Petrauskienė: who?\n[07:12] Oisín MacLeod: me", "PERSON", "Oisín MacLeod"),
    ("Obrigada,\nHan Ha-eun\nField Technician", "PERSON", "Han Ha-eun"),
    ("I met Yoon Jae-won at the office.", "PERSON", "Yoon Jae-won"),
    ("Please assign it to Vu Duc Quang today.", "PERSON", "Vu Duc Quang"),
    ("Jesse Anderson's laptop broke", "PERSON", "Jesse Anderson"),
]  # fmt: skip

TECHNICAL = [
    "pytest 8.3.2 raised ImportError in src/hookgate/proxy.py:42; see JIRA-1234 and PR #482.",
    "Rerun with Redis 7.2 on Kubernetes; Grafana and PostgreSQL dashboards show HTTP 503.",
    "Cost was $1,234.56 on 2024-03-01 12:00:01,123 (build a3f9c2e1b7d04f6e8a9b0c1d2e3f4a5b6c7d8e9f).",
    "GitHub Actions failed with ERR_CONNECTION_RESET on api.internal.example:8080, code 0x80070005.",
    "Upgrade numpy to v2.14.3 and FastAPI to 1.2.0-rc.1, then tail /var/log/nginx/error.log.",
    "Error E1234 in C:\\Users\\Public\\app.log, ticket INC0012345, uuid 123e4567-e89b-12d3-a456-426614174000.",
]

NOT_PEOPLE = [  # rows and labels whose capitalised fields are not people
    "Name,Email,Phone\nStatus Active | New York | Engineering | build 4432",
    "Release v2.3.1 | Status Active | Sales Team | owner ops@example.com",
    "Main Office\n42 Harbour View Road",
    "Kubernetes Dashboards\nplatform@example.com",
    "Billing Department; billing@example.com; +1 555 0100 200",
    "Name: Status Active\nTo: Engineering Team",
    "Regards,\nThe Support Team",
    '{"hostname": "Prod Server", "filename": "Final Report"}',
    "Deploy to Google Cloud and New York with Docker Engine.",
]


@pytest.fixture(scope="module")
def analyzer() -> Analyzer:
    return analyzer_for(AnalyzerSettings())


def _found(analyzer: Analyzer, text: str) -> list[tuple[str, str]]:
    return [(f.entity_type, text[f.start : f.end]) for f in analyzer.analyze(text)]


@pytest.mark.parametrize(("text", "kind", "value"), FOUND)
def test_defaults_find(analyzer: Analyzer, text: str, kind: str, value: str) -> None:
    assert (kind, value) in _found(analyzer, text)


@pytest.mark.parametrize("text", TECHNICAL)
def test_defaults_leave_technical_text_alone(analyzer: Analyzer, text: str) -> None:
    assert _found(analyzer, text) == []


@pytest.mark.parametrize("text", NOT_PEOPLE)
def test_structure_alone_does_not_make_a_person(analyzer: Analyzer, text: str) -> None:
    assert [value for kind, value in _found(analyzer, text) if kind == "PERSON"] == []


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts


def test_offline_start_and_run(no_network: list[Any], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fresh = Analyzer(AnalyzerSettings(score_threshold=0.45))  # a new engine, built offline
    assert ("EMAIL_ADDRESS", "bob@corp.example.org") in _found(fresh, "mail bob@corp.example.org")
    assert no_network == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_yaml_settings_choose_what_is_found() -> None:
    settings = AnalyzerSettings.model_validate(
        {
            "entities": ["EMAIL_ADDRESS", "PERSON"],
            "allow_list": ["support@example.com"],
            "deny_list": {"PROJECT": ["Project Nightingale"]},
            "recognizers": [
                {
                    "entity": "EMPLOYEE_ID",
                    "patterns": [{"regex": r"\bEMP-\d{6}\b", "score": 0.3}],
                    "context": ["employee"],
                }
            ],
        }
    )
    custom = Analyzer(settings)
    text = (
        "Employee EMP-123456 of Project Nightingale. "
        "Mail support@example.com or jo@example.com, call 459.502.4057."
    )
    found = _found(custom, text)
    assert ("EMPLOYEE_ID", "EMP-123456") in found  # 0.3, raised by the context word
    assert _found(custom, "The printer shows EMP-654321.") == []  # 0.3 is under 0.5
    assert ("PROJECT", "Project Nightingale") in found
    assert ("EMAIL_ADDRESS", "jo@example.com") in found
    assert all(value != "support@example.com" for _, value in found)
    assert all(kind != "PHONE_NUMBER" for kind, _ in found)  # not in `entities`


def test_fast_context_enhancer_finds_the_same_tokens_as_presidio(analyzer: Analyzer) -> None:
    from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer

    from hookgate.redaction.recognizers import ContextEnhancer

    text = "Call  459.502.4057, e-mail ann@x.io;card 4111-1111-1111-1111.\nBye  "
    doc = analyzer._engine.nlp_engine.process_text(text, "en")
    tokens, starts = doc.tokens, doc.tokens_indices
    for offset in range(len(text.rstrip())):
        assert ContextEnhancer._find_index_of_match_token(
            "w", offset, tokens, starts
        ) == LemmaContextAwareEnhancer._find_index_of_match_token("w", offset, tokens, starts)
    lemmas, keywords = doc.lemmas, list(doc.keywords)
    for index in range(len(lemmas)):
        for backward in (True, False):
            assert ContextEnhancer._add_n_words(
                index, 3, lemmas, keywords, backward
            ) == LemmaContextAwareEnhancer._add_n_words(index, 3, lemmas, keywords, backward)
