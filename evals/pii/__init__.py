"""The labelled PII redaction sets, each a small generator over data files of its own.

* :mod:`evals.pii.corpus` — the development set the recognizers were tuned on.
* :mod:`evals.pii.holdout` — a held-out set, written independently and never tuned on.
* :mod:`evals.pii.independent` — names without sentence context (CSV, tables, lists, label
  blocks, records, headers, signatures) from hand-written lists of many regions, the same
  name repeated across a request's places; written without reading the detector.
* :mod:`evals.pii.origins` — names of many origins in ordinary sentences, multi-turn with
  later mentions by part (given name, family name, title), and technical controls; a
  development half (names from mimesis) and a held-out half (names and templates written
  apart) whose failures are never printed. Neither half uses the detector's name lists.
* :mod:`evals.pii.world` — a development set of names of non-European origins written by
  hand (Vietnamese, pinyin, Korean, Indian with initials, Arabic, Somali, Akan, Māori,
  Gaelic, Icelandic, Georgian...) in ordinary sentences, e-mails, chat logs, system prompts
  and tool calls, then by part in later turns (given name, family name, title or honorific
  with a part, double surname), with technical controls; its failures are printed.
* :mod:`evals.pii.letters` — a development set of hand-written names of 29 origins in pasted
  e-mails and messages (greetings, sign-offs, signatures, forwarded and quoted headers, CC
  and "on behalf of" lines, P.S. lines, chat logs), then by given name alone in later turns
  (questions, quotes, possessives, lists, imperatives, vocatives, tool calls and results),
  some by family name or title; with technical controls; its failures are printed.
* :mod:`evals.pii.agents` — the instructions and tool definitions real agent clients send
  (Codex CLI, opencode, the Agents SDK, LangChain, AgentScope, MCP servers), captured from
  the clients themselves: they must reach the model unchanged.

The sets are independent on purpose: none imports another or reads another's data files
(shared vocabulary would leak the development set into the held-out ones), so do not add
shared helpers here.
"""
