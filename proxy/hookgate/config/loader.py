"""Read a YAML config into a validated :class:`Config` plus built policies.

Every problem is reported as ``file:line: yaml.path: message``, all of them at once:
YAML syntax, duplicate keys, unset ``${ENV}`` references, schema violations, unknown
providers and policies, and each policy's own settings.

``${NAME}`` in any string is replaced by the environment variable ``NAME`` (an error if
unset); ``${NAME:-default}`` falls back to ``default``. Secrets belong in the
environment, never inline.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import ValidationError

from hookgate.config import policy_sets
from hookgate.config.policy_sets import DEFAULT
from hookgate.config.schema import PROVIDER_TYPES, Config, EchoProviderConfig, provider_types_with
from hookgate.pipeline import hooks, registry
from hookgate.pipeline.hooks import Policy

Loc = tuple[str | int, ...]

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class Problem:
    """One config problem at a YAML path."""

    loc: Loc
    message: str


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A validated config and the policies built from it, in YAML order."""

    config: Config
    policies: tuple[Policy, ...]
    """The ``default`` set's policies (the top-level ``policies``)."""
    source: str
    """The file it was read from ("<string>" when loaded from text)."""
    lines: Mapping[Loc, int] = field(default_factory=dict)
    """The line of each YAML path of the file."""
    sets: Mapping[str, tuple[Policy, ...]] = field(default_factory=dict)
    """Every policy set's policies, ``default`` included (see
    :mod:`hookgate.config.policy_sets`). Sets share one instance of a policy they list
    with the same settings."""

    @property
    def all_policies(self) -> tuple[Policy, ...]:
        """Every distinct policy instance of every set, each once."""
        return tuple({id(p): p for ps in self.sets.values() for p in ps}.values())

    def problem(self, loc: Loc, message: str) -> str:
        """A problem found after loading, as ``file:line: path: message``."""
        return f"{self.source}:{_line_of(loc, self.lines)}: {format_loc(loc)}: {message}"


class ConfigError(Exception):
    """The config is invalid; :attr:`lines` are ready to print, one per problem."""

    def __init__(self, source: str, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.source = source
        self.lines = lines


def format_loc(loc: Loc) -> str:
    """``("models", "gpt-4o", 0, "provider")`` → ``models.gpt-4o[0].provider``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if re.fullmatch(r"[\w\-]+", part) else f'"{part}"'
            out += f".{text}" if out else text
    return out or "(top level)"


def load_file(path: str | os.PathLike[str]) -> LoadedConfig:
    """Load and validate a config file. Raises :class:`ConfigError`."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, [f"{source}: cannot read: {exc}"]) from None
    return load_text(text, source)


def load_text(text: str, source: str = "<string>") -> LoadedConfig:
    """Load and validate config text. Raises :class:`ConfigError`."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, [f"{source}:{line}: (yaml): {problem}"]) from None
    if node is None:
        raise ConfigError(source, [f"{source}:1: (top level): the file is empty"])

    lines: dict[Loc, int] = {}
    problems: list[Problem] = []
    _index(node, (), lines, problems)
    data = yaml.SafeLoader(text).construct_document(node)
    if not isinstance(data, dict):
        problems.append(Problem((), "the file must be a mapping of sections"))
        raise _error(source, problems, lines)
    data = _substitute_env(data, (), problems)

    loaded: LoadedConfig | None = None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems.extend(_problem(e) for e in exc.errors())
    else:
        problems.extend(_check_references(config))
        sets = _build_sets(config, problems)
        loaded = LoadedConfig(config, sets.get(DEFAULT, ()), source, lines, sets)
    if problems or loaded is None:
        raise _error(source, problems, lines)
    return loaded


def _problem(error: Mapping[str, Any]) -> Problem:
    """A validation error as a problem at the YAML path. A provider's settings are one
    model per ``type`` (a union on it): pydantic's path names the type, the YAML's does
    not, and a setting of another type is said to be one."""
    loc: Loc = tuple(error["loc"])
    if len(loc) > 2 and loc[0] == "providers" and loc[2] in PROVIDER_TYPES:
        kind, loc = loc[2], (*loc[:2], *loc[3:])
        owners = provider_types_with(str(loc[2])) if len(loc) == 3 else ()
        if error.get("type") == "extra_forbidden" and owners:
            return Problem(loc, f"a setting of type {' and '.join(owners)}, not {kind}")
    return Problem(loc, _message(error))


def _message(error: Mapping[str, Any]) -> str:
    msg = str(error["msg"])
    if error.get("type") == "extra_forbidden":
        return "unknown key"
    return msg.removeprefix("Value error, ")


def _error(source: str, problems: list[Problem], lines: dict[Loc, int]) -> ConfigError:
    """Render problems; only the first one per path (an unset ``${ENV}`` explains the
    empty value a later check would complain about)."""
    first: dict[Loc, Problem] = {}
    for problem in problems:
        first.setdefault(problem.loc, problem)
    rendered = [
        f"{source}:{_line_of(p.loc, lines)}: {format_loc(p.loc)}: {p.message}"
        for p in first.values()
    ]
    return ConfigError(source, rendered)


def _line_of(loc: Loc, lines: Mapping[Loc, int]) -> int:
    for end in range(len(loc), -1, -1):
        line = lines.get(loc[:end])
        if line is not None:
            return line
    return 1


def _index(node: yaml.Node, loc: Loc, lines: dict[Loc, int], problems: list[Problem]) -> None:
    """Record the line of every YAML path; report duplicate mapping keys."""
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = (*loc, key)
            if key in seen:
                lines[child] = key_node.start_mark.line + 1
                problems.append(Problem(child, "duplicate key"))
                continue
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            _index(value_node, child, lines, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, (*loc, i), lines, problems)


def _substitute_env(value: Any, loc: Loc, problems: list[Problem]) -> Any:
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: _env_value(m, loc, problems), value)
    if isinstance(value, dict):
        return {k: _substitute_env(v, (*loc, str(k)), problems) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute_env(v, (*loc, i), problems) for i, v in enumerate(value)]
    return value


def _env_value(match: re.Match[str], loc: Loc, problems: list[Problem]) -> str:
    name, default = match.group(1), match.group(2)
    value = os.environ.get(name)
    if value is not None:
        return value
    if default is not None:
        return default
    problems.append(
        Problem(loc, f"environment variable {name} is not set (use ${{{name}:-}} to allow that)")
    )
    return ""


def _check_references(config: Config) -> list[Problem]:
    problems: list[Problem] = []
    known = ", ".join(sorted(config.providers))
    for alias, targets in config.models.items():
        for i, target in enumerate(targets):
            if target.provider not in config.providers:
                problems.append(
                    Problem(
                        ("models", alias, i, "provider"),
                        f"unknown provider {target.provider!r} (known: {known})",
                    )
                )
    relay = config.server.relay_provider
    if relay is not None and relay not in config.providers:
        problems.append(
            Problem(("server", "relay_provider"), f"unknown provider {relay!r} (known: {known})")
        )
    for name, provider in config.providers.items():
        if isinstance(provider, EchoProviderConfig):
            continue
        if provider.key_missing and provider.missing_key == "error":
            problems.append(
                Problem(
                    ("providers", name, "api_key"),
                    "api_key is empty (set it, or set missing_key: echo to answer with the "
                    "built-in echo provider meanwhile)",
                )
            )
    return problems


def _build_sets(config: Config, problems: list[Problem]) -> dict[str, tuple[Policy, ...]]:
    """Each resolved set's policies, checked (:func:`~hookgate.pipeline.hooks.check`).

    One instance per distinct ``(slot, name, settings)``: sets that list a policy alike
    share it, and a second policy of a name in a list is its own instance, with its own
    state. The same name and settings twice in one list is a problem: it would run twice.
    """
    resolved, set_problems = policy_sets.resolve(config)
    problems.extend(Problem(p.loc, p.message) for p in set_problems)
    built: dict[bytes, Policy | None] = {}
    sets: dict[str, tuple[Policy, ...]] = {}
    for name, entries in resolved.items():
        policies: list[Policy] = []
        listed: set[bytes] = set()
        slots = hooks.slots_of([entry.name for entry in entries])
        for entry, slot in zip(entries, slots, strict=True):
            settings = orjson.dumps([entry.name, entry.settings], option=orjson.OPT_SORT_KEYS)
            if settings in listed:
                problems.append(
                    Problem(entry.loc, f"{entry.name!r} is listed twice with the same settings")
                )
                continue
            listed.add(settings)
            identity = slot.encode() + b" " + settings
            if identity not in built:
                built[identity] = _build(entry, problems)
            policy = built[identity]
            if policy is not None:
                policies.append(policy)
        hooks.check(policies)  # each was checked when built; this gives them their slots
        sets[name] = tuple(policies)
    return sets


def _build(entry: policy_sets.Entry, problems: list[Problem]) -> Policy | None:
    try:
        return registry.build(entry.name, entry.settings)
    except registry.UnknownPolicy as exc:
        problems.append(Problem(entry.loc, str(exc)))
    except registry.PolicySettingsError as exc:
        problems.extend(Problem((*entry.loc, *e["loc"]), _message(e)) for e in exc.errors)
    except hooks.PolicyDefinitionError as exc:
        problems.extend(Problem(entry.loc, what) for _, what in exc.problems)
    except Exception as exc:  # valid settings, yet the policy could not start
        reason = f"{type(exc).__name__}: {exc}"
        problems.append(Problem(entry.loc, f"the policy could not start: {reason}"))
    return None
