"""failoverbench's sixteen gateway crash tests (``bench/failoverbench``) through a real
``hookgate serve``, fast profile, on both configurations issue 33 is judged on: the shipped
``policies/default.yaml`` with only the suite's routing added, and the careful one.

Today it holds the baseline measured before issue 33's fixes (docs/failoverbench.md) as a
floor: no scenario may score worse than it did then. Issue 33 raises every scenario to
"pass" in both configurations; raise ``BASELINE`` with each fix that lands. Nothing here
skips: the harness needs only the project's own dependencies (``httpx`` of the dev extra).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.failoverbench.run import run
from bench.failoverbench.scenarios import SCENARIOS

RANK = {"fail": 0, "safe": 1, "partial": 2, "pass": 3}
BASELINE = {
    # 8 pass, 1 partial, 6 safe, 1 fail
    "default": {
        "S06": "partial",  # the silent route retried twice (3 x 15 s) before the fallback
        "S08": "safe",  # cut after 40 tokens: the text so far, then an error event
        "S09": "safe",  # stalled after 20 tokens: likewise
        "S10": "safe",  # a malformed event ends the stream with an error event
        "S11": "safe",  # complete but for [DONE]: turned into an error event
        "S12": "safe",  # context length: no context_window declared, the 400 comes back
        "S14": "safe",  # cut after 40 tokens: an error event
        "S15": "fail",  # the breaker's 30 s keeps the recovered primary out for the test
    },
    # 10 pass, 1 partial, 5 safe
    "careful": {
        "S06": "partial",  # 10 s timeouts: the silent route still retried twice (30 s)
        "S08": "safe",
        "S09": "safe",
        "S10": "safe",
        "S11": "safe",
        "S14": "safe",
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("config", ["default", "careful"])
async def test_no_scenario_scores_below_its_baseline(config: str, tmp_path: Path) -> None:
    card = await run("fast", config, workdir=tmp_path)

    floor = {s.id: BASELINE[config].get(s.id, "pass") for s in SCENARIOS}
    worse = {
        row["id"]: f"{row['verdict']} (baseline {floor[row['id']]}): {row['reason']}"
        for row in card["scenarios"]
        if RANK[row["verdict"]] < RANK[floor[row["id"]]]
    }
    assert not worse, (worse, (tmp_path / f"failoverbench-fast-{config}.log").read_text()[-4000:])
    assert len(card["scenarios"]) == 16
