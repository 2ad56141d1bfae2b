"""The development set: a deterministic, labelled evaluation set of agent chats for PII redaction.

``corpus(seed, size)`` returns realistic support, CRM, HR, operations and coding chats
in the OpenAI chat-completions message format: system prompts, plain and content-part
user messages, assistant ``tool_calls`` with their ``tool`` results, AgentScope-style
``name`` fields, single- and multi-turn conversations. Every PII value put into a text
is labelled as an :class:`Entity` with its exact substring, and technical tokens that a
redactor must leave alone (product names, versions, error codes, ticket ids, paths,
timestamps, hashes, hosts...) are listed in :attr:`Chat.technical`. The recognizers were
tuned on this set; :mod:`evals.pii.holdout` is the independent one.

This package holds only the generation logic: :mod:`.builder` makes a chat's values, fills
templates and records the labels, :mod:`.chats` writes the kinds of chats, :mod:`.checks`
verifies the labels. What the chats say is data in its folder: ``slots.json`` (which
template slots hold PII), ``vocabulary.json`` (value pools and formats), ``templates.json``
(sentences), ``tools.json`` (tool-call flows) and ``hard_cases.json`` (hand-written hard
cases). It shares neither code nor data with the held-out set.

Values come from a seeded ``faker.Faker("en_US")`` and a seeded :class:`random.Random`,
so a seed always gives the same corpus (for a given Faker version). ``check(chats)``
verifies the labels. Nothing runs at import time; ``python -m evals.pii.corpus
[SEED [SIZE]]`` prints a summary of a corpus.
"""

from __future__ import annotations

import random

from faker import Faker

from evals.pii.corpus.builder import Builder, Turn, data
from evals.pii.corpus.chats import general, hard_case, technical
from evals.pii.corpus.checks import KINDS, Chat, Entity, check, summary, texts

__all__ = ["KINDS", "Chat", "Entity", "check", "corpus", "summary", "texts"]


def corpus(seed: int = 7, size: int = 240) -> list[Chat]:
    """The labelled chats; deterministic for a seed.

    About 15% of the chats are hand-written hard cases (all of them from ``size`` 234),
    10% are purely technical, the rest are generated PII chats. About half have
    2-5 turns and 40% are streamed.
    """
    if size < 0:
        raise ValueError("size must be >= 0")
    hard = data("hard_cases")["cases"]
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    n_hard = min(len(hard), size * 3 // 20)
    n_tech = min(size - n_hard, size // 10)
    n_general = size - n_hard - n_tech
    built: list[tuple[str, list[Turn], Builder]] = []
    for case in hard[:n_hard]:
        b = Builder(fake, rng)
        built.append(("hard", hard_case(b, case), b))
    for k in range(n_tech):
        b = Builder(fake, rng, pii=False)
        n_turns = rng.randint(2, 5) if k % 2 else 1
        built.append(("tech", technical(b, n_turns), b))
    for k in range(n_general):
        b = Builder(fake, rng)
        n_turns = rng.randint(2, 5) if k % 20 < 11 else 1
        built.append(("pii", general(b, n_turns, with_tech=rng.random() < 0.3), b))
    rng.shuffle(built)
    return [
        b.finish(f"chat-{i:04d}-{label}", turns, stream=i % 5 in (1, 3))
        for i, (label, turns, b) in enumerate(built)
    ]
