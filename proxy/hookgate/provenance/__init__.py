"""Provenance of tool-call arguments: which untrusted tool result a value came from.

:mod:`.normalize` gives a value's canonical forms, :mod:`.evidence` records what a
conversation holds by source (hashes, never text) and :mod:`.check` finds the untrusted
source of a sink argument's value. The ``provenance`` policy
(:mod:`hookgate.policies.provenance`) enforces it. Pure: no I/O, no framework.
"""

from hookgate.provenance.check import Finding, Rule, check_call, origin
from hookgate.provenance.evidence import TRUSTED, Evidence

__all__ = ["TRUSTED", "Evidence", "Finding", "Rule", "check_call", "origin"]
