"""The technical tokens of the independent set: text a redactor must leave alone.

Product names and versions, error codes, ticket ids, paths, hostnames, commit hashes, status
words, plans, cloud regions, namespaces, routes, environment variables, account ids, amounts,
timestamps, UUIDs, job and pod names. Words come from ``technical.json``; hashes, ids and
times are generated from the chat's :class:`random.Random`.
"""

from __future__ import annotations

import random
import re
import string
import uuid
from collections.abc import Callable
from typing import Any

from evals.pii.independent.data import load

_HEX = "0123456789abcdef"
_ALNUM = string.ascii_lowercase + string.digits


def _vocabulary(key: str) -> Any:
    return load("technical")[key]


def _hex(r: random.Random, n: int) -> str:
    return "".join(r.choice(_HEX) for _ in range(n))


def _shape(r: random.Random, shape: str) -> str:
    """``#`` a digit, ``{alnum:N}`` N lower-case letters or digits."""
    shape = re.sub(
        r"\{alnum:(\d+)\}", lambda m: "".join(r.choice(_ALNUM) for _ in range(int(m[1]))), shape
    )
    return "".join(str(r.randint(0, 9)) if ch == "#" else ch for ch in shape)


def product(r: random.Random) -> str:
    return str(r.choice(sorted(_vocabulary("products"))))


def version(r: random.Random, of: str) -> str:
    """A release of the product ``of``."""
    return str(r.choice(_vocabulary("products")[of]))


def ticket(r: random.Random) -> str:
    return _shape(r, r.choice(_vocabulary("ticket_shapes")))


def host(r: random.Random) -> str:
    return str(
        r.choice(_vocabulary("host_shapes")).format(
            svc=r.choice(_vocabulary("host_services")),
            env=r.choice(_vocabulary("envs")),
            ns=r.choice(_vocabulary("namespaces")),
            i=r.randint(1, 9),
        )
    )


def timestamp(r: random.Random) -> str:
    day = f"{r.choice((2023, 2024, 2025))}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
    clock = f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}"
    if r.random() < 0.5:
        return f"{day}T{clock}:{r.randint(0, 59):02d}Z"
    return f"{day} {clock} UTC"


def amount(r: random.Random) -> str:
    sign = r.choice(_vocabulary("amounts"))
    return f"{sign}{r.randint(12, 48000):,}.{r.randint(0, 99):02d}"


def pod(r: random.Random) -> str:
    deploy = r.choice(_vocabulary("host_services"))
    return f"{deploy}-{_hex(r, 9)}-{''.join(r.choice(_ALNUM) for _ in range(5))}"


_MAKERS: dict[str, Callable[[random.Random], str]] = {
    "product": product,
    "error": lambda r: str(r.choice(_vocabulary("errors"))),
    "ticket": ticket,
    "path": lambda r: str(r.choice(_vocabulary("paths"))),
    "host": host,
    "commit": lambda r: _hex(r, 7),
    "sha": lambda r: _hex(r, 40),
    "status": lambda r: str(r.choice(_vocabulary("statuses"))),
    "plan": lambda r: str(r.choice(_vocabulary("plans"))),
    "region": lambda r: str(r.choice(_vocabulary("regions"))),
    "namespace": lambda r: str(r.choice(_vocabulary("namespaces"))),
    "route": lambda r: str(r.choice(_vocabulary("routes"))),
    "env_var": lambda r: str(r.choice(_vocabulary("env_vars"))),
    "account": lambda r: _shape(r, r.choice(_vocabulary("account_shapes"))),
    "amount": amount,
    "ts": timestamp,
    "uuid": lambda r: str(uuid.UUID(int=r.getrandbits(128), version=4)),
    "job": lambda r: f"job-{_hex(r, 8)}",
    "pod": pod,
}
"""The makers of technical tokens by slot name (``version`` depends on the product)."""

SLOTS = frozenset({*_MAKERS, "version"})
"""Every technical slot a template may use."""


def make(r: random.Random, slot: str) -> str:
    """A fresh token for ``slot`` (not ``version``: see :func:`version`)."""
    return _MAKERS[slot](r)
