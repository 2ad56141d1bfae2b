"""History units: a tool call and its results, a reasoning item and what follows it, are
never split; turns start at user messages; system messages are pinned."""

from __future__ import annotations

from typing import Any

from hookgate.wire import history


def spans(entries: list[Any]) -> list[tuple[int, int, bool, bool]]:
    return [(u.start, u.end, u.pinned, u.user) for u in history.units(entries)]


def call(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": f"f_{i}", "arguments": "{}"}}
            for i in ids
        ],
    }


def result(i: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": i, "content": f"result {i}"}


def test_chat_calls_stay_with_their_results() -> None:
    entries = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "a"},
        call("1", "2"),
        result("1"),
        result("2"),
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "b"},
        result("9"),  # an orphan result is a unit of its own
    ]
    assert spans(entries) == [
        (0, 1, True, False),
        (1, 2, False, True),
        (2, 5, False, False),
        (5, 6, False, False),
        (6, 7, False, True),
        (7, 8, False, False),
    ]
    turns = history.turns(history.units(entries))
    assert [[(u.start, u.end) for u in t] for t in turns] == [
        [(1, 2), (2, 5), (5, 6)],
        [(6, 7), (7, 8)],
    ]
    assert history.tool_results(entries) == [(3, "f_1"), (4, "f_2"), (7, "")]


def test_responses_reasoning_and_parallel_calls_are_one_unit() -> None:
    entries = [
        {"role": "developer", "content": "rules"},
        {"role": "user", "content": "a"},
        {"type": "reasoning", "id": "r1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x"},
        {"type": "function_call_output", "call_id": "c2",
         "output": [{"type": "input_text", "text": "y"}]},
        {"type": "reasoning", "id": "r2", "summary": []},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "ok"}]},
    ]  # fmt: skip
    assert spans(entries) == [(0, 1, True, False), (1, 2, False, True), (2, 7, False, False),
                              (7, 9, False, False)]  # fmt: skip
    assert [history.result_text(entries[i]) for i, _ in history.tool_results(entries)] == ["x", "y"]
    text = history.transcript(entries)
    assert "f({})" in text and "tool: y" in text and "assistant: ok" in text
