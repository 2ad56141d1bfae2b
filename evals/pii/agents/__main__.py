"""``python -m evals.pii.agents [name ...]``: re-capture the agent-prompt corpus (see
:mod:`evals.pii.agents.capture`)."""

import sys

from evals.pii.agents.capture import main

sys.exit(main())
