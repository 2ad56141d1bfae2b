"""One step of a LangChain agent run that pauses for a human, in a process of its own.

``python -m tests.e2e.hitl_langchain CONFIG CHECKPOINTS THREAD start`` asks the agent to
send e-mails and delete a report (hookgate's ``tool_guard`` pauses those calls);
``... resume DECISIONS_JSON`` resumes the run from the checkpoint with a human's decisions;
``... decided`` resumes it with those recorded in hookgate's store (``gate.decisions``:
a person decided the listed approvals through the admin API).
Prints the run's result as JSON: the interrupts' requests, or the final answer. The model
is at ``$HITL_MODEL_URL``; with ``$HITL_ASYNC`` set the agent runs with ``ainvoke`` (and
LangGraph's async SQLite checkpointer), else with ``invoke``. Each tool appends what it did
to ``CHECKPOINTS.sent``.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import orjson
from langchain.agents import create_agent
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

from hookgate.sdk import Gate
from hookgate.sdk.adapters.langchain import HookgateMiddleware

QUESTION = {"messages": [{"role": "user", "content": "Mail the boss: I'm late."}]}


def tools(sent: Path) -> list[BaseTool]:
    @tool
    def send_email(to: str, body: str) -> str:
        """Send an e-mail."""
        with sent.open("a") as out:
            out.write(f"{to}: {body}\n")
        return f"sent to {to}"

    @tool
    def delete_report(name: str) -> str:
        """Delete a report."""
        with sent.open("a") as out:
            out.write(f"deleted {name}\n")
        return f"deleted {name}"

    return [send_email, delete_report]


def main(config: str, checkpoints: str, thread: str, step: str, decision: str = "") -> None:
    gate = Gate.from_config(config, agent="mailer")
    base_url = os.environ["HITL_MODEL_URL"]
    model = ChatOpenAI(model="gpt-4.1-mini", base_url=base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    run: dict[str, Any] = {"configurable": {"thread_id": thread}}
    middleware = [HookgateMiddleware(gate)]
    question: Any = QUESTION
    if step == "resume":
        question = Command(resume=orjson.loads(decision))
    elif step == "decided":
        decided = gate.driver.sync.run(gate.decisions(thread))
        assert decided is not None, "no decision is recorded yet"
        question = Command(resume=decided)
    if os.environ.get("HITL_ASYNC"):

        async def arun() -> dict[str, Any]:
            async with AsyncSqliteSaver.from_conn_string(checkpoints) as saver:
                agent = create_agent(
                    model, tools(Path(checkpoints + ".sent")), middleware=middleware,
                    checkpointer=saver,
                )  # fmt: skip
                state = dict(await agent.ainvoke(question, run))
            await gate.aclose()
            return state

        state = asyncio.run(arun())
    else:
        with sqlite3.connect(checkpoints, check_same_thread=False) as connection:
            agent = create_agent(
                model, tools(Path(checkpoints + ".sent")), middleware=middleware,
                checkpointer=SqliteSaver(connection),
            )  # fmt: skip
            state = agent.invoke(question, run)
        asyncio.run(gate.aclose())
    interrupts = state.get("__interrupt__") or []
    print(orjson.dumps({
        "interrupts": [i.value for i in interrupts],
        "answer": state["messages"][-1].content,
    }).decode())  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:])
