"""The words every policy's YAML shares (the glossary is ``docs/vocabulary.md``).

A setting that says what to do when something goes wrong takes one of two values:
``error`` fails closed (the request or reply ends with an error: an OpenAI-format error
with a status in the proxy, an exception in the SDK) and ``continue`` fails open (it goes
on, unchecked or with what it has, and the log says so).
"""

from __future__ import annotations

from typing import Literal

OnFailure = Literal["error", "continue"]
"""The value of ``on_error`` (the policy itself cannot do its job: its store or its
analyzer fails), ``on_failure`` (what the policy checks or retries still fails after its
last retry) and ``on_unpriced``."""
