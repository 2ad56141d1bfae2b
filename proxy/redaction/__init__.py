"""PII redaction: detection (Presidio), placeholders, and exact restoration.

Pure placeholder logic lives in :mod:`~proxy.redaction.placeholders` and
:mod:`~proxy.redaction.restore`; where the model reads text in a request and where it
writes text in a response is :mod:`~proxy.redaction.texts`; Presidio is confined to
:mod:`~proxy.redaction.analyzer` and :mod:`~proxy.redaction.recognizers`.
"""
