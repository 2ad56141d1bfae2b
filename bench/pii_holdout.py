"""A held-out, labelled set of agent chats for scoring a PII redaction proxy.

``corpus(seed, size)`` builds ``size`` chats, deterministically for a given seed;
``check(chats)`` verifies their labels. ``python -m bench.pii_holdout [--seed N] [--size N]``
prints what a corpus holds.

The set is written independently of the detector and of ``bench.pii_corpus``, and imitates how
people and agents actually write rather than filling one sentence template: casual messages
with typos, pasted e-mails with signatures, forwarded headers, CSV exports and markdown tables,
config files and ``.env`` files with keys in them, log lines, shipping labels, HR and
medical-office notes, transfer requests, call transcripts, Slack threads, agent memory in
system prompts, tool calls whose arguments and results carry PII, and a few messages in other
languages. About a third of the chats carry no PII at all but are dense with technical tokens
(product names, versions, error codes, ticket ids, paths, hosts, hashes, UUIDs, image tags,
SQL, commands) that a redactor must leave alone.

Labels. ``Chat.entities`` lists every PII value of the chat exactly as written. A title is not
part of a name ("Dr. Helen Cho" is labelled "Helen Cho"); a phone extension is not part of the
number; an address is labelled whole (street, city, state and ZIP, on one line or two); a
private key is labelled as its whole PEM block; an Outlook-style "Last, First" is labelled as
written. Names are always capitalised. ``Chat.technical`` lists tokens that appear verbatim and
are not PII; no technical token overlaps a PII value. Text that is neither (company and city
names, dates, masked card digits, the prose around values) is in neither list, so it should be
scored as neutral.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import string
import unicodedata
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from faker import Faker

__all__ = ["KINDS", "Chat", "Entity", "check", "corpus"]

KINDS = frozenset(
    {
        "PERSON",
        "STREET_ADDRESS",
        "EMAIL_ADDRESS",
        "PHONE_NUMBER",
        "CREDIT_CARD",
        "US_SSN",
        "IBAN_CODE",
        "IP_ADDRESS",
        "SECRET",
    }
)


@dataclass(frozen=True)
class Entity:
    kind: str  # one of KINDS
    value: str  # the exact substring as it appears in the chat text


@dataclass(frozen=True)
class Chat:
    id: str
    # NEW OpenAI chat messages appended at each turn; turn 0 may start with a system message;
    # each turn ends with a user (or tool) message
    turns: tuple[tuple[dict[str, Any], ...], ...]
    entities: tuple[Entity, ...]  # every PII value appearing in the chat's texts
    technical: tuple[str, ...]  # non-PII technical tokens appearing verbatim
    stream: bool


Msg = dict[str, Any]
Turn = list[Msg]

# ---------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------

_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"
_UPPER_NUM = string.ascii_uppercase + string.digits
_LOWER_NUM = string.ascii_lowercase + string.digits
_POD_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_HEX = "0123456789abcdef"

_LOCALES = ("en_US", "en_GB", "es_MX", "fr_FR", "de_DE", "it_IT", "pt_BR")
_REGION_OF_LOCALE = {
    "en_US": "us",
    "en_GB": "uk",
    "es_MX": "mx",
    "fr_FR": "fr",
    "de_DE": "de",
    "it_IT": "it",
    "pt_BR": "br",
}
# Hand-written names (given names first, as the person writes them) and a phone region.
_HAND_NAMES: tuple[tuple[str, str, str], ...] = (
    ("Aoife", "Ní Bhriain", "ie"),
    ("Oluwaseun", "Adeyemi", "uk"),
    ("Zhang", "Wei", "us"),
    ("Priya", "Raghunathan", "in"),
    ("José María", "Aznar-López", "mx"),
    ("Siobhán", "O'Sullivan", "ie"),
    ("Mohammed", "Al-Farsi", "uk"),
    ("Kwame", "Mensah", "uk"),
    ("Yuki", "Tanaka", "us"),
    ("Björn", "Lindqvist", "de"),
    ("Chidinma", "Okafor", "us"),
    ("Fatima Zahra", "Benali", "fr"),
    ("Dmitri", "Volkov", "de"),
    ("Mei-Ling", "Chen", "us"),
    ("Anjali", "Deshpande", "in"),
    ("Tomasz", "Wiśniewski", "uk"),
    ("Ngozi", "Eze", "uk"),
    ("Lars", "Østergaard", "de"),
    ("Kofi", "Boateng", "us"),
    ("Ana Paula", "Ferreira", "br"),
    ("Rahul", "Venkataraman", "in"),
    ("Thandiwe", "Nkosi", "uk"),
    ("Seo-yeon", "Park", "us"),
    ("Ahmet", "Y\u0131lmaz", "de"),
    ("Diego", "Fernández Ruiz", "mx"),
    ("Mariam", "Haddad", "fr"),
    ("Tariq", "Siddiqui", "uk"),
    ("Nguyen Thi", "Lan", "us"),
    ("Helen", "Cho", "us"),
    ("Sinéad", "Mac Giolla Phádraig", "ie"),
)
_FOLD = str.maketrans(
    {
        "ø": "o",
        "Ø": "O",
        "ß": "ss",
        "æ": "ae",
        "Æ": "AE",
        "ł": "l",
        "Ł": "L",
        "\u0131": "i",
        "đ": "d",
    }
)

_COMPANIES: tuple[tuple[str, str], ...] = (
    ("Acme Corp", "acme-corp.com"),
    ("Northwind Traders", "northwindtraders.com"),
    ("Globex", "globex.io"),
    ("Initech", "initech.co"),
    ("Blue Harbor Foods", "blueharborfoods.com"),
    ("Pinecrest Logistics", "pinecrest-logistics.com"),
    ("Larkspur Health", "larkspurhealth.org"),
    ("Meridian Supply", "meridiansupply.co.uk"),
    ("Solstice Travel", "solsticetravel.de"),
    ("Quarry Hill Dental", "quarryhilldental.com"),
    ("Brightwater Insurance", "brightwater-ins.com"),
    ("Tidewell Energy", "tidewell.energy"),
    ("Fjordline Analytics", "fjordline.no"),
    ("Maison Lumière", "maisonlumiere.fr"),
)
_FREEMAIL = (
    "gmail.com",
    "yahoo.com",
    "outlook.com",
    "hotmail.co.uk",
    "icloud.com",
    "proton.me",
    "web.de",
    "gmx.de",
    "orange.fr",
    "libero.it",
    "uol.com.br",
    "hotmail.com",
    "aol.com",
    "yahoo.com.mx",
)
_JOBS = (
    "Senior Buyer",
    "Accounts Payable Lead",
    "Head of Operations",
    "Customer Success Manager",
    "Office Manager",
    "Practice Administrator",
    "Procurement Specialist",
    "HR Business Partner",
    "Finance Controller",
    "Logistics Coordinator",
)
_TITLES = ("Dr.", "Mr.", "Ms.", "Mrs.", "Mx.", "Prof.")
_US_AREAS = (
    "212",
    "415",
    "312",
    "617",
    "206",
    "512",
    "303",
    "702",
    "305",
    "646",
    "213",
    "404",
    "202",
    "718",
    "503",
    "919",
    "615",
    "984",
)
_REGIONS = ("us", "uk", "de", "fr", "in", "mx", "br", "it", "ie")
_REGION_WEIGHTS = (40, 14, 8, 8, 8, 5, 5, 5, 4)

_PRODUCTS = (
    "Kubernetes",
    "Grafana",
    "Django",
    "Celery",
    "Sentry",
    "Terraform",
    "Ansible",
    "Jenkins",
    "Prometheus",
    "Elasticsearch",
    "Kafka",
    "Airflow",
    "Vercel",
    "Heroku",
    "PostgreSQL",
    "Redis",
    "RabbitMQ",
    "Nginx",
    "FastAPI",
    "Helm",
    "Argo CD",
    "Istio",
    "Kibana",
    "Datadog",
    "PagerDuty",
    "Snowflake",
    "GitHub Actions",
    "CircleCI",
    "Traefik",
    "Keycloak",
)
# Versions a product really had, oldest first.
_VERSIONS: dict[str, tuple[str, ...]] = {
    "Kubernetes": ("v1.26.3", "v1.28.9", "v1.29.4", "v1.30.2"),
    "Grafana": ("9.5.3", "10.2.3", "10.4.2", "11.0.0"),
    "Django": ("3.2.25", "4.2.11", "5.0.6"),
    "Celery": ("5.2.7", "5.3.6", "5.4.0"),
    "Terraform": ("v1.5.7", "v1.7.5", "v1.8.2"),
    "Prometheus": ("v2.45.4", "v2.51.1", "v2.52.0"),
    "Elasticsearch": ("7.17.21", "8.11.4", "8.13.4"),
    "Kafka": ("3.5.2", "3.6.1", "3.7.0"),
    "Airflow": ("2.7.3", "2.8.4", "2.9.1"),
    "PostgreSQL": ("14.11", "15.6", "16.2"),
    "Redis": ("6.2.14", "7.0.15", "7.2.4"),
    "RabbitMQ": ("3.12.13", "3.13.1"),
    "Nginx": ("1.24.0", "1.25.4", "1.26.0"),
    "FastAPI": ("0.104.1", "0.110.1", "0.111.0"),
    "Helm": ("v3.13.3", "v3.14.4"),
    "Argo CD": ("v2.9.6", "v2.10.7", "v2.11.0"),
    "Istio": ("1.20.5", "1.21.2"),
    "Keycloak": ("22.0.5", "23.0.7", "24.0.3"),
    "Traefik": ("v2.11.2", "v3.0.1"),
    "agent-runner": ("v0.9.11", "v0.9.12-beta", "v0.10.0-rc.1"),
    "urllib3": ("1.26.18", "2.0.7", "2.2.1"),
    "openai": ("1.30.1", "1.51.2", "1.59.7"),
    "anthropic": ("0.34.2", "0.39.0", "0.42.0"),
    "google-generativeai": ("0.7.2", "0.8.3"),
    "stripe": ("9.12.0", "10.1.0"),
    "PyGithub": ("2.3.0", "2.5.0"),
}
_SERVERS = (*(k for k in _VERSIONS if k[0].isupper() and k != "PyGithub"), "agent-runner")
_KAFKA = "kafka-0.kafka-headless.data.svc.cluster.local:9092"
_ERRORS = (
    "ECONNREFUSED",
    "ETIMEDOUT",
    "ECONNRESET",
    "ENOTFOUND",
    "EADDRINUSE",
    "HTTP 429",
    "HTTP 503",
    "HTTP 502",
    "HTTP 401",
    "HTTP 403",
    "ORA-00942",
    "ORA-01017",
    "ORA-12541",
    "0xC0000005",
    "0x80070005",
    "SQLSTATE 40P01",
    "SQLSTATE 23505",
    "ERR_PNPM_OUTDATED_LOCKFILE",
    "ERR_OSSL_EVP_UNSUPPORTED",
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "OOMKilled",
    "exit code 137",
    "SIGSEGV",
    "E11000 duplicate key error",
    "NXDOMAIN",
)
_TICKET_PREFIXES = ("SUP", "OPS", "INC", "PLAT", "INFRA", "SEC", "BILL", "DATA", "CS", "ENG")
_SERVICES = (
    "checkout-api",
    "payments-worker",
    "search-indexer",
    "auth-service",
    "notification-svc",
    "inventory-sync",
    "api-gateway",
    "billing-cron",
    "ledger",
    "web-frontend",
    "orders-consumer",
    "report-builder",
)
_NAMESPACES = ("payments", "prod", "staging", "data", "observability", "platform", "checkout")
_REGIONS_CLOUD = ("eu-west-1", "us-east-1", "us-west-2", "ap-southeast-2", "eu-central-1")
_IMAGES = (
    "nginx:1.25-alpine",
    "python:3.12-slim",
    "postgres:16.2",
    "redis:7.2.4-alpine",
    "grafana/grafana:10.4.2",
    "prom/prometheus:v2.51.1",
    "bitnami/kafka:3.6.1",
    "apache/airflow:2.9.1-python3.11",
    "node:20.11.1-bookworm",
    "ghcr.io/acme/checkout-api:2024.06.1",
    "docker.elastic.co/elasticsearch/elasticsearch:8.13.4",
    "quay.io/argoproj/argocd:v2.10.7",
    "traefik:v3.0.1",
    "rabbitmq:3.13-management",
)
_PATHS = (
    "/var/log/nginx/error.log",
    "/etc/nginx/conf.d/default.conf",
    "/srv/app/current/config/settings.py",
    "/opt/airflow/dags/etl_daily.py",
    "~/.kube/config",
    "./deploy/helm/values-prod.yaml",
    "src/payments/webhooks.py",
    "infra/terraform/modules/vpc/main.tf",
    "/etc/systemd/system/celery.service",
    "/usr/share/elasticsearch/config/jvm.options",
    "app/api/v2/orders/route.ts",
    "/var/lib/postgresql/16/main/postgresql.conf",
    "docker-compose.override.yml",
    ".github/workflows/deploy.yml",
    "ansible/roles/nginx/tasks/main.yml",
    "/etc/prometheus/rules/slo.yml",
)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

_MSG_NAMES = {
    "user": ("support_desk", "ops-oncall", "agent_7", "crm_sync", "intake-form", "helpdesk_user"),
    "assistant": ("researcher", "scribe", "router-agent", "billing_assistant", "sre_copilot"),
    "system": ("policy", "orchestrator"),
}

# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

_FAKERS: dict[str, Faker] = {}


def _faker(locale: str) -> Faker:
    f = _FAKERS.get(locale)
    if f is None:
        f = _FAKERS[locale] = Faker(locale)
    return f


def _rs(r: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _digits(r: random.Random, n: int, first_nonzero: bool = True) -> str:
    if n <= 0:
        return ""
    head = r.choice("123456789") if first_nonzero else r.choice(string.digits)
    return head + _rs(r, n - 1, string.digits)


def _fold(s: str) -> str:
    s = unicodedata.normalize("NFKD", s.translate(_FOLD)).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9-]", "", s.lower())


def _luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def _b64url(obj: Any) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


_CASUAL: tuple[tuple[str, str], ...] = (
    (r"\byou\b", "u"),
    (r"\bplease\b", "pls"),
    (r"\bthanks\b", "thx"),
    (r"\bI'm\b", "im"),
    (r"\bit's\b", "its"),
    (r"\bdon't\b", "dont"),
    (r"\bcan't\b", "cant"),
    (r"\bthat's\b", "thats"),
    (r"\baddress\b", "adress"),
    (r"\breceived\b", "recieved"),
    (r"\bbecause\b", "bc"),
    (r"\bthe\b", "teh"),
    (r"\btomorrow\b", "tmrw"),
    (r"\bwith\b", "w/"),
)


# Product names keep their capital even at the start of a casual sentence.
_KEEP_CAPITAL = frozenset(word for product in _PRODUCTS for word in product.split())


def _casualize(r: random.Random, template: str) -> str:
    for pattern, replacement in _CASUAL:
        if r.random() < 0.45:
            template = re.sub(pattern, replacement, template, count=1)
    first = re.match(r"[A-Za-z']+", template)
    word = first.group() if first else ""
    if word not in _KEEP_CAPITAL and word[1:] == word[1:].lower() and r.random() < 0.7:
        template = template[0].lower() + template[1:]
    return template


def _s(text: str) -> Msg:
    return {"role": "system", "content": text}


def _u(text: str) -> Msg:
    return {"role": "user", "content": text}


def _a(text: str) -> Msg:
    return {"role": "assistant", "content": text}


def _parts(*texts: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": t} for t in texts]


def _tool(call_id: str, content: str) -> Msg:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


@dataclass(frozen=True)
class _Person:
    name: str
    first: str
    last: str
    region: str


# ---------------------------------------------------------------------------------------------
# Per-chat generation state
# ---------------------------------------------------------------------------------------------


class _Ctx:
    """The random source and the labels of one chat being written."""

    def __init__(self, r: random.Random, max_turns: int, slot: int = 0) -> None:
        self.r = r
        self.max_turns = max_turns
        self.slot = slot  # how many chats of this scenario came before: rotates variants
        self.ents: dict[str, str] = {}  # value -> kind, in order of first use
        self.tech: dict[str, None] = {}
        self.casual = r.random() < 0.4
        self.focal: list[str] = []  # technical tokens a follow-up may refer back to
        self.theme = "support"  # which kind of follow-up fits: a key of _THEME_NEWS

    # -- bookkeeping ----------------------------------------------------------------------

    def pii(self, kind: str, value: str) -> str:
        known = self.ents.get(value)
        if known is None:
            if any(value in t or t in value for t in self.tech):
                raise AssertionError(f"{value!r} overlaps a technical token")
            self.ents[value] = kind
        elif known != kind:
            raise AssertionError(f"{value!r} labelled {known} and {kind}")
        return value

    def t(self, token: str) -> str:
        if token not in self.tech:
            if any(token in v or v in token for v in self.ents):
                raise AssertionError(f"technical {token!r} overlaps a PII value")
            self.tech[token] = None
        return token

    def _fresh(self, kind: str, make: Callable[[], str]) -> str:
        for _ in range(40):
            v = make()
            pool: Iterable[str] = (*self.ents, *self.tech)
            if not any(v in o or o in v for o in pool):
                return self.pii(kind, v)
        raise AssertionError(f"no fresh {kind}")

    def say(self, template: str, **values: str) -> str:
        if self.casual:
            template = _casualize(self.r, template)
        return template.format(**values)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, options: Sequence[str]) -> str:
        return self.r.choice(options)

    def fk(self, locale: str) -> Faker:
        f = _faker(locale)
        f.seed_instance(self.r.getrandbits(32))
        return f

    def prior(self, *, one_line: bool = False, secrets: bool = False) -> list[tuple[str, str]]:
        return [
            (k, v)
            for v, k in self.ents.items()
            if (secrets or k != "SECRET") and not (one_line and "\n" in v)
        ]

    def company(self) -> tuple[str, str]:
        return self.r.choice(_COMPANIES)

    def js(self, obj: Any) -> str:
        return json.dumps(obj, ensure_ascii=False, indent=self.r.choice((None, 2)))

    def call(self, fn: str, args: dict[str, Any], text: str | None = None) -> tuple[Msg, str]:
        msg, ids = self.calls([(fn, args)], text)
        return msg, ids[0]

    def calls(
        self, specs: list[tuple[str, dict[str, Any]]], text: str | None = None
    ) -> tuple[Msg, list[str]]:
        ids = ["call_" + _rs(self.r, 24) for _ in specs]
        tool_calls = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": fn, "arguments": json.dumps(args, ensure_ascii=False)},
            }
            for cid, (fn, args) in zip(ids, specs, strict=True)
        ]
        return {"role": "assistant", "content": text, "tool_calls": tool_calls}, ids

    # -- PII --------------------------------------------------------------------------------

    def person(
        self, locale: str | None = None, hand: bool | None = None, register: bool = True
    ) -> _Person:
        """A new person; ``register=False`` for one whose name is not written anywhere."""
        for _ in range(40):
            if hand or (hand is None and locale is None and self.chance(0.3)):
                first, last, region = self.r.choice(_HAND_NAMES)
            else:
                loc = locale or self.r.choice(_LOCALES)
                f = self.fk(loc)
                first, last, region = f.first_name(), f.last_name(), _REGION_OF_LOCALE[loc]
            name = f"{first} {last}"
            pool = (*self.ents, *self.tech)
            if "." not in name and not any(name in o or o in name for o in pool):
                if register:
                    self.pii("PERSON", name)
                return _Person(name, first, last, region)
        raise AssertionError("no fresh PERSON")

    def email(self, p: _Person | None = None, domain: str | None = None) -> str:
        def make() -> str:
            d = domain or self.pick(_FREEMAIL)
            if p is None:
                return f"{self.fk('en_US').user_name()}@{d}"
            a = _fold(p.first.split()[0])
            b = _fold(p.last.replace(" ", ""))
            local = self.pick(
                (
                    f"{a}.{b}",
                    f"{a[0]}{b}",
                    f"{a}_{b}",
                    f"{a}{b[0]}{self.r.randint(1, 99)}",
                    f"{a}.{b}{self.r.randint(70, 99)}",
                    f"{b}.{a}",
                    f"{a}",
                )
            )
            return f"{local}@{d}"

        return self._fresh("EMAIL_ADDRESS", make)

    def mailbox(self, domain: str) -> str:
        box = self.pick(("billing", "support", "accounts", "orders", "hello", "ap", "hr"))
        return self._fresh("EMAIL_ADDRESS", lambda: f"{box}@{domain}")

    def phone(self, region: str | None = None) -> str:
        return self._fresh("PHONE_NUMBER", lambda: self._phone(region))

    def _phone(self, region: str | None) -> str:
        r = self.r

        def d(n: int) -> str:
            return _digits(r, n, first_nonzero=False)

        def nz(n: int) -> str:
            return _digits(r, n)

        def pairs(n: int) -> str:
            return " ".join(d(2) for _ in range(n))

        reg = region or r.choices(_REGIONS, weights=_REGION_WEIGHTS)[0]
        if reg == "us":
            area = r.choice(_US_AREAS)
            if r.random() < 0.35:
                exch, line = "555", f"01{r.randrange(100):02d}"
            else:
                exch = str(r.randint(201, 989))
                while exch == "555" or exch.endswith("11"):
                    exch = str(r.randint(201, 989))
                line = d(4)
            fmt = r.choice(
                (
                    "({a}) {e}-{n}",
                    "({a}) {e}-{n}",
                    "{a}.{e}.{n}",
                    "{a}-{e}-{n}",
                    "+1 {a} {e} {n}",
                    "+1 ({a}) {e}-{n}",
                    "+1-{a}-{e}-{n}",
                    "1-{a}-{e}-{n}",
                    "{a}{e}{n}",
                )
            )
            return fmt.format(a=area, e=exch, n=line)
        if reg == "uk":
            return r.choice(
                (
                    f"+44 7700 900{d(3)}",
                    f"07700 900{d(3)}",
                    f"020 7946 0{d(3)}",
                    f"+44 20 7946 0{d(3)}",
                    f"+44 (0)20 7946 0{d(3)}",
                    f"+44 7{nz(3)} {d(6)}",
                    f"0161 496 0{d(3)}",
                )
            )
        if reg == "de":
            return r.choice(
                (
                    f"+49 30 {nz(8)}",
                    f"+49 (0)30 {nz(4)} {d(4)}",
                    f"030 {nz(8)}",
                    f"+49 151 {nz(8)}",
                    f"+49 89 {nz(7)}",
                    f"+49 40 {nz(3)} {d(5)}",
                )
            )
        if reg == "fr":
            return r.choice(
                (
                    f"+33 6 {pairs(4)}",
                    f"06 {pairs(4)}",
                    f"+33 1 {pairs(4)}",
                    f"+33 (0)7 {pairs(4)}",
                )
            )
        if reg == "in":
            return r.choice(
                (
                    f"+91-9{d(4)}-{d(5)}",
                    f"+91 9{d(4)} {d(5)}",
                    f"+91 {r.choice('789')}{d(9)}",
                    f"09{d(4)} {d(5)}",
                )
            )
        if reg == "mx":
            return r.choice((f"+52 55 {nz(4)} {d(4)}", f"+52 1 33 {nz(4)} {d(4)}"))
        if reg == "br":
            return r.choice(
                (f"+55 11 9{d(4)}-{d(4)}", f"(21) 9{d(4)}-{d(4)}", f"+55 (11) 9{d(4)}-{d(4)}")
            )
        if reg == "it":
            return r.choice((f"+39 06 {nz(4)} {d(4)}", f"+39 3{d(2)} {nz(3)} {d(4)}"))
        return r.choice((f"+353 87 {nz(3)} {d(4)}", f"087 {nz(3)} {d(4)}"))

    def ext(self) -> str:
        n = str(self.r.randint(10, 4999))
        return self.pick((f" ext. {n}", f" x{n}", f" ext {n}", f", ext. {n}"))

    def address(self, one_line: bool | None = None) -> str:
        single = self.chance(0.6) if one_line is None else one_line

        def make() -> str:
            f = self.fk("en_US")
            a = f.address()
            while not (a[:1].isdigit() and "\n" in a):
                a = f.address()
            line1, line2 = a.split("\n", 1)
            return f"{line1}, {line2}" if single else f"{line1}\n{line2}"

        return self._fresh("STREET_ADDRESS", make)

    def card(self, brand: str | None = None) -> str:
        r = self.r

        def make() -> str:
            b = brand or r.choice(("visa", "visa", "mc", "mc", "amex", "discover"))
            if b == "visa":
                prefix, n = "4", 16
            elif b == "mc":
                prefix = str(r.randint(51, 55)) if r.random() < 0.8 else str(r.randint(2221, 2720))
                n = 16
            elif b == "amex":
                prefix, n = r.choice(("34", "37")), 15
            else:
                prefix, n = r.choice(("6011", "65")), 16
            body = prefix + _digits(r, n - len(prefix) - 1, first_nonzero=False)
            number = body + _luhn_digit(body)
            groups = (4, 6, 5) if n == 15 else (4, 4, 4, 4)
            sep = r.choice((" ", " ", "-", ""))
            out, i = [], 0
            for g in groups:
                out.append(number[i : i + g])
                i += g
            return sep.join(out)

        return self._fresh("CREDIT_CARD", make)

    def ssn(self, style: str | None = None) -> str:
        r = self.r

        def make() -> str:
            area = r.randint(1, 899)
            while area == 666:
                area = r.randint(1, 899)
            group, serial = r.randint(1, 99), r.randint(1, 9999)
            s = style or r.choices(("dash", "space", "bare"), weights=(7, 2, 1))[0]
            sep = {"dash": "-", "space": " ", "bare": ""}[s]
            return f"{area:03d}{sep}{group:02d}{sep}{serial:04d}"

        return self._fresh("US_SSN", make)

    def iban(self, country: str | None = None, spaced: bool | None = None) -> str:
        r = self.r

        def make() -> str:
            cc = country or r.choice(("DE", "GB", "FR", "ES", "IT", "NL", "BE", "CH", "IE", "PL"))
            bban = _bban(r, cc)
            check = 98 - int("".join(str(int(ch, 36)) for ch in bban + cc + "00")) % 97
            raw = f"{cc}{check:02d}{bban}"
            gap = r.random() < 0.6 if spaced is None else spaced
            return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4)) if gap else raw

        return self._fresh("IBAN_CODE", make)

    def ip(self, v6: bool | None = None) -> str:
        r = self.r

        def make() -> str:
            if v6 if v6 is not None else r.random() < 0.15:
                if r.random() < 0.5:
                    tail = ":".join(f"{r.randrange(1, 65536):x}" for _ in range(3))
                    return f"2001:db8:{r.randrange(1, 65536):x}::{tail}"
                return "2a02:" + ":".join(f"{r.randrange(1, 65536):x}" for _ in range(7))
            k = r.random()
            if k < 0.35:
                net = r.choice(("192.0.2", "198.51.100", "203.0.113"))
                return f"{net}.{r.randint(1, 254)}"
            if k < 0.7:
                first = r.choice((23, 34, 45, 52, 64, 81, 91, 104, 141, 176, 185, 212, 217))
                return f"{first}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
            return r.choice(
                (
                    f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}",
                    f"192.168.{r.randint(0, 255)}.{r.randint(1, 254)}",
                    f"172.{r.randint(16, 31)}.{r.randint(0, 255)}.{r.randint(1, 254)}",
                )
            )

        return self._fresh("IP_ADDRESS", make)

    def secret(self, kind: str) -> str:
        r = self.r
        makers: dict[str, Callable[[], str]] = {
            "openai": lambda: "sk-proj-" + _rs(r, 74, _URLSAFE) + "T3BlbkFJ" + _rs(r, 74, _URLSAFE),
            "anthropic": lambda: "sk-ant-api03-" + _rs(r, 93, _URLSAFE) + "AA",
            "aws_id": lambda: "AKIA" + _rs(r, 16, string.ascii_uppercase + "234567"),
            "aws_secret": lambda: _rs(r, 40, _ALNUM + "/+"),
            "ghp": lambda: "ghp_" + _rs(r, 36),
            "github_pat": lambda: "github_pat_11" + _rs(r, 20, _UPPER_NUM) + "_" + _rs(r, 59),
            "slack": lambda: f"xoxb-{_digits(r, 12)}-{_digits(r, 13)}-{_rs(r, 24)}",
            "google": lambda: "AIza" + _rs(r, 35, _URLSAFE),
            "stripe": lambda: "sk_live_51" + _rs(r, r.choice((24, 97))),
            "password": lambda: _rs(r, r.randint(14, 22)),
            "jwt": self._jwt,
            "pem": self._pem,
        }
        return self._fresh("SECRET", makers[kind])

    def _jwt(self, claims: dict[str, Any] | None = None) -> str:
        r = self.r
        alg = r.choice(("HS256", "RS256"))
        iat = r.randint(1_704_067_200, 1_750_000_000)
        payload = claims or {
            "sub": str(uuid.UUID(int=r.getrandbits(128), version=4)),
            "iat": iat,
            "exp": iat + 3600,
            "scope": r.choice(("orders:read orders:write", "admin", "reports:read")),
        }
        sig = _rs(r, 43 if alg == "HS256" else 342, _URLSAFE)
        return f"{_b64url({'alg': alg, 'typ': 'JWT'})}.{_b64url(payload)}.{sig}"

    def jwt_with(self, claims: dict[str, Any]) -> str:
        return self._fresh("SECRET", lambda: self._jwt(claims))

    def _pem(self) -> str:
        r = self.r
        label = r.choice(
            ("RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY")
        )
        if label == "RSA PRIVATE KEY":
            raw = b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00" + r.randbytes(1180)
        elif label == "PRIVATE KEY":
            raw = b"\x30\x82\x04\xbe\x02\x01\x00\x30\x0d\x06\x09" + r.randbytes(1200)
        elif label == "EC PRIVATE KEY":
            raw = b"\x30\x77\x02\x01\x01\x04\x20" + r.randbytes(114)
        else:
            raw = b"openssh-key-v1\x00\x00\x00\x00\x04none" + r.randbytes(380)
        body = base64.b64encode(raw).decode()
        width = 70 if label == "OPENSSH PRIVATE KEY" else 64
        lines = [body[i : i + width] for i in range(0, len(body), width)]
        return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"

    # -- technical tokens ---------------------------------------------------------------------

    def ver(self, style: str | None = None) -> str:
        r = self.r
        a, b, c = r.randint(0, 5), r.randint(0, 30), r.randint(0, 20)
        s = style or r.choice(("plain", "plain", "v", "beta", "rc"))
        out = {
            "plain": f"{a}.{b}.{c}",
            "v": f"v{a}.{b}.{c}",
            "beta": f"v0.{b}.{c}-beta",
            "rc": f"{a}.{b}.{c}-rc.{r.randint(1, 4)}",
        }[s]
        return self.t(out)

    def pver(self, product: str, newer_than: str | None = None) -> str:
        """A real version of ``product`` (newer than ``newer_than`` if given), registered."""
        versions = _VERSIONS[product]
        if newer_than is not None:
            versions = versions[versions.index(newer_than) + 1 :]
        self.t(product)
        return self.t(self.pick(versions))

    def err(self) -> str:
        return self.focus(self.pick(_ERRORS))

    def focus(self, token: str) -> str:
        """A technical token worth pointing at later in the chat, registered."""
        self.t(token)
        if token not in self.focal:
            self.focal.append(token)
        return token

    def ticket(self) -> str:
        if self.chance(0.2):
            return self.t(f"#{self.r.randint(1000, 9999)}")
        return self.t(f"{self.pick(_TICKET_PREFIXES)}-{self.r.randint(1000, 39999)}")

    def order_id(self) -> str:
        r = self.r
        return self.t(
            r.choice(
                (
                    f"ORD-{r.randint(100000, 999999)}",
                    f"SO-{r.randint(10000, 99999)}",
                    f"W{r.randint(10**8, 10**9 - 1)}",
                )
            )
        )

    def _when(self) -> tuple[int, int, int, int, int, int, int]:
        r = self.r
        return (
            r.choice((2024, 2025)),
            r.randint(1, 12),
            r.randint(1, 28),
            r.randint(0, 23),
            r.randint(0, 59),
            r.randint(0, 59),
            r.randint(0, 999),
        )

    def ts(self, style: str | None = None) -> str:
        y, mo, d, h, mi, s, ms = self._when()
        st = style or self.pick(("iso", "iso_ms", "log", "syslog"))
        out = {
            "iso": f"{y}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z",
            "iso_ms": f"{y}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{ms:03d}Z",
            "log": f"{y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d},{ms:03d}",
            "syslog": f"{_MONTHS[mo - 1]} {d:2d} {h:02d}:{mi:02d}:{s:02d}",
            "clf": f"{d:02d}/{_MONTHS[mo - 1]}/{y}:{h:02d}:{mi:02d}:{s:02d} +0000",
            "date": f"{y}-{mo:02d}-{d:02d}",
        }[st]
        return self.t(out)

    def human_date(self) -> str:
        y, mo, d, h, mi, _, _ = self._when()
        hh = h % 12 or 12
        ampm = "AM" if h < 12 else "PM"
        return f"{self.pick(_DAYS)}, {_MONTHS[mo - 1]} {d}, {y} at {hh}:{mi:02d} {ampm}"

    def uuid(self) -> str:
        return self.t(str(uuid.UUID(int=self.r.getrandbits(128), version=4)))

    def sha(self, short: bool = False) -> str:
        return self.t(_rs(self.r, 7 if short else 40, _HEX))

    def host(self) -> str:
        r = self.r
        svc = r.choice(_SERVICES)
        return self.t(
            r.choice(
                (
                    f"{svc}.{r.choice(_NAMESPACES)}.svc.cluster.local",
                    f"{svc}-{r.randint(1, 12):02d}.prod.internal",
                    f"db-replica-{r.randint(1, 4):02d}.c{_rs(r, 10, _LOWER_NUM)}"
                    f".{r.choice(_REGIONS_CLOUD)}.rds.amazonaws.com",
                    f"{svc}.staging.internal",
                    "redis-master.cache.svc.cluster.local",
                    "kafka-0.kafka-headless.data.svc.cluster.local",
                )
            )
        )

    def hostport(self) -> str:
        port = self.pick(("5432", "6379", "8080", "9092", "443", "8443", "3306", "9200", "5672"))
        return self.focus(f"{self.host()}:{port}")

    def image(self) -> str:
        return self.focus(self.pick(_IMAGES))

    def path(self) -> str:
        return self.t(self.pick(_PATHS))

    def pod(self, deploy: str) -> str:
        r = self.r
        return self.focus(
            f"{deploy}-{_rs(r, r.choice((9, 10)), _POD_CHARS)}-{_rs(r, 5, _POD_CHARS)}"
        )

    def amount(self, currency: str | None = None) -> str:
        r = self.r
        n, cents = r.randint(5, 9999), r.randint(0, 99)
        cur = currency or r.choice(("$", "$", "€", "£", "USD", "EUR"))
        if cur in ("$", "£"):
            return self.t(f"{cur}{n:,}.{cents:02d}")
        if cur == "€":
            return self.t(f"€{n:,}.{cents:02d}")
        if cur == "EUR" and r.random() < 0.5:
            return self.t(
                f"{n:,}.{cents:02d} EUR".replace(",", "_").replace(".", ",").replace("_", ".")
            )
        return self.t(f"{cur} {n:,}.{cents:02d}")


def _bban(r: random.Random, cc: str) -> str:
    if cc == "GB":
        return r.choice(("NWBK", "BARC", "HBUK", "LOYD", "MIDL")) + _digits(r, 14, False)
    if cc == "IE":
        return r.choice(("AIBK", "BOFI")) + _digits(r, 14, False)
    if cc == "NL":
        return r.choice(("ABNA", "INGB", "RABO", "TRIO")) + _digits(r, 10, False)
    if cc == "IT":
        return r.choice(string.ascii_uppercase) + _digits(r, 22, False)
    if cc == "BE":
        account = _digits(r, 10, False)
        return account + f"{int(account) % 97 or 97:02d}"
    if cc == "FR":
        bank, branch, account = _digits(r, 5), _digits(r, 5, False), _digits(r, 11, False)
        key = 97 - (89 * int(bank) + 15 * int(branch) + 3 * int(account)) % 97
        return f"{bank}{branch}{account}{key:02d}"
    length = {"DE": 18, "ES": 20, "CH": 17, "PL": 24, "PT": 21, "AT": 16}[cc]
    return _digits(r, length, False)


# ---------------------------------------------------------------------------------------------
# Shared pieces of PII chats
# ---------------------------------------------------------------------------------------------


def _support_system(c: _Ctx, company: str, domain: str, pii_p: float = 0.3) -> list[Msg]:
    roll = c.r.random()
    if roll < 0.3:
        return []
    if roll < 0.3 + pii_p:
        agent = c.person()
        mail = c.email(agent, domain)
        line = c.phone("us") + c.ext() if c.chance(0.5) else c.phone()
        return [
            _s(
                f"You are the support copilot for {company}. You are assisting the human agent "
                f"{agent.name} ({mail}, direct line {line}). Draft replies they can send and "
                f"sign them as {agent.name}, {company} Support. Never promise refunds over "
                f"{c.t('$500')} without a supervisor."
            )
        ]
    return [
        _s(
            c.pick(
                (
                    f"You are a customer support assistant for {company}. Be brief, friendly "
                    "and accurate. Use the tools to look things up; never guess.",
                    f"You work the {company} help desk. Answer in the customer's language. "
                    "Escalate anything legal.",
                    "You are an operations assistant. Summarise, extract fields and draft "
                    "replies. Output markdown.",
                )
            )
        )
    ]


def _signature(c: _Ctx, p: _Person, company: str, mail: str, phone: str) -> str:
    closing = c.pick(("Best,", "Thanks,", "Kind regards,", "Cheers,", "Best regards,", "--"))
    job = c.pick(_JOBS)
    lines = [closing, f"Dr. {p.name}" if c.chance(0.15) else p.name]
    lines += c.pick(
        (f"{job} | {company}", f"{job}, {company}", f"{job}\n{company}", f"{company} · {job}")
    ).split("\n")
    style = c.r.randrange(5)
    if style == 0:
        lines.append(phone)
    elif style == 1:
        lines.append(f"T: {phone}")
    elif style == 2:
        lines.append(f"Direct: {phone}{c.ext()}")
    elif style == 3:
        lines.append(f"Office {phone} | Mobile {c.phone(p.region)}")
    else:
        lines.append(f"Tel. {phone}")
    lines.append(c.pick((mail, f"E: {mail}", f"<{mail}>", f"mailto:{mail}")))
    if c.chance(0.3):
        lines.append(c.address(one_line=False))
    if c.chance(0.25):
        lines += [
            "",
            "CONFIDENTIALITY NOTICE: This e-mail and any attachments are intended only for "
            "the addressee.",
        ]
    return "\n".join(lines)


def _tool_tail(
    c: _Ctx, fn: str, args: dict[str, Any], result: Any, text: str | None = None
) -> list[Msg]:
    call, cid = c.call(fn, args, text)
    content = result if isinstance(result, str) else c.js(result)
    return [call, _tool(cid, content)]


# ---------------------------------------------------------------------------------------------
# PII scenarios: each returns the chat's first turn(s), at most c.max_turns of them
# ---------------------------------------------------------------------------------------------


def _p_casual_update(c: _Ctx) -> list[Turn]:
    co, dom = c.company()
    msgs = _support_system(c, co, dom)
    p = c.person()
    order = c.order_id()
    old = c.phone(p.region if c.chance(0.6) else None)
    new = c.phone(p.region)
    addr = c.address()
    opener = c.pick(
        (
            "hey, its {n} here",
            "hi this is {n}",
            "hello, {n} again",
            "Hey there, {n} here",
            "{n} here",
        )
    )
    body = c.pick(
        (
            "i moved last week so please update my address to {a} before order {o} ships. also "
            "my number changed from {old} to {new}",
            "can you change the shipping address on {o} to {a} ?? and don't call {old} anymore, "
            "new cell is {new}",
            "order {o} is going to my old place. new address is\n{a}\nbest number to reach me "
            "is {new} (not {old}, that's my work phone)",
            "sorry for the hassle but {o} needs to go to {a} instead. text me at {new} if "
            "there's a problem, the {old} number is dead",
        )
    )
    tail = c.pick(("", " thx", " thanks!!", " ty", " :)", "\n\nsent from my phone"))
    text = c.say(opener + ". " + body + tail, n=p.name, a=addr, o=order, old=old, new=new)
    msgs.append(_u(text))
    if "\n" not in addr and c.chance(0.35):
        msgs += _tool_tail(
            c,
            "update_shipping_address",
            {"order_id": order, "address": addr, "contact_phone": new},
            {"order_id": order, "status": "updated", "carrier_eta": c.ts("date")},
        )
    return [msgs]


def _p_signature(c: _Ctx) -> list[Turn]:
    c.theme = "finance"
    co, dom = c.company()
    msgs = _support_system(c, co, dom, pii_p=0.15)
    p = c.person()
    mail = c.email(p, dom)
    phone = c.phone(p.region)
    po = c.t(f"PO-{c.r.randint(100000, 999999)}")
    amount = c.amount()
    greeting = c.pick(("Hi team,", "Hello,", "Good morning,", "Hi all,", "Dear Sir or Madam,"))
    body = c.pick(
        (
            f"Following up on {po}: we need to push delivery to the week after next because our "
            f"warehouse is being re-racked. Can you confirm the revised ship date and that the "
            f"unit price of {amount} still holds?",
            f"Attached is the signed quote for {po}. Please invoice {amount} against it and send "
            "the invoice to me directly rather than to the generic inbox.",
            f"We still haven't received the credit note for {po} ({amount}). Could someone "
            "from accounts give me a call this week?",
        )
    )
    email_text = "\n".join([greeting, "", body, "", _signature(c, p, co, mail, phone)])
    instr = c.say(
        c.pick(
            (
                "can you draft a polite reply to this? say yes but we need the PO reissued",
                "Summarize this email and pull the sender's contact details into a table.",
                "please reply saying we'll call her tomorrow morning",
                "who is this and what do they want? keep it short",
                "Add the sender to the vendor contacts and draft an answer.",
            )
        )
    )
    if c.chance(0.5):
        msgs.append({"role": "user", "content": _parts(instr, email_text)})
    else:
        msgs.append(_u(f"{instr}\n\n---\n{email_text}"))
    if c.chance(0.3):
        msgs += _tool_tail(
            c,
            "create_contact",
            {"name": p.name, "email": mail, "phone": phone, "company": co},
            {"ok": True, "contact_id": c.uuid()},
        )
    return [msgs]


def _p_forwarded(c: _Ctx) -> list[Turn]:
    (_, dom1), (co2, dom2) = c.r.sample(_COMPANIES, 2)
    msgs = _support_system(c, co2, dom2)
    sender = c.person()
    s_mail = c.email(sender, dom1 if c.chance(0.6) else None)
    rcpt_name = c.person().name if c.chance(0.6) else None
    r_mail = c.email(None, dom2) if rcpt_name is None else c.mailbox(dom2)
    subject = c.pick(
        (
            "Re: refund for {t}",
            "Invoice overdue ({t})",
            "Change of bank details",
            "Urgent: wrong delivery address",
        )
    )
    if "{t}" in subject:
        subject = subject.format(t=c.ticket())
    phone = c.phone(sender.region)
    cc_line = ""
    if c.chance(0.5):
        cc = c.person()
        cc_line = f"Cc: {cc.name} <{c.email(cc, dom1)}>\n"
    to = f"{rcpt_name} <{r_mail}>" if rcpt_name else r_mail
    if c.chance(0.55):
        header = (
            "---------- Forwarded message ---------\n"
            f"From: {sender.name} <{s_mail}>\n"
            f"Date: {c.human_date()}\n"
            f"Subject: {subject}\n"
            f"To: {to}\n{cc_line}"
        )
    else:
        reversed_name = c.pii("PERSON", f"{sender.last}, {sender.first}")
        header = (
            f"From: {reversed_name} <{s_mail}>\n"
            f"Sent: {c.human_date().replace(' at', '')}\n"
            f"To: {to}\n{cc_line}"
            f"Subject: RE: {subject}"
        )
    body = c.pick(
        (
            f"Hello,\n\nI've been waiting three weeks on this. Can someone call me back at "
            f"{phone}? I'm available after 2pm.\n\nThanks,\n{sender.name}",
            f"Hi,\n\nplease update our records, my direct number is now {phone}. Everything "
            f"else stays the same.\n\nRegards,\n{sender.name}",
            f"To whom it may concern,\n\nThe parcel was left at the wrong door again. I can be "
            f"reached on {phone} any time.\n\n{sender.name}",
        )
    )
    ask = c.say(
        c.pick(
            (
                "fwd from the shared inbox, who owns this? draft a reply and log the callback "
                "number in Zendesk",
                "Can you summarise this thread and open a ticket for it?",
                "please add this person to the CRM and reply that we're on it",
            )
        )
    )
    if "Zendesk" in ask:
        c.t("Zendesk")
    msgs.append(_u(f"{ask}\n\n{header}\n\n{body}"))
    return [msgs]


def _csv_field(v: str) -> str:
    return f'"{v}"' if "," in v else v


def _p_csv(c: _Ctx) -> list[Turn]:
    r = c.r
    variant = r.randrange(4)
    c.theme = ("support", "hr", "finance", "support")[variant]
    rows: list[list[str]] = []
    if variant == 0:
        header = "customer_id,full_name,email,phone,shipping_address,last_order_total"
        for _ in range(r.randint(3, 5)):
            p = c.person()
            rows.append(
                [
                    c.t(f"C-{r.randint(10000, 99999)}"),
                    p.name,
                    c.email(p),
                    c.phone() if r.random() < 0.8 else "",
                    _csv_field(c.address(one_line=True)),
                    c.t(f"{r.randint(5, 4000)}.{r.randint(0, 99):02d}"),
                ]
            )
    elif variant == 1:
        header = "emp_id,name,ssn,personal_email,home_address,start_date"
        for _ in range(r.randint(3, 5)):
            p = c.person(locale="en_US" if r.random() < 0.7 else None)
            rows.append(
                [
                    c.t(f"E{r.randint(1000, 9999)}"),
                    p.name,
                    c.ssn(),
                    c.email(p) if r.random() < 0.85 else "",
                    _csv_field(c.address(one_line=True)),
                    c.ts("date"),
                ]
            )
    elif variant == 2:
        header = "payee,iban,amount_eur,reference"
        for _ in range(r.randint(3, 5)):
            p = c.person()
            rows.append(
                [
                    p.name,
                    c.iban(spaced=False),
                    c.t(f"{r.randint(50, 9000)}.{r.randint(0, 99):02d}"),
                    c.t(f"INV-{r.randint(2024, 2025)}-{r.randint(1, 9999):04d}"),
                ]
            )
    else:
        header = "name,company,title,work_email,mobile,last_touch"
        for _ in range(r.randint(3, 5)):
            p = c.person()
            co, dom = c.company()
            rows.append(
                [p.name, co, c.pick(_JOBS), c.email(p, dom), c.phone(p.region), c.ts("date")]
            )
    if r.random() < 0.4:
        rows.insert(r.randrange(len(rows) + 1), list(r.choice(rows)))  # a duplicate row
    table = "\n".join([header, *(",".join(row) for row in rows)])
    template = c.pick(
        (
            "here's {f}, some rows are dupes. can you clean it up and tell me which ones "
            "are missing fields?",
            "Import these into the CRM please. What columns am I missing for the import template?",
            "pasting {f} below. anything look off to you?",
            "Can you turn this into a markdown table sorted by name?",
        )
    )
    fname = ""
    if "{f}" in template:
        kind = ("customers", "hr", "payouts", "leads")[variant]
        fname = c.t(f"{kind}_export_{r.randint(2024, 2025)}-{r.randint(1, 12):02d}.csv")
    ask = c.say(template, f=fname)
    if r.random() < 0.5:
        table = f"```csv\n{table}\n```"
    return [[*_support_system(c, *c.company(), pii_p=0.1), _u(f"{ask}\n\n{table}")]]


def _p_md_table(c: _Ctx) -> list[Turn]:
    r = c.r
    if r.random() < 0.5:
        head = "| Customer | Email | Phone | Plan | Overdue |\n|---|---|---|---|---|"
        lines = []
        for _ in range(r.randint(3, 5)):
            p = c.person()
            lines.append(
                f"| {p.name} | {c.email(p)} | {c.phone()} | "
                f"{c.pick(('Starter', 'Pro', 'Enterprise'))} | {c.amount('$')} |"
            )
        ask = c.pick(
            (
                "Which of these are more than 60 days overdue? Draft a reminder for each.",
                "can you write a short dunning email for every row in this table",
            )
        )
    else:
        c.theme = "finance"
        head = "| Payee | IBAN | Amount | Ref |\n|:--|:--|--:|:--|"
        lines = []
        for _ in range(r.randint(2, 4)):
            p = c.person()
            lines.append(
                f"| {p.name} | {c.iban()} | {c.amount('€')} | "
                f"{c.t(f'PAY-{r.randint(10000, 99999)}')} |"
            )
        ask = c.pick(
            (
                "Please double-check the IBANs in this payout batch before I release it.",
                "can u convert this table into a SEPA batch file? (pain.001)",
            )
        )
    return [[_u(c.say(ask) + "\n\n" + head + "\n" + "\n".join(lines))]]


def _p_config(c: _Ctx) -> list[Turn]:
    c.theme = "dev"
    r = c.r
    variant = c.slot % 6
    if variant == 0:
        svc = c.t(c.pick(_SERVICES))
        key = c.secret(c.pick(("openai", "anthropic")))
        model = c.t("gpt-4o-mini" if key.startswith("sk-proj") else "claude-3-5-sonnet-20241022")
        owner = ""
        if r.random() < 0.6:
            p = c.person()
            owner = f"\nalerts:\n  owner: {p.name}\n  email: {c.email(p, c.company()[1])}"
        snippet = (
            f"```yaml\nservice:\n  name: {svc}\n  image: {c.image()}\n  port: 8443\n"
            f"llm:\n  api_key: {key}\n  model: {model}\n  timeout_s: 30{owner}\n```"
        )
        ask = f"why does this return {c.t('HTTP 401')} on every request? config below"
    elif variant == 1:
        pw = c.secret("password")
        stripe = c.secret("stripe")
        host = c.t(f"db-primary.{c.pick(_NAMESPACES)}.internal")
        snippet = (
            f"```\n# .env.production\nDATABASE_URL=postgres://app_user:{pw}@{host}:5432/orders\n"
            f"REDIS_URL=redis://{c.t('redis-master.cache.svc.cluster.local')}:6379/0\n"
            f"STRIPE_SECRET_KEY={stripe}\nLOG_LEVEL=info\n```"
        )
        ask = "I'm about to commit this, anything I should change first?"
    elif variant == 2:
        kid, sec = c.secret("aws_id"), c.secret("aws_secret")
        region = c.t(c.pick(_REGIONS_CLOUD))
        snippet = (
            f"~/.aws/credentials:\n[default]\naws_access_key_id = {kid}\n"
            f"aws_secret_access_key = {sec}\nregion = {region}"
        )
        ask = (
            f"boto3 keeps failing with {c.t('InvalidClientTokenId')} even though I just created "
            f"the key. running {c.t('aws sts get-caller-identity')} gives the same"
        )
    elif variant == 3:
        tok = c.secret(c.pick(("ghp", "github_pat")))
        snippet = (
            "```yaml\n# .github/workflows/deploy.yml\njobs:\n  deploy:\n    runs-on: ubuntu-22.04\n"
            "    steps:\n      - uses: actions/checkout@v4\n      - run: npm ci\n        env:\n"
            f"          NPM_TOKEN: {c.t('${{ secrets.NPM_TOKEN }}')}\n"
            f"          GH_TOKEN: {tok}\n```"
        )
        c.t("actions/checkout@v4")
        ask = "the deploy job works locally but not in CI, is the workflow wrong?"
    elif variant == 4:
        slack = c.secret("slack")
        ant = c.secret("anthropic")
        snippet = c.js(
            {
                "mcpServers": {
                    "slack": {
                        "command": "npx",
                        "args": ["-y", "@modelcontextprotocol/server-slack"],
                        "env": {"SLACK_BOT_TOKEN": slack, "SLACK_TEAM_ID": "T01ABCDEF"},
                    },
                    "assistant": {"env": {"ANTHROPIC_API_KEY": ant}},
                }
            }
        )
        c.t("@modelcontextprotocol/server-slack")
        ask = "claude desktop doesn't show the slack tools. this is my config:"
    else:
        gkey = c.secret("google")
        snippet = (
            f"```yaml\nservices:\n  geocoder:\n    image: {c.image()}\n    environment:\n"
            f"      GOOGLE_MAPS_API_KEY: {gkey}\n      CACHE_TTL: 3600\n```"
        )
        ask = f"geocoder container gets {c.t('REQUEST_DENIED')} from the maps API, why?"
    msgs: list[Msg] = []
    if r.random() < 0.4:
        msgs.append(_s("You are a senior DevOps engineer. Point out security problems first."))
    msgs.append(_u(c.say(ask) + "\n\n" + snippet))
    return [msgs]


def _p_logs(c: _Ctx) -> list[Turn]:
    c.theme = "security"
    r = c.r
    dom = c.company()[1]
    p = c.person(register=False) if r.random() < 0.6 else None
    mail = c.email(p, dom if r.random() < 0.5 else None)
    ip1 = c.ip()
    ip2 = c.ip() if r.random() < 0.5 else ip1
    path = c.pick(("/api/v1/session", "/oauth/token", "/login", "/api/v2/password/reset"))
    lines = []
    style = r.randrange(4)
    if style in (0, 2):
        c.t(path)
    for i in range(r.randint(3, 5)):
        src = ip1 if i % 2 == 0 else ip2
        if style == 0:
            lines.append(
                json.dumps(
                    {
                        "ts": c.ts("iso_ms"),
                        "level": "warn",
                        "msg": "login failed",
                        "user": mail,
                        "ip": src,
                        "path": path,
                        "status": 401,
                    }
                )
            )
        elif style == 1:
            lines.append(
                f"{c.ts('log')} WARN  auth-service login_failed user={mail} src_ip={src} "
                f"reason=bad_password attempt={i + 1}"
            )
        elif style == 2:
            ua = "Mozilla/5.0 (X11; Linux x86_64)" if i % 2 else "python-requests/2.31.0"
            c.t(ua)
            lines.append(f'{src} - - [{c.ts("clf")}] "POST {path} HTTP/1.1" 401 87 "-" "{ua}"')
        else:
            lines.append(
                f"{c.ts('syslog')} mail01 postfix/smtpd[{r.randint(1000, 40000)}]: NOQUEUE: "
                f"reject: RCPT from unknown[{src}]: 554 5.7.1 <{mail}>: Relay access denied"
            )
    if style == 1:
        c.t("auth-service")
    ask = c.say(
        c.pick(
            (
                "is this a brute force attempt or just {m} forgetting their password?",
                "Should we block these IPs? The account is {m}. logs from the last hour:",
                "customer {m} says they're locked out, here's what we see",
            )
        ),
        m=mail,
    )
    msgs = [_u(ask + "\n\n```\n" + "\n".join(lines) + "\n```")]
    if r.random() < 0.35:
        msgs += _tool_tail(
            c,
            "block_ip",
            {"ip": ip1, "ttl_seconds": 86400, "reason": f"credential stuffing against {mail}"},
            f"blocked {ip1} until {c.ts('iso')}",
        )
    return [msgs]


def _p_shipping_label(c: _Ctx) -> list[Turn]:
    r = c.r
    co, dom = c.company()
    p = c.person(locale=c.pick(("en_US", "en_US", "es_MX", "en_GB")))
    addr = c.address(one_line=False)
    phone = c.phone("us")
    order = c.order_id()
    track = c.t("1Z" + _rs(r, 6, _UPPER_NUM) + _digits(r, 10, False))
    label = "\n".join(
        [
            "SHIP TO:",
            p.name,
            addr,
            f"Tel: {phone}",
            "",
            f"FROM: {co} Fulfillment",
            c.address(one_line=False),
            "",
            f"ORDER {order} | {r.randint(1, 40)}.{r.randint(0, 9)} lb | UPS Ground",
            f"TRK# {track}",
        ]
    )
    ask = c.say(
        c.pick(
            (
                "customer says this never arrived. can you check the label and open a trace "
                "with UPS?",
                "The label printed like this, is the address complete? the driver couldn't find it",
                "reprint this label but with the phone number moved under the name",
            )
        )
    )
    return [[*_support_system(c, co, dom), _u(f"{ask}\n\n{label}")]]


def _p_hr_note(c: _Ctx) -> list[Turn]:
    c.theme = "hr"
    r = c.r
    co, dom = c.company()
    emp = c.person()
    mgr = c.person()
    contact = c.person()
    us = r.random() < 0.6
    fields = [
        f"Employee: {emp.name}",
        f"Manager: {mgr.name} ({c.email(mgr, dom)})",
        f"Start date: {c.ts('date')}",
    ]
    if us:
        fields.append(f"SSN: {c.ssn()}")
        fields.append(f"Home address: {c.address(one_line=True)}")
    else:
        fields.append(f"Salary account (IBAN): {c.iban()}")
    fields.append(f"Personal email: {c.email(emp)}")
    fields.append(
        f"Emergency contact: {contact.name} ({c.pick(('spouse', 'mother', 'brother', 'partner'))}"
        f"), {c.phone(emp.region)}"
    )
    ticket = c.t(f"HR-{r.randint(1000, 9999)}")
    note = c.pick(("HR intake - new hire", "Onboarding note", "Payroll change request")) + "\n"
    note += "\n".join(fields)
    ask = c.say(
        c.pick(
            (
                "clean up this note and create the onboarding checklist, ticket {t}",
                "Please enter this into Workday and tell me what's missing. Ref {t}",
                "{t}: can you check this against the payroll form requirements?",
            )
        ),
        t=ticket,
    )
    if "Workday" in ask:
        c.t("Workday")
    msgs: list[Msg] = []
    if r.random() < 0.3:
        msgs.append(_s(f"You are {co}'s HR assistant. Treat employee data as confidential."))
    msgs.append(_u(f"{ask}\n\n{note}"))
    return [msgs]


def _p_medical(c: _Ctx) -> list[Turn]:
    c.theme = "medical"
    r = c.r
    practice = c.pick(("Quarry Hill Dental", "Larkspur Health", "Eastside Family Practice"))
    doc = c.person()
    patient = c.person()
    title = c.pick(_TITLES[1:])
    phone = c.phone(patient.region if r.random() < 0.5 else "us")
    author = c.person()
    note = c.pick(
        (
            "Front desk note: {title} {pt} called to move the follow-up with Dr. {doc} from "
            "Thursday to next week. Callback {ph} (mobile), prefers text.{addr}\n- {au}, front "
            "desk",
            "Phone msg for Dr. {doc}: patient {pt} reports the new prescription makes her dizzy, "
            "asks for a call back on {ph} before 5pm.{addr} Taken by {au}.",
            "{title} {pt} no-showed today's 9:40 with Dr. {doc}. Left voicemail on {ph}.{addr} "
            "({au})",
        )
    )
    addr = ""
    if r.random() < 0.5:
        addr = f" New home address: {c.address()}."
    text = note.format(
        title=title, pt=patient.name, doc=doc.name, ph=phone, addr=addr, au=author.name
    )
    ask = c.say(
        c.pick(
            (
                "Please send the patient an appointment reminder text based on this:",
                "can you reschedule this and confirm by sms",
                "summarize for the chart",
            )
        )
    )
    msgs = [
        _s(f"You are the scheduling assistant for {practice}. Be HIPAA-conscious."),
        _u(f"{ask}\n\n{text}"),
    ]
    if r.random() < 0.45:
        msgs += _tool_tail(
            c,
            "send_sms",
            {
                "to": phone,
                "body": f"Hi {patient.name}, this is {practice}. Please call us to confirm your "
                f"appointment with Dr. {doc.name}.",
            },
            {"status": "queued", "sid": c.t("SM" + _rs(r, 32, _HEX))},
        )
    return [msgs]


def _p_bank_transfer(c: _Ctx) -> list[Turn]:
    c.theme = "finance"
    r = c.r
    if r.random() < 0.6:
        p = c.person()
        cc = c.pick(("DE", "FR", "ES", "IT", "NL", "BE", "GB", "IE", "CH", "PL"))
        to_iban = c.iban(cc)
        from_iban = c.iban(c.pick(("DE", "NL", "FR")))
        amount = c.amount(c.pick(("€", "EUR", "£")))
        ref = c.t(f"INV-{r.randint(2024, 2025)}-{r.randint(1, 9999):04d}")
        bic = c.t(c.pick(("DEUTDEFFXXX", "BNPAFRPPXXX", "INGBNL2A", "CAIXESBBXXX", "BARCGB22")))
        text = (
            c.say("Hi, please process the following payment today:")
            + f"\n\nBeneficiary: {p.name}\nIBAN: {to_iban}\nBIC: {bic}\nAmount: {amount}\n"
            f"Reference: {ref}\n\n"
            + c.say("Debit from our operating account {f}. Thanks!", f=from_iban)
        )
    else:
        p = c.person()
        landlord = c.person()
        text = c.say(
            c.pick(
                (
                    "hey can you send {amt} to my landlord {ll}, IBAN {i}. from my account {f} "
                    "pls, reference is just my name ({me})",
                    "I need to pay {ll} back {amt}. their iban: {i}\nmine: {f}\n- {me}",
                )
            ),
            amt=c.amount("€"),
            ll=landlord.name,
            i=c.iban(),
            f=c.iban(),
            me=p.name,
        )
    msgs: list[Msg] = [_u(text)]
    if r.random() < 0.35:
        msgs += _tool_tail(
            c,
            "validate_iban",
            {"iban": next(v for v, k in c.ents.items() if k == "IBAN_CODE")},
            {"valid": True, "bank": "Example Bank", "sepa": True},
        )
    return [msgs]


def _p_crm_tool(c: _Ctx) -> list[Turn]:
    r = c.r
    co, dom = c.company()
    sys = _support_system(c, co, dom, pii_p=0.4)
    p = c.person()
    mail = c.email(p)
    ask = c.say(
        c.pick(
            (
                "Caller says she's {n}, email {e}. can you pull up her account and check the "
                "last payment?",
                "customer on chat: {n} <{e}>. why was their order cancelled?",
                "Look up {e} please, they want to change their plan",
            )
        ),
        n=p.name,
        e=mail,
    )
    phone = c.phone(p.region)
    addr = c.address(one_line=True)
    cust = c.t(f"CUST-{r.randint(100000, 999999)}")
    paid = c.amount("$")
    result: dict[str, Any] = {
        "customer_id": cust,
        "name": p.name,
        "email": mail,
        "phone": phone,
        "billing_address": addr,
        "plan": c.pick(("Pro", "Starter", "Enterprise")),
        "last_payment": {"amount": paid, "status": "failed", "code": "card_declined"},
    }
    c.t("card_declined")
    lookup = _tool_tail(c, "lookup_customer", {"email": mail}, result)
    turn0: Turn = [*sys, _u(ask)]
    if c.max_turns == 1:
        return [turn0 + lookup]
    turns = [turn0, lookup]
    if c.max_turns >= 3:
        card = c.card()
        new_phone = c.phone()
        turns.append(
            [
                _a(
                    f"I found {p.name} ({cust}). The last payment of "
                    f"{paid} failed with card_declined. The phone on "
                    f"file is {phone}."
                ),
                _u(
                    c.say(
                        "ok she wants to use a new card {k} and update the phone to {p}",
                        k=card,
                        p=new_phone,
                    )
                ),
            ]
        )
    return turns


def _p_card_dispute(c: _Ctx) -> list[Turn]:
    r = c.r
    co, dom = c.company()
    p = c.person()
    card = c.card()
    amt = c.amount("$")
    tx1, tx2 = c.t(f"txn_{_rs(r, 14)}"), c.t(f"txn_{_rs(r, 14)}")
    template = c.pick(
        (
            "I was charged TWICE for {a} on my card {k}!! transactions {t1} and {t2}. "
            "please refund one of them asap. - {n}",
            "Hi, {n} here. There are two charges of {a} on {k} ({t1}, {t2}) but I only "
            "ordered once. Can you reverse one?",
            "double charge again on card {k}, {a} x2. refs {t1} / {t2}. my email is {e} if "
            "you need it",
        )
    )
    text = c.say(
        template,
        a=amt,
        k=card,
        t1=tx1,
        t2=tx2,
        n=p.name,
        e=c.email(p) if "{e}" in template else "",
    )
    if p.name not in text:
        text += f"\n\n{p.name}"
    if r.random() < 0.4:
        text += c.say("\n\nalso my other card {k} was declined yesterday, why?", k=c.card("amex"))
    msgs = [*_support_system(c, co, dom), _u(text)]
    return [msgs]


def _p_contact_sheet(c: _Ctx) -> list[Turn]:
    c.theme = "personal"
    r = c.r
    lines = []
    cities = {
        "us": "Austin",
        "uk": "London",
        "de": "Berlin",
        "fr": "Paris",
        "in": "Bengaluru",
        "mx": "CDMX",
        "br": "São Paulo",
        "it": "Rome",
        "ie": "Dublin",
    }
    for _ in range(r.randint(3, 6)):
        p = c.person(hand=r.random() < 0.6)
        ph = c.phone(p.region)
        bits = [p.name, f"({cities[p.region]})", ph]
        if r.random() < 0.5:
            bits.append(c.email(p, c.company()[1]))
        lines.append("- " + " ".join(bits) if r.random() < 0.5 else "- " + " / ".join(bits))
    ask = c.say(
        c.pick(
            (
                "Put these into a table for the offsite, sorted by timezone:",
                "can you normalise these numbers to E.164? list from the team wiki",
                "who should I call first for the EMEA escalation?",
            )
        )
    )
    return [[_u(ask + "\n" + "\n".join(lines))]]


def _p_w9(c: _Ctx) -> list[Turn]:
    c.theme = "hr"
    p = c.person(locale="en_US" if c.chance(0.7) else None)
    form = (
        "Form W-9 details\n"
        f"Name (as shown on your income tax return): {p.name}\n"
        "Federal tax classification: Individual/sole proprietor\n"
        f"Address: {c.address(one_line=False)}\n"
        f"Social security number: {c.ssn()}\n"
        f"Email: {c.email(p)}\n"
        f"Phone: {c.phone('us')}"
    )
    ask = c.say(
        c.pick(
            (
                "vendor onboarding - please double check the TIN format on this W-9 before I "
                "upload it",
                "Can you fill the vendor master record from this?",
            )
        )
    )
    return [[_u(f"{ask}\n\n{form}")]]


def _p_slack_thread(c: _Ctx) -> list[Turn]:
    c.theme = "dev"
    r = c.r
    a, b = c.person(), c.person()
    inc = c.t(f"INC-{r.randint(1000, 9999)}")
    svc = c.t(c.pick(_SERVICES))
    secret = c.secret(c.pick(("slack", "ghp", "stripe", "openai")))
    mail = c.email(b, c.company()[1])
    lines = [
        f"[10:{r.randint(10, 59)} AM] {a.name}: {svc} deploy bot keeps failing since this "
        f"morning, {inc}",
        f"[10:{r.randint(10, 59)} AM] {b.name}: here's the token it's using {secret}",
        f"[10:{r.randint(10, 59)} AM] {a.name}: pls don't paste tokens in here lol. that one was "
        "rotated on friday",
        f"[11:{r.randint(10, 59)} AM] {b.name}: ok, moving to DM. cc me on the postmortem at "
        f"{mail}",
    ]
    ask = c.say(
        c.pick(
            (
                "Summarize this thread for the incident doc and tell me what needs rotating",
                "turn this slack thread into a timeline for {i}",
            )
        ),
        i=inc,
    )
    return [[_u(f"{ask}\n\n" + "\n".join(lines))]]


def _p_dev_secret(c: _Ctx) -> list[Turn]:
    c.theme = "dev"
    r = c.r
    kind = ("openai", "anthropic", "google", "stripe", "ghp", "github_pat")[c.slot % 6]
    key = c.secret(kind)
    lib = {
        "openai": ("openai", 'client = OpenAI(api_key="{k}")'),
        "anthropic": ("anthropic", 'client = anthropic.Anthropic(api_key="{k}")'),
        "google": ("google-generativeai", 'genai.configure(api_key="{k}")'),
        "stripe": ("stripe", 'stripe.api_key = "{k}"'),
        "ghp": ("PyGithub", 'gh = Github("{k}")'),
        "github_pat": ("PyGithub", 'gh = Github(auth=Auth.Token("{k}"))'),
    }[kind]
    version = c.pver(lib[0])
    py = c.t(c.pick(("Python 3.12.3", "Python 3.11.9", "Python 3.10.14")))
    code = lib[1].format(k=key)
    err = c.t(c.pick(("HTTP 401", "HTTP 403", "HTTP 429")))
    ask = c.say(
        c.pick(
            (
                "getting {e} with this, I'm on {lib} {v} and {py}. what am I doing wrong",
                "{lib} {v} on {py}: every call fails with {e}. snippet:",
                "why {e}?? ({lib} {v}, {py})",
            )
        ),
        e=err,
        lib=lib[0],
        v=version,
        py=py,
    )
    msgs: list[Msg] = [_u(f"{ask}\n\n```python\n{code}\n```")]
    if r.random() < 0.3:
        msgs[0]["content"] = _parts(ask, f"```python\n{code}\n```")
    return [msgs]


def _p_pem(c: _Ctx) -> list[Turn]:
    c.theme = "dev"
    host = c.t(f"web-{c.r.randint(1, 9):02d}.prod.internal")
    key = c.secret("pem")
    cmd = c.t("ansible-playbook -i inventory/prod.ini site.yml --limit web")
    err = c.t("Permission denied (publickey)")
    ask = c.say(
        c.pick(
            (
                "ansible can't ssh into {h}, is something wrong with this key?",
                "`{cmd}` fails on {h} with {e}. this is the deploy key:",
            )
        ),
        h=host,
        cmd=cmd,
        e=err,
    )
    if err not in ask:
        ask += f"\nerror: {err}"
    if cmd not in ask:
        ask += f"\n(ran `{cmd}`)"
    return [[_u(f"{ask}\n\n{key}")]]


def _p_jwt(c: _Ctx) -> list[Turn]:
    c.theme = "dev"
    r = c.r
    p = c.person()
    mail = c.email(p, c.company()[1])
    sub = str(uuid.UUID(int=r.getrandbits(128), version=4))
    iat = r.randint(1_704_067_200, 1_750_000_000)
    claims = {
        "sub": sub,
        "email": mail,
        "name": p.name,
        "roles": ["orders:read"],
        "iat": iat,
        "exp": iat + 900,
    }
    tok = c.jwt_with(claims)
    c.t(sub)
    path = c.t(c.pick(("/api/v2/orders", "/v1/admin/users", "/graphql")))
    err = c.t(c.pick(("HTTP 403", "HTTP 401")))
    decoded = json.dumps(claims, ensure_ascii=False, indent=2)
    text = c.say(
        "why is {p} returning {e} with this bearer token?\n\nAuthorization: Bearer {t}\n\n"
        "decoded payload:\n",
        p=path,
        e=err,
        t=tok,
    )
    return [[_u(text + decoded)]]


def _p_non_english(c: _Ctx) -> list[Turn]:
    lang = c.pick(("es", "fr", "de", "pt", "it"))
    loc = {"es": "es_MX", "fr": "fr_FR", "de": "de_DE", "pt": "pt_BR", "it": "it_IT"}[lang]
    p = c.person(locale=loc)
    order = c.order_id()
    if lang == "es":
        text = (
            f"Hola, soy {p.name}. Mi pedido {order} no ha llegado. Mi dirección es "
            f"{c.address()} y mi teléfono es {c.phone('mx')}. Gracias."
        )
    elif lang == "fr":
        text = (
            f"Bonjour, je m'appelle {p.name}. Pouvez-vous mettre à jour mon numéro : "
            f"{c.phone('fr')} ? Mon e-mail est {c.email(p, 'orange.fr')}. Commande {order}."
        )
    elif lang == "de":
        text = (
            f"Hallo, hier ist {p.name}. Bitte überweisen Sie die Erstattung für {order} auf mein "
            f"Konto {c.iban('DE')}. Rückfragen gern unter {c.phone('de')}."
        )
    elif lang == "pt":
        text = (
            f"Oi, aqui é {p.name}. Meu cartão {c.card()} foi cobrado duas vezes no pedido "
            f"{order}. Meu e-mail: {c.email(p, 'uol.com.br')}"
        )
    else:
        text = (
            f"Buongiorno, sono {p.name}, il mio numero è {c.phone('it')} e la mail "
            f"{c.email(p, 'libero.it')}. L'ordine {order} è arrivato danneggiato."
        )
    co, dom = c.company()
    return [[*_support_system(c, co, dom, pii_p=0.2), _u(text)]]


def _p_call_transcript(c: _Ctx) -> list[Turn]:
    r = c.r
    co = c.company()[0]
    p = c.person()
    other = c.person(locale=None)
    s = 3
    lines = []

    def say(who: str, what: str) -> None:
        nonlocal s
        lines.append(f"[00:{s // 60:02d}:{s % 60:02d}] {who}: {what}")
        s += r.randint(2, 9)

    say("Agent", f"Thanks for calling {co}, who am I speaking with?")
    say("Caller", f"Hi, yeah, this is {p.name}.")
    if r.random() < 0.5:
        say("Agent", "Can you verify your social security number?")
        say("Caller", f"Sure, it's {c.ssn()}.")
    else:
        say("Agent", "And the card you used for the booking?")
        say("Caller", f"It's {c.card()}.")
    say("Agent", "And the best callback number?")
    say("Caller", f"{c.phone(p.region)}, or my husband {other.name}'s cell {c.phone()}.")
    ask = c.say("extract the caller details into JSON for the ticket")
    return [[_u(f"{ask}\n\n" + "\n".join(lines))]]


def _p_agent_memory(c: _Ctx) -> list[Turn]:
    c.theme = "personal"
    p = c.person()
    partner = c.person()
    home = c.address(one_line=True)
    phone = c.phone(partner.region)
    memory = (
        "You are a personal assistant with long-term memory.\n\n"
        "## Memory\n"
        f"- User's name: {p.name}\n"
        f"- Home: {home}\n"
        f"- Partner: {partner.name}, {phone}\n"
        f"- Prefers e-mail at {c.email(p)}\n"
        f"- Dentist: Dr. {c.person().name}, {c.phone('us')}\n"
        f"- Work badge IP allow-list entry: {c.ip()}"
    )
    ask = c.say(
        c.pick(
            (
                "book a table for two near home friday 7pm and text {n} the details",
                "remind {n} about the dentist tomorrow at 9",
            )
        ),
        n=partner.name,
    )
    msgs: list[Msg] = [_s(memory), _u(ask)]
    if c.chance(0.5):
        call, ids = c.calls(
            [
                ("search_restaurants", {"near": home, "party_size": 2, "time": "19:00"}),
                ("send_sms", {"to": phone, "body": "Table for two, Friday 7pm"}),
            ],
            "Searching now and texting your partner.",
        )
        msgs += [
            call,
            _tool(ids[0], c.js([{"name": "Osteria Nove", "time": "19:15"}])),
            _tool(ids[1], "queued"),
        ]
    return [msgs]


def _p_access_request(c: _Ctx) -> list[Turn]:
    c.theme = "security"
    r = c.r
    p = c.person()
    home = c.ip(v6=False)
    bastion = c.t(f"bastion-{r.randint(1, 3):02d}.{c.pick(_REGIONS_CLOUD)}.prod.internal")
    sg = c.t(f"sg-0{_rs(r, 16, _HEX)}")
    template = c.pick(
        (
            "Hi, {n} here ({e}). Can you add my home IP {ip} to the allow-list for {b}? "
            "I'm on call this weekend.",
            "please whitelist {ip} on {b} for me, it's {n}. my laptop's IPv6 is {ip6} if "
            "that matters",
            "access request from {n} <{e}>: {ip}/32 on {b}, expires friday",
        )
    )
    text = c.say(
        template,
        n=p.name,
        e=c.email(p, c.company()[1]) if "{e}" in template else "",
        ip=home,
        b=bastion,
        ip6=c.ip(v6=True) if "{ip6}" in template else "",
    )
    msgs: list[Msg] = [_u(text)]
    if r.random() < 0.5:
        msgs += _tool_tail(
            c,
            "add_ingress_rule",
            {"security_group": sg, "cidr": f"{home}/32", "port": 22, "note": f"{p.name} on call"},
            {"ok": True, "rule_id": c.t(f"sgr-0{_rs(r, 16, _HEX)}")},
        )
    else:
        c.tech.pop(sg)
    return [msgs]


def _p_chargebacks(c: _Ctx) -> list[Turn]:
    c.theme = "support"
    r = c.r
    lines = ["| Cardholder | Card | Amount | Reason | Case |", "|---|---|---:|---|---|"]
    for _ in range(r.randint(2, 5)):
        p = c.person()
        reason = c.t(c.pick(("fraud / card not present", "duplicate processing", "not received")))
        case = c.t(f"CB-{r.randint(100000, 999999)}")
        lines.append(f"| {p.name} | {c.card()} | {c.amount('$')} | {reason} | {case} |")
    if c.chance(0.5):
        ask = c.say("Draft responses for each of these disputes, due by {d}", d=c.ts("date"))
    else:
        ask = c.say(
            "these chargebacks came in overnight. which ones can we fight? we have delivery "
            "proof for the last two"
        )
    return [[*_support_system(c, *c.company(), pii_p=0.2), _u(ask + "\n\n" + "\n".join(lines))]]


def _p_tax_prep(c: _Ctx) -> list[Turn]:
    c.theme = "hr"
    a = c.person(locale="en_US")
    b = c.person(locale=c.pick(("en_US", "es_MX", "en_GB")))
    note = (
        f"Tax prep notes - {c.t(f'TY{c.r.choice((2023, 2024))}')}\n"
        f"Taxpayer: {a.name}, SSN {c.ssn('dash')}\n"
        f"Spouse: {b.name}, SSN {c.ssn()}\n"
        f"Mailing address:\n{c.address(one_line=False)}\n"
        f"Best contact: {c.phone('us')} / {c.email(a)}\n"
        f"1099-NEC from {c.company()[0]} for {c.amount('$')}"
    )
    ask = c.say(
        c.pick(
            (
                "can you check these notes for anything missing before I file?",
                "Please turn this into the intake checklist for the preparer.",
            )
        )
    )
    return [[_u(f"{ask}\n\n{note}")]]


_PII_SCENARIOS: tuple[Callable[[_Ctx], list[Turn]], ...] = (
    _p_casual_update,
    _p_signature,
    _p_forwarded,
    _p_csv,
    _p_md_table,
    _p_config,
    _p_logs,
    _p_shipping_label,
    _p_hr_note,
    _p_medical,
    _p_bank_transfer,
    _p_crm_tool,
    _p_card_dispute,
    _p_contact_sheet,
    _p_w9,
    _p_slack_thread,
    _p_dev_secret,
    _p_pem,
    _p_jwt,
    _p_non_english,
    _p_call_transcript,
    _p_agent_memory,
    _p_access_request,
    _p_chargebacks,
    _p_tax_prep,
)
# Scenarios dealt twice per round, for more addresses, SSNs and tool calls.
_PII_DECK = (
    *_PII_SCENARIOS,
    _p_casual_update,
    _p_hr_note,
    _p_w9,
    _p_crm_tool,
    _p_logs,
    _p_bank_transfer,
)

# ---------------------------------------------------------------------------------------------
# Technical scenarios (no PII)
# ---------------------------------------------------------------------------------------------


def _tech_system(c: _Ctx) -> list[Msg]:
    if c.chance(0.45):
        return []
    return [
        _s(
            c.pick(
                (
                    "You are an SRE assistant. Prefer concrete commands over prose.",
                    "You are a senior backend engineer helping debug production issues. Be brief.",
                    "You help the data platform team. Ask for logs before guessing.",
                )
            )
        )
    ]


def _t_k8s(c: _Ctx) -> list[Turn]:
    r = c.r
    deploy = c.pick(_SERVICES)
    ns = c.t(c.pick(_NAMESPACES))
    dep = c.t(f"deployment/{deploy}")
    image = c.image()
    kver = c.t(f"1.{r.randint(24, 30)}.{r.randint(0, 9)}")
    pod1, pod2 = c.pod(deploy), c.pod(deploy)
    status = c.t(c.pick(("CrashLoopBackOff", "ImagePullBackOff", "OOMKilled")))
    cmd = c.t(f"kubectl get pods -n {ns}")
    table = (
        "NAME                                READY   STATUS             RESTARTS       AGE\n"
        f"{pod1}   0/1     {status:<18} {r.randint(3, 40)} (2m ago)   {r.randint(5, 59)}m\n"
        f"{pod2}   1/1     Running            0              {r.randint(1, 9)}d"
    )
    which = r.randrange(3)
    if which == 0:
        extra = (
            f"last state: Terminated, reason OOMKilled, {c.t('exit code 137')}. limits are "
            f"memory: {c.t('512Mi')}"
        )
    elif which == 1:
        extra = f'events say Back-off pulling image "{image}"'
    else:
        extra = f"readiness probe fails on {c.t('/healthz')} with {c.t('HTTP 503')}"
    text = c.say(
        "pods for {d} keep going into {s} after we bumped the image to {i}. cluster is on "
        "Kubernetes {k}.\n\n```\n$ {cmd}\n{tbl}\n```\n{x}\nticket {t}",
        d=dep,
        s=status,
        i=image,
        k=kver,
        cmd=cmd,
        tbl=table,
        x=extra,
        t=c.ticket(),
    )
    c.t("Kubernetes")
    return [[*_tech_system(c), _u(text)]]


def _t_traceback(c: _Ctx) -> list[Turn]:
    r = c.r
    host = c.host()
    port = c.pick(("8080", "8081", "6379", "5672"))
    task = c.t(c.pick(("orders.tasks.sync_inventory", "billing.tasks.charge_renewals")))
    mod = task.rsplit(".", 1)[0].replace(".", "/")
    f1 = c.t("/srv/app/.venv/lib/python3.12/site-packages/celery/app/trace.py")
    f2 = c.t(f"/srv/app/{mod}.py")
    err = c.t(c.pick(("ECONNREFUSED", "ETIMEDOUT", "ECONNRESET")))
    tb = (
        f"[{c.ts('log')}: ERROR/ForkPoolWorker-{r.randint(1, 8)}] Task {task}"
        f"[{c.uuid()}] raised unexpected: ConnectionError\n"
        "Traceback (most recent call last):\n"
        f'  File "{f1}", line 453, in trace_task\n'
        f'  File "{f2}", line {r.randint(20, 300)}, in {task.rsplit(".", 1)[1]}\n'
        "    resp = session.post(url, json=payload, timeout=10)\n"
        f"requests.exceptions.ConnectionError: HTTPConnectionPool(host='{host}', port={port}): "
        f"Max retries exceeded (Caused by NewConnectionError('[Errno 111] {err}'))"
    )
    versions = c.say(
        "Django {d}, Celery {ce}, broker is RabbitMQ {rb}",
        d=c.pver("Django"),
        ce=c.pver("Celery"),
        rb=c.pver("RabbitMQ"),
    )
    for name in ("Django", "Celery", "RabbitMQ"):
        c.t(name)
    if c.chance(0.5):
        ask = c.say("worker keeps dying with this since the deploy at {ts}, any idea?", ts=c.ts())
    else:
        ask = c.say("seeing this every few minutes in Sentry:")
        c.t("Sentry")
    return [[*_tech_system(c), _u(f"{ask}\n\n```\n{tb}\n```\n{versions}")]]


def _t_sql(c: _Ctx) -> list[Turn]:
    r = c.r
    if r.random() < 0.5:
        sql = c.t(
            "SELECT o.order_id, o.total_amount, s.segment FROM sales.orders o JOIN "
            "crm.customer_segments s ON s.customer_id = o.customer_id WHERE o.created_at >= "
            f"DATE '{r.randint(2023, 2025)}-01-01';"
        )
        err = c.t("ORA-00942")
        tail = c.say(
            "we're on Oracle 19c, I'm connected as {u}. ticket {t}",
            u=c.t("REPORTING_RO"),
            t=c.ticket(),
        )
        c.t("Oracle 19c")
        head = f"running this against the reporting db throws {err}: table or view does not exist"
    else:
        sql = c.t(
            "UPDATE inventory SET reserved = reserved + 1 WHERE sku = $1 AND warehouse_id = $2 "
            "RETURNING reserved;"
        )
        err = c.t(c.pick(("SQLSTATE 40P01", "SQLSTATE 23505")))
        tail = c.say(
            "PostgreSQL {v}, pgbouncer in transaction mode, about {n} of these per minute",
            v=c.t(f"16.{r.randint(1, 4)}"),
            n=str(r.randint(3, 90)),
        )
        c.t("PostgreSQL")
        head = f"this statement fails intermittently with {err} under load"
    return [[*_tech_system(c), _u(c.say(head) + f"\n\n```sql\n{sql}\n```\n\n{tail}")]]


def _t_terraform(c: _Ctx) -> list[Turn]:
    r = c.r
    tfv = c.t(f"v1.{r.randint(5, 9)}.{r.randint(0, 5)}")
    prov = c.t(f"5.{r.randint(30, 80)}.0")
    bucket = c.t(f"acme-artifacts-{c.pick(('prod', 'staging'))}")
    res = c.t("aws_s3_bucket.artifacts")
    region = c.t(c.pick(_REGIONS_CLOUD))
    out = (
        f"Error: creating S3 Bucket ({bucket}): {c.t('BucketAlreadyExists')}\n\n"
        f'  with {res},\n  on main.tf line {r.randint(10, 90)}, in resource "aws_s3_bucket" '
        '"artifacts":'
    )
    cmd = c.t("terraform apply tfplan")
    text = c.say(
        "Terraform {v} with hashicorp/aws {p} in {reg}. `{cmd}` fails:\n\n```\n{o}\n```\n"
        "the bucket was deleted yesterday, why does it still exist?",
        v=tfv,
        p=prov,
        reg=region,
        cmd=cmd,
        o=out,
    )
    c.t("Terraform")
    c.t("hashicorp/aws")
    return [[*_tech_system(c), _u(text)]]


def _t_ci(c: _Ctx) -> list[Turn]:
    r = c.r
    pr = c.t(f"#{r.randint(1000, 9999)}")
    sha = c.sha()
    node = c.t(f"v{r.choice((18, 20, 22))}.{r.randint(1, 15)}.{r.randint(0, 3)}")
    pnpm = c.t(f"{r.randint(7, 9)}.{r.randint(0, 15)}.{r.randint(0, 9)}")
    ci = c.t(c.pick(("Jenkins", "GitHub Actions", "CircleCI")))
    err = c.t(c.pick(("ERR_PNPM_OUTDATED_LOCKFILE", "ERESOLVE", "ERR_OSSL_EVP_UNSUPPORTED")))
    log = (
        f"{c.ts('iso')} Run pnpm install --frozen-lockfile\n"
        f'{c.ts("iso")}  {err}  Cannot install with "frozen-lockfile" because pnpm-lock.yaml '
        "is not up to date with package.json\n"
        f"{c.ts('iso')} Error: Process completed with exit code 1."
    )
    text = c.say(
        "build for PR {pr} on {ci} failed after commit {sha}. node {n}, pnpm {p}\n\n```\n{log}\n"
        "```\nit passes locally. the secret is passed as {s}",
        pr=pr,
        ci=ci,
        sha=sha,
        n=node,
        p=pnpm,
        log=log,
        s=c.t("${{ secrets.NPM_TOKEN }}"),
    )
    return [[*_tech_system(c), _u(text)]]


def _t_alerts(c: _Ctx) -> list[Turn]:
    r = c.r
    job = c.pick(_SERVICES)
    promql = c.t(
        f'sum(rate(http_requests_total{{status=~"5..",job="{job}"}}[5m])) / '
        f'sum(rate(http_requests_total{{job="{job}"}}[5m])) > 0.05'
    )
    alert = c.t(c.pick(("HighErrorRate", "SLOBurnRateFast", "UpstreamLatencyP99")))
    g = c.pver("Grafana")
    p = c.pver("Prometheus")
    csv_rows = "\n".join(
        f"{c.ts('iso')},{job},{c.pick(('200', '429', '503'))},{r.randint(12, 4000)}"
        for _ in range(r.randint(2, 4))
    )
    text = (
        c.say(
            "alert {a} firing since {ts}. rule:\n\n```\n{q}\n```\nupstream {h} is returning {e}. "
            "Grafana {g}, Prometheus {p}. sample export:",
            a=alert,
            ts=c.ts("iso"),
            q=promql,
            h=c.host(),
            e=c.t("HTTP 429"),
            g=g,
            p=p,
        )
        + f"\n\ntimestamp,job,status,latency_ms\n{csv_rows}"
    )
    return [[*_tech_system(c), _u(text)]]


def _t_windows(c: _Ctx) -> list[Turn]:
    r = c.r
    code = c.t(c.pick(("0xC0000005", "0x80070005", "0xC0000409")))
    path = c.t(r"C:\Windows\SYSTEM32\ntdll.dll")
    app = c.t(r"C:\Program Files\Contoso\SyncAgent\syncagent.exe")
    build = c.t(f"10.0.{r.choice((19045, 22621, 22631))}.{r.randint(1000, 4000)}")
    kb = c.t(f"KB50{r.randint(30000, 39999)}")
    text = c.say(
        "our sync agent crashes on startup after {kb}. event viewer:\n\n"
        "Faulting application path: {app}\nFaulting module path: {path}\n"
        "Exception code: {code}\nOS build {b}\n\nanyone seen this?",
        kb=kb,
        app=app,
        path=path,
        code=code,
        b=build,
    )
    return [[*_tech_system(c), _u(text)]]


def _t_kafka(c: _Ctx) -> list[Turn]:
    r = c.r
    group = c.t(f"{c.pick(_SERVICES)}-cg")
    topic = c.t(c.pick(("orders.v2", "payments.events", "inventory.updates", "clickstream.raw")))
    dag = c.t(c.pick(("etl_daily", "backfill_orders", "refresh_search_index")))
    index = c.t(f"orders-{r.randint(2024, 2025)}.{r.randint(1, 12):02d}")
    lag = c.t(f"{r.randint(10, 900)},{r.randint(100, 999)}")
    text = c.say(
        "consumer group {g} lag on topic {t} partition {pt} jumped to {lag} right after the "
        "Airflow DAG {d} ran at {ts}. Kafka {kv}. at the same time Elasticsearch started "
        "rejecting bulk requests into {i} with es_rejected_execution_exception ({e}). "
        "related?",
        g=group,
        t=topic,
        pt=str(r.randint(0, 11)),
        lag=lag,
        d=dag,
        ts=c.ts("iso"),
        kv=c.pver("Kafka"),
        i=index,
        e=c.t("HTTP 429"),
    )
    for name in ("Airflow", "Kafka", "Elasticsearch", "es_rejected_execution_exception"):
        c.t(name)
    cmd = c.t(
        f"kafka-consumer-groups.sh --bootstrap-server {c.focus(_KAFKA)} --describe --group {group}"
    )
    return [[*_tech_system(c), _u(f"{text}\n\n`{cmd}` output attached in {c.ticket()}")]]


def _t_deploy(c: _Ctx) -> list[Turn]:
    r = c.r
    if r.random() < 0.5:
        c.t("Heroku")
        app = c.t(f"{c.pick(_SERVICES)}-prod")
        code = c.t(c.pick(("H10", "H12", "R14")))
        text = c.say(
            "Heroku app {a} keeps throwing {code} after release {v}. dyno type standard-2x, "
            "log says:\n\n{ts} heroku[web.1]: State changed from starting to crashed\n"
            '{ts2} heroku[router]: at=error code={code} desc="App crashed" method=GET '
            'path="/" host={a}.herokuapp.com',
            a=app,
            code=code,
            v=c.t(f"v{r.randint(100, 999)}"),
            ts=c.ts("iso_ms"),
            ts2=c.ts("iso_ms"),
        )
        c.t(f"{app}.herokuapp.com")
    else:
        c.t("Vercel")
        c.t("Next.js")
        text = c.say(
            "Vercel build fails on Next.js {n}:\n\nError: Cannot find module "
            "'next/dist/server/next.js'\n\ndeployment {d}, region {reg}. we pinned "
            "@vercel/analytics to {pkg} yesterday",
            n=c.t(f"14.{r.randint(0, 2)}.{r.randint(0, 20)}"),
            d=c.t("dpl_" + _rs(r, 24)),
            reg=c.t(c.pick(("iad1", "fra1", "sfo1"))),
            pkg=c.ver("plain"),
        )
    return [[*_tech_system(c), _u(text)]]


def _t_cost(c: _Ctx) -> list[Turn]:
    r = c.r
    before, after = c.amount("$"), c.amount("$")
    inst = c.t(f"i-0{_rs(r, 16, _HEX)}")
    itype = c.t(c.pick(("m6i.2xlarge", "c7g.4xlarge", "r6i.xlarge", "t3.medium")))
    acct = c.uuid()
    rows = "\n".join(
        f"| {c.t(c.pick(('NatGateway-Bytes', 'BoxUsage:' + itype, 'DataTransfer-Out-Bytes')))} | "
        f"{c.amount('$')} |"
        for _ in range(3)
    )
    text = c.say(
        "our AWS bill went from {b} to {a} this month. biggest line items:\n\n| Usage type | Cost "
        "|\n|---|---|\n{rows}\n\ninstance {i} ({t}) has been running since {ts}. billing "
        "account {acct}",
        b=before,
        a=after,
        rows=rows,
        i=inst,
        t=itype,
        ts=c.ts("iso"),
        acct=acct,
    )
    return [[*_tech_system(c), _u(text)]]


def _t_sentry(c: _Ctx) -> list[Turn]:
    r = c.r
    issue = c.t(f"PYTHON-DJANGO-{_rs(r, 3, '0123456789ABCDEF')}")
    release = c.t(f"web@{r.randint(1, 3)}.{r.randint(0, 20)}.{r.randint(0, 9)}")
    where = c.t(f"src/billing/invoice.py:{r.randint(20, 400)}")
    text = c.say(
        "Sentry issue {i} (event {e}) started in release {rel}: KeyError: 'currency' at {w}. "
        "first seen {ts}, {n} events. is it the {t} change?",
        i=issue,
        e=c.uuid(),
        rel=release,
        w=where,
        ts=c.ts("iso"),
        n=str(r.randint(10, 5000)),
        t=c.ticket(),
    )
    c.t("Sentry")
    return [[*_tech_system(c), _u(text)]]


def _t_ansible(c: _Ctx) -> list[Turn]:
    r = c.r
    host = c.t(f"web-{r.randint(1, 9):02d}.prod.internal")
    cmd = c.t("ansible-playbook site.yml -l web -t nginx --check --diff")
    out = (
        f"TASK [nginx : render vhost] ***\n"
        f'fatal: [{host}]: FAILED! => {{"changed": false, "msg": "AnsibleUndefinedVariable: '
        "'upstream_port' is undefined\"}"
    )
    c.t("AnsibleUndefinedVariable")
    text = c.say(
        "Ansible run fails (ansible-core {v}):\n\n$ {cmd}\n{o}\n\nthe var is set in {p}",
        v=c.t(f"2.{r.randint(14, 17)}.{r.randint(0, 9)}"),
        cmd=cmd,
        o=out,
        p=c.t("group_vars/web.yml"),
    )
    c.t("Ansible")
    return [[*_tech_system(c), _u(text)]]


def _t_tool_prom(c: _Ctx) -> list[Turn]:
    r = c.r
    svc = c.t(c.pick(_SERVICES))
    start, end = c.ts("iso"), c.ts("iso")
    q = c.t(
        "histogram_quantile(0.99, sum by (le) "
        f"(rate(http_request_duration_seconds_bucket{{job='{svc}'}}[5m])))"
    )
    ask = c.say(
        "what's the p99 latency for {s} over the incident window? ({t})", s=svc, t=c.ticket()
    )
    call, cid = c.call("query_prometheus", {"query": q, "start": start, "end": end, "step": "60s"})
    result = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {"job": svc},
                    "values": [[r.randint(1_700_000_000, 1_760_000_000), "1.84"]],
                }
            ],
        },
    }
    turns: list[Turn] = [[*_tech_system(c), _u(ask), call, _tool(cid, c.js(result))]]
    return turns


def _t_git(c: _Ctx) -> list[Turn]:
    bad = c.sha()
    good = c.sha(short=True)
    pkg = c.t(f"urllib3 {c.pick(_VERSIONS['urllib3'])}")
    test = c.t("tests/test_client.py::test_retry_backoff")
    text = c.say(
        "git bisect says the first bad commit is {b} ('bump {p}'). last good was {g}. failing "
        "test is {t}, it times out after 30s. run with `{cmd}`",
        b=bad,
        p=pkg,
        g=good,
        t=test,
        cmd=c.t("pytest -x -k test_retry_backoff -p no:cacheprovider"),
    )
    return [[*_tech_system(c), _u(text)]]


def _t_upgrade(c: _Ctx) -> list[Turn]:
    rows = []
    names = ("Django", "Celery", "FastAPI", "Airflow", "Grafana", "Keycloak", "agent-runner")
    for name in c.r.sample(names, 3):
        current = c.pick(_VERSIONS[name][:-1])
        rows.append(f"| {name} | {c.t(current)} | {c.pver(name, newer_than=current)} |")
    text = (
        c.say("planning upgrades for next sprint ({t}), anything breaking here?", t=c.ticket())
        + "\n\n| Package | Current | Target |\n|---|---|---|\n"
        + "\n".join(rows)
        + "\n\nalso moving the base image to "
        + c.image()
    )
    return [[*_tech_system(c), _u(text)]]


_TECH_SCENARIOS: tuple[Callable[[_Ctx], list[Turn]], ...] = (
    _t_k8s,
    _t_traceback,
    _t_sql,
    _t_terraform,
    _t_ci,
    _t_alerts,
    _t_windows,
    _t_kafka,
    _t_deploy,
    _t_cost,
    _t_sentry,
    _t_ansible,
    _t_tool_prom,
    _t_git,
    _t_upgrade,
)

# ---------------------------------------------------------------------------------------------
# Follow-up turns
# ---------------------------------------------------------------------------------------------

_ECHO: dict[str, tuple[str, ...]] = {
    "PERSON": (
        "I found the account for {v}.",
        "Thanks, I've updated {v}'s record.",
        "{v} is now listed as the primary contact.",
    ),
    "EMAIL_ADDRESS": ("I'll send the confirmation to {v}.", "The account is registered to {v}."),
    "PHONE_NUMBER": ("I have {v} on file as the callback number.", "I'll text {v} once it's done."),
    "STREET_ADDRESS": ("The shipping address is now {v}.", "Confirming delivery to:\n{v}"),
    "CREDIT_CARD": ("I've retried the payment on {v}.", "The card {v} was declined again."),
    "US_SSN": ("I've entered the SSN {v} on the form.", "The SSN on file ({v}) matches."),
    "IBAN_CODE": ("The transfer to {v} is queued for tomorrow.", "IBAN {v} passes validation."),
    "IP_ADDRESS": ("Noted {v}.", "I've added {v} to the list.", "I see {v} in the records too."),
}
_REPEAT: dict[str, tuple[str, ...]] = {
    "PERSON": ("this is still for {v}", "same customer, {v}"),
    "EMAIL_ADDRESS": ("the login is still {v}", "reply to {v} when done"),
    "PHONE_NUMBER": ("keep {v} as the main number", "{v} is still the best one to call"),
    "STREET_ADDRESS": ("ship to {v} like before", "billing stays at {v}"),
    "CREDIT_CARD": ("don't charge {v} again", "and remove {v} from the account"),
    "US_SSN": ("(SSN {v}, same as above)", "use {v} for the tax form"),
    "IBAN_CODE": ("same IBAN as before: {v}", "not {v} anymore"),
    "IP_ADDRESS": ("it's {v} again", "also unblock {v} after"),
}
_LOOKUPS = {
    "PERSON": ("search_contacts", "name"),
    "EMAIL_ADDRESS": ("lookup_customer", "email"),
    "PHONE_NUMBER": ("lookup_by_phone", "phone"),
    "STREET_ADDRESS": ("verify_address", "address"),
    "IBAN_CODE": ("validate_iban", "iban"),
    "IP_ADDRESS": ("ip_reputation", "ip"),
    "CREDIT_CARD": ("card_bin_lookup", "card_number"),
    "US_SSN": ("tin_match", "ssn"),
}


_THEME_NEWS: dict[str, tuple[str, ...]] = {
    "support": ("phone", "email", "colleague", "address", "card", "backup"),
    "finance": ("iban", "iban", "colleague", "phone", "email", "card"),
    "hr": ("ssn", "address", "phone", "colleague", "email", "iban"),
    "dev": ("secret", "secret", "aws", "ip", "colleague", "tech"),
    "security": ("ip", "ip", "email", "colleague", "tech"),
    "personal": ("phone", "address", "backup", "email"),
    "medical": ("phone", "address", "backup", "email"),
}


def _new_info(c: _Ctx) -> str:
    """A user's follow-up sentence that brings new PII fitting the chat's theme."""
    what = c.pick(_THEME_NEWS[c.theme])
    if what == "phone":
        return c.say(
            c.pick(("oh and use {v} as a backup number", "my new number is {v}{x}")),
            v=c.phone(),
            x=c.ext() if c.chance(0.2) else "",
        )
    if what == "email":
        return c.say("Please cc {v} on everything from now on.", v=c.email())
    if what == "colleague":
        p = c.person()
        return c.say(
            c.pick(
                (
                    "My colleague {p} ({e}) is covering while I'm out next week.",
                    "loop in {p} too, {e}",
                    "{p} <{e}> owns this going forward",
                )
            ),
            p=p.name,
            e=c.email(p, c.company()[1]),
        )
    if what == "address":
        return c.say("the billing address is different btw: {v}", v=c.address())
    if what == "card":
        return c.say("the card got replaced, new number is {v}", v=c.card())
    if what == "iban":
        return c.say(
            c.pick(("refund should go to {v} instead", "the supplier changed banks, new IBAN {v}")),
            v=c.iban(),
        )
    if what == "backup":
        p = c.person()
        return c.say("if I don't pick up, try {p} on {v}", p=p.name, v=c.phone(p.region))
    if what == "ip":
        return c.say(
            c.pick(
                (
                    "fwiw I was on the office VPN, exit IP {v}",
                    "same pattern from {v} now",
                    "the staging box is {v} if you need to ssh in",
                )
            ),
            v=c.ip(),
        )
    if what == "ssn":
        return c.say("for the tax form, the SSN is {v}", v=c.ssn())
    if what == "secret":
        kind = c.pick(("openai", "anthropic", "ghp", "github_pat", "slack", "google", "stripe"))
        return c.say("I rotated it, the new one is {v} and it still fails", v=c.secret(kind))
    if what == "aws":
        return (
            c.say("CI uses these, are they the problem?")
            + f"\naws_access_key_id = {c.secret('aws_id')}"
            + f"\naws_secret_access_key = {c.secret('aws_secret')}"
        )
    return c.say("also seeing this on {h}:\n{o}", h=c.ip(), o=_tech_output(c))


def _follow_lookup(c: _Ctx, kind: str, value: str) -> list[Msg]:
    """An agent's tool call on an earlier value whose result brings new PII."""
    fn, arg = _LOOKUPS[kind]
    result: dict[str, Any] = {arg: value}
    if kind == "IP_ADDRESS":
        asn = c.t(f"AS{c.r.randint(1000, 65000)}")
        result |= {"asn": asn, "abuse_score": c.r.randint(10, 100), "last_login": c.email()}
    elif kind == "IBAN_CODE":
        result |= {"valid": True, "sepa": True, "account_holder": c.person().name}
    elif kind == "CREDIT_CARD":
        brand = {"3": "AMEX", "4": "VISA", "6": "DISCOVER"}.get(value[0], "MASTERCARD")
        result |= {"brand": brand, "country": "US", "cardholder": c.person().name}
    elif kind == "US_SSN":
        result |= {"name_match": False, "name_on_file": c.person(locale="en_US").name}
    else:
        result |= {"match": True, "record_id": c.uuid(), "alt_phone": c.phone()}
        if c.chance(0.5):
            result["alt_email"] = c.email()
    return _tool_tail(c, fn, {arg: value}, result)


def _pii_follow(c: _Ctx) -> Turn:
    r = c.r
    flat = [(k, v) for k, v in c.prior(one_line=True) if k in _LOOKUPS]
    if c.theme in ("dev", "security"):
        flat = [(k, v) for k, v in flat if k in ("IP_ADDRESS", "EMAIL_ADDRESS")]
    if flat and r.random() < 0.3:
        return _follow_lookup(c, *r.choice(flat))
    shown = [(k, v) for k, v in c.prior(one_line=True) if k in _ECHO]
    bits = [
        r.choice(_ECHO[kind]).format(v=value)
        for kind, value in r.sample(shown, min(len(shown), r.randint(1, 2)))
    ]
    tokens = [t for t in c.tech if "\n" not in t]
    if tokens and (not bits or c.theme == "dev"):
        tok = r.choice(c.focal or tokens)
        bits.append(
            c.pick(
                (f"I'd double-check {tok} too.", f"{tok} looks fine to me.", f"Leave {tok} as is.")
            )
        )
    if any(k == "SECRET" for k in c.ents.values()):
        bits.insert(0, "First: please revoke the key you pasted, it is now in this chat log.")
    if not bits:
        bits.append("Done, I've updated the record.")
    bits.append(c.pick(("Anything else?", "Want me to send a confirmation?", "")))
    user_bits = []
    repeatable = [(k, v) for k, v in c.prior(one_line=True) if k in _REPEAT]
    if repeatable and r.random() < 0.65:
        kind, value = r.choice(repeatable)
        user_bits.append(c.say(r.choice(_REPEAT[kind]), v=value))
    user_bits.append(_new_info(c))
    r.shuffle(user_bits)
    text = user_bits[0]
    for bit in user_bits[1:]:
        text += c.pick(("\n", " ")) + bit if text[-1] in ".!?" else c.pick((". ", "\n")) + bit
    return [_a(" ".join(b for b in bits if b)), _u(text)]


def _tech_cmd(c: _Ctx) -> str:
    svc = c.pick(_SERVICES)
    ns = c.pick(_NAMESPACES)
    return c.t(
        c.pick(
            (
                f"kubectl logs deploy/{svc} -n {ns} --since=15m",
                f"kubectl rollout undo deployment/{svc} -n {ns}",
                f"docker compose logs -f {svc}",
                f"journalctl -u {svc} --since '1 hour ago'",
                f"helm rollback {svc} 3 -n {ns}",
                f"curl -sv https://{svc}.staging.internal/healthz",
                "redis-cli -h redis-master.cache.svc.cluster.local INFO memory",
                "celery -A app.worker inspect active",
                "psql -c 'SELECT pid, state, wait_event FROM pg_stat_activity'",
            )
        )
    )


def _tech_output(c: _Ctx) -> str:
    r = c.r
    lines = []
    for _ in range(r.randint(1, 3)):
        k = r.randrange(6)
        svc = c.pick(_SERVICES)
        if k == 0:
            lines.append(f"{c.ts()} ERROR {svc} {c.err()} calling {c.hostport()}")
        elif k == 1:
            lines.append(f"{c.pod(svc)}   0/1   {c.t('CrashLoopBackOff')}   {r.randint(2, 30)}")
        elif k == 2:
            lines.append(f"Error: {c.err()} (request id {c.uuid()})")
        elif k == 3:
            lines.append(f"{c.image()} pulled, digest sha256:{c.t(_rs(r, 64, _HEX))}")
        elif k == 4:
            lines.append(f"{c.ts()} WARN could not open {c.path()}: permission denied")
        else:
            product = c.pick(_SERVERS)
            lines.append(f"{product} {c.pver(product)} started in {r.randint(80, 9000)}ms")
    return "\n".join(lines)


def _tech_follow(c: _Ctx) -> Turn:
    r = c.r
    if r.random() < 0.35:
        cmd = _tech_cmd(c)
        fn = c.pick(("run_shell", "exec_command", "terminal"))
        return _tool_tail(c, fn, {"command": cmd, "timeout_s": 60}, _tech_output(c))
    earlier = r.choice(c.focal or [t for t in c.tech if "\n" not in t])
    cmd = _tech_cmd(c)
    a = c.pick(
        (
            f"Looks related to {earlier}. Try `{cmd}` and paste the output.",
            f"Can you run `{cmd}`? I want to rule out {earlier} first.",
            f"First check {earlier}, then run `{cmd}`.",
        )
    )
    template = c.pick(
        (
            "ran it, now i get this:\n\n{o}",
            "Same thing. Output:\n{o}",
            "that fixed it but now there's this:\n{o}",
            "ok output below, still {e}\n{o}",
        )
    )
    u = c.say(template, o=_tech_output(c), e=c.err() if "{e}" in template else "")
    return [_a(a), _u(u)]


# ---------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------


def _as_parts(r: random.Random, text: str) -> list[dict[str, str]]:
    chunks = text.split("\n\n")
    if len(chunks) == 1 or r.random() < 0.3:
        return _parts(text)
    k = min(len(chunks), r.choice((2, 2, 3)))
    cuts = sorted(r.sample(range(1, len(chunks)), k - 1))
    out, prev = [], 0
    for cut in [*cuts, len(chunks)]:
        out.append("\n\n".join(chunks[prev:cut]))
        prev = cut
    return _parts(*out)


_PARTS_P = {"user": 0.22, "system": 0.12, "tool": 0.1, "assistant": 0.05}
_NAME_P = {"user": 0.15, "system": 0.05, "assistant": 0.08}


def _decorate(c: _Ctx, turns: list[Turn]) -> None:
    for turn in turns:
        for m in turn:
            role = m["role"]
            if isinstance(m.get("content"), str) and c.chance(_PARTS_P[role]):
                m["content"] = _as_parts(c.r, m["content"])
            if role in _NAME_P and "name" not in m and c.chance(_NAME_P[role]):
                m["name"] = c.pick(_MSG_NAMES[role])


_ATTEMPTS = 60


def _build(
    seed: int,
    i: int,
    scenario: Callable[[_Ctx], list[Turn]],
    slot: int,
    technical: bool,
    multi: bool,
    stream: bool,
) -> Chat:
    failure: AssertionError | None = None
    for attempt in range(_ATTEMPTS):
        r = random.Random(f"pii-holdout/{seed}/{i}/{attempt}")
        c = _Ctx(r, r.randint(2, 6) if multi else 1, slot)
        try:
            turns = scenario(c)
            if not 1 <= len(turns) <= c.max_turns:
                raise AssertionError(f"{scenario.__name__} wrote {len(turns)} turns")
            while len(turns) < c.max_turns:
                turns.append(_tech_follow(c) if technical else _pii_follow(c))
            _decorate(c, turns)
            chat = Chat(
                id=f"holdout-{seed}-{i:04d}",
                turns=tuple(tuple(t) for t in turns),
                entities=tuple(Entity(kind, value) for value, kind in c.ents.items()),
                technical=tuple(c.tech),
                stream=stream,
            )
            _check_chat(chat)
            if technical and chat.entities:
                raise AssertionError("a technical chat holds PII")
        except AssertionError as e:
            failure = e
            continue
        return chat
    raise AssertionError(f"chat {i} ({scenario.__name__}): {failure}")


def _deck(
    r: random.Random, items: tuple[Callable[[_Ctx], list[Turn]], ...]
) -> Iterator[Callable[[_Ctx], list[Turn]]]:
    while True:
        order = list(items)
        r.shuffle(order)
        yield from order


def corpus(seed: int = 2027, size: int = 200) -> list[Chat]:
    """``size`` labelled chats, the same ones for the same ``seed`` and ``size``."""
    plan = random.Random(f"pii-holdout-plan/{seed}")

    def flags(share: float) -> list[bool]:
        n = round(size * share)
        out = [True] * n + [False] * (size - n)
        plan.shuffle(out)
        return out

    technical, multi, stream = flags(0.35), flags(0.45), flags(0.40)
    pii_deck, tech_deck = _deck(plan, _PII_DECK), _deck(plan, _TECH_SCENARIOS)
    dealt: Counter[str] = Counter()
    chats = []
    for i in range(size):
        scenario = next(tech_deck if technical[i] else pii_deck)
        slot = dealt[scenario.__name__]
        dealt[scenario.__name__] += 1
        chats.append(_build(seed, i, scenario, slot, technical[i], multi[i], stream[i]))
    return chats


# ---------------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------------

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b")
_IPV4_RE = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)")
_SSN_RE = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_KEY_RE = re.compile(
    r"sk-(?:proj|ant)-|sk_live_|AKIA[0-9A-Z]{16}|ghp_|github_pat_|xox[abp]-|AIza[\w-]{30}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|eyJ[\w-]+\.eyJ"
)


def _req(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(what)


def _texts(chat: Chat) -> list[str]:
    out: list[str] = []
    for turn in chat.turns:
        for m in turn:
            content = m.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out += [p["text"] for p in content if p.get("type") == "text"]
            for tc in m.get("tool_calls") or ():
                out.append(tc["function"]["arguments"])
    return out


def _occurrences(text: str, needle: str) -> Iterator[tuple[int, int]]:
    start = text.find(needle)
    while start != -1:
        yield start, start + len(needle)
        start = text.find(needle, start + 1)


def _check_shape(chat: Chat, values: set[str]) -> None:
    _req(isinstance(chat.stream, bool), "stream is not a bool")
    _req(len(chat.turns) >= 1, "no turns")
    for ti, turn in enumerate(chat.turns):
        _req(len(turn) >= 1, f"turn {ti} is empty")
        pending: set[str] = set()
        for mi, m in enumerate(turn):
            role = m.get("role")
            _req(role in ("system", "user", "assistant", "tool"), f"bad role {role!r}")
            _req(role != "system" or (ti == 0 and mi == 0), "system message not first")
            if "name" in m:
                name = m["name"]
                _req(bool(_NAME_RE.match(name)), f"bad name {name!r}")
                _req(not any(v in name for v in values), f"name {name!r} holds PII")
            content = m.get("content")
            if isinstance(content, list):
                _req(
                    all(p.get("type") == "text" and isinstance(p.get("text"), str) for p in content)
                    and len(content) >= 1,
                    "bad content parts",
                )
            else:
                _req(
                    isinstance(content, str) or (content is None and bool(m.get("tool_calls"))),
                    f"bad content in a {role} message",
                )
            for tc in m.get("tool_calls") or ():
                _req(role == "assistant", "tool_calls outside an assistant message")
                _req(isinstance(json.loads(tc["function"]["arguments"]), dict), "bad arguments")
                pending.add(tc["id"])
            if role == "tool":
                _req(m.get("tool_call_id") in pending, "tool result without its call")
                pending.discard(m["tool_call_id"])
        _req(turn[-1]["role"] in ("user", "tool"), f"turn {ti} ends with {turn[-1]['role']}")
        _req(not pending, f"turn {ti} leaves tool calls unanswered")


def _check_chat(chat: Chat) -> None:
    values = [e.value for e in chat.entities]
    _req(len(set(values)) == len(values), f"{chat.id}: duplicate entity values")
    for e in chat.entities:
        _req(e.kind in KINDS, f"{chat.id}: unknown kind {e.kind}")
        _req(bool(e.value) and e.value == e.value.strip(), f"{chat.id}: bad value {e.value!r}")
    _req(len(set(chat.technical)) == len(chat.technical), f"{chat.id}: duplicate tokens")
    _check_shape(chat, set(values))
    texts = _texts(chat)
    for v in values:
        _req(any(v in t for t in texts), f"{chat.id}: {v!r} not in any text")
    for tok in chat.technical:
        _req(bool(tok.strip()), f"{chat.id}: empty technical token")
        _req(any(tok in t for t in texts), f"{chat.id}: technical {tok!r} not in any text")
        for v in values:
            _req(tok not in v and v not in tok, f"{chat.id}: {tok!r} overlaps {v!r}")
    for t in texts:
        spans = [s for v in values for s in _occurrences(t, v)]
        for tok in chat.technical:
            for a, b in _occurrences(t, tok):
                _req(
                    not any(a < e and s < b for s, e in spans),
                    f"{chat.id}: technical {tok!r} overlaps PII in the text",
                )
        # Anything that plainly looks like PII must be (part of) a labelled value.
        for rx in (_EMAIL_RE, _IPV4_RE, _SSN_RE, _KEY_RE):
            for m in rx.finditer(t):
                _req(
                    any(m.start() < e and s < m.end() for s, e in spans),
                    f"{chat.id}: unlabelled {m.group()!r}",
                )


def check(chats: list[Chat]) -> None:
    """Raise AssertionError unless every chat's labels are exact and consistent.

    Every entity value and technical token occurs verbatim in a text of its chat (string
    content, text parts, tool-call arguments); no technical token overlaps a PII value, as a
    string or where it occurs; anything that plainly looks like an e-mail address, IPv4
    address, dashed SSN or API key is covered by a label; and the messages are well-formed.
    """
    ids = [chat.id for chat in chats]
    _req(len(set(ids)) == len(ids), "duplicate chat ids")
    for chat in chats:
        _check_chat(chat)


def _main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--size", type=int, default=200)
    args = ap.parse_args()
    chats = corpus(args.seed, args.size)
    check(chats)
    kinds = Counter(e.kind for chat in chats for e in chat.entities)
    turns = Counter(len(chat.turns) for chat in chats)
    print(
        f"{len(chats)} chats, {sum(kinds.values())} entities, "
        f"{sum(len(c.technical) for c in chats)} technical tokens"
    )
    print(f"no PII: {sum(not c.entities for c in chats)}  stream: {sum(c.stream for c in chats)}")
    print("turns:", dict(sorted(turns.items())))
    for kind, n in kinds.most_common():
        print(f"  {kind:<15} {n}")


if __name__ == "__main__":
    _main()
