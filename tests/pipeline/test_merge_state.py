"""merge_state: the three-way merge of policy state two writers of one record wrote."""

from __future__ import annotations

from typing import Any

import pytest

from hookgate.store.state import merge_state


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "merged"),
    [
        # what only one side changed is that side's
        ({"pii": {"<A>": "a"}}, {"pii": {"<A>": "a"}}, {"pii": {}}, {"pii": {}}),
        ({"n": 1}, {"n": 2}, {"n": 1}, {"n": 2}),
        # two calls' placeholders are both kept
        ({}, {"pii": {"<A>": "a"}}, {"pii": {"<B>": "b"}}, {"pii": {"<B>": "b", "<A>": "a"}}),
        # counts both sides made add up, from a missing counter too
        ({"g": {"t": 1}}, {"g": {"t": 2}}, {"g": {"t": 3}}, {"g": {"t": 4}}),
        ({}, {"g": {"t": 1}}, {"g": {"t": 1}}, {"g": {"t": 2}}),
        ({"c": 1.5}, {"c": 2.0}, {"c": 2.5}, {"c": 3.0}),
        # a key one side removed stays removed when the other left it alone
        ({"x": 1, "y": 1}, {"y": 1}, {"x": 1, "y": 2}, {"y": 2}),
        # anything else both changed is ours
        ({"todo": ["a"]}, {"todo": ["b"]}, {"todo": ["c"]}, {"todo": ["b"]}),
        ({"f": True}, {"f": False}, {"f": None}, {"f": False}),
        ({"s": "x"}, {"s": 1}, {"s": 2}, {"s": 1}),
    ],
)
def test_merge(base: Any, ours: Any, theirs: Any, merged: Any) -> None:
    assert merge_state(base, ours, theirs) == merged
