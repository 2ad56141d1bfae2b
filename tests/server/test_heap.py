"""The collector of a serving process (hookgate.server.heap), in a process of its own:
start-up's heap frozen, the young threshold raised, and cyclic garbage made afterwards
still collected."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import gc, weakref
from hookgate.server import heap

class Node:
    pass

start_up = [Node() for _ in range(1000)]
heap.settle()
print(gc.get_freeze_count() >= 1000)
print(gc.get_threshold() == (heap.YOUNG_THRESHOLD, *heap.OLDER_THRESHOLDS))
refs = []
for _ in range(3 * heap.YOUNG_THRESHOLD):
    a, b = Node(), Node()
    a.other, b.other = b, a
    if len(refs) < 10:
        refs.append(weakref.ref(a))
print(all(r() is None for r in refs))
"""


def test_settle_freezes_start_up_and_still_collects_cycles() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["True", "True", "True"]  # frozen, thresholds set, cycles collected
