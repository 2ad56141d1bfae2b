"""The application API of the SDK: :class:`Gate`.

An application builds a gate from the proxy's YAML and hands it to the adapter of its
framework (:mod:`hookgate.sdk.adapters`), which drives the policies from the framework's
positions through :attr:`Gate.driver` (:class:`~hookgate.sdk.driver.Driver`, the
adapters' API). Without a framework, :meth:`Gate.reply` runs a block as one reply, in
which the model requests of a governed ``openai`` client (:mod:`hookgate.sdk.client`)
run through the policies. Importing this module imports neither the server nor aiohttp.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from hookgate.pipeline.agent import ReplyContext
from hookgate.pipeline.hooks import Policy
from hookgate.sdk.driver import Driver
from hookgate.store.base import Store
from hookgate.store.state import STATE_TTL_S

log = logging.getLogger("hookgate")


class Gate:
    """The SDK policies of one config (those whose ``runs_in`` includes ``"sdk"``),
    composed once. Safe to share between replies and between adapters."""

    def __init__(
        self,
        policies: Sequence[Policy],
        *,
        agent: str = "agent",
        store: Store | None = None,
        paused_ttl_s: float = STATE_TTL_S,
    ) -> None:
        self.policies = tuple(p for p in policies if "sdk" in p.runs_in)
        for policy in policies:
            if "sdk" not in policy.runs_in:
                log.info("policy %s runs in the proxy only; the SDK skips it", policy.name)
        self.agent = agent
        """The agent's name in traces, where a reply names none."""
        self.policy_set = "default"
        """The policy set of the config the gate was built from (:meth:`from_config`)."""
        self.driver = Driver(self.policies, agent=agent, store=store, paused_ttl_s=paused_ttl_s)
        """What adapters call (:mod:`hookgate.sdk.driver`)."""

    @classmethod
    def from_config(
        cls,
        path: str | Path,
        *,
        agent: str = "agent",
        team: str | None = None,
        user: str | None = None,
        key: str | None = None,
        model: str | None = None,
    ) -> Gate:
        """A gate for the SDK policies of a hookgate YAML file (the proxy's format).

        The policy set is chosen as the proxy chooses it (see
        :mod:`hookgate.config.policy_sets`), from what the gate knows: the agent's name
        and the ``team``, ``user``, ``key`` id and ``model`` given (a set that matches on
        something not given, or on routes, is not chosen). :attr:`policy_set` names it.
        Policies that run only in the proxy are skipped with a log line. The file's store
        keeps the replies paused for a human, for ``sdk.paused_ttl_s``. Raises
        :class:`~hookgate.config.loader.ConfigError` listing every problem of the file.
        """
        from hookgate.config.loader import load_file
        from hookgate.config.policy_sets import RequestFacts, Selector
        from hookgate.sdk.services import sdk_services

        loaded = load_file(str(path))
        facts = RequestFacts(key=key, team=team, user=user, model=model, agent=agent)
        chosen = Selector(loaded.config.policy_sets, loaded.sets).select(facts)
        policies = loaded.sets[chosen.name]
        services = sdk_services(loaded.config)
        for policy in policies:
            policy.attach(services)
        gate = cls(
            policies,
            agent=agent,
            store=services.store,
            paused_ttl_s=loaded.config.sdk.paused_ttl_s,
        )
        gate.policy_set = chosen.name
        log.info("hookgate: agent %s gets policy set %s (%s)", agent, chosen.name, chosen.reason)
        return gate

    @asynccontextmanager
    async def reply(
        self,
        *,
        agent: str | None = None,
        input: Any = None,
        session_id: str | None = None,
        reply_id: str | None = None,
    ) -> AsyncIterator[ReplyContext]:
        """``async with gate.reply(...) as ctx:`` — the block is one agent reply, current
        in it (and in the tasks it starts): every policy's ``on_reply`` runs around it,
        and a governed client's model requests in it run through the model-level hooks.
        An adapter opens and closes its framework's replies itself."""
        driver = self.driver
        ctx = await driver.open_reply(
            agent=agent, input=input, session_id=session_id, reply_id=reply_id
        )
        with driver.current(ctx):
            try:
                yield ctx
            except BaseException as exc:
                await driver.close_reply(ctx.reply_id, error=exc)
                raise
            else:
                await driver.close_reply(ctx.reply_id)

    async def decisions(self, key: str) -> dict[str, Any] | None:
        """What a person decided for the reply paused under ``key`` (its reply id, or its
        session: LangGraph's ``thread_id``), in LangChain's resume shape, for
        ``agent.invoke(Command(resume=await gate.decisions(thread_id)), config)``; None
        while a call still waits (see :mod:`hookgate.sdk.approvals`). Raises
        ``LookupError`` when nothing is kept under ``key`` (or the gate has no store)."""
        if self.driver.approvals is None:
            raise LookupError("hookgate: this gate has no store, so it keeps no approvals")
        return await self.driver.approvals.decisions(key)

    async def aclose(self) -> None:
        """End the replies still open (as an error, or as paused: see
        :meth:`Driver.end_replies <hookgate.sdk.driver.Driver.end_replies>`) while the
        policies' exporters still run, then close every policy (exporters, pools) and the
        store, and stop the loop of the synchronous hooks."""
        await self.driver.end_replies()
        for policy in self.policies:
            await policy.aclose()
        await self.driver.aclose()
