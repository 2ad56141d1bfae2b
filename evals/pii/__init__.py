"""The labelled PII redaction sets, each a small generator over data files of its own.

* :mod:`evals.pii.corpus` — the development set the recognizers were tuned on.
* :mod:`evals.pii.holdout` — a held-out set, written independently and never tuned on.

The two are independent on purpose: neither imports the other or reads the other's data
files (shared vocabulary would leak the development set into the held-out one), so do not
add shared helpers here.
"""
