"""The in-process Gate without any framework: composition, the SDK policies, YAML, imports."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hookgate.errors import HookgateError
from hookgate.pipeline import registry
from hookgate.pipeline.agent import (
    NextReply,
    NextTool,
    PolicyTool,
    Reply,
    ReplyAbandoned,
    ReplyContext,
    ReplyPaused,
    ToolCall,
    ToolInputError,
    ToolResult,
)
from hookgate.pipeline.hooks import Policy
from hookgate.pipeline.types import JsonBody, ModelCall, ModelResponse, Target
from hookgate.sdk import Driver, Gate, current_headers, current_reply
from hookgate.sdk.driver import STOPPED
from hookgate.store.open import open_store
from hookgate.wire.usage import Usage

LOG: list[str] = []


class Layer(Policy):
    """Records the order of its hooks; ``stop_after`` turns makes it stop the reply."""

    name: ClassVar[str] = "layer"
    runs_in = frozenset({"sdk"})

    def __init__(self, label: str, stop_after: int | None = None) -> None:
        super().__init__(None)
        self.label, self.stop_after = label, stop_after

    async def on_reply(self, reply: Reply, ctx: ReplyContext, next: NextReply) -> Any:
        LOG.append(f"{self.label}:reply-before")
        result = await next(reply, ctx)
        LOG.append(f"{self.label}:reply-after")
        return f"{result}+{self.label}"

    async def on_tool_call(self, call: ToolCall, ctx: ReplyContext, next: NextTool) -> ToolResult:
        LOG.append(f"{self.label}:tool-before")
        result = await next(call.with_arguments({**call.arguments, self.label: True}), ctx)
        LOG.append(f"{self.label}:tool-after")
        return result.with_content(f"{result.content}+{self.label}")

    async def should_stop_after_turn(self, ctx: ReplyContext) -> bool:
        return self.stop_after is not None and ctx.turns >= self.stop_after


async def echo_tool(call: ToolCall) -> ToolResult:
    LOG.append(f"tool:{sorted(call.arguments)}")
    return ToolResult("ran")


@pytest.fixture(autouse=True)
def clean() -> None:
    LOG.clear()


async def test_onions_compose_first_listed_outermost_and_any_stop_stops() -> None:
    gate = Gate([Layer("a"), Layer("b", stop_after=2)])
    driver = gate.driver
    ctx = await driver.open_reply()
    assert LOG == ["a:reply-before", "b:reply-before"] and ctx.agent == "agent"
    with driver.current(ctx):
        assert current_reply() is ctx
        result = await driver.tool(ToolCall("search", {"q": 1}), echo_tool)
        assert result.content == "ran+b+a"
        assert await driver.after_turn(Usage(10, 5)) is False
        assert await driver.after_turn(Usage(10, 5)) is True  # b says stop after two turns
        assert ctx.usage == Usage(20, 10)
    assert current_reply() is None
    assert await driver.close_reply(ctx.reply_id, "answer") == "answer+b+a"
    assert LOG == [
        "a:reply-before", "b:reply-before",
        "a:tool-before", "b:tool-before", "tool:['a', 'b', 'q']", "b:tool-after", "a:tool-after",
        "b:reply-after", "a:reply-after",
    ]  # fmt: skip
    assert driver.reply_of(ctx.reply_id) is None
    assert await driver.close_reply(ctx.reply_id, "again") == "again"  # closed: nothing runs


async def test_a_reply_found_by_id_between_its_start_and_end_callbacks() -> None:
    """A framework that opens a reply in one callback and closes it in another finds it by
    id in between; a layer that refuses fails the opening."""
    gate = Gate([Layer("a"), Layer("b")])
    driver = gate.driver
    ctx = await driver.open_reply(agent="planner", session_id="s1")
    assert driver.reply_of(ctx.reply_id) is ctx
    assert ctx.session_id == "s1" and ctx.agent == "planner"
    assert LOG == ["a:reply-before", "b:reply-before"]
    await driver.close_reply(ctx.reply_id, error=RuntimeError("the framework failed"))
    assert LOG == ["a:reply-before", "b:reply-before"]  # the layers saw it raised
    assert driver.reply_of(ctx.reply_id) is None


async def test_concurrent_replies_keep_their_own_headers() -> None:
    gate = Gate([])

    async def one(session: str) -> dict[str, str]:
        async with gate.reply(session_id=session):
            await asyncio.sleep(0.01)
            return current_headers()

    first, second = await asyncio.gather(one("s1"), one("s2"))
    assert first["x-hookgate-session-id"] == "s1" and second["x-hookgate-session-id"] == "s2"
    assert first["x-hookgate-reply-id"] != second["x-hookgate-reply-id"]
    assert current_headers() == {}


def guard(**settings: Any) -> Policy:
    return registry.build("tool_guard", settings)


async def run_tools(gate: Gate, calls: list[ToolCall]) -> tuple[list[ToolResult], ReplyContext]:
    results = []
    async with gate.reply(session_id="s") as ctx:
        for call in calls:
            results.append(await gate.driver.tool(call, echo_tool))
    return results, ctx


async def test_tool_guard_names_arguments_and_approval() -> None:
    asked: list[str] = []

    async def approver(call: ToolCall, ctx: ReplyContext) -> bool | str:
        asked.append(call.name)
        return True if call.arguments.get("to") == "team@example.com" else "not to outsiders"

    policy = guard(
        allow=["send_*", "search"],
        deny=["send_fax"],
        arguments=[{"tool": "search", "pattern": "password"}],
        approve=["send_email"],
    )
    policy.approver = approver  # type: ignore[attr-defined]
    results, _ = await run_tools(
        Gate([policy]),
        [
            ToolCall("delete_all", {}),
            ToolCall("send_fax", {}),
            ToolCall("search", {"q": "admin password"}),
            ToolCall("search", {"q": "weather"}),
            ToolCall("send_email", {"to": "team@example.com"}),
            ToolCall("send_email", {"to": "rival@example.org"}),
        ],
    )
    assert [(r.blocked, r.content) for r in results] == [
        (True, "Tool call refused: the tool 'delete_all' is not allowed"),
        (True, "Tool call refused: the tool 'send_fax' is not allowed"),
        (True, "Tool call refused: these arguments are not allowed for 'search'"),
        (False, "ran"),
        (False, "ran"),
        (True, "Tool call refused: not to outsiders"),
    ]
    assert asked == ["send_email", "send_email"]


@pytest.mark.parametrize("on_limit", ["continue", "end", "error"])
async def test_tool_guard_limits(on_limit: str) -> None:
    gate = Gate([guard(max_per_reply=2, max_per_session=3, on_limit=on_limit)])
    calls = [ToolCall("search", {})] * 3
    if on_limit == "error":
        with pytest.raises(HookgateError) as refused:
            await run_tools(gate, calls)
        assert refused.value.status == 429 and refused.value.code == "tool_call_limit"
        return
    results, ctx = await run_tools(gate, calls)
    assert [r.blocked for r in results] == [False, False, True]
    assert "at most 2 tool calls per reply" in results[2].content
    assert ctx.stop is (on_limit == "end")
    results, _ = await run_tools(gate, [ToolCall("search", {})] * 2)  # same session
    assert [r.blocked for r in results] == [True, True]  # the session's 3 are used up


async def test_tool_guard_limits_per_tool() -> None:
    """LangChain's ToolCallLimit ``tool_name``: a limit counts only its tools, has its own
    exit behaviour, and the overall limit still counts every call."""
    gate = Gate(
        [
            guard(
                max_per_reply=5,
                limits=[
                    {"tool": "search_*", "max_per_reply": 1, "max_per_session": 2},
                    {"tool": "send_mail", "max_per_reply": 1, "on_limit": "end"},
                ],
            )
        ]
    )
    calls = [ToolCall(n, {}) for n in ("search_web", "get_time", "search_docs", "send_mail")]
    results, ctx = await run_tools(gate, calls)
    assert [r.blocked for r in results] == [False, False, True, False]
    assert "at most 1 calls of 'search_*' per reply" in results[2].content
    assert not ctx.stop
    results, ctx = await run_tools(
        gate, [ToolCall("search_web", {}), ToolCall("send_mail", {})] * 2
    )
    # the session's two searches: one last reply (refused ones count too), one now
    assert [r.blocked for r in results] == [True, False, True, True]
    assert "per session" in results[0].content and ctx.stop  # the second mail ended it
    everything = Gate([guard(max_per_reply=2, limits=[{"tool": "get_*", "max_per_reply": 9}])])
    results, _ = await run_tools(everything, [ToolCall("get_time", {})] * 3)
    assert [r.blocked for r in results] == [False, False, True]


async def test_reply_budget_wraps_up_then_stops() -> None:
    policy = registry.build("reply_budget", {"tokens": 1000, "grace_turns": 1})
    gate = Gate([policy])
    async with gate.reply() as ctx:
        assert await gate.driver.after_turn(Usage(input_tokens=400, output_tokens=100)) is False
        assert ctx.wrap_up is None  # 400 + 4 * 100 = 800 of 1000
        assert await gate.driver.after_turn(Usage(input_tokens=300, output_tokens=10)) is False
        assert ctx.wrap_up is not None and "answer the user now" in ctx.wrap_up
        seen: list[Any] = []

        async def model(call: ModelCall, _ctx: Any) -> ModelResponse:
            seen.append(call.body)
            return ModelResponse(
                status=200, headers={}, target=Target("m", None), payload=JsonBody.from_data({})
            )

        body = {"model": "m", "messages": [{"role": "user", "content": "go"}],
                "tools": [{"type": "function", "function": {"name": "search"}}]}  # fmt: skip
        call = ModelCall(
            api="chat.completions",
            payload=JsonBody.from_data(body),
            model="m",
            stream=False,
            targets=(),
        )
        await gate.driver.model_call(call, model)
        assert seen[0]["tool_choice"] == "none"
        assert seen[0]["messages"][-1] == {"role": "system", "content": ctx.wrap_up}
        assert await gate.driver.after_turn(Usage(10, 10)) is False  # the grace turn
        assert await gate.driver.after_turn(Usage(10, 10)) is True


async def test_model_call_limit_per_session_and_error() -> None:
    """LangChain's thread_limit: a session's calls carry over to its next reply; and
    exit_behavior error."""
    gate = Gate([registry.build("model_call_limit", {"max_per_session": 3, "on_limit": "end"})])
    async with gate.reply(session_id="t-1") as first:
        stops = [await gate.driver.after_turn(None) for _ in range(2)]
    async with gate.reply(session_id="t-1") as second:
        stops += [await gate.driver.after_turn(None)]
    async with gate.reply(session_id="t-2"):
        other = await gate.driver.after_turn(None)
    assert stops == [False, False, True] and not first.stop and second.stop and not other
    async with gate.reply(session_id="t-1") as third:  # begins with the session's calls used
        assert third.stop

        async def model(call: ModelCall, ctx: Any) -> ModelResponse:
            raise AssertionError("a reply begun past its session's limit reached the model")

        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        call = ModelCall(
            api="chat.completions",
            payload=JsonBody.from_data(body),
            model="m",
            stream=False,
            targets=(),
        )
        answered = await gate.driver.model_call(call, model)
        assert answered.body["choices"][0]["message"]["content"] == STOPPED
    refusing = Gate(
        [registry.build("model_call_limit", {"max_per_session": 1, "on_limit": "error"})]
    )
    with pytest.raises(HookgateError, match="for this session"):
        async with refusing.reply(session_id="t-1"):
            await refusing.driver.after_turn(None)  # the session's one call: used, then refused
    with pytest.raises(HookgateError, match="for this session"):
        async with refusing.reply(session_id="t-1"):
            raise AssertionError("a reply of a spent session must not begin")
    erring = Gate([registry.build("model_call_limit", {"max_per_reply": 1, "on_limit": "error"})])
    with pytest.raises(HookgateError) as raised:
        async with erring.reply():
            await erring.driver.after_turn(None)
    assert raised.value.status == 429 and raised.value.code == "model_call_limit"
    assert "for this reply" in raised.value.message


async def test_a_session_carries_over_between_gates_sharing_a_store(tmp_path: Path) -> None:
    """Two gates on one store (two processes, two replicas): a session's counts go on where
    the other gate's replies left them, whichever way a reply ran."""
    from hookgate.store.sqlite import SQLiteStore

    def gate() -> Gate:
        store = SQLiteStore(f"sqlite:///{tmp_path / 'h.db'}")
        limit = registry.build("model_call_limit", {"max_per_session": 3, "on_limit": "end"})
        return Gate([limit], store=store)

    first, second = gate(), gate()
    for store in (first.driver._store, second.driver._store):
        assert store is not None
        await store.open()
    async with first.reply(session_id="t-1"):
        stops = [await first.driver.after_turn(None) for _ in range(2)]

    async with second.reply(session_id="t-1"):
        stops.append(await second.driver.after_turn(None))
    assert stops == [False, False, True]
    async with second.reply(session_id="t-2") as other:
        assert not await second.driver.after_turn(None) and other.session["model_call_limit"] == {
            "calls": 1
        }


async def test_model_call_limit_wraps_up_before_the_last_call() -> None:
    gate = Gate([registry.build("model_call_limit", {"max_per_reply": 3})])
    async with gate.reply() as ctx:
        assert await gate.driver.after_turn(None) is False and ctx.wrap_up is None
        assert await gate.driver.after_turn(None) is False and ctx.wrap_up is not None
        assert await gate.driver.after_turn(None) is True


async def test_pii_redacts_tool_results_and_restores_later_arguments() -> None:
    policy = registry.build("pii", {"secret": "sdk-test-secret-0123456789"})
    gate = Gate([policy])
    received: list[dict[str, Any]] = []

    async def crm(call: ToolCall) -> ToolResult:
        received.append(dict(call.arguments))
        return ToolResult("Customer: Siobhan O'Brien, siobhan@example.org, 459.502.4057")

    async with gate.reply(session_id="s"):
        first = await gate.driver.tool(ToolCall("lookup", {"id": 7}), crm)
        assert "Siobhan" not in first.content and "459.502.4057" not in first.content
        token = first.content.split("Customer: ")[1].split(",")[0]
        await gate.driver.tool(ToolCall("email", {"to": [token], "note": f"hi {token}"}), crm)
    assert received[1] == {"to": ["Siobhan O'Brien"], "note": "hi Siobhan O'Brien"}
    await gate.aclose()


class Giver(Policy):
    """Gives the agent one tool, ``name``, that doubles a number (and refuses zero)."""

    name: ClassVar[str] = "giver"
    runs_in = frozenset({"sdk"})

    def __init__(self, tool: str = "double", schema: dict[str, Any] | None = None) -> None:
        super().__init__(None)
        params = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        self.tool = PolicyTool(tool, "Doubles n.", schema or params, self.double)

    def tools(self) -> tuple[PolicyTool, ...]:
        return (self.tool,)

    async def double(self, arguments: Any, ctx: ReplyContext) -> str:
        if arguments["n"] == 0:
            raise ToolInputError("n must not be 0")
        return f"{arguments['n'] * 2} for {ctx.reply_id}"


async def test_policy_tools_run_in_the_reply_and_answer_errors_the_model_reads() -> None:
    gate = Gate([Giver()])
    assert [t.name for t in gate.driver.offer_tools()] == ["double"]
    async with gate.reply(reply_id="r-1"):
        assert (await gate.driver.run_tool("double", {"n": 4})) == ToolResult("8 for r-1")
        refused = await gate.driver.run_tool("double", {"n": 0})
        assert refused.error and refused.content == "n must not be 0"
        bad = await gate.driver.run_tool("double", {"n": "four"})
        assert (
            bad.error
            and bad.content == "Invalid arguments for double (n): 'four' is not of type 'integer'"
        )
        missing = await gate.driver.run_tool("double", {})
        assert missing.error and "'n' is a required property" in missing.content
        assert (await gate.driver.run_tool("triple", {"n": 1})).error
    with pytest.raises(RuntimeError, match="no reply is running"):
        await gate.driver.run_tool("double", {"n": 4})


def test_policy_tools_must_have_unique_names_and_valid_schemas() -> None:
    with pytest.raises(ValueError, match="two policies give the agent a tool named 'double'"):
        Gate([Giver(), Giver()])
    with pytest.raises(Exception, match="is not valid under any of the given schemas"):
        Gate([Giver(schema={"type": "object", "properties": {"n": {"type": "integr"}}})])


async def test_tools_no_adapter_offered_are_named_in_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    offered, ignored = Gate([Giver("offered")]), Gate([Giver("ignored")])
    offered.driver.offer_tools()
    with caplog.at_level(logging.WARNING, logger="hookgate"):
        for gate in (offered, ignored, ignored):
            async with gate.reply():
                pass
    (warning,) = [r.getMessage() for r in caplog.records if "adapter has not" in r.getMessage()]
    assert "(ignored)" in warning and "list_tools" in warning


def test_same_yaml_for_proxy_and_sdk(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "providers: {up: {base_url: 'http://127.0.0.1:9/v1', api_key: k}}\n"
        'models: {"*": [{provider: up}]}\n'
        f"store: 'sqlite:///{tmp_path / 'h.db'}'\n"
        "policies:\n"
        "  - fallback: {}\n"
        "  - tool_guard: {deny: ['rm_*']}\n"
        "  - reply_budget: {tokens: 5000}\n"
    )
    caplog.set_level(logging.INFO, logger="hookgate")
    gate = Gate.from_config(path)
    assert [p.name for p in gate.policies] == ["tool_guard", "reply_budget"]
    assert "policy fallback runs in the proxy only; the SDK skips it" in caplog.text
    checked = subprocess.run(
        [sys.executable, "-m", "hookgate", "check", str(path)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_gate_selects_its_policy_set_as_the_proxy_does(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "providers: {up: {base_url: 'http://127.0.0.1:9/v1', api_key: k}}\n"
        'models: {"*": [{provider: up}]}\n'
        f"store: 'sqlite:///{tmp_path / 'h.db'}'\n"
        "policies:\n"
        "  - tool_guard: {deny: ['rm_*']}\n"
        "policy_sets:\n"
        "  planners:\n"
        "    extends: default\n"
        "    match: {agents: [planner], teams: [research]}\n"
        "    policies: [{reply_budget: {tokens: 5000}}]\n"
        "  by_route: {match: {routes: [responses]}}\n"
    )
    planner = Gate.from_config(path, agent="planner", team="research")
    assert planner.policy_set == "planners"
    assert [p.name for p in planner.policies] == ["tool_guard", "reply_budget"]
    other = Gate.from_config(path, agent="planner", team="search")
    assert other.policy_set == "default" and [p.name for p in other.policies] == ["tool_guard"]


def test_importing_the_sdk_imports_no_server() -> None:
    code = (
        "import sys, hookgate.sdk; "
        "print('aiohttp' in sys.modules, 'hookgate.server' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_tool_guard_in_the_proxy_offers_only_allowed_tools(make_proxy: Any, upstream: Any) -> None:
    from tests.conftest import openai_client

    url = make_proxy("policies:\n  - tool_guard: {deny: ['delete_*']}\n")
    tools = [
        {"type": "function", "function": {"name": name, "parameters": {}}}
        for name in ("search", "delete_user")
    ]
    with openai_client(url) as client:
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], tools=tools
        )  # type: ignore[call-overload]
        sent = upstream.last.json()
        assert [t["function"]["name"] for t in sent["tools"]] == ["search"]
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            tools=tools[1:],
            tool_choice={"type": "function", "function": {"name": "delete_user"}},
        )  # type: ignore[call-overload]
        sent = upstream.last.json()
        assert "tools" not in sent and "tool_choice" not in sent


def test_tool_guard_in_the_proxy_filters_every_shape_a_tool_is_offered_in(
    make_proxy: Any, upstream: Any
) -> None:
    """Custom and built-in tools, legacy functions and allowed_tools choices, chat and
    Responses: a denied tool reaches the upstream in none of them."""
    import httpx

    url = make_proxy("policies:\n  - tool_guard: {deny: ['delete_*', 'web_search*']}\n")
    say = [{"role": "user", "content": "hi"}]
    fn = {"type": "function", "function": {"name": "delete_all", "parameters": {}}}
    keep = {"type": "function", "function": {"name": "search", "parameters": {}}}
    cases = [
        # chat: a custom tool, and an allowed_tools choice naming a denied tool among others
        ("chat/completions", {
            "messages": say, "tools": [keep, {"type": "custom", "custom": {"name": "delete_x"}}],
            "tool_choice": {"type": "allowed_tools", "allowed_tools": {
                "mode": "required",
                "tools": [fn, {"type": "function", "function": {"name": "search"}}],
            }},
        }),
        # chat: the legacy functions API
        ("chat/completions", {
            "messages": say, "functions": [{"name": "delete_all"}, {"name": "lookup"}],
            "function_call": {"name": "delete_all"},
        }),
        # Responses: flat function tools, a built-in tool by type, a choice naming one
        ("responses", {
            "input": "hi", "tools": [{"type": "function", "name": "delete_all"},
                                     {"type": "web_search_preview"},
                                     {"type": "function", "name": "search"}],
            "tool_choice": {"type": "allowed_tools", "mode": "auto",
                            "tools": [{"type": "function", "name": "delete_all"}]},
        }),
    ]  # fmt: skip
    for path, body in cases:
        reply = httpx.post(f"{url}/{path}", json={"model": "m", **body})
        assert reply.status_code == 200, reply.text
        sent = upstream.last.json()
        text = str(sent)
        assert "delete_" not in text and "web_search" not in text, sent
        assert "search" in text or "lookup" in text
    first, legacy, responses = (r.json() for r in upstream.requests[-3:])
    assert first["tool_choice"]["allowed_tools"]["tools"] == [
        {"type": "function", "function": {"name": "search"}}
    ]
    assert legacy["functions"] == [{"name": "lookup"}] and "function_call" not in legacy
    assert [t["name"] for t in responses["tools"]] == ["search"]
    assert "tool_choice" not in responses


def test_tool_guard_in_the_proxy_sees_through_case_decoys_and_mcp_lists(
    make_proxy: Any, upstream: Any
) -> None:
    """``Delete_User`` passed a ``delete_*`` deny, a decoy ``function.name`` stood in for a
    Responses tool's own name, and an MCP server's ``allowed_tools`` was not looked at."""
    import httpx

    url = make_proxy("policies:\n  - tool_guard: {deny: ['delete_*']}\n")
    mcp = {"type": "mcp", "server_label": "crm", "server_url": "https://mcp.example.com",
           "require_approval": "never"}  # fmt: skip
    tools = [
        {"type": "function", "name": "Delete_User", "parameters": {}},
        {"type": "function", "name": "delete_user", "function": {"name": "safe"}},
        {**mcp, "allowed_tools": ["delete_user", "find_user"]},
        {**mcp, "server_label": "ops", "allowed_tools": {"tool_names": ["delete_all"]}},
        {"type": "function", "name": "find", "parameters": {}},
    ]
    reply = httpx.post(f"{url}/responses", json={"model": "m", "input": "hi", "tools": tools})
    assert reply.status_code == 200, reply.text
    sent = upstream.last.json()["tools"]
    assert [t.get("name") or t["server_label"] for t in sent] == ["crm", "find"]
    assert sent[0]["allowed_tools"] == ["find_user"]


async def test_a_tool_result_is_normalized_and_keeps_the_frameworks_own() -> None:
    """PraisonAI's NormalizedToolResult fields, whichever framework ran the tool: the gate
    times the run; the framework's own result rides along untouched for its adapter."""
    own = {"forecast": "sunny", "source": "met-office"}

    async def tool(call: ToolCall) -> ToolResult:
        await asyncio.sleep(0.02)
        return ToolResult(str(own), metadata={"artifact": "chart.png"}, raw=own)

    gate = Gate([guard(deny=["send_*"])])
    async with gate.reply() as ctx:
        ran = await gate.driver.tool(ToolCall("get_weather", {}), tool, ctx)
        refused = await gate.driver.tool(ToolCall("send_mail", {}), tool, ctx)
    assert ran.success and ran.raw is own and ran.metadata == {"artifact": "chart.png"}
    assert ran.execution_time_ms is not None and ran.execution_time_ms >= 20
    assert not refused.success and refused.raw is None and refused.execution_time_ms is None


def test_the_gate_is_the_applications_api_and_its_driver_the_adapters() -> None:
    """An application builds a gate, runs replies with it and closes it; everything an
    adapter drives is on ``gate.driver``."""
    public = {name for name in dir(Gate) if not name.startswith("_")}
    assert public == {"from_config", "reply", "decisions", "aclose"}
    assert {"open_reply", "close_reply", "tool", "after_turn", "model_call"} <= set(dir(Driver))


async def test_the_system_prompt_of_a_model_the_driver_does_not_run_carries_the_wrap_up() -> None:
    gate = Gate([])
    async with gate.reply() as ctx:
        assert await gate.driver.system_prompt("Be kind.") == "Be kind."
        ctx.wrap_up = "Answer the user now."
        assert await gate.driver.system_prompt("Be kind.") == "Be kind.\n\nAnswer the user now."


class Ending(Policy):
    """Records how each reply ended: ok, paused or abandoned."""

    name: ClassVar[str] = "ending"
    runs_in = frozenset({"sdk"})

    def __init__(self) -> None:
        super().__init__(None)
        self.ended: list[str] = []

    async def on_reply(self, reply: Reply, ctx: ReplyContext, next: NextReply) -> Any:
        try:
            result = await next(reply, ctx)
        except ReplyPaused:
            self.ended.append("paused")
            raise
        except ReplyAbandoned:
            self.ended.append("abandoned")
            raise
        self.ended.append("ok")
        return result


async def test_aclose_ends_every_open_reply_a_paused_one_as_paused() -> None:
    ending = Ending()
    gate = Gate([ending])  # no store: a paused reply stays open, resumable here only
    driver = gate.driver
    paused = await driver.open_reply()
    await driver.pause(paused)
    assert await driver.resume_reply(paused.reply_id) is paused
    await driver.pause(paused)
    await driver.open_reply()  # its run never reports its end
    done = await driver.open_reply()
    await driver.close_reply(done.reply_id, "answer")
    await gate.aclose()
    assert ending.ended == ["ok", "paused", "abandoned"] and driver._open == {}
    assert "this gate has no store" in str(driver.gone(paused.reply_id))


async def test_a_paused_reply_ends_once_the_store_keeps_it_and_resumes_from_there(
    tmp_path: Path,
) -> None:
    ending = Ending()
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}")
    gate = Gate([ending], store=store, paused_ttl_s=60)
    driver = gate.driver
    ctx = await driver.open_reply()
    ctx.turns = 1
    await driver.pause(ctx)
    assert ending.ended == ["paused"] and driver._open == {}
    resumed = await driver.resume_reply(ctx.reply_id)
    assert resumed is not None and resumed is not ctx
    assert (resumed.reply_id, resumed.turns) == (ctx.reply_id, 1)
    await driver.close_reply(resumed.reply_id, "answer")
    assert ending.ended == ["paused", "ok"]
    gone = str(driver.gone("reply_elsewhere"))
    assert f"the store sqlite:///{tmp_path / 'state.db'} keeps a paused reply for 60 s" in gone
    await gate.aclose()
