"""A deterministic, labelled evaluation set of agent chats for measuring PII redaction.

``corpus(seed, size)`` returns realistic support, CRM, HR, operations and coding chats
in the OpenAI chat-completions message format: system prompts, plain and content-part
user messages, assistant ``tool_calls`` with their ``tool`` results, AgentScope-style
``name`` fields, single- and multi-turn conversations. Every PII value put into a text
is labelled as an :class:`Entity` with its exact substring, and technical tokens that a
redactor must leave alone (product names, versions, error codes, ticket ids, paths,
timestamps, hashes, hosts...) are listed in :attr:`Chat.technical`.

Values come from a seeded ``faker.Faker("en_US")`` and a seeded :class:`random.Random`,
so a seed always gives the same corpus (for a given Faker version). ``check(chats)``
verifies the labels. Nothing runs at import time; ``python -m bench.pii_corpus`` prints a
summary of the default corpus.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from faker import Faker

KINDS = (
    "PERSON",
    "STREET_ADDRESS",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "US_SSN",
    "IBAN_CODE",
    "IP_ADDRESS",
    "SECRET",
)
"""The entity kinds a label can have."""


@dataclass(frozen=True)
class Entity:
    """One PII value of a chat: its kind and the exact substring found in the texts."""

    kind: str
    value: str


@dataclass(frozen=True)
class Chat:
    """One labelled conversation.

    ``turns[i]`` holds the new messages the client appends at turn ``i`` (turn 0 may start
    with a system message); the evaluator inserts the assistant replies between turns.
    """

    id: str
    turns: tuple[tuple[dict[str, Any], ...], ...]
    entities: tuple[Entity, ...]
    technical: tuple[str, ...]
    stream: bool


Message = dict[str, Any]
Turn = list[Message]
ToolCall = tuple[str, dict[str, Any], Any]
"""A tool call template: function name, arguments template, result template (text or JSON)."""

_URLSAFE = string.ascii_letters + string.digits + "-_"
_ALNUM = string.ascii_letters + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_NAME_FIELD = re.compile(r"^[a-zA-Z0-9_-]+$")
_SLOT = re.compile(r"\{([a-z_]+?)(\d*)\}|\[\[(.+?)\]\]")
"""``{key}`` or ``{key2}`` is a generated value; ``[[token]]`` a literal technical token."""

_PII_KIND = {
    "name": "PERSON",
    "email": "EMAIL_ADDRESS",
    "work_email": "EMAIL_ADDRESS",
    "phone": "PHONE_NUMBER",
    "intl_phone": "PHONE_NUMBER",
    "address": "STREET_ADDRESS",
    "address_ml": "STREET_ADDRESS",
    "card": "CREDIT_CARD",
    "ssn": "US_SSN",
    "iban": "IBAN_CODE",
    "ip": "IP_ADDRESS",
    "private_ip": "IP_ADDRESS",
    "secret": "SECRET",
    "openai_key": "SECRET",
    "anthropic_key": "SECRET",
    "aws_key": "SECRET",
    "github_token": "SECRET",
    "slack_token": "SECRET",
    "google_key": "SECRET",
    "jwt": "SECRET",
    "pem": "SECRET",
}

_NAME_PREFIXES = frozenset({"Mr.", "Mrs.", "Ms.", "Miss", "Dr.", "Mx."})
_NAME_SUFFIXES = frozenset({"Jr.", "Sr.", "I", "II", "III", "IV", "V", "MD", "DDS", "PhD", "DVM"})

# International numbers written by hand; "#" is a random digit.
_INTL_PHONES = (
    "+44 20 7946 ####",
    "+49 30 ######",
    "+33 1 ## ## ## ##",
    "+91 98### #####",
    "+61 2 9374 ####",
    "+81 3-####-####",
    "+34 612 ### ###",
    "+353 1 ### ####",
    "+31 20 ### ####",
)

# Technical vocabulary.
_VERSIONS = (
    "v2.14.3",
    "3.11.7",
    "1.2.0-rc.1",
    "v0.9.12",
    "2.31.0",
    "1.26.4",
    "v1.29.3",
    "4.0.0-beta.2",
    "8.3.1",
    "0.110.0",
    "v3.2.1",
    "2.2.1",
)
_PY_VERSIONS = ("3.11.7", "3.12.2", "3.10.13")
_PG_VERSIONS = ("16.2", "16.3", "16.1")
_ERRORS = (
    "ERR_CONNECTION_RESET",
    "HTTP 503",
    "E1234",
    "0x80070005",
    "ECONNREFUSED",
    "HTTP 429",
    "OOMKilled",
    "SIGSEGV",
    "ORA-00942",
    "ENOSPC",
    "HTTP 502",
    "ETIMEDOUT",
    "ERR_SSL_PROTOCOL_ERROR",
)
_WIN_ERRORS = ("0x80070005", "0xC0000005", "0x8007045D")
_PORTS = (":8080", ":5432", ":6379", ":443", ":9090", ":3000", ":8443")
_HOSTS = (
    "api.internal.example",
    "db-primary.prod.internal",
    "grafana.ops.example.net",
    "redis-cache-01.svc.cluster.local",
    "ci.example.dev",
    "auth.staging.example.com",
    "queue-2.eu-west-1.internal",
)
_SRC_PATHS = (
    "src/app/main.py:42",
    "app/routes/users.py:118",
    "services/billing/invoice.py:7",
    "lib/cache/client.ts:233",
    "internal/server/handler.go:91",
)
_PY_PATHS = (
    "tests/test_api.py::test_login",
    "tests/integration/test_cache.py::test_ttl",
    "tests/test_billing.py::test_refund[eur]",
)
_LOG_PATHS = (
    "/var/log/nginx/error.log",
    "/var/log/syslog",
    "/var/log/postgresql/postgresql-16-main.log",
    "/opt/app/logs/worker.log",
)
_WIN_PATHS = ("C:\\Users\\Public\\app.log", "C:\\ProgramData\\Acme\\agent\\agent.log")
_REPO_PATHS = (
    "infra/terraform/prod",
    "deploy/helm/values.yaml",
    "~/.kube/config",
    ".github/workflows/ci.yml",
)
_AMOUNTS = ("$1,234.56", "€99.00", "$19.99", "£2,500.00", "$0.002")
_FIXED_TICKETS = ("JIRA-4521", "INC0012345", "PR #482")
_FIXED_SHA = "a3f9c2e1b7d04f6e8a9b0c1d2e3f4a5b6c7d8e9f"
_FIXED_TS = "2024-03-01T12:00:01Z"
_FIXED_LOG_TS = "2024-03-01 12:00:01,123"

# Opening user messages of the generated PII chats.
_OPENERS = (
    "Hi, I'm {name}. My card {card} was charged twice; call me on {phone}.",
    "Ship it to {address_ml}",
    "Please ship order 48213 to {address}, attention {name}.",
    "Our prod box {ip} leaks; the key is {secret}",
    "CRM note: {name} ({email}) called from {phone} about a late refund. Verified with SSN {ssn}.",
    "HR note - new hire {name}, SSN {ssn}, direct deposit to {iban}. Home address: {address}.",
    "Can you update my billing address to:\n{address_ml}\nThe card on file is {card}.",
    "Please wire the deposit back to IBAN {iban}; the account holder is {name}.",
    "I can't log in. My username is {email} and the last IP I used was {ip}.",
    "Draft a reply to {name} at {email} apologising for the delay on their order.",
    "Summarise this email thread:\nFrom: {name} <{email}>\nTo: {name2} <{email2}>\n"
    "Subject: contract renewal\n\nHi, can you call me at {phone} before Friday? Thanks!",
    "My colleague {name2} will pick up the parcel for me ({name}); you can reach them at {phone2}.",
    "Add {name} to the on-call rotation. Mobile: {phone}, pager email {email}.",
    "Fraud alert: card {card} was used from IP {ip}. Cardholder {name}, SSN on file {ssn}.",
    "I'm moving from {address} to {address2}. Please update my profile; my phone stays {phone}.",
    'Translate into French: "Dear {name}, your parcel for {address} is delayed."',
    "Book a call with {name} and {name2} tomorrow at 10; send invites to {email} and {email2}.",
    "The deploy script has {secret} hardcoded. Can you rewrite it to read it from the env?",
    "Here is my .env:\nOPENAI_API_KEY={openai_key}\nDB_HOST={private_ip}\n"
    "Why does the client still get 401?",
    "Identity check for {name}: SSN {ssn}, phone {phone}, email {email}. Does it match?",
    "New lead from the webinar: {name}, {email}, {phone}. Please add them to the CRM.",
    "Insurance claim for policy holder {name}, {address}. Contact by email only: {email}",
    "Payroll: please pay {name} via IBAN {iban}. Their SSN on file is {ssn}.",
    "Tenant application\nName: {name}\nCurrent address:\n{address_ml}\nPhone: {phone}\nSSN: {ssn}",
    "Our VPN gateway {ip} keeps dropping connections, and so does the backup at {ip2}.",
    "Reset MFA for {email}; the backup phone on the account is {phone}.",
    "Write a polite reminder to {name}: the invoice is still unpaid, bank details IBAN {iban}.",
    "Delivery failed at {address}. The recipient, {name}, says to call {phone} before arriving.",
    "Customer {name} disputes a charge on card {card}. The email on the account is {email}.",
    "Rotate this leaked GitHub token: {github_token}. It was pushed by {name} ({email}).",
    "An AWS key {aws_key} showed up in a public gist owned by {email}. What do we do first?",
    "Meeting notes: {name} and {name2} agreed to share the sheet; {name2}'s number is {phone2}.",
    "Can you check why {private_ip} is hammering the login endpoint? The account is {email}.",
    "Please fix the W-2 for {name}; the SSN should read {ssn}, not the old one.",
    "Send the signed lease to {name} at {address} and a copy to {email}, please.",
    "Our Slack bot token {slack_token} was posted in #general by {name}. Is it dangerous?",
    "The mobile app ships with {google_key} in the bundle. Customer {name} reported it.",
    "Debug this request for {email}: Authorization: Bearer {jwt}",
)

# Later-turn sentences that repeat a value the chat already used.
_REFER: dict[str, tuple[str, ...]] = {
    "name": (
        "It's still {name}, by the way.",
        "As I said, the account is under {name}.",
        "Please address the letter to {name}.",
    ),
    "email": (
        "Use {email} for all replies, as before.",
        "Again, the login is {email}.",
        "Did anything get sent to {email} yet?",
    ),
    "phone": (
        "You can still call {phone}.",
        "The number {phone} is the right one.",
        "Nobody has called {phone} yet.",
    ),
    "card": ("To be clear, the card is {card}.", "Can you refund to {card} instead?"),
    "ssn": ("Do you still need the SSN {ssn} or is that enough?",),
    "iban": ("The IBAN {iban} is correct, I double-checked it.",),
    "address": ("Deliver to {address} as agreed.", "Is {address} in your delivery zone?"),
    "address_ml": ("Same address as before:\n{address_ml}",),
    "ip": ("Is {ip} still blocked?", "We saw {ip} again in the access logs."),
    "private_ip": ("The traffic from {private_ip} stopped for an hour, then came back.",),
    "secret": ("Has {secret} been revoked yet?",),
    "openai_key": ("I removed {openai_key} from the repo, is that enough?",),
    "github_token": ("Is {github_token} revoked now?",),
    "aws_key": ("CloudTrail still shows calls signed with {aws_key}.",),
    "slack_token": ("The token {slack_token} still works, I just tested it.",),
    "google_key": ("Should we restrict {google_key} to our app id?",),
    "jwt": ("The same token {jwt} also fails on staging.",),
}

# Later-turn sentences that add new values.
_ADD = (
    "Also, my SSN is {ssn} if you need it for verification.",
    "While I'm abroad I'm on {intl_phone}.",
    "Please cc my manager {name3} at {email3}.",
    "The refund should go to IBAN {iban} instead.",
    "Billing address is {address}.",
    "If that card fails, use my second card {card2}.",
    "Another login came from {ip2} an hour ago.",
    "My partner {name4} may call from {phone4}.",
    "Here is the other key they gave me: {secret2}.",
    "My work email is {work_email}, use that for invoices.",
    "Please also send a copy to {email}.",
    "My number changed, it's {phone5} now.",
    "The new tenant is {name6}; forward mail to\n{address_ml6}",
)

_SYSTEM_PLAIN = (
    "You are a helpful customer-support assistant for Acme Corp. Be concise.",
    "You are Friday, an operations agent. Use the tools when they help.",
    "You are an HR assistant. Never reveal salary data.",
    "You are a billing assistant for a SaaS company.",
)
_SYSTEM_PII = (
    "You are the assistant of {name} ({email}).",
    "You are Friday, the personal assistant of {name}. Their phone is {phone} and "
    "their home address is {address}.",
    "You handle support for account holder {name} <{email}>. Card on file: {card}.",
    "You are a concierge bot. The guest is {name}, reachable at {phone}.",
)
_SYSTEM_TECH = (
    "You are a senior SRE. Answer with concrete commands.",
    "You are a coding assistant for a Python monorepo.",
    "You are a DevOps helper bot. Keep answers short.",
)

# Technical segments: logs, traces, commands, config. They never hold PII slots.
_TECH = (
    "Our [[Kubernetes]] deployment started failing after the upgrade to {version}:\n```\n"
    "{ts} ERROR upstream connect error {err} host={host}{port}\n```",
    "[[pytest]] fails on {pypath} with:\n```\nE   redis.exceptions.ConnectionError: Error 111 "
    "connecting to {host}{port}. Connection refused.\n```\nWe run [[Redis]] {version} on "
    "Python {pyversion}.",
    "`terraform apply` in {repopath} fails with {err}. [[Terraform]] {version}, see {ticket}.",
    "The [[GitHub Actions]] run for {ticket} is red: commit {commit} fails at `npm test`.",
    "[[Nginx]] error log ({logpath}):\n```\n{logts} [error] 2211#0: *5678 upstream timed out "
    '(110: Connection timed out), upstream: "http://{host}{port}/v1/chat"\n```',
    "Windows agent crashes with {winerr}; details in {winpath}.",
    "[[Grafana]] alert fired at {ts}: p99 latency above 2s on {host}. Dashboard uid {uuid}.",
    "Our [[OpenAI]] bill jumped to {amount} this month (usage export {uuid}).",
    "[[PostgreSQL]] {pgversion} replication lag keeps growing; WAL sender on {host}{port}, "
    "config in [[/etc/postgresql/16/main/postgresql.conf]].",
    "[[numpy]] {version} breaks our [[FastAPI]] service: `AttributeError: module 'numpy' "
    "has no attribute 'float'` at {srcpath}.",
    "Please review {ticket}: it bumps [[FastAPI]] from {version} to {version2} and touches "
    "{srcpath}.",
    "[[AWS Lambda]] keeps timing out: `Task timed out after 30.03 seconds`, RequestId: {uuid}. "
    "Tracked in {ticket}.",
    "Image sha256:{digest} fails the health check on {port} after the [[Docker]] {version} update.",
    "[[Jenkins pipeline]] log:\n```\n[{logts}] Checking out Revision {sha} "
    "(refs/remotes/origin/main)\n[{logts2}] ERROR: script returned exit code 137\n```",
    "Pod api-7d9f8b6c5-xk2lp is in [[CrashLoopBackOff]] since the [[Helm]] chart moved to "
    "{version}; incident {ticket}.",
    "The invoice shows {amount} but our plan is {amount2}; billing reference {ticket}.",
    "Build {buildid} of the mobile app crashes on start with {err}.",
    "Running `kubectl rollout restart deploy/api -n prod` returns {err} on cluster {host}.",
    "Config snippet:\n```yaml\nredis:\n  host: {host}\n  port: 6379\n  timeout_ms: 250\n```\n"
    "Latency spikes to 900ms at {ts}.",
    "[[Prometheus]] shows {err} on 12% of requests to {host}{port} since {ts}.",
)

_TECH_FOLLOW = (
    "Still failing after the rollback. Same {err} on {host}.",
    "I restarted it at {ts2} and now see {err2} instead.",
    "Could it be the change in {ticket}? It was merged as {commit}.",
    "Last line of {logpath}: `{logts} [crit] worker process exited on signal 11`",
    "We pinned {version} again; the staging run {uuid} passed.",
    "The trace now points at {srcpath} instead. Build {buildid}.",
    "Same thing on {host2}{port}, so it is not one bad node.",
)

_PII_TOOLS: tuple[tuple[ToolCall, ...], ...] = (
    (
        (
            "send_email",
            {
                "to": "{email}",
                "name": "{name}",
                "subject": "About your order",
                "body": "Hi {name}, we are sorry for the delay.",
            },
            {"status": "queued", "message_id": "{uuid}"},
        ),
    ),
    (
        (
            "lookup_customer",
            {"email": "{email}"},
            {
                "customer": {
                    "name": "{name}",
                    "phone": "{phone}",
                    "address": "{address}",
                    "card": "{card}",
                    "since": "2019-04-12",
                }
            },
        ),
    ),
    (
        (
            "create_ticket",
            {"reporter": "{name}", "source_ip": "{ip}", "summary": "Login failures"},
            "Created {ticket} for {name}; assigned to the on-call engineer.",
        ),
    ),
    (
        (
            "get_employee",
            {"employee_id": "E-10492"},
            {"name": "{name}", "ssn": "{ssn}", "iban": "{iban}", "home_address": "{address}"},
        ),
    ),
    (
        (
            "charge_card",
            {"card_number": "{card}", "amount": "{amount}", "cardholder": "{name}"},
            {"ok": False, "error": "card_declined", "retry_after": "{ts}"},
        ),
    ),
    (
        (
            "search_crm",
            {"query": "{phone}"},
            "1 match: {name} <{email}>, last contact 2024-02-11 by phone ({phone}).",
        ),
    ),
    (
        (
            "schedule_meeting",
            {"attendees": ["{email}", "{email2}"], "title": "Sync with {name2}"},
            {"event_id": "{uuid}", "status": "confirmed"},
        ),
    ),
    (
        (
            "block_ip",
            {"ip": "{ip}", "reason": "credential stuffing"},
            "Rule added on {host}; {ip} is now blocked.",
        ),
    ),
    (
        (
            "rotate_secret",
            {"secret": "{secret}", "owner": "{email}"},
            {"rotated": True, "revoked_at": "{ts}"},
        ),
    ),
    (
        (
            "send_sms",
            {"to": "{phone}", "text": "Hi {name}, your courier arrives today."},
            {"sid": "{uuid}", "status": "delivered"},
        ),
    ),
    (
        ("lookup_customer", {"phone": "{phone}"}, {"name": "{name}", "email": "{email}"}),
        (
            "send_email",
            {"to": "{email}", "name": "{name}", "subject": "Refund issued"},
            {"status": "sent"},
        ),
    ),
    (("verify_identity", {"name": "{name}", "ssn": "{ssn}"}, {"match": True, "score": 0.97}),),
    (
        (
            "update_address",
            {"customer": "{email}", "address": "{address2}"},
            "Address for {name} changed to {address2}.",
        ),
    ),
)

_TECH_TOOLS: tuple[tuple[ToolCall, ...], ...] = (
    (
        (
            "run_shell",
            {"cmd": "kubectl logs deploy/api -n prod --since=1h | tail -n 2"},
            "{ts} WARN retrying {host}{port} ({err})\n{ts2} ERROR giving up after 5 attempts",
        ),
    ),
    (
        (
            "search_logs",
            {"query": "{err}", "service": "{host}"},
            {"hits": 42, "first_seen": "{ts}", "sample": "request_id={uuid} status=503"},
        ),
    ),
    (
        (
            "get_ci_run",
            {"run_id": "{uuid}"},
            {"status": "failed", "step": "pytest", "commit": "{sha}", "ticket": "{ticket}"},
        ),
    ),
    (
        (
            "get_invoice",
            {"reference": "{ticket}"},
            {"total": "{amount}", "status": "open"},
        ),
    ),
    (
        ("get_release", {"version": "{version}"}, {"build": "{buildid}", "sha": "{sha}"}),
        ("get_ci_run", {"run_id": "{uuid}"}, "Run {uuid} failed: {err} at {srcpath}"),
    ),
)


def _group(value: str, sizes: Sequence[int], sep: str) -> str:
    """Split ``value`` into groups of the given sizes joined by ``sep``."""
    out: list[str] = []
    at = 0
    for size in sizes:
        out.append(value[at : at + size])
        at += size
    if at < len(value):
        out.append(value[at:])
    return sep.join(part for part in out if part)


def _iban(country: str, bban: str) -> str:
    """An IBAN with valid ISO 13616 check digits."""
    moved = bban + country + "00"
    numeric = "".join(str(int(ch, 36)) for ch in moved)
    return f"{country}{98 - int(numeric) % 97:02d}{bban}"


def _b64url(data: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class _Builder:
    """Writes one chat: generates values, fills templates and records the labels."""

    def __init__(self, fake: Faker, rng: random.Random, *, pii: bool = True) -> None:
        self.fake = fake
        self.rng = rng
        self.pii_allowed = pii
        self.used: list[str] = []
        self.used_all: list[str] = []
        self.seen: set[int] = set()
        """``id()`` of the templates and tool flows this chat already used."""
        self._cache: dict[str, str] = {}
        self._entities: dict[tuple[str, str], None] = {}
        self._technical: dict[str, None] = {}
        self.user_name: str | None = None
        self.agent_name: str | None = None

    # -- labels -------------------------------------------------------------------------

    def pii(self, kind: str, value: str) -> str:
        """Label ``value`` as a PII entity of ``kind`` and return it."""
        if kind not in KINDS:
            raise ValueError(kind)
        self._entities[(kind, value)] = None
        return value

    def tech(self, token: str) -> str:
        """Label ``token`` as technical text that must survive, and return it."""
        self._technical[token] = None
        return token

    # -- random helpers -----------------------------------------------------------------

    def chars(self, alphabet: str, n: int) -> str:
        """``n`` random characters of ``alphabet``."""
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def digits(self, pattern: str) -> str:
        """Replace each ``#`` of ``pattern`` with a random digit."""
        return "".join(str(self.rng.randint(0, 9)) if ch == "#" else ch for ch in pattern)

    def hex(self, n: int) -> str:
        """``n`` random lower-case hex digits."""
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    # -- value generation ---------------------------------------------------------------

    def value(self, base: str, suffix: str = "") -> str:
        """The chat's value for slot ``base + suffix`` (created once, then repeated)."""
        key = base + suffix
        if key not in self._cache:
            taken = set(self._cache.values())
            for _ in range(50):
                candidate = self._make(base, suffix)
                if candidate not in taken:
                    break
            self._cache[key] = candidate
        return self._cache[key]

    def _person(self) -> str:
        if self.rng.random() < 0.5:
            return f"{self.fake.first_name()} {self.fake.last_name()}"
        tokens = self.fake.name().split()
        while len(tokens) > 2 and tokens[0] in _NAME_PREFIXES:
            tokens.pop(0)
        while len(tokens) > 2 and tokens[-1] in _NAME_SUFFIXES:
            tokens.pop()
        return " ".join(tokens)

    def _email_for(self, suffix: str, work: bool) -> str:
        tokens = self.value("name", suffix).split()
        first = re.sub("[^a-z]", "", tokens[0].lower()) or "user"
        last = re.sub("[^a-z]", "", tokens[-1].lower()) or "mail"
        if work:
            return f"{first[0]}{last}@{self.fake.domain_name()}"
        local = self.rng.choice(
            (
                f"{first}.{last}",
                f"{first}{last}",
                f"{first[0]}{last}",
                f"{first}_{last}{self.rng.randint(1, 99)}",
            )
        )
        return f"{local}@{self.fake.free_email_domain()}"

    def _card(self) -> str:
        roll = self.rng.random()
        if roll < 0.8:
            return self.fake.credit_card_number()
        number = self.fake.credit_card_number(self.rng.choice(("visa16", "mastercard")))
        return _group(number, (4, 4, 4, 4), " " if roll < 0.9 else "-")

    def _bank_account(self) -> str:
        roll = self.rng.random()
        if roll < 0.6:
            number = self.fake.iban()
        elif roll < 0.75:
            number = _iban("DE", self.digits("#" * 18))
        elif roll < 0.9:
            number = _iban("NL", self.chars(string.ascii_uppercase, 4) + self.digits("#" * 10))
        else:
            number = _iban(
                "FR", self.digits("#" * 10) + self.chars(_UPPER_DIGITS, 11) + self.digits("##")
            )
        if self.rng.random() < 0.2:
            return _group(number, [4] * 9, " ")
        return number

    def _secret(self, kind: str) -> str:
        if kind == "openai_key":
            return "sk-proj-" + self.chars(_URLSAFE, self.rng.randint(48, 64))
        if kind == "anthropic_key":
            return "sk-ant-api03-" + self.chars(_URLSAFE, 78) + "AA"
        if kind == "aws_key":
            return "AKIA" + self.chars(_UPPER_DIGITS, 16)
        if kind == "github_token":
            return "ghp_" + self.chars(_ALNUM, 36)
        if kind == "slack_token":
            return f"xoxb-{self.digits('#' * 12)}-{self.digits('#' * 13)}-{self.chars(_ALNUM, 24)}"
        if kind == "google_key":
            return "AIza" + self.chars(_URLSAFE, 35)
        if kind == "jwt":
            header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
            claims = {
                "sub": str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
                "iat": 1709294401 + self.rng.randint(0, 10**7),
                "scope": "orders:read orders:write",
            }
            payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
            return f"{header}.{payload}.{self.chars(_URLSAFE, 43)}"
        if kind == "pem":
            der = bytes.fromhex("308204a40201000282010100") + self.rng.randbytes(1180)
            body = base64.b64encode(der).decode("ascii")
            lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
            return f"-----BEGIN RSA PRIVATE KEY-----\n{lines}\n-----END RSA PRIVATE KEY-----"
        raise KeyError(kind)

    def _make(self, base: str, suffix: str) -> str:
        fake, rng = self.fake, self.rng
        if base == "name":
            return self._person()
        if base == "email":
            return self._email_for(suffix, work=False) if rng.random() < 0.5 else fake.email()
        if base == "work_email":
            return self._email_for(suffix, work=True)
        if base == "phone":
            if rng.random() < 0.15:
                return self.digits(rng.choice(_INTL_PHONES))
            return fake.phone_number()
        if base == "intl_phone":
            return self.digits(rng.choice(_INTL_PHONES))
        if base in ("address", "address_ml"):
            raw = self.value("_addr", suffix)
            return raw if base == "address_ml" else raw.replace("\n", ", ")
        if base == "_addr":
            return fake.address()
        if base == "card":
            return self._card()
        if base == "ssn":
            return fake.ssn()
        if base == "iban":
            return self._bank_account()
        if base == "ip":
            return fake.ipv4_public()
        if base == "private_ip":
            return fake.ipv4_private()
        if base == "secret":
            kinds = ("openai_key", "anthropic_key", "aws_key", "github_token", "slack_token")
            return self._secret(rng.choice((*kinds, "google_key", "jwt")))
        if base in _PII_KIND:
            return self._secret(base)
        return self._make_tech(base)

    def _make_tech(self, base: str) -> str:
        rng = self.rng
        pools: dict[str, Sequence[str]] = {
            "version": _VERSIONS,
            "pyversion": _PY_VERSIONS,
            "pgversion": _PG_VERSIONS,
            "err": _ERRORS,
            "winerr": _WIN_ERRORS,
            "port": _PORTS,
            "host": _HOSTS,
            "srcpath": _SRC_PATHS,
            "pypath": _PY_PATHS,
            "logpath": _LOG_PATHS,
            "winpath": _WIN_PATHS,
            "repopath": _REPO_PATHS,
        }
        if base in pools:
            return rng.choice(pools[base])
        if base == "ticket":
            if rng.random() < 0.25:
                return rng.choice(_FIXED_TICKETS)
            n = rng.randint(100, 99999)
            return rng.choice(
                (f"JIRA-{n}", f"INC{n:07d}", f"PR #{n % 2000}", f"OPS-{n}", f"CHG{n:07d}")
            )
        if base == "amount":
            roll = rng.random()
            if roll < 0.5:
                return rng.choice(_AMOUNTS)
            if roll < 0.8:
                return f"${rng.randint(10, 99999):,}.{rng.randint(0, 99):02d}"
            return f"€{rng.randint(5, 999)}.00"
        stamp = (
            f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
        )
        if base == "ts":
            return _FIXED_TS if rng.random() < 0.2 else f"{stamp[0]}T{stamp[1]}Z"
        if base == "logts":
            if rng.random() < 0.2:
                return _FIXED_LOG_TS
            return f"{stamp[0]} {stamp[1]},{rng.randint(0, 999):03d}"
        if base == "sha":
            return _FIXED_SHA if rng.random() < 0.15 else self.hex(40)
        if base == "commit":
            return self.hex(7)
        if base == "digest":
            return self.hex(64)
        if base == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if base == "buildid":
            if rng.random() < 0.5:
                return f"build-{stamp[0].replace('-', '')}.{rng.randint(1, 40)}"
            return f"sha-{self.hex(12)}"
        raise KeyError(f"unknown slot {base!r}")

    # -- templates ----------------------------------------------------------------------

    def emit(self, base: str, suffix: str = "") -> str:
        """The value of a slot, labelled (PII entity or technical token)."""
        value = self.value(base, suffix)
        key = base + suffix
        if key not in self.used_all:
            self.used_all.append(key)
        kind = _PII_KIND.get(base)
        if kind is None:
            return self.tech(value)
        if not self.pii_allowed:
            raise ValueError(f"PII slot {base!r} in a technical-only chat")
        if key not in self.used:
            self.used.append(key)
        return self.pii(kind, value)

    def fill(self, template: str) -> str:
        """Replace every ``{slot}`` and ``[[token]]`` of ``template``."""

        def replace(match: re.Match[str]) -> str:
            if match.group(3) is not None:
                return self.tech(match.group(3))
            return self.emit(match.group(1), match.group(2))

        return _SLOT.sub(replace, template)

    def fill_obj(self, obj: Any) -> Any:
        """``fill`` applied to every string of a JSON-like object."""
        if isinstance(obj, str):
            return self.fill(obj)
        if isinstance(obj, list):
            return [self.fill_obj(item) for item in obj]
        if isinstance(obj, dict):
            return {key: self.fill_obj(item) for key, item in obj.items()}
        return obj

    def json(self, obj: Any) -> str:
        """A filled object as a compact JSON string, non-ASCII kept as is."""
        return json.dumps(self.fill_obj(obj), ensure_ascii=False)

    # -- messages -----------------------------------------------------------------------

    def system(self, text: str) -> Message:
        """A system message (named when the chat is AgentScope-style)."""
        message: Message = {"role": "system", "content": text}
        if self.user_name is not None:
            message["name"] = "system"
        return message

    def user(self, segments: Sequence[str], shape: str | None = None) -> Message:
        """A user message: ``shape`` is "str", "part" or "parts" (random when None)."""
        if shape is None:
            roll = self.rng.random()
            shape = "str" if roll < 0.55 else "part" if roll < 0.75 else "parts"
        if shape == "parts" and len(segments) < 2:
            shape = "part"
        content: str | list[dict[str, str]]
        if shape == "str":
            content = "\n\n".join(segments)
        elif shape == "part":
            content = [{"type": "text", "text": "\n\n".join(segments)}]
        else:
            cut = self.rng.randint(1, len(segments) - 1)
            content = [
                {"type": "text", "text": "\n\n".join(segments[:cut])},
                {"type": "text", "text": "\n\n".join(segments[cut:])},
            ]
        message: Message = {"role": "user", "content": content}
        if self.user_name is not None:
            message["name"] = self.user_name
        return message

    def tools(
        self, calls: Sequence[ToolCall], *, say: str | None = None, raw: bool = False
    ) -> Turn:
        """An assistant ``tool_calls`` message followed by one ``tool`` message per call.

        With ``raw`` the templates are used as they are (already filled by the caller).
        """
        ids = ["call_" + self.chars(_ALNUM, 24) for _ in calls]
        assistant: Message = {
            "role": "assistant",
            "content": say,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": json.dumps(args, ensure_ascii=False)
                        if raw
                        else self.json(args),
                    },
                }
                for call_id, (name, args, _) in zip(ids, calls, strict=True)
            ],
        }
        if self.agent_name is not None:
            assistant["name"] = self.agent_name
        out: Turn = [assistant]
        for call_id, (_, _, result) in zip(ids, calls, strict=True):
            if isinstance(result, str):
                text = result if raw else self.fill(result)
            else:
                text = json.dumps(result, ensure_ascii=False) if raw else self.json(result)
            content: str | list[dict[str, str]] = text
            if self.rng.random() < 0.15:
                content = [{"type": "text", "text": text}]
            out.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return out

    def finish(self, chat_id: str, turns: Sequence[Turn], stream: bool) -> Chat:
        """Freeze the chat; technical tokens overlapping a PII value are not listed."""
        entities = tuple(Entity(kind, value) for kind, value in self._entities)
        technical = tuple(
            token
            for token in self._technical
            if not any(token in e.value or e.value in token for e in entities)
        )
        return Chat(
            id=chat_id,
            turns=tuple(tuple(turn) for turn in turns),
            entities=entities,
            technical=technical,
            stream=stream,
        )


def _slots(template: str) -> list[str]:
    """The ``{slot}`` keys of a template."""
    return [m.group(1) + m.group(2) for m in _SLOT.finditer(template) if m.group(1)]


def _refer(b: _Builder) -> str:
    """A sentence repeating a PII value the chat already used."""
    options = [t for key in b.used for t in _REFER.get(key, ()) if id(t) not in b.seen]
    if not options:
        return "Thanks, that helps."
    template = b.rng.choice(options)
    b.seen.add(id(template))
    return b.fill(template)


def _add(b: _Builder) -> str:
    """A sentence adding at least one PII value the chat has not used yet."""
    fresh = [t for t in _ADD if any(key not in b.used for key in _slots(t))]
    return b.fill(b.rng.choice(fresh or list(_ADD)))


def _pick_tools(b: _Builder, flows: Sequence[tuple[ToolCall, ...]]) -> tuple[ToolCall, ...]:
    """A tool flow, preferring those that reuse values the chat already mentioned."""
    fresh = [flow for flow in flows if id(flow) not in b.seen] or list(flows)
    weights = []
    for flow in fresh:
        keys = _slots(json.dumps([[args, result] for _, args, result in flow]))
        weights.append(1 + 4 * sum(key in b.used_all for key in dict.fromkeys(keys)))
    pick = b.rng.choices(fresh, weights=weights)[0]
    b.seen.add(id(pick))
    return pick


_SEGUES = ("", "Also, unrelated: ", "Separate issue - ", "And one for the infra team. ")


def _agentscope(b: _Builder) -> None:
    """Make the chat carry AgentScope-style ``name`` fields."""
    b.user_name = b.rng.choice(("user", "customer", "ops_team"))
    b.agent_name = b.rng.choice(("Friday", "assistant-1", "support_bot"))


def _general(b: _Builder, n_turns: int, with_tech: bool) -> list[Turn]:
    """A generated PII chat: opener, optional tech segment and tools, follow-up turns."""
    rng = b.rng
    if rng.random() < 0.2:
        _agentscope(b)
    first: Turn = []
    roll = rng.random()
    if roll < 0.3:
        first.append(b.system(b.fill(rng.choice(_SYSTEM_PII))))
    elif roll < 0.6:
        first.append(b.system(rng.choice(_SYSTEM_PLAIN)))
    segments = [b.fill(rng.choice(_OPENERS))]
    if with_tech:
        segments.append(rng.choice(_SEGUES) + b.fill(rng.choice(_TECH)))
    first.append(b.user(segments))
    if rng.random() < 0.3:
        say = "Let me look that up." if rng.random() < 0.3 else None
        first.extend(b.tools(_pick_tools(b, _PII_TOOLS), say=say))
    turns = [first]
    for _ in range(1, n_turns):
        segments = [_refer(b), _add(b)]
        if with_tech and rng.random() < 0.5:
            segments.append(b.fill(rng.choice(_TECH_FOLLOW)))
        turn = [b.user(segments)]
        if rng.random() < 0.25:
            turn.extend(b.tools(_pick_tools(b, _PII_TOOLS)))
        turns.append(turn)
    return turns


def _technical(b: _Builder, n_turns: int) -> list[Turn]:
    """A purely technical chat: no PII at all."""
    rng = b.rng
    if rng.random() < 0.2:
        _agentscope(b)
    first: Turn = []
    if rng.random() < 0.7:
        first.append(b.system(rng.choice(_SYSTEM_TECH)))
    picks = rng.sample(range(len(_TECH)), 2)
    segments = [b.fill(_TECH[picks[0]])]
    if rng.random() < 0.4:
        segments.append(b.fill(_TECH[picks[1]]))
    first.append(b.user(segments))
    if rng.random() < 0.4:
        first.extend(b.tools(_pick_tools(b, _TECH_TOOLS)))
    turns = [first]
    for _ in range(1, n_turns):
        segments = [b.fill(rng.choice(_TECH_FOLLOW))]
        if rng.random() < 0.3:
            segments.append(b.fill(rng.choice(_TECH)))
        turn = [b.user(segments)]
        if rng.random() < 0.3:
            turn.extend(b.tools(_pick_tools(b, _TECH_TOOLS)))
        turns.append(turn)
    return turns


# -- hand-written hard cases ---------------------------------------------------------------


def _h_obrien(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Siobhan O'Brien")
    email = b.pii("EMAIL_ADDRESS", "siobhan.obrien@eircom.net")
    phone = b.pii("PHONE_NUMBER", "+353 1 555 0142")
    first = [
        b.system("You are a helpful support assistant for an airline."),
        b.user(
            [
                f"Hi, this is {name}. My booking under {email} was cancelled and nobody "
                f"called me back on {phone}."
            ],
            "str",
        ),
    ]
    second = [b.user([f"{name} again - any update? You can also text {phone}."], "part")]
    return [first, second]


def _h_garcia(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "María José García-López")
    address = b.pii("STREET_ADDRESS", "Calle de Alcalá 45, 3B\n28014 Madrid")
    phone = b.pii("PHONE_NUMBER", "+34 612 345 678")
    card = b.pii("CREDIT_CARD", b.fake.credit_card_number("mastercard"))
    return [
        [b.user([f"Hola! I'm {name}, please send the replacement to:\n{address}"], "str")],
        [
            b.user(
                [f"Sí, {name} is the name on the card {card}.", f"Mobile: {phone}"],
                "parts",
            )
        ],
    ]


def _h_nguyen(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Nguyễn Văn An")
    email = b.pii("EMAIL_ADDRESS", "nguyen.van.an@example.vn")
    phone = b.pii("PHONE_NUMBER", "+84 912 345 678")
    user = b.user([f"Email {name} <{email}> that the visa papers are ready; cc me."], "str")
    calls: list[ToolCall] = [
        (
            "send_email",
            {"to": email, "name": name, "subject": "Visa papers ready"},
            f"Delivered to {name} <{email}>; recipient phone on file {phone}",
        )
    ]
    return [[user, *b.tools(calls, raw=True)]]


def _h_picard(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Jean-Luc Picard-Smith")
    email = b.pii("EMAIL_ADDRESS", "jl.picard-smith@starfleet-example.fr")
    phone = b.pii("PHONE_NUMBER", "+33 1 23 45 67 89")
    text = (
        f"CRM note: {name} ({email}) asked for a callback on {phone}; "
        f"ticket {b.tech('INC0012345')}."
    )
    return [[b.system("You summarise CRM notes."), b.user([text], "str")]]


def _h_jordan(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Jordan Banks")
    iban = b.pii("IBAN_CODE", b.fake.iban())
    text = (
        f"{name} asked why two banks in Jordan froze his transfer to {iban}. "
        "Can you explain the usual compliance checks?"
    )
    return [[b.user([text], "str")]]


def _h_hopper(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Grace Hopper")
    email = b.pii("EMAIL_ADDRESS", "grace.hopper@navy-example.org")
    text = (
        f"{name} from finance ({email}) asked whether the {b.tech('NVIDIA H100')} nodes in our "
        f"{b.tech('Kubernetes')} cluster are worth it. Budget request is {b.tech('JIRA-4521')}."
    )
    return [[b.user([text], "part")]]


def _h_url_emails(b: _Builder) -> list[Turn]:
    one = b.pii("EMAIL_ADDRESS", "john.doe@gmail.com")
    two = b.pii("EMAIL_ADDRESS", "priya.raman@acme.example")
    host = b.tech("crm.acme.example")
    text = (
        f"open https://{host}/contacts?email={one}&tab=billing and then "
        f"mailto:{two}?subject=renewal - why do both show the old plan?"
    )
    return [[b.user([text], "str")]]


def _h_phone_period(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Dana Whitfield")
    one = b.pii("PHONE_NUMBER", "(459)502-4057")
    two = b.pii("PHONE_NUMBER", "459.502.4057")
    text = f"This is {name}. Call me back at {one}. If busy, my office line is {two}."
    return [[b.user([text], "str")]]


def _h_card_formats(b: _Builder) -> list[Turn]:
    visa = b.pii("CREDIT_CARD", _group(b.fake.credit_card_number("visa16"), (4, 4, 4, 4), " "))
    master = b.pii(
        "CREDIT_CARD", _group(b.fake.credit_card_number("mastercard"), (4, 4, 4, 4), "-")
    )
    amex = b.pii("CREDIT_CARD", _group(b.fake.credit_card_number("amex"), (4, 6, 5), " "))
    text = (
        f"My Visa {visa} expired, use the Mastercard {master} instead. "
        f"The corporate Amex ({amex}) is only for travel."
    )
    return [[b.user([text], "str")]]


def _h_iban_formats(b: _Builder) -> list[Turn]:
    spaced = b.pii("IBAN_CODE", "DE89 3704 0044 0532 0130 00")
    compact = b.pii("IBAN_CODE", "DE89370400440532013000")
    dutch = b.pii("IBAN_CODE", _iban("NL", "ABNA" + b.digits("#" * 10)))
    text = (
        f"The form shows {spaced} but the bank file has {compact} - are they the same? "
        f"The old account was {dutch}."
    )
    return [[b.user([text], "str")]]


def _h_brackets(b: _Builder) -> list[Turn]:
    one = b.pii("PERSON", "Dana Whitfield")
    one_mail = b.pii("EMAIL_ADDRESS", "dana.whitfield@example.com")
    two = b.pii("PERSON", "Omar Haddad")
    two_mail = b.pii("EMAIL_ADDRESS", "omar.haddad@example.net")
    text = (
        f"Summarise:\nFrom: {one} <{one_mail}>\nCc: {two} ({two_mail})\n"
        "Subject: Q3 numbers\n\nPlease see the attached deck."
    )
    return [[b.user([text], "str")]]


def _h_punctuation(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Kofi Mensah")
    ssn = b.pii("US_SSN", b.fake.ssn())
    phone = b.pii("PHONE_NUMBER", b.fake.phone_number())
    email = b.pii("EMAIL_ADDRESS", "kofi.m@example.org")
    ip = b.pii("IP_ADDRESS", b.fake.ipv4_public())
    text = f'name:{name};ssn:{ssn};tel:{phone};mail:[{email}];last_ip:"{ip}"'
    return [[b.user([f"Parse this record into JSON:\n{text}"], "str")]]


def _h_twice(b: _Builder) -> list[Turn]:
    email = b.pii("EMAIL_ADDRESS", b.fake.email())
    card = b.pii("CREDIT_CARD", b.fake.credit_card_number())
    text = (
        f"My email is {email}. Again: {email}! Not the old one. "
        f"The card is {card}; I repeat, {card}."
    )
    return [[b.user([text], "str")], [b.user([f"Did you update it to {email}?"], "str")]]


def _h_two_people(b: _Builder) -> list[Turn]:
    one = b.pii("PERSON", "Priya Raman")
    two = b.pii("PERSON", "Tomás Becker")
    text = f"Please introduce {one} to {two} at Friday's offsite and book them a shared table."
    return [[b.system("You are Friday, an executive assistant."), b.user([text], "str")]]


def _h_split_parts(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", b.value("name"))
    ssn = b.pii("US_SSN", b.fake.ssn())
    card = b.pii("CREDIT_CARD", b.fake.credit_card_number())
    address = b.pii("STREET_ADDRESS", b.fake.address())
    parts = [f"I'm {name} and my SSN is {ssn}.", f"The card is {card}, billing address\n{address}"]
    return [[b.user(parts, "parts")]]


def _h_env(b: _Builder) -> list[Turn]:
    key = b.pii("SECRET", b.value("openai_key"))
    host = b.tech("db-primary.prod.internal")
    port = b.tech(":5432")
    text = (
        f"My .env:\n```\nOPENAI_API_KEY={key}\nDATABASE_URL=postgres://app@{host}{port}/app\n```\n"
        f"Why does the {b.tech('OpenAI')} SDK say 401?"
    )
    return [[b.user([text], "str")]]


def _h_code_block(b: _Builder) -> list[Turn]:
    key = b.pii("SECRET", b.value("anthropic_key"))
    text = (
        "Why does this hang?\n```python\nimport anthropic\n\n"
        f'client = anthropic.Anthropic(api_key="{key}")\n'
        'msg = client.messages.create(model="claude-x", max_tokens=64, messages=[])\n```\n'
        f"Python {b.tech('3.11.7')}, error at {b.tech('src/app/main.py:42')}."
    )
    return [[b.system("You are a coding assistant."), b.user([text], "part")]]


def _h_pem(b: _Builder) -> list[Turn]:
    pem = b.pii("SECRET", b.value("pem"))
    text = (
        f"Is this key still valid? `openssl rsa -check` on {b.tech('OpenSSL 3.0.13')} "
        f"complains.\n\n{pem}"
    )
    return [[b.user([text], "str")]]


def _h_jwt(b: _Builder) -> list[Turn]:
    token = b.pii("SECRET", b.value("jwt"))
    host = b.tech("api.internal.example")
    text = (
        f'curl -s -H "Authorization: Bearer {token}" https://{host}{b.tech(":8443")}/v1/me\n'
        f"returns {b.tech('HTTP 401')} since {b.tech('2024-03-01T12:00:01Z')}."
    )
    return [[b.user([text], "str")]]


def _h_yaml_secrets(b: _Builder) -> list[Turn]:
    slack = b.pii("SECRET", b.value("slack_token"))
    google = b.pii("SECRET", b.value("google_key"))
    text = (
        "Review our config:\n```yaml\nnotify:\n"
        f'  slack_token: "{slack}"\nmaps:\n  api_key: {google}\n```\n'
        f"It deploys through {b.tech('GitHub Actions')}."
    )
    return [[b.user([text], "str")]]


def _h_git_remote(b: _Builder) -> list[Turn]:
    aws = b.pii("SECRET", b.value("aws_key"))
    github = b.pii("SECRET", b.value("github_token"))
    text = (
        f'terraform.tfvars has aws_access_key_id = "{aws}" and the CI clones '
        f"https://{github}@github.com/acme/api.git - is that a problem for "
        f"{b.tech('Terraform')} {b.tech('v1.29.3')}?"
    )
    return [[b.user([text], "str")]]


def _h_intl_phones(b: _Builder) -> list[Turn]:
    rows = (
        ("Hannah Müller", "+49 30 901820"),
        ("Chloé Martin", "+33 1 23 45 67 89"),
        ("Oliver Smith", "+44 20 7946 0958"),
        ("Arjun Mehta", "+91 98765 43210"),
    )
    lines = [f"- {b.pii('PERSON', n)}: {b.pii('PHONE_NUMBER', p)}" for n, p in rows]
    text = "Contacts for the EU trip:\n" + "\n".join(lines) + "\nMake a table."
    return [[b.user([text], "str")]]


def _h_ip_port(b: _Builder) -> list[Turn]:
    private = b.pii("IP_ADDRESS", "10.0.3.17")
    public = b.pii("IP_ADDRESS", b.fake.ipv4_public())
    text = (
        f"The node {private}{b.tech(':5432')} runs agent {b.tech('4.18.2.1')} and proxies to "
        f"{public}. Is that normal for {b.tech('PostgreSQL')}?"
    )
    return [[b.user([text], "str")]]


def _h_military(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Marcus Lee")
    address = b.pii("STREET_ADDRESS", "PSC 4115, Box 7815\nAPO AE 41903")
    other = b.pii("STREET_ADDRESS", "USNS Lopez\nFPO AP 56091")
    text = f"Ship to SSG {name},\n{address}\nand the spare to\n{other}"
    return [[b.user([text], "str")]]


def _h_will_price(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Will Price")
    phone = b.pii("PHONE_NUMBER", "415-555-0199")
    text = f"{name} will price the renewal at {b.tech('€99.00')} per seat; his mobile is {phone}."
    return [[b.user([text], "str")]]


def _h_austin(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Austin Chase")
    card = b.pii("CREDIT_CARD", b.fake.credit_card_number("visa16"))
    text = f"{name} moved from Austin to Denver and his Chase card {card} keeps getting declined."
    return [[b.user([text], "str")]]


def _h_lowercase(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "mei lin wong")
    email = b.pii("EMAIL_ADDRESS", "meilin.wong@example.hk")
    text = f"cc: {name} <{email}> pls, she owns {b.tech('PR #482')}"
    return [[b.user([text], "str")]]


def _h_agentscope(b: _Builder) -> list[Turn]:
    b.user_name = "user"
    b.agent_name = "Friday"
    name = b.pii("PERSON", "Amara Okafor")
    email = b.pii("EMAIL_ADDRESS", "amara.okafor@example.com")
    phone = b.pii("PHONE_NUMBER", b.fake.phone_number())
    address = b.pii("STREET_ADDRESS", b.fake.address().replace("\n", ", "))
    first = [
        b.system(f"You're Friday, the assistant of {name} ({email})."),
        b.user([f"Friday, order flowers for my mother at {address}."], "str"),
    ]
    calls: list[ToolCall] = [
        (
            "order_flowers",
            {"recipient_address": address, "sender": name, "sender_phone": phone},
            {"order": "FL-20931", "eta": "2024-05-10"},
        )
    ]
    second = [
        b.user([f"Use {phone} as the contact, not {email}."], "str"),
        *b.tools(calls, raw=True),
    ]
    third = [b.user([f"Thanks. Is the card note signed '{name}'?"], "str")]
    return [first, second, third]


def _h_nested_json(b: _Builder) -> list[Turn]:
    one = b.pii("PERSON", "Zoë Kowalczyk")
    two = b.pii("PERSON", "Łukasz Nowak")
    one_mail = b.pii("EMAIL_ADDRESS", "zoe.kowalczyk@example.pl")
    two_phone = b.pii("PHONE_NUMBER", b.digits("+48 22 ### ## ##"))
    two_iban = b.pii("IBAN_CODE", _iban("PL", b.digits("#" * 24)))
    result = {
        "customers": [
            {"name": one, "email": one_mail, "tier": "gold"},
            {"name": two, "phone": two_phone, "iban": two_iban, "tier": "silver"},
        ],
        "next_cursor": None,
    }
    calls: list[ToolCall] = [("list_customers", {"country": "PL", "limit": 2}, result)]
    user = b.user(["Who are our Polish customers?"], "str")
    return [[user, *b.tools(calls, raw=True)]]


def _h_ssn_formats(b: _Builder) -> list[Turn]:
    ssn = b.fake.ssn()
    dashed = b.pii("US_SSN", ssn)
    compact = b.pii("US_SSN", ssn.replace("-", ""))
    text = (
        f"SSN: {dashed} (the payroll export has {compact}). He paid "
        f"{b.tech('$1,234.56')} on {b.tech('2024-03-01 12:00:01,123')} per {b.tech('INC0012345')}."
    )
    return [[b.user([text], "str")]]


def _h_plus_email(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Liam O'Connor-Davies")
    email = b.pii("EMAIL_ADDRESS", "ops+alerts@mail.corp-example.co.uk")
    personal = b.pii("EMAIL_ADDRESS", "liam.oconnor-davies@example.co.uk")
    text = (
        f"Route {b.tech('Grafana')} alerts to {email}, and page {name} "
        f"(<{personal}>) only for {b.tech('HTTP 503')}."
    )
    return [[b.user([text], "str")]]


def _h_typo(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", b.value("name"))
    wrong = b.pii("PHONE_NUMBER", b.fake.phone_number())
    right = b.pii("PHONE_NUMBER", b.fake.phone_number())
    card = b.pii("CREDIT_CARD", b.fake.credit_card_number())
    return [
        [b.user([f"I'm {name}, phone {wrong}, card {card}."], "str")],
        [b.user([f"Sorry, typo - it's {right}, not {wrong}."], "str")],
        [b.user([f"And charge {card} only once please."], "part")],
    ]


def _h_title(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", "Kwame A. Mensah-Bonsu")
    email = b.pii("EMAIL_ADDRESS", "k.mensah-bonsu@example.gh")
    text = f"Dr. {name} (email: {email}) is the referring physician; send him the summary."
    return [[b.system("You are a clinic front-desk assistant."), b.user([text], "str")]]


def _h_sms_ext(b: _Builder) -> list[Turn]:
    name = b.pii("PERSON", b.value("name"))
    ext = b.pii("PHONE_NUMBER", "+1-459-502-4057x123")
    plain = b.pii("PHONE_NUMBER", "001-459-502-4057")
    user = b.user([f"Text {name} at {ext}. The landline {plain} never answers."], "str")
    calls: list[ToolCall] = [
        ("send_sms", {"to": ext, "text": f"Hi {name}, please call us back."}, "queued")
    ]
    return [[user, *b.tools(calls, raw=True)]]


def _h_ip_in_log(b: _Builder) -> list[Turn]:
    ip = b.pii("IP_ADDRESS", b.fake.ipv4_public())
    email = b.pii("EMAIL_ADDRESS", b.fake.email())
    text = (
        f"```\n{b.tech('2024-03-01T12:00:01Z')} WARN auth failed user={email} src={ip} "
        f"code={b.tech('E1234')}\n```\nFrom {b.tech('/var/log/nginx/error.log')} on "
        f"{b.tech('api.internal.example')}. Block the IP?"
    )
    return [[b.user([text], "str")]]


_HARD: tuple[Callable[[_Builder], list[Turn]], ...] = (
    _h_obrien,
    _h_garcia,
    _h_nguyen,
    _h_picard,
    _h_jordan,
    _h_hopper,
    _h_url_emails,
    _h_phone_period,
    _h_card_formats,
    _h_iban_formats,
    _h_brackets,
    _h_punctuation,
    _h_twice,
    _h_two_people,
    _h_split_parts,
    _h_env,
    _h_code_block,
    _h_pem,
    _h_jwt,
    _h_yaml_secrets,
    _h_git_remote,
    _h_intl_phones,
    _h_ip_port,
    _h_military,
    _h_will_price,
    _h_austin,
    _h_lowercase,
    _h_agentscope,
    _h_nested_json,
    _h_ssn_formats,
    _h_plus_email,
    _h_typo,
    _h_title,
    _h_sms_ext,
    _h_ip_in_log,
)


def corpus(seed: int = 7, size: int = 240) -> list[Chat]:
    """The labelled chats; deterministic for a seed.

    About 15% of the chats are hand-written hard cases (all of them from ``size`` 234),
    10% are purely technical, the rest are generated PII chats. About half have
    2-5 turns and 40% are streamed.
    """
    if size < 0:
        raise ValueError("size must be >= 0")
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    n_hard = min(len(_HARD), size * 3 // 20)
    n_tech = min(size - n_hard, size // 10)
    n_general = size - n_hard - n_tech
    built: list[tuple[str, list[Turn], _Builder]] = []
    for make in _HARD[:n_hard]:
        b = _Builder(fake, rng)
        built.append(("hard", make(b), b))
    for k in range(n_tech):
        b = _Builder(fake, rng, pii=False)
        n_turns = rng.randint(2, 5) if k % 2 else 1
        built.append(("tech", _technical(b, n_turns), b))
    for k in range(n_general):
        b = _Builder(fake, rng)
        n_turns = rng.randint(2, 5) if k % 20 < 11 else 1
        built.append(("pii", _general(b, n_turns, with_tech=rng.random() < 0.3), b))
    rng.shuffle(built)
    return [
        b.finish(f"chat-{i:04d}-{label}", turns, stream=i % 5 in (1, 3))
        for i, (label, turns, b) in enumerate(built)
    ]


# -- self-check ----------------------------------------------------------------------------


def texts(chat: Chat) -> list[str]:
    """Every text of a chat: string contents, text parts and tool-call arguments."""
    out: list[str] = []
    for turn in chat.turns:
        for message in turn:
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(
                    part["text"]
                    for part in content
                    if isinstance(part, dict) and part.get("type") == "text"
                )
            for call in message.get("tool_calls") or ():
                out.append(call["function"]["arguments"])
    return out


def _require(condition: bool, message: str) -> None:
    """``assert`` that also holds under ``python -O``."""
    if not condition:
        raise AssertionError(message)


def _check_messages(chat: Chat) -> None:
    """Structural checks of one chat's messages."""
    _require(len(chat.turns) > 0, f"{chat.id}: no turns")
    call_ids: set[str] = set()
    for i, turn in enumerate(chat.turns):
        _require(len(turn) > 0, f"{chat.id}: empty turn {i}")
        _require(turn[-1]["role"] in ("user", "tool"), f"{chat.id}: turn {i} ends badly")
        for j, message in enumerate(turn):
            role = message["role"]
            where = f"{chat.id}: turn {i} message {j}"
            _require(role in ("system", "user", "assistant", "tool"), f"{where}: role {role}")
            _require(role != "system" or (i, j) == (0, 0), f"{where}: misplaced system")
            if "name" in message:
                _require(bool(_NAME_FIELD.match(message["name"])), f"{where}: bad name field")
            for call in message.get("tool_calls") or ():
                call_ids.add(call["id"])
                json.loads(call["function"]["arguments"])
            if role == "tool":
                _require(message["tool_call_id"] in call_ids, f"{where}: unknown tool_call_id")


def check(chats: list[Chat]) -> None:
    """Assert that the labels are exact.

    Every entity value and technical token occurs verbatim in a text of its chat, no
    technical token overlaps an entity value of the same chat, kinds are known, ids are
    unique and the messages are well-formed.
    """
    ids = [chat.id for chat in chats]
    _require(len(ids) == len(set(ids)), "duplicate chat ids")
    for chat in chats:
        _check_messages(chat)
        found = texts(chat)
        _require(len(set(chat.entities)) == len(chat.entities), f"{chat.id}: duplicate entity")
        _require(len(set(chat.technical)) == len(chat.technical), f"{chat.id}: duplicate token")
        for entity in chat.entities:
            _require(entity.kind in KINDS, f"{chat.id}: unknown kind {entity.kind}")
            _require(bool(entity.value), f"{chat.id}: empty entity")
            _require(
                any(entity.value in text for text in found),
                f"{chat.id}: {entity.kind} {entity.value!r} not in the texts",
            )
        for token in chat.technical:
            _require(
                any(token in text for text in found),
                f"{chat.id}: technical {token!r} not in the texts",
            )
            for entity in chat.entities:
                _require(
                    token not in entity.value and entity.value not in token,
                    f"{chat.id}: technical {token!r} overlaps {entity.value!r}",
                )


def summary(chats: list[Chat]) -> dict[str, int]:
    """Counts describing the mix of a corpus."""
    kinds = Counter(e.kind for chat in chats for e in chat.entities)
    messages = [m for chat in chats for turn in chat.turns for m in turn]
    return {
        "chats": len(chats),
        "entities": sum(kinds.values()),
        "technical": sum(len(chat.technical) for chat in chats),
        **{f"kind:{kind}": kinds[kind] for kind in KINDS},
        "multi_turn": sum(len(chat.turns) > 1 for chat in chats),
        "stream": sum(chat.stream for chat in chats),
        "with_technical": sum(bool(chat.technical) for chat in chats),
        "no_pii": sum(not chat.entities for chat in chats),
        "hard": sum(chat.id.endswith("-hard") for chat in chats),
        "tool_calls": sum(len(m.get("tool_calls") or ()) for m in messages),
        "content_parts": sum(isinstance(m.get("content"), list) for m in messages),
        "named_messages": sum("name" in m for m in messages),
        "system_prompts": sum(m["role"] == "system" for m in messages),
    }


def main() -> None:
    """Print the summary of ``corpus(seed, size)`` (arguments: ``[SEED [SIZE]]``)."""
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 240
    chats = corpus(seed, size)
    check(chats)
    for key, count in summary(chats).items():
        print(f"{key:>22} {count}")


if __name__ == "__main__":
    main()
