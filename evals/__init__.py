"""Evaluation sets: generators over data files, for measuring hookgate (not part of the package).

Run from the repository root; :mod:`evals.pii` holds the labelled PII redaction sets.
"""
