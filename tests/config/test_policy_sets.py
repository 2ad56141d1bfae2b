"""Policy sets: resolution (extends, overrides, placement, remove), selection, lint, and
the CLI's ``check``, ``explain`` and ``teams``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hookgate.config.loader import ConfigError, load_text
from hookgate.config.policy_sets import RequestFacts, Selector, lint

BASE = """\
providers: {up: {base_url: "http://127.0.0.1:9/v1"}}
models: {"*": [{provider: up}]}
policies:
  - system_prompt: {prepend: "Org rules.", separator: " | "}
  - tool_guard: {deny: [delete_*]}
  - fallback: {retries: 1}
"""


def load(sets: str) -> dict[str, list[tuple[str, dict[str, object]]]]:
    loaded = load_text(BASE + sets)
    return {
        name: [(p.name, p.config.model_dump(exclude_defaults=True)) for p in policies]
        for name, policies in loaded.sets.items()
    }


def test_a_set_extends_overrides_places_and_removes() -> None:
    sets = load(
        "policy_sets:\n"
        "  strict:\n"
        "    extends: default\n"
        "    policies:\n"
        "      - system_prompt: {append: 'Be careful.'}\n"
        "      - model_call_limit: {max_per_reply: 3}\n"
        "        before: fallback\n"
        "      - budget: {limits: [{scope: team, usd: 5}]}\n"
        "  stricter:\n"
        "    extends: strict\n"
        "    remove: [tool_guard]\n"
        "    policies:\n"
        "      - fallback: {retries: 3}\n"
    )
    assert [n for n, _ in sets["default"]] == ["system_prompt", "tool_guard", "fallback"]
    strict = dict(sets["strict"])
    assert [n for n, _ in sets["strict"]] == [
        "system_prompt", "tool_guard", "model_call_limit", "fallback", "budget"
    ]  # fmt: skip
    # merged key by key: the inherited prepend and separator stay, append is added
    assert strict["system_prompt"] == {
        "prepend": "Org rules.", "append": "Be careful.", "separator": " | "
    }  # fmt: skip
    assert [n for n, _ in sets["stricter"]] == [
        "system_prompt", "model_call_limit", "fallback", "budget"
    ]  # fmt: skip
    assert dict(sets["stricter"])["fallback"] == {"retries": 3}


def test_sets_share_a_policy_they_list_with_the_same_settings() -> None:
    loaded = load_text(
        BASE + "policy_sets:\n  a: {extends: default, match: {teams: [a]}, remove: [fallback]}\n"
    )
    default, a = loaded.sets["default"], loaded.sets["a"]
    assert default[0] is a[0] and default[1] is a[1]
    assert len(loaded.all_policies) == 3


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        ("  a: {extends: nope}\n", "policy_sets.a.extends: unknown set 'nope'"),
        (
            "  a: {extends: b}\n  b: {extends: a}\n",
            "policy_sets.a.extends: extends makes a cycle: a → b → a",
        ),
        ("  a: {extends: default, remove: [pii]}\n", "policy_sets.a.remove[0]: 'pii' is not in"),
        (
            "  a: {extends: default, policies: [{budget: {limits: []}, before: pii}]}\n",
            "policy_sets.a.policies[0].before: 'pii' is not in the set it extends",
        ),
        (
            "  a: {extends: default, policies: [{fallback: {}, after: tool_guard}]}\n",
            "policy_sets.a.policies[0].after: 'fallback' is inherited",
        ),
        ("  a: {remove: [fallback]}\n", "policy_sets.a: remove drops inherited policies"),
        ("  a: {match: {}}\n", "policy_sets.a.match: match needs at least one field"),
        ("  default: {}\n", "policy_sets: 'default' is the top-level policies list"),
        (
            "  a: {policies: [{fallback: {retries: -1}}]}\n",
            "policy_sets.a.policies[0].fallback.retries:",
        ),
    ],
)
def test_a_set_that_cannot_be_resolved_is_a_config_error_with_its_line(
    sets: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as error:
        load_text(BASE + "policy_sets:\n" + sets, "hookgate.yaml")
    assert any(expected in line for line in error.value.lines), error.value.lines
    assert all(line.startswith("hookgate.yaml:") for line in error.value.lines)


def test_selection_order_assignment_then_first_match_then_default() -> None:
    loaded = load_text(
        BASE + "policy_sets:\n"
        "  staff: {match: {teams: [staff], models: ['gpt-*']}}\n"
        "  agents: {match: {agents: [planner], routes: [responses]}}\n"
        "  interns: {match: {users: ['intern-*']}}\n"
        "  assigned: {}\n"
    )
    selector = Selector(loaded.config.policy_sets, loaded.sets)
    pick = selector.select
    assert pick(RequestFacts(team="staff", model="gpt-4o")).name == "staff"
    assert pick(RequestFacts(team="staff", model="claude")).name == "default"
    assert pick(RequestFacts(agent="planner", route="responses")).name == "agents"
    assert pick(RequestFacts(agent="planner", route="chat.completions")).name == "default"
    assert pick(RequestFacts(user="intern-7", team="staff", model="gpt-4o")).name == "staff"
    assert pick(RequestFacts(user="intern-7")).reason == "matched users=intern-*"
    facts = RequestFacts(key="hgk_1", team="staff", model="gpt-4o")
    assert pick(facts, team_set="assigned").name == "assigned"
    assert pick(facts, key_set="interns", team_set="assigned").name == "interns"
    assert pick(facts, key_set="gone").name == "staff"  # a set no longer in the config


def test_lint_reports_unreachable_and_overlapping_sets() -> None:
    loaded = load_text(
        BASE + "policy_sets:\n"
        "  wide: {match: {teams: ['pay*']}}\n"
        "  narrow: {match: {teams: [payments], models: [gpt-4o]}}\n"
        "  research: {match: {models: ['gpt-*']}}\n"
        "  apart: {match: {teams: [search], models: [claude]}}\n"
    )
    found = {
        (p.loc[1], p.message.split(":")[0].split(" (")[0]) for p in lint(loaded.config.policy_sets)
    }
    assert ("narrow", "unreachable by match") in found
    assert ("research", "overlaps 'wide'") in found
    assert not any(name == "apart" for name, _ in found)


def test_lint_compares_globs_as_globs_not_as_names() -> None:
    """``a?`` does not cover ``a*`` (``abc`` matches only the second), and ``a*`` and
    ``*b`` may both match (``ab``)."""
    loaded = load_text(
        BASE + "policy_sets:\n"
        "  short: {match: {users: ['a?']}}\n"
        "  long: {match: {users: ['a*']}}\n"
        "  front: {match: {teams: ['x*']}}\n"
        "  back: {match: {teams: ['*y']}}\n"
    )
    found = {(p.loc[1], p.message.split(" (")[0]) for p in lint(loaded.config.policy_sets)}
    assert ("long", "unreachable by match") not in found
    assert ("long", "overlaps 'short'") in found
    assert ("back", "overlaps 'front'") in found


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookgate", *args], capture_output=True, text=True, timeout=60
    )


def test_check_lists_sets_and_warns_and_explain_says_why(tmp_path: Path) -> None:
    config = tmp_path / "hookgate.yaml"
    config.write_text(
        BASE + f"store: 'sqlite:///{tmp_path / 'x.db'}'\n"
        "policy_sets:\n"
        "  payments:\n"
        "    extends: default\n"
        "    match: {teams: [payments]}\n"
        "    policies: [{tool_guard: {deny: ['*']}}]\n"
        "  shadowed: {match: {teams: [payments], users: [ann]}}\n"
    )
    checked = run_cli("check", str(config))
    assert checked.returncode == 0, checked.stderr
    lines = checked.stdout.splitlines()
    assert "  set payments: system_prompt, tool_guard, fallback" in lines
    assert any(
        line.startswith(f"{config}:") and "policy_sets.shadowed.match: warning: unreachable" in line
        for line in lines
    ), lines

    explained = run_cli("explain", "--config", str(config), "--team", "payments")
    assert explained.returncode == 0, explained.stderr
    out = explained.stdout.splitlines()
    assert out[0] == "policy set: payments (matched teams=payments)"
    assert out[2].split() == ["tool_guard", "[proxy+sdk]", '{"deny":["*"]}']

    assert run_cli(
        "teams", "set", "payments", "--config", str(config), "--policy-set", "shadowed",
        "--budget", "day:usd=50", "--rpm", "60",
    ).returncode == 0  # fmt: skip
    explained = run_cli("explain", "--config", str(config), "--team", "payments")
    assert explained.stdout.splitlines()[0] == "policy set: shadowed (assigned to team payments)"
    assert "warning: budgets are granted, but set 'shadowed' has no budget policy" in (
        explained.stdout
    )
    changes = run_cli("teams", "changes", "--config", str(config))
    assert '"actor":"cli:' in changes.stdout and '"subject":"payments"' in changes.stdout
    run_cli("teams", "set", "payments", "--config", str(config), "--models", "cheap")
    outside = run_cli("explain", "--config", str(config), "--team", "payments", "--model", "big")
    assert outside.stdout.startswith("refused: 'big' is not among the models")  # as the proxy
    unknown = run_cli("teams", "set", "payments", "--config", str(config), "--policy-set", "nope")
    assert unknown.returncode != 0 and "unknown policy set 'nope'" in unknown.stderr
    odd = run_cli("teams", "set", "bl\x01ue", "--config", str(config), "--rpm", "5")
    assert odd.returncode != 0 and "printable text" in odd.stderr
    for budget in ("day:eur=5", "day:usd=abc", "day:tokens=1.5"):
        bad = run_cli("teams", "set", "payments", "--config", str(config), "--budget", budget)
        assert bad.returncode != 0 and "WINDOW:usd=N" in bad.stderr
        assert "Traceback" not in bad.stderr
