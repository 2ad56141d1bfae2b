"""Where a tool call's sensitive argument got its value: an untrusted source, or not.

A :class:`Rule` names a *sink* — a tool (glob) and its arguments (a glob over the
argument names; every text in a matched argument, lists and objects included, is
checked) — the action it takes, and ``allow_from``: the sources that may supply a value
(``prompt``: trusted text; ``tool.field.path`` globs: untrusted fields admitted).

:func:`origin` finds the untrusted source a value came from: one whose recorded forms
(:mod:`.evidence`) hold the value's exact canonical form, or a substring of at least
``min_length`` compact characters of it — unless an admitted source holds the same
(the value itself, or those characters). :func:`check_call` applies the rules to one
call and returns a :class:`Finding`: which source, which sink, which rule and action —
never the value. Pure.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hookgate.provenance import normalize
from hookgate.provenance.evidence import TRUSTED, Evidence, digest, exact

Action = Literal["deny", "approval", "audit"]

MIN_EXACT = 3
"""Shorter canonical forms are never matched (a digit, ``ok``)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One sink and what it admits (see the module docstring)."""

    name: str
    tool: str
    argument: str = "*"
    action: Action = "deny"
    allow_from: tuple[str, ...] = (TRUSTED,)
    min_length: int = 8

    def admits(self, source: str) -> bool:
        """Whether ``source`` (``prompt`` or a field path) may supply this sink's values
        (a path's ``[]``, a list's items, is literal in its glob, not a character set)."""
        return _matches(source, [glob.replace("[]", "[[]]") for glob in self.allow_from])


@dataclass(frozen=True, slots=True)
class Finding:
    """A sink argument whose value came from an untrusted source. Names only: no value."""

    source: str
    """The field path the value was found in (``read_file.content``)."""
    sink: str
    """``tool.argument`` of the call."""
    rule: str
    action: Action

    @property
    def source_tool(self) -> str:
        """The tool whose result held the value."""
        return self.source.split(".", 1)[0].split("[", 1)[0]


def check_call(
    tool: str, arguments: Mapping[str, Any], evidence: Evidence, rules: Sequence[Rule]
) -> Finding | None:
    """The first finding of the first rule (in order) that one of the call's sink
    arguments breaks; None when every sink value has an admitted or no untrusted source."""
    for rule in rules:
        if not _matches(tool, (rule.tool,)):
            continue
        for argument, value in arguments.items():
            if not _matches(str(argument), (rule.argument,)):
                continue
            for text in _texts(value):
                source = origin(text, evidence, rule)
                if source is not None:
                    return Finding(source, f"{tool}.{argument}", rule.name, rule.action)
    return None


def origin(value: str, evidence: Evidence, rule: Rule) -> str | None:
    """The untrusted source path ``value`` came from that ``rule`` does not admit, or
    None (see the module docstring)."""
    forms = [f for f in normalize.canonical(evidence.resolved(value)) if len(f) >= MIN_EXACT]
    if not forms:
        return None
    exacts = {exact(f) for f in forms}
    cleared: set[int] = set(evidence.trusted()) if rule.admits(TRUSTED) else set()
    untrusted: list[tuple[str, frozenset[int]]] = []
    for path, found in evidence.sources():
        if rule.admits(path):
            cleared |= found
        else:
            untrusted.append((path, found))
    if exacts & cleared:
        return None  # the value itself is admitted
    length = evidence.gram_length
    long = [[digest(g) for g in normalize.gram_list(f, length)] for f in forms]
    for path, found in untrusted:
        if exacts & found:
            return path
        needed = 1 if evidence.sparse(path) else max(rule.min_length, length) - length + 1
        for grams in long:
            if _run(grams, found, cleared) >= needed:
                return path
    return None


def _run(grams: list[int], found: frozenset[int], cleared: set[int]) -> int:
    """The most consecutive grams of a value found in a source and not cleared."""
    best = run = 0
    for gram in grams:
        run = run + 1 if gram in found and gram not in cleared else 0
        best = max(best, run)
    return best


def _texts(value: Any) -> Iterator[str]:
    """Every text of an argument's value (strings and integers, in lists and objects)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, int) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)


def _matches(name: str, globs: Sequence[str]) -> bool:
    folded = name.casefold()
    return any(fnmatch.fnmatchcase(folded, glob.casefold()) for glob in globs)
