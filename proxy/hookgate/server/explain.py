"""Which policy set a request would get, and why: ``hookgate explain`` and the admin UI's
Policy sets page read it here, so both say the same thing."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hookgate.config.policy_sets import RequestFacts, Selection, Selector
from hookgate.config.schema import Config
from hookgate.errors import NotFound
from hookgate.pipeline.hooks import Policy
from hookgate.pipeline.types import Identity
from hookgate.server.auth import Caller
from hookgate.store.base import Store
from hookgate.store.grants import NO_GRANTS

SECRET_NAME = re.compile(r"(?i)(authorization|token|secret|password|passwd|api[-_]?key|cookie)")
"""A setting named like a credential: its value is never shown."""
HIDDEN = "**********"


def shown_settings(value: Any, name: str = "") -> Any:
    """Settings as they may be shown (JSON mode has masked ``SecretStr`` already): the
    value of any key named like a credential (a tracing exporter's ``authorization``
    header, a ``secret``) masked, at any depth."""
    if name and SECRET_NAME.search(name) and value not in (None, "", [], {}):
        return HIDDEN
    if isinstance(value, dict):
        return {k: shown_settings(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [shown_settings(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class PolicyLine:
    """One policy of the chosen set, in pipeline order."""

    name: str
    runs_in: str
    """``proxy``, ``sdk`` or ``proxy+sdk``."""
    settings: dict[str, Any]
    """Its settings that differ from the defaults."""


@dataclass(frozen=True, slots=True)
class Explanation:
    """What a request would get: refused (:attr:`refusal`), or a set and its policies."""

    refusal: str | None = None
    chosen: Selection | None = None
    policies: list[PolicyLine] = field(default_factory=list)
    granted: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What the admin API granted the key and the team, by ``key``/``team``."""
    warnings: list[str] = field(default_factory=list)


async def explain(
    config: Config, sets: Mapping[str, tuple[Policy, ...]], store: Store, *,
    key: str | None = None, team: str | None = None, user: str | None = None,
    model: str | None = None, agent: str | None = None, route: str = "chat.completions",
) -> Explanation:  # fmt: skip
    """The policy set (and policies) a request with these facts would get; a key's team
    and user are read from the store when not given (404 for a key there is none of)."""
    key_grants = team_grants = NO_GRANTS
    record = None
    if key:
        record = next((r for r in await store.keys() if r.id == key), None)
        if record is None:
            raise NotFound(f"no key with id {key!r}", code="key_not_found")
        team, user = team or record.team, user or record.user
        key_grants = await store.grants("key", key) or NO_GRANTS
    if team:
        team_grants = await store.grants("team", team) or NO_GRANTS
    caller = Caller(Identity(team=team, user=user), record, key_grants, team_grants)
    if model and not caller.allows(model):
        return Explanation(
            refusal=f"{model!r} is not among the models the key or team may use "
            "(403 model_not_allowed)"
        )
    facts = RequestFacts(key=key, team=team, user=user, model=model, agent=agent, route=route)
    chosen = Selector(config.policy_sets, sets).select(
        facts, key_set=key_grants.policy_set, team_set=team_grants.policy_set
    )
    lines = [
        PolicyLine(
            p.name,
            "+".join(sorted(p.runs_in)),
            shown_settings(p.config.model_dump(mode="json", exclude_defaults=True)),
        )
        for p in sets[chosen.name]
    ]
    granted = {
        kind: grants.model_dump(exclude_none=True)
        for kind, grants in (("key", key_grants), ("team", team_grants))
        if grants != NO_GRANTS
    }
    warnings = []
    if (key_grants.budgets or team_grants.budgets) and not any(
        p.name == "budget" for p in sets[chosen.name]
    ):
        warnings.append(
            f"budgets are granted, but set {chosen.name!r} has no budget policy to enforce them"
        )
    return Explanation(None, chosen, lines, granted, warnings)
