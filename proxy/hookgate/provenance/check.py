"""Where a tool call's sensitive argument got its value: an untrusted source, or not.

A :class:`Rule` names a *sink* — a tool (glob) and its arguments (a glob over the
argument names; every text in a matched argument, lists and objects included, is
checked) — the action it takes, and ``allow_from``: the sources that may supply a value
(``prompt``: trusted text; ``tool.field.path`` globs: untrusted fields admitted).

:func:`origin` finds the untrusted source a value came from: one whose recorded forms
(:mod:`.evidence`) hold the value's exact canonical form, or a substring of at least
``min_length`` compact characters of it — unless an admitted source holds the same
(the value itself, or those characters: a substring counts only where it holds a character
no admitted substring covers). A rule that ``require_source`` (an identifier:
a file id, an event id) asks the opposite: its value must be found whole in an admitted
source, however short; a value found nowhere else has the source :data:`NOWHERE`.
:func:`check_call` applies the rules to one
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
"""Shorter canonical forms are never matched (a digit, ``ok``), but by a rule that
``require_source``."""
NOWHERE = "(nowhere)"
"""The source of a ``require_source`` sink's value found in no tool result at all."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One sink and what it admits (see the module docstring)."""

    name: str
    tool: str
    argument: str = "*"
    action: Action = "deny"
    allow_from: tuple[str, ...] = (TRUSTED,)
    min_length: int = 8
    require_source: bool = False

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
    """The untrusted source path ``value`` came from that ``rule`` does not admit
    (:data:`NOWHERE` when a ``require_source`` value came from no source), or None (see
    the module docstring)."""
    least = 1 if rule.require_source else MIN_EXACT
    forms = [f for f in normalize.canonical(evidence.resolved(value)) if len(f) >= least]
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
    if rule.require_source:
        return next((path for path, found in untrusted if exacts & found), NOWHERE)
    length = evidence.gram_length
    long = [[digest(g) for g in normalize.gram_list(f, length)] for f in forms]
    fresh = [_fresh(grams, cleared, length) for grams in long]
    for path, found in untrusted:
        if exacts & found:
            return path
        needed = 1 if evidence.sparse(path) else max(rule.min_length, length) - length + 1
        for grams, new in zip(long, fresh, strict=True):
            if _run(grams, new, found) >= needed:
                return path
    return None


def _fresh(grams: list[int], cleared: set[int], length: int) -> list[bool]:
    """For each gram of a value, whether it holds a character no admitted gram covers (an
    admitted gram's characters are admitted text: a gram made only of them — ``hotel``
    and the first letters of an admitted hotel name — is not new text, wherever it is
    found)."""
    covered = [False] * (len(grams) + length - 1)
    for i, gram in enumerate(grams):
        if gram in cleared:
            covered[i : i + length] = [True] * length
    return [not all(covered[i : i + length]) for i in range(len(grams))]


def _run(grams: list[int], fresh: list[bool], found: frozenset[int]) -> int:
    """The most consecutive grams of a value found in a source and fresh."""
    best = run = 0
    for gram, new in zip(grams, fresh, strict=True):
        run = run + 1 if new and gram in found else 0
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
