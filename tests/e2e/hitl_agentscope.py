"""One step of an AgentScope agent reply that parks for a user's confirmation, in a process
of its own.

``python -m tests.e2e.hitl_agentscope CONFIG STATE start`` asks the agent to send an
e-mail (hookgate's ``tool_guard`` asks for confirmation) and saves ``agent.state`` to
STATE; ``... resume DECISION_JSON`` loads it and answers with a ``UserConfirmResultEvent``
(``{"confirmed": bool, "args": {...}}``, the arguments edited when given). Prints JSON: the
confirmation asked for, or the final answer. The model is at ``$HITL_MODEL_URL``; the tool
appends each e-mail it sends to ``STATE.sent``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import orjson
from agentscope.agent import Agent, ReActConfig
from agentscope.credential import OpenAICredential
from agentscope.event import ConfirmResult, RequireUserConfirmEvent, UserConfirmResultEvent
from agentscope.message import Msg, UserMsg
from agentscope.model import OpenAIChatModel
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.state import AgentState
from agentscope.tool import FunctionTool, Toolkit

from hookgate.sdk import Gate
from hookgate.sdk.adapters.agentscope import HookgateMiddleware


def main(config: str, state_path: str, step: str, decision: str = "") -> None:
    saved = Path(state_path)
    state = AgentState.model_validate_json(saved.read_bytes()) if step == "resume" else None
    asked = orjson.loads(saved.with_suffix(".ask").read_bytes()) if step == "resume" else None
    out, state = asyncio.run(run(config, Path(state_path + ".sent"), state, asked, decision))
    saved.write_text(state.model_dump_json())
    if out["ask"] is not None:
        saved.with_suffix(".ask").write_bytes(orjson.dumps(out["ask"]))
    print(orjson.dumps(out).decode())


async def run(
    config: str, sent: Path, state: AgentState | None, asked: Any, decision: str
) -> tuple[dict[str, Any], AgentState]:
    """Run the reply (a new one, or the parked one the user confirms)."""

    def send_email(to: str, body: str) -> str:
        """Send an e-mail.

        Args:
            to (`str`):
                The recipient.
            body (`str`):
                The text.
        """
        with sent.open("a") as out:
            out.write(f"{to}: {body}\n")
        return f"sent to {to}"

    gate = Gate.from_config(config, agent="mailer")
    model = OpenAIChatModel(
        credential=OpenAICredential(api_key="k", base_url=os.environ["HITL_MODEL_URL"]),
        model="gpt-4o-mini",
        stream=False,
        max_retries=0,
    )
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="the tool allows it")
    agent = Agent(
        name="mailer",
        system_prompt="You send e-mails.",
        model=model,
        toolkit=Toolkit(tools=[FunctionTool(send_email, permission=allow)]),  # type: ignore[arg-type]
        react_config=ReActConfig(max_iters=4),
        middlewares=[HookgateMiddleware(gate)],
        state=state,
    )
    out: dict[str, Any] = {"ask": None, "answer": None}
    if asked is None:
        message: Any = UserMsg(name="user", content="Mail the boss: I'm late.")
    else:
        wanted = orjson.loads(decision)
        block = agent.state.context[-1].get_content_blocks("tool_call")[-1]
        if "args" in wanted:
            block = block.model_copy(update={"input": orjson.dumps(wanted["args"]).decode()})
        message = UserConfirmResultEvent(
            reply_id=asked["reply_id"],
            confirm_results=[ConfirmResult(confirmed=wanted["confirmed"], tool_call=block)],
        )
    async for event in agent.reply_stream(message, yield_final_msg=True):
        if isinstance(event, RequireUserConfirmEvent):
            (call,) = event.tool_calls
            out["ask"] = {"reply_id": event.reply_id, "name": call.name,
                          "input": orjson.loads(call.input)}  # fmt: skip
        elif isinstance(event, Msg):
            out["answer"] = event.get_text_content()
    await model.client.close()
    await gate.aclose()
    return out, agent.state


if __name__ == "__main__":
    main(*sys.argv[1:])
