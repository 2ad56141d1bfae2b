"""Secure by default: a listener on the network never serves anonymous callers unasked. Pure.

A sidecar on loopback may let every caller in as ``anonymous`` (only processes on the
same host reach it). A listener on any other address spends the provider's key for
whoever can reach the host, so ``hookgate serve`` refuses to start one unless callers
must authenticate (``keys.required``, ``keys.static`` or ``keys.jwt``) or its owner wrote
``server.allow_anonymous: true``. A config reload is held to the same rule.
"""

from __future__ import annotations

import ipaddress

from hookgate.config.schema import Config
from hookgate.server.static_keys import is_set


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address. A host name other than ``localhost`` is
    not (it may resolve anywhere); nor are ``0.0.0.0``, ``::`` or ``""`` (every
    interface)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def anonymous_allowed(config: Config) -> bool:
    """Whether a caller without any key is served."""
    keys = config.keys
    return not keys.required and keys.jwt is None and not any(map(is_set, keys.static))


def refusal(config: Config, host: str) -> str | None:
    """Why a listener on ``host`` must not start with ``config``, or None when it may."""
    if is_loopback(host) or not anonymous_allowed(config) or config.server.allow_anonymous:
        return None
    return (
        f"refusing to listen on {host}: anonymous callers would spend the providers' keys "
        "from the network. Choose one: require virtual keys (keys.required: true, then "
        "`hookgate keys create`); or set a shared client key (keys.static: "
        '["${HOOKGATE_CLIENT_KEY}"], at least 16 characters, which callers send as their '
        "API key); or, if something in front of hookgate authenticates callers, set "
        "server.allow_anonymous: true. Listening on 127.0.0.1 needs none of these."
    )


def warning(config: Config, host: str) -> str | None:
    """The warning a listener on ``host`` carries with ``config`` (anonymous callers served
    from the network because ``server.allow_anonymous`` says so), or None."""
    if is_loopback(host) or not anonymous_allowed(config):
        return None
    return (
        f"anonymous callers are served on {host} (server.allow_anonymous: true): anyone "
        "who reaches this address spends the providers' keys"
    )
