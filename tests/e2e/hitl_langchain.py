"""One step of a LangChain agent run that pauses for a human, in a process of its own.

``python -m tests.e2e.hitl_langchain CONFIG CHECKPOINTS THREAD start`` asks the agent to
send an e-mail (hookgate's ``tool_guard`` pauses the call); ``... resume DECISION_JSON``
resumes the run from the checkpoint with a human's decision. Prints the run's result as
JSON: the interrupt's request, or the final answer. The model is at ``$HITL_MODEL_URL``;
the tool appends each e-mail it sends to ``CHECKPOINTS.sent``.
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
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from hookgate.sdk import Gate
from hookgate.sdk.adapters.langchain import HookgateMiddleware


def main(config: str, checkpoints: str, thread: str, step: str, decision: str = "") -> None:
    sent = Path(checkpoints + ".sent")

    @tool
    def send_email(to: str, body: str) -> str:
        """Send an e-mail."""
        with sent.open("a") as out:
            out.write(f"{to}: {body}\n")
        return f"sent to {to}"

    gate = Gate.from_config(config, agent="mailer")
    base_url = os.environ["HITL_MODEL_URL"]
    model = ChatOpenAI(model="gpt-4.1-mini", base_url=base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    with sqlite3.connect(checkpoints, check_same_thread=False) as connection:
        agent = create_agent(
            model,
            tools=[send_email],
            middleware=[HookgateMiddleware(gate)],
            checkpointer=SqliteSaver(connection),
        )
        run: dict[str, Any] = {"configurable": {"thread_id": thread}}
        if step == "start":
            question = {"messages": [{"role": "user", "content": "Mail the boss: I'm late."}]}
            state = agent.invoke(question, run)
        else:
            state = agent.invoke(Command(resume=orjson.loads(decision)), run)
    asyncio.run(gate.aclose())
    interrupts = state.get("__interrupt__") or []
    print(orjson.dumps({
        "interrupt": interrupts[0].value if interrupts else None,
        "answer": state["messages"][-1].content,
    }).decode())  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:])
