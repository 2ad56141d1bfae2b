"""The structural templates of the independent set: names without sentence context.

Each block writes some people of the chat in one structure — CSV rows (quoted or not, with
a header row), a markdown or ASCII table, a slash- or pipe-separated list, a label block
(the name alone above a street, city line, phone and e-mail), key/value records, e-mail
headers, a signature below a sign-off, a chat transcript, a YAML roster, a git log with
trailers, an attendee list, pasted JSON records — or in plain prose. Column headers, keys
and status words are recorded as technical tokens. The wording is in ``blocks.json``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evals.pii.independent.data import load
from evals.pii.independent.people import Person
from evals.pii.independent.writer import Writer


def _words(key: str) -> Any:
    return load("blocks")[key]


def _rows(w: Writer, people: Sequence[Person], fields: Sequence[str]) -> list[list[str]]:
    return [[w.field(p, f) for f in fields] for p in people]


def _table(w: Writer) -> tuple[list[str], list[str]]:
    table = w.pick(_words("tables"))
    return list(table["headers"]), list(table["fields"])


def csv_quoted(w: Writer, people: Sequence[Person]) -> str:
    """CSV with every field quoted, a header row first."""
    return _csv(w, people, quote_all=True)


def csv_plain(w: Writer, people: Sequence[Person]) -> str:
    """CSV quoted only where needed (comma, semicolon or tab delimited), a header row first."""
    return _csv(w, people, quote_all=False)


def _csv(w: Writer, people: Sequence[Person], quote_all: bool) -> str:
    headers, fields = _table(w)
    delimiter = "," if quote_all else w.pick(_words("csv_delimiters"))
    out = io.StringIO()
    writer = csv.writer(
        out,
        delimiter=delimiter,
        quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL,
        lineterminator="\n",
    )
    writer.writerow(headers)
    header = out.getvalue().rstrip("\n")
    writer.writerows(_rows(w, people, fields))
    w.t(header)
    return out.getvalue().rstrip("\n")


def markdown_table(w: Writer, people: Sequence[Person]) -> str:
    """A markdown table with a header row."""
    headers, fields = _table(w)
    header = "| " + " | ".join(headers) + " |"
    rule = w.pick(["|" + "---|" * len(headers), "| " + " | ".join("---" for _ in headers) + " |"])
    rows = ["| " + " | ".join(row) + " |" for row in _rows(w, people, fields)]
    w.t(header)
    return "\n".join([header, rule, *rows])


def ascii_table(w: Writer, people: Sequence[Person]) -> str:
    """A table as a SQL client prints it (MySQL boxes or psql columns)."""
    headers, fields = _table(w)
    rows = _rows(w, people, fields)
    for h in headers:
        w.t(h)
    widths = [max(len(c) for c in column) for column in zip(headers, *rows, strict=True)]
    footer = w.pick(_words("ascii_footers")).format(n=len(rows))
    if w.chance(0.5):
        line = "+" + "+".join("-" * (n + 2) for n in widths) + "+"

        def boxed(cells: Sequence[str]) -> str:
            return "| " + " | ".join(c.ljust(n) for c, n in zip(cells, widths, strict=True)) + " |"

        return "\n".join([line, boxed(headers), line, *map(boxed, rows), line, footer])

    def plain(cells: Sequence[str]) -> str:
        return " " + " | ".join(c.ljust(n) for c, n in zip(cells, widths, strict=True))

    centred = " " + " | ".join(h.center(n) for h, n in zip(headers, widths, strict=True))
    rule = "-" + "-+-".join("-" * n for n in widths) + "-"
    return "\n".join([centred, rule, *map(plain, rows), footer])


def _list(w: Writer, people: Sequence[Person], separator: str, bullet: str) -> str:
    fields = w.pick(_words("lists"))
    head = w.pick(_words("list_heads"))
    lines = [bullet + separator.join(row) for row in _rows(w, people, fields)]
    if head == "#":
        head = "# " + separator.join(fields)
    if head:
        w.t(head)
        lines.insert(0, head)
    return "\n".join(lines)


def slash_list(w: Writer, people: Sequence[Person]) -> str:
    """``Name / mail / 10.0.0.4`` lines."""
    return _list(w, people, " / ", "")


def pipe_list(w: Writer, people: Sequence[Person]) -> str:
    """``Name | mail | phone`` lines, bulleted or not, without table borders."""
    return _list(w, people, " | ", w.pick(["", "- ", "* "]))


def label_block(w: Writer, people: Sequence[Person]) -> str:
    """A shipping label: the name alone on its line above street, city line, phone, e-mail."""
    out = []
    for p in people:
        lines = [w.value(p, "name"), w.value(p, "street"), w.value(p, "cityline")]
        lines.append(w.pick(_words("phone_prefixes")) + w.value(p, "phone"))
        if w.chance(0.6):
            lines.append(w.value(p, "email"))
        head = w.pick(_words("label_heads"))
        out.append("\n".join([head, *lines] if head else lines))
    return "\n\n".join(out)


def key_value(w: Writer, people: Sequence[Person]) -> str:
    """``Key: value`` records (``Name:``, ``Customer -``, ``Assignee:``, ``Contact =``...)."""
    out = []
    for p in people:
        record = w.pick(_words("records"))
        lines = []
        for field, key in record["keys"]:
            w.t(key)
            lines.append(f"{key}{record['sep']}{w.field(p, field, fresh=False)}")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _mailbox(w: Writer, p: Person) -> str:
    return f"{w.value(p, 'name')} <{w.value(p, 'email')}>"


def email_header(w: Writer, people: Sequence[Person]) -> str:
    """A pasted e-mail: ``From: Name <mail>``, ``To:``, maybe ``Cc:``, subject, body, sign-off."""
    sender, receiver, *copied = people
    lines = [f"From: {_mailbox(w, sender)}", f"To: {_mailbox(w, receiver)}"]
    if copied:
        lines.append("Cc: " + ", ".join(_mailbox(w, p) for p in copied))
    lines.append(f"Date: {w.pick(_words('mail_dates'))}")
    lines.append("Subject: " + w.fill(w.pick(_words("subjects")), people))
    body = w.fill(w.pick(_words("mail_bodies")), people)
    sign = f"{w.pick(_words('sign_offs'))}\n{w.value(sender, 'name')}"
    return "\n".join(lines) + f"\n\n{body}\n\n{sign}"


def signature(w: Writer, people: Sequence[Person]) -> str:
    """A message ending with a sign-off and a signature block (name, title, phone, e-mail)."""
    (p,) = people
    body = w.fill(w.pick(_words("signature_bodies")), people)
    lines = [w.pick(_words("sign_offs")), w.value(p, "name")]
    lines.append(f"{w.pick(_words('titles'))}, {w.company}")
    if w.chance(0.7):
        lines.append(w.pick(_words("phone_prefixes")) + w.value(p, "phone"))
    if w.chance(0.5):
        lines.append(w.value(p, "email"))
    return body + "\n\n" + "\n".join(lines)


def prose(w: Writer, people: Sequence[Person]) -> str:
    """One or two sentences mentioning people by name."""
    sentences = load("texts")["prose"]
    k = 1 if len(people) < 2 else w.pick((1, 2))
    picks = w.r.sample(range(len(sentences)), k)
    return " ".join(w.fill(sentences[i], people) for i in picks)


def chat_transcript(w: Writer, people: Sequence[Person]) -> str:
    """A pasted chat log: timestamped lines, each after its speaker's name."""
    shape = w.pick(_words("transcript_shapes"))
    lines = _words("transcript_lines")
    hour = w.r.randint(7, 21)
    out = []
    for i, k in enumerate(sorted(w.r.sample(range(len(lines)), w.r.randint(3, 6)))):
        speaker = people[i % len(people)]
        line = w.fill(lines[k], people)
        out.append(
            shape.format(
                who=w.value(speaker, "name"), hh=f"{hour:02d}", mm=f"{7 * i + 3:02d}", line=line
            )
        )
    return "\n".join(out)


def yaml_roster(w: Writer, people: Sequence[Person]) -> str:
    """An on-call roster in YAML: ``- name: ...`` with e-mail, phone and role."""
    out = ["oncall:", f"  team: {w.slot('namespace')}", "  members:"]
    roles = _words("roster_roles")
    for i, p in enumerate(people):
        quote = w.pick(['"', ""])
        out.append(f"    - name: {quote}{w.value(p, 'name')}{quote}")
        out.append(f"      email: {w.value(p, 'email')}")
        out.append(f'      phone: "{w.value(p, "phone")}"')
        out.append(f"      role: {w.t(roles[i % len(roles)])}")
    return "\n".join(out)


def git_log(w: Writer, people: Sequence[Person]) -> str:
    """``git log`` output: ``Author: Name <mail>`` and trailers like ``Co-authored-by:``."""
    author, *others = people
    message = w.fill(w.pick(_words("commit_messages")), people)
    lines = [
        f"commit {w.slot('sha')}",
        f"Author: {_mailbox(w, author)}",
        f"Date:   {w.pick(_words('commit_dates'))}",
        "",
        f"    {message}",
        "",
    ]
    trailers = w.r.sample(_words("trailers"), len(others))
    lines += [f"    {w.t(t)}: {_mailbox(w, p)}" for t, p in zip(trailers, others, strict=True)]
    return "\n".join(lines)


def attendee_list(w: Writer, people: Sequence[Person]) -> str:
    """``Attendees: A; B; C`` — names separated by punctuation, sometimes with e-mails."""
    head = w.t(w.pick(_words("attendee_heads")))
    with_mail = w.chance(0.3)
    names = [
        f"{w.value(p, 'name')} ({w.value(p, 'email')})" if with_mail else w.value(p, "name")
        for p in people
    ]
    line = f"{head} {w.pick(_words('attendee_separators')).join(names)}"
    tail = w.fill(w.pick(_words("attendee_tails")), people)
    return f"{line}\n{tail}" if tail else line


def json_paste(w: Writer, people: Sequence[Person]) -> str:
    """Records pasted as JSON (an array of objects)."""
    keys: dict[str, str] = w.pick(_words("json_keys"))
    records = [{key: w.field(p, field) for field, key in keys.items()} for p in people]
    for key in keys.values():
        w.t(f'"{key}"')
    return json.dumps(records, ensure_ascii=False, indent=w.pick((None, 2)))


@dataclass(frozen=True)
class Block:
    """A structural template: how it writes, and how many people it takes."""

    write: Callable[[Writer, Sequence[Person]], str]
    fewest: int
    most: int


BLOCKS: dict[str, Block] = {
    "csv_quoted": Block(csv_quoted, 2, 6),
    "csv_plain": Block(csv_plain, 2, 6),
    "markdown_table": Block(markdown_table, 2, 6),
    "ascii_table": Block(ascii_table, 2, 5),
    "slash_list": Block(slash_list, 2, 5),
    "pipe_list": Block(pipe_list, 2, 5),
    "label_block": Block(label_block, 1, 2),
    "key_value": Block(key_value, 1, 3),
    "email_header": Block(email_header, 2, 3),
    "signature": Block(signature, 1, 1),
    "prose": Block(prose, 2, 2),
    "chat_transcript": Block(chat_transcript, 2, 3),
    "yaml_roster": Block(yaml_roster, 2, 4),
    "git_log": Block(git_log, 2, 3),
    "attendee_list": Block(attendee_list, 2, 6),
    "json_paste": Block(json_paste, 2, 4),
}
"""The structural templates by name (the context a leak is reported under)."""


def write(w: Writer, name: str, cast: Sequence[Person], first: Person) -> str:
    """Block ``name`` for some of ``cast``, always including ``first``; labelled in context."""
    block = BLOCKS[name]
    others = [p for p in cast if p is not first]
    n = w.r.randint(min(block.fewest, len(cast)), min(block.most, len(cast)))
    chosen = [first, *w.r.sample(others, n - 1)]
    if name not in ("email_header", "git_log", "signature", "prose"):
        w.r.shuffle(chosen)
    outer = w.context
    w.context = name
    try:
        return block.write(w, chosen)
    finally:
        w.context = outer
