"""The chats of the development set: generated PII chats, technical chats, hard cases."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from evals.pii.corpus.builder import SLOT, Builder, ToolCall, Turn, data, group, iban

_VALUE = re.compile(r"\{([a-z_0-9]+)\}|\[\[(.+?)\]\]")
"""In a hard case: ``{name}`` is one of its values; ``[[token]]`` a literal technical token."""

# -- generated chats -----------------------------------------------------------------------


def _slots(template: str) -> list[str]:
    """The ``{slot}`` keys of a template."""
    return [m.group(1) + m.group(2) for m in SLOT.finditer(template) if m.group(1)]


def _refer(b: Builder) -> str:
    """A sentence repeating a PII value the chat already used."""
    templates = data("templates")
    refer = templates["refer"]
    options = [t for key in b.used for t in refer.get(key, ()) if id(t) not in b.seen]
    if not options:
        return str(templates["refer_fallback"])
    template = b.rng.choice(options)
    b.seen.add(id(template))
    return b.fill(template)


def _add(b: Builder) -> str:
    """A sentence adding at least one PII value the chat has not used yet."""
    add = data("templates")["add"]
    fresh = [t for t in add if any(key not in b.used for key in _slots(t))]
    return b.fill(b.rng.choice(fresh or list(add)))


def _pick_tools(b: Builder, flows: Sequence[Sequence[ToolCall]]) -> Sequence[ToolCall]:
    """A tool flow, preferring those that reuse values the chat already mentioned."""
    fresh = [flow for flow in flows if id(flow) not in b.seen] or list(flows)
    weights = []
    for flow in fresh:
        keys = _slots(json.dumps([[args, result] for _, args, result in flow]))
        weights.append(1 + 4 * sum(key in b.used_all for key in dict.fromkeys(keys)))
    pick = b.rng.choices(fresh, weights=weights)[0]
    b.seen.add(id(pick))
    return pick


def _agentscope(b: Builder) -> None:
    """Make the chat carry AgentScope-style ``name`` fields."""
    names = data("vocabulary")["agentscope"]
    b.user_name = b.rng.choice(names["user"])
    b.agent_name = b.rng.choice(names["agent"])


def general(b: Builder, n_turns: int, with_tech: bool) -> list[Turn]:
    """A generated PII chat: opener, optional tech segment and tools, follow-up turns."""
    rng, templates, tools = b.rng, data("templates"), data("tools")
    if rng.random() < 0.2:
        _agentscope(b)
    first: Turn = []
    roll = rng.random()
    if roll < 0.3:
        first.append(b.system(b.fill(rng.choice(templates["system_pii"]))))
    elif roll < 0.6:
        first.append(b.system(rng.choice(templates["system_plain"])))
    segments = [b.fill(rng.choice(templates["openers"]))]
    if with_tech:
        segments.append(rng.choice(templates["segues"]) + b.fill(rng.choice(templates["tech"])))
    first.append(b.user(segments))
    if rng.random() < 0.3:
        say = templates["lookup_say"] if rng.random() < 0.3 else None
        first.extend(b.tools(_pick_tools(b, tools["pii"]), say=say))
    turns = [first]
    for _ in range(1, n_turns):
        segments = [_refer(b), _add(b)]
        if with_tech and rng.random() < 0.5:
            segments.append(b.fill(rng.choice(templates["tech_follow"])))
        turn = [b.user(segments)]
        if rng.random() < 0.25:
            turn.extend(b.tools(_pick_tools(b, tools["pii"])))
        turns.append(turn)
    return turns


def technical(b: Builder, n_turns: int) -> list[Turn]:
    """A purely technical chat: no PII at all."""
    rng, templates, tools = b.rng, data("templates"), data("tools")
    tech = templates["tech"]
    if rng.random() < 0.2:
        _agentscope(b)
    first: Turn = []
    if rng.random() < 0.7:
        first.append(b.system(rng.choice(templates["system_tech"])))
    picks = rng.sample(range(len(tech)), 2)
    segments = [b.fill(tech[picks[0]])]
    if rng.random() < 0.4:
        segments.append(b.fill(tech[picks[1]]))
    first.append(b.user(segments))
    if rng.random() < 0.4:
        first.extend(b.tools(_pick_tools(b, tools["tech"])))
    turns = [first]
    for _ in range(1, n_turns):
        segments = [b.fill(rng.choice(templates["tech_follow"]))]
        if rng.random() < 0.3:
            segments.append(b.fill(rng.choice(tech)))
        turn = [b.user(segments)]
        if rng.random() < 0.3:
            turn.extend(b.tools(_pick_tools(b, tools["tech"])))
        turns.append(turn)
    return turns


# -- hand-written hard cases (hard_cases.json) ---------------------------------------------


def _hard_value(b: Builder, spec: Any, values: dict[str, str]) -> str:
    """A hard case's value from its source (see ``hard_cases.json``)."""
    if isinstance(spec, str):
        return spec
    if "fake" in spec:
        value = str(getattr(b.fake, spec["fake"])(*spec.get("args", ())))
    elif "slot" in spec:
        value = b.value(spec["slot"])
    elif "digits" in spec:
        value = b.digits(spec["digits"])
    elif "iban" in spec:
        value = iban(spec["iban"], b.digits(spec["bban"]))
    else:
        value = values[spec["from"]]
    if "group" in spec:
        sizes, sep = spec["group"]
        value = group(value, sizes, sep)
    if "replace" in spec:
        old, new = spec["replace"]
        value = value.replace(old, new)
    return value


def hard_case(b: Builder, case: dict[str, Any]) -> list[Turn]:
    """The turns of one hand-written hard case, its values labelled first, in order."""
    if "names" in case:
        b.user_name, b.agent_name = case["names"]["user"], case["names"]["agent"]
    values: dict[str, str] = {}
    for key, (kind, spec) in case["values"].items():
        value = _hard_value(b, spec, values)
        if kind == "tech":
            b.tech(value)
        elif kind is not None:
            b.pii(kind, value)
        values[key] = value

    def text(template: str) -> str:
        def replace(match: re.Match[str]) -> str:
            if match.group(2) is not None:
                return b.tech(match.group(2))
            return values[match.group(1)]

        return _VALUE.sub(replace, template)

    def obj(template: Any) -> Any:
        if isinstance(template, str):
            return text(template)
        if isinstance(template, list):
            return [obj(item) for item in template]
        if isinstance(template, dict):
            return {key: obj(item) for key, item in template.items()}
        return template

    turns: list[Turn] = []
    for messages in case["turns"]:
        turn: Turn = []
        for message in messages:
            if "system" in message:
                turn.append(b.system(text(message["system"])))
            elif "user" in message:
                turn.append(b.user([text(s) for s in message["user"]], message["shape"]))
            else:
                turn.extend(b.tools(obj(message["tools"]), raw=True))
        turns.append(turn)
    return turns
