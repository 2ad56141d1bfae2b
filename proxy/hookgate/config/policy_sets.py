"""Policy sets: named pipelines, one chosen per request. Pure.

YAML::

    policies:                          # the "default" set
      - tracing: {}
      - pii: {action: pseudonymize}
      - fallback: {retries: 1}
    policy_sets:
      payments:
        extends: default
        match: {teams: [payments]}
        policies:
          - pii: {action: block}       # overrides the inherited pii's settings
          - budget: {limits: [{scope: team, window: day, usd: 50}]}
            before: fallback           # added, placed before fallback
      interns:
        extends: payments
        match: {users: ["intern-*"]}
        remove: [tracing]

**Resolution** (:func:`resolve`). A set without ``extends`` is its own list, like the
top-level ``policies``. A set that extends another starts from that set's resolved list:
an entry whose policy the parent lists overrides that policy's settings, merged key by
key (a mapping into a mapping; anything else, lists included, replaced) and keeps its
place; any other entry is added at the end, or ``before``/``after`` the policy it names;
``remove`` drops inherited policies. A name the parent lists twice cannot be overridden,
removed or placed against (which one?); an unknown ``extends``, a cycle, and a
``remove``/``before``/``after`` naming nothing are errors.

**Selection** (:class:`Selector`), for each request: the set assigned to the caller's
key, else the one assigned to its team (both by the admin API, see
:mod:`hookgate.server.admin`), else the first set in YAML order whose ``match`` matches
the request, else ``default``. A match matches when every field it gives matches: the
key id, team, user, the model alias the client named, its ``x-hookgate-agent`` and the
route's API, each against that field's globs (shell-style, case-sensitive; a request
without a team, say, matches no ``teams``).

**Lint** (:func:`lint`), for ``hookgate check``: a set that an earlier set's match
always takes first is unreachable by match; two sets that one request could both match
overlap (the first listed wins). Both are warnings: an unreachable set may still be
chosen by assignment.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hookgate.config.schema import PLACEMENT_KEYS, Config, MatchConfig, PolicySetConfig

DEFAULT = "default"
"""The set of the top-level ``policies``."""

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Entry:
    """One policy of a resolved set: its name, settings, and the YAML path that last set
    them (where a problem with them is reported)."""

    name: str
    settings: dict[str, Any]
    loc: Loc


FIELDS = ("keys", "teams", "users", "models", "agents", "routes")


@dataclass(frozen=True, slots=True)
class SetProblem:
    """A policy set that cannot be resolved, at a YAML path."""

    loc: Loc
    message: str


def resolve(config: Config) -> tuple[dict[str, list[Entry]], list[SetProblem]]:
    """Every set's policies, in pipeline order (``default`` first), and the problems of
    the sets that could not be resolved (those are left out)."""
    default = [_entry(e, ("policies", i)) for i, e in enumerate(config.policies)]
    resolved: dict[str, list[Entry]] = {DEFAULT: default}
    problems: list[SetProblem] = []
    for name in config.policy_sets:
        _resolve(name, config.policy_sets, resolved, problems, ())
    return resolved, problems


def _entry(entry: Mapping[str, Any], loc: Loc) -> Entry:
    ((name, settings),) = ((k, v) for k, v in entry.items() if k not in PLACEMENT_KEYS)
    return Entry(name, dict(settings or {}), (*loc, name))


def _resolve(
    name: str,
    sets: Mapping[str, PolicySetConfig],
    resolved: dict[str, list[Entry]],
    problems: list[SetProblem],
    chain: tuple[str, ...],
) -> list[Entry] | None:
    if name in resolved:
        return resolved[name]
    loc: Loc = ("policy_sets", name)
    if name in chain:
        cycle = " → ".join((*chain[chain.index(name) :], name))
        problems.append(SetProblem((*loc, "extends"), f"extends makes a cycle: {cycle}"))
        return None
    spec = sets[name]
    parent: list[Entry] = []
    if spec.extends is not None:
        if spec.extends != DEFAULT and spec.extends not in sets:
            known = ", ".join([DEFAULT, *sets])
            problems.append(
                SetProblem((*loc, "extends"), f"unknown set {spec.extends!r} (known: {known})")
            )
            return None
        found = _resolve(spec.extends, sets, resolved, problems, (*chain, name))
        if found is None:
            return None
        parent = found
    entries = _derived(parent, spec, loc, problems)
    if entries is not None:
        resolved[name] = entries
    return entries


def _derived(
    parent: list[Entry], spec: PolicySetConfig, loc: Loc, problems: list[SetProblem]
) -> list[Entry] | None:
    """``spec``'s entries applied to ``parent``'s (see the module docstring)."""
    out = list(parent)
    before = len(problems)

    def index_of(policy: str, where: Loc) -> int | None:
        places = [i for i, e in enumerate(out) if e.name == policy]
        if len(places) == 1:
            return places[0]
        why = "is not in the set it extends" if not places else "is listed more than once there"
        problems.append(SetProblem(where, f"{policy!r} {why}"))
        return None

    for i, raw in enumerate(spec.policies):
        where: Loc = (*loc, "policies", i)
        entry = _entry(raw, where)
        placed = next((k for k in PLACEMENT_KEYS if k in raw), None)
        if any(e.name == entry.name for e in parent):
            if placed is not None:
                problems.append(
                    SetProblem(
                        (*where, placed),
                        f"{entry.name!r} is inherited: name it without {placed} to override "
                        "its settings in place",
                    )
                )
            elif (at := index_of(entry.name, where)) is not None:
                settings = merged(out[at].settings, entry.settings)
                out[at] = Entry(entry.name, settings, entry.loc)
        elif placed is None:
            out.append(entry)
        elif (at := index_of(str(raw[placed]), (*where, placed))) is not None:
            out.insert(at if placed == "before" else at + 1, entry)
    for i, policy in enumerate(spec.remove):
        at = index_of(policy, (*loc, "remove", i))
        if at is not None:
            del out[at]
    return out if len(problems) == before else None


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` laid over ``base``: mappings merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


# -- selection -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What a policy set may be matched on (None: the request has no such value)."""

    key: str | None = None
    team: str | None = None
    user: str | None = None
    model: str | None = None
    agent: str | None = None
    route: str | None = None

    def value(self, field: str) -> str | None:
        """The request's value for a :class:`MatchConfig` field (``teams`` → team)."""
        value: str | None = getattr(self, field.removesuffix("s"))
        return value


def matches(match: MatchConfig, facts: RequestFacts) -> bool:
    """Whether every field ``match`` gives matches ``facts``."""
    for field in FIELDS:
        globs: list[str] = getattr(match, field)
        if not globs:
            continue
        value = facts.value(field)
        if value is None or not any(fnmatch.fnmatchcase(value, g) for g in globs):
            return False
    return True


@dataclass(frozen=True, slots=True)
class Selection:
    """The set chosen for a request, and why (for ``hookgate explain`` and the audit)."""

    name: str
    reason: str


class Selector:
    """Chooses a request's policy set (see the module docstring)."""

    def __init__(self, sets: Mapping[str, PolicySetConfig], known: Iterable[str]) -> None:
        self._matched = [(n, s.match) for n, s in sets.items() if s.match is not None]
        self.known = frozenset(known)
        """The sets that resolved; an assignment to another one is ignored."""

    def select(
        self, facts: RequestFacts, *, key_set: str | None = None, team_set: str | None = None
    ) -> Selection:
        """The set for a request; ``key_set``/``team_set`` are the sets the admin API
        assigned to its key and team, if any."""
        if key_set is not None and key_set in self.known:
            return Selection(key_set, f"assigned to key {facts.key}")
        if team_set is not None and team_set in self.known:
            return Selection(team_set, f"assigned to team {facts.team}")
        for name, match in self._matched:
            if name in self.known and matches(match, facts):
                return Selection(name, "matched " + describe(match))
        return Selection(DEFAULT, "no set matched")


def describe(match: MatchConfig) -> str:
    """``teams=payments, models=gpt-4o*`` for a match."""
    return ", ".join(
        f"{field}={'|'.join(getattr(match, field))}" for field in FIELDS if getattr(match, field)
    )


# -- lint ------------------------------------------------------------------------------


def lint(sets: Mapping[str, PolicySetConfig]) -> list[SetProblem]:
    """Unreachable and overlapping sets (warnings; see the module docstring)."""
    found: list[SetProblem] = []
    listed = [(n, s.match) for n, s in sets.items() if s.match is not None]
    for j, (name, match) in enumerate(listed):
        loc: Loc = ("policy_sets", name, "match")
        shadow = next((a for a, earlier in listed[:j] if _covers(earlier, match)), None)
        if shadow is not None:
            found.append(
                SetProblem(
                    loc,
                    f"unreachable by match: every request it matches is taken by {shadow!r}, "
                    "listed before it (only keys or teams assigned to it get it)",
                )
            )
            continue
        found += [
            SetProblem(
                loc,
                f"overlaps {other!r} (a request with {_overlap(earlier, match)} matches "
                f"both; {other!r}, listed first, wins)",
            )
            for other, earlier in listed[:j]
            if _overlap(earlier, match) is not None
        ]
    return found


def _covers(wide: MatchConfig, narrow: MatchConfig) -> bool:
    """Whether every request ``narrow`` matches, ``wide`` matches too (on the patterns
    as written: each of ``narrow``'s values for a field ``wide`` limits is one of
    ``wide``'s globs' matches)."""
    for field in FIELDS:
        globs: list[str] = getattr(wide, field)
        if not globs:
            continue
        values: list[str] = getattr(narrow, field)
        if not values or not all(any(_within(v, g) for g in globs) for v in values):
            return False
    return True


def _literal(pattern: str) -> bool:
    return not any(c in pattern for c in "*?[")


def _within(pattern: str, glob: str) -> bool:
    """Whether every name ``pattern`` matches, ``glob`` matches too: a name matching it,
    an identical pattern, or ``*`` (two other globs are not compared: no claim is made)."""
    if glob == "*" or pattern == glob:
        return True
    return _literal(pattern) and fnmatch.fnmatchcase(pattern, glob)


def _overlap(a: MatchConfig, b: MatchConfig) -> str | None:
    """A description of requests both match, or None when they cannot share one (on the
    patterns as written)."""
    shared: list[str] = []
    for field in FIELDS:
        left: Sequence[str] = getattr(a, field)
        right: Sequence[str] = getattr(b, field)
        if left and right:
            common = [v for v in right if _meets(v, left)] or [v for v in left if _meets(v, right)]
            if not common:
                return None
            shared.append(f"{field.removesuffix('s')} {common[0]}")
        elif left or right:
            value = (left or right)[0]
            shared.append(f"{field.removesuffix('s')} {value}")
    return ", ".join(shared)


def _meets(pattern: str, others: Sequence[str]) -> bool:
    return any(_may_share(pattern, other) for other in others)


def _may_share(a: str, b: str) -> bool:
    """Whether some name may match both patterns: a name matching the other pattern, or
    two globs (assumed to, as a warning errs on that side)."""
    if _literal(a):
        return fnmatch.fnmatchcase(a, b)
    if _literal(b):
        return fnmatch.fnmatchcase(b, a)
    return True
