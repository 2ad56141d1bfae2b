"""failoverbench's sixteen gateway crash tests (``bench/failoverbench``) through a real
``hookgate serve``, fast profile, on both configurations issue 33 is judged on: the shipped
``policies/default.yaml`` with only the suite's routing added, and the careful one.

Every scenario must pass in both (docs/failoverbench.md has the scorecards before and after
issue 33). Nothing here skips: the harness needs only the project's own dependencies
(``httpx`` of the dev extra).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.failoverbench.run import run
from bench.failoverbench.scenarios import SCENARIOS


@pytest.mark.slow
@pytest.mark.parametrize("config", ["default", "careful"])
async def test_every_scenario_passes(config: str, tmp_path: Path) -> None:
    card = await run("fast", config, workdir=tmp_path)

    short = {
        row["id"]: f"{row['verdict']}: {row['reason']}"
        for row in card["scenarios"]
        if row["verdict"] != "pass"
    }
    assert not short, (short, (tmp_path / f"failoverbench-fast-{config}.log").read_text()[-4000:])
    assert sorted(row["id"] for row in card["scenarios"]) == sorted(s.id for s in SCENARIOS)
