"""Where a text is technical rather than prose: code, Markdown structure, paths and links.

An agent's instructions and tool definitions are Markdown and code: headings (``# Git``),
table header rows, fenced and inline code, URLs and file paths. A person's name is not
written there, but a small NER model takes their capitalised words for names
(``# Personality``, ``Reading Files``). :func:`technical_spans` finds those regions, so a
name found *only by the model or by word lists* inside them is dropped. Names found by the
structure around them (``Owner: Ana Lima``, ``author = "Ana Lima"``), by the words around
them (``Dear Ana``), or found elsewhere in the request are still redacted there; e-mail
addresses, phone numbers, keys and the other patterned types are never affected.

Pure: regular expressions over the text, no NLP.
"""

from __future__ import annotations

import bisect
import re

_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
"""A fenced code block, up to its closing fence (or the end of the text)."""
_INLINE = re.compile(r"(`+)[^`\n]+?\1")
"""An inline code span: ``grep -rn``."""
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+[^\n]*$", re.M)
"""A Markdown ATX heading line."""
_TABLE_HEAD = re.compile(r"^[^\n]*\|[^\n]*\n(?=[ \t]*\|?[ \t]*:?-{3,})", re.M)
"""A table's header row: the line above a ``|---|`` delimiter row."""
_TAG = re.compile(r"</?[a-z][\w:.-]*(?:\s+[\w:.-]+(?:=(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s>]+))?)*\s*/?>")
"""An XML or HTML tag (``<system-reminder>``, ``<env name="x">``), not its content; a
chat log's ``<Ana Lima>`` is a speaker, not a tag."""
_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]*://|www\.)[^\s<>\"'`)\]]+", re.I)
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|\b[\w.-]+/[\w./-]*\.\w{1,8}\b")
"""A file path: ``/usr/bin/env``, ``~/.codex/config.toml``, ``src/app/main.py``."""

_JSON = re.compile(r"^[ \t]*(?:[-*+]|\d{1,2}[.)])[ \t]+[^\n{\[]*[{\[]\s*\"[^\n]*[}\]]", re.M)
"""A list item showing a JSON example on one line (``* `weather`: {"location": "San
Francisco, CA"}``), as instructions do; a tool's JSON result is data, not this."""
_LONG_LIST = re.compile(r"^[^\n,]{0,40}:?[ \t]*(?:[^,\n]{1,40},[ \t]*){5,}[^,\n]*$", re.M)
"""A line listing six items or more (``Fonts: Archivo Black, Asul, Barlow, …``): names in
it are found by the list rule of the structured finder, not by a model."""

_PATTERNS = (_FENCE, _INLINE, _HEADING, _TABLE_HEAD, _TAG, _URL, _PATH, _JSON, _LONG_LIST)


def technical_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of every technical region of ``text``, sorted, overlaps merged."""
    spans = sorted((m.start(), m.end()) for pattern in _PATTERNS for m in pattern.finditer(text))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def inside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``[start, end)`` overlaps one of ``spans`` (sorted, disjoint)."""
    i = bisect.bisect_right(spans, start, key=lambda span: span[0]) - 1
    if i >= 0 and spans[i][1] > start:
        return True
    return i + 1 < len(spans) and spans[i + 1][0] < end
