"""The README's two commands are the ones CI uses (the docs' code samples run in
``tests/test_doc_samples.py``, the policy example as a package of its own in
``tests/test_writing_a_policy.py``)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path("README.md").read_text()


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```sh\n(.*?)\n```", README, flags=re.S)
    run, test = commands[0].strip(), commands[1].strip()
    assert (run, test) == ("make run", "make test")
    assert Path(".ci/run").read_text().strip().endswith(f"exec {test}")
