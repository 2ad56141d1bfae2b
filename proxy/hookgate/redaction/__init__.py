"""PII redaction: detection (Presidio), placeholders, and exact restoration.

Pure placeholder logic lives in :mod:`~hookgate.redaction.placeholders` and
:mod:`~hookgate.redaction.restore`; where the model reads text in a request and where it
writes text in a response is :mod:`~hookgate.wire.texts`; Presidio is confined to
:mod:`~hookgate.redaction.analyzer` and :mod:`~hookgate.redaction.recognizers`.
"""
