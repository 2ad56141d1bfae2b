"""The labelled PII redaction sets, each a small generator over data files of its own.

* :mod:`evals.pii.corpus` — the development set the recognizers were tuned on.
* :mod:`evals.pii.holdout` — a held-out set, written independently and never tuned on.
* :mod:`evals.pii.independent` — names without sentence context (CSV, tables, lists, label
  blocks, records, headers, signatures) from hand-written lists of many regions, the same
  name repeated across a request's places; written without reading the detector.

The sets are independent on purpose: none imports another or reads another's data files
(shared vocabulary would leak the development set into the held-out ones), so do not add
shared helpers here.
"""
