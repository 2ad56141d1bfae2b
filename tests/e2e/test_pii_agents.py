"""The pii policy under real agent frameworks: tools receive real values, the model never does.

The fake model answers the user's message with a call of ``lookup_customer`` whose
argument quotes the message as the model saw it (placeholders); hookgate restores the
values, the framework runs the tool with them, the tool's result (real values again) is
redacted on its way to the model, and the model's final text is restored for the agent.
LangChain (chat and Responses, streamed or not, no ``stream_options``) and AgentScope
(content-part arrays with a ``name`` on every message) are covered.
"""

from __future__ import annotations

import pytest
from agentscope.agent import Agent, ReActConfig
from agentscope.credential import OpenAICredential
from agentscope.message import UserMsg
from agentscope.model import OpenAIChatModel
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import Echo, FakeUpstream

NAME, EMAIL, PHONE = "Siobhan O'Brien", "siobhan.obrien@example.org", "459.502.4057"
QUESTION = f"Find the customer {NAME}, e-mail {EMAIL}, phone {PHONE}."
POLICY = "policies:\n  - pii: {secret: 'e2e-test-secret-0123456789'}\n"


def lookup(text: str, calls: list[str]) -> str:
    calls.append(text)
    return f"found {NAME} <{EMAIL}>, account 42"


def assert_upstream_clean(upstream: FakeUpstream) -> None:
    assert len(upstream.requests) == 2
    for recorded in upstream.requests:
        for value in (NAME, EMAIL, PHONE, NAME.replace("'", "\\u0027")):
            assert value.encode() not in recorded.body


@pytest.mark.parametrize("responses_api", [False, True])
@pytest.mark.parametrize("streaming", [False, True])
def test_langchain_agent(
    make_proxy: ProxyFactory, upstream: FakeUpstream, streaming: bool, responses_api: bool
) -> None:
    calls: list[str] = []

    @tool
    def lookup_customer(text: str) -> str:
        """Look a customer up."""
        return lookup(text, calls)

    model = ChatOpenAI(
        model="gpt-4.1-mini",
        base_url=make_proxy(POLICY),
        api_key=CLIENT_KEY,
        max_retries=0,  # type: ignore[arg-type]
        streaming=streaming,
        use_responses_api=responses_api,
    )
    agent = create_agent(model, tools=[lookup_customer], system_prompt=f"Assist {NAME}.")
    upstream.push(Echo(tool="lookup_customer", pieces=4))
    result = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    assert calls == [f"You said: {QUESTION}"]  # the tool got the real values
    final = result["messages"][-1]
    assert isinstance(final, AIMessage)
    assert final.text == f"The tool said: found {NAME} <{EMAIL}>, account 42"
    assert_upstream_clean(upstream)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
async def test_agentscope_agent(
    make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool
) -> None:
    calls: list[str] = []

    def lookup_customer(text: str) -> str:
        """Look a customer up.

        Args:
            text (`str`):
                What to look for.
        """
        return lookup(text, calls)

    model = OpenAIChatModel(
        credential=OpenAICredential(api_key=CLIENT_KEY, base_url=make_proxy(POLICY)),
        model="gpt-4o-mini",
        stream=stream,
        max_retries=0,
    )
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed in test")
    agent = Agent(
        name="assistant",
        system_prompt=f"You assist {NAME}.",
        model=model,
        toolkit=Toolkit(tools=[FunctionTool(lookup_customer, permission=allow)]),  # type: ignore[arg-type]
        react_config=ReActConfig(max_iters=3),
    )
    # AgentScope appends a user message of its own (a time reminder): echo the one before.
    upstream.push(Echo(tool="lookup_customer", pieces=4, user=-2))
    try:
        reply = await agent.reply(UserMsg(name="user", content=QUESTION))
    finally:
        await model.client.close()
    assert calls == [f"You said: {QUESTION}"]
    assert reply.get_text_content() == f"The tool said: found {NAME} <{EMAIL}>, account 42"
    assert_upstream_clean(upstream)
