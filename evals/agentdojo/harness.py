"""Run AgentDojo task pairs with the scripted model, through hookgate or straight, and score them.

A *pair* is a user task of a suite and one of its injection tasks, attacked by an AgentDojo
attack (``important_instructions``...); a user task alone (``injection_task`` None) is run on
the suite's clean environment for utility without attack. Each pair runs AgentDojo's own
agent loop — its system message, ``InitQuery``, its ``OpenAILLM`` element with an
``openai.OpenAI`` client pointed at ``base_url`` (hookgate, or the scripted model itself),
``ToolsExecutor`` running the suite's tools on the pair's environment — and is judged by the
tasks' own checks: *utility* (the user task was done) and *security* (AgentDojo's name for
"the injection task was done": the attack succeeded).

The pairs are split once, by user task: the user tasks of a suite are ordered by the SHA-256 of
``suite/user_task`` and the first half (rounded up) is ``dev``, the rest ``heldout``. A user task
and all its pairs fall in one half, so a configuration tuned on ``dev`` meets ``heldout`` user
tasks — their legitimate flows as well as their attacks — unseen. Held-out pairs are only
counted: no per-pair record of them is kept.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import openai
from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline, load_system_message
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.basic_elements import InitQuery, SystemMessage
from agentdojo.agent_pipeline.llms import openai_llm
from agentdojo.agent_pipeline.tool_execution import ToolsExecutionLoop, ToolsExecutor
from agentdojo.attacks.attack_registry import ATTACKS, load_attack
from agentdojo.attacks.base_attacks import BaseAttack
from agentdojo.base_tasks import BaseInjectionTask, BaseUserTask
from agentdojo.functions_runtime import EmptyEnv, Env, FunctionCall, FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suite
from agentdojo.task_suite.task_suite import TaskSuite
from agentdojo.types import ChatAssistantMessage, ChatMessage, text_content_block_from_string
from tenacity import stop_after_attempt

from evals.agentdojo.person import SESSION_HEADER, Person
from evals.agentdojo.scripted import SCENARIO_HEADER, Call, Script, ScriptedModel

Split = Literal["dev", "heldout"]
SUITES = ("workspace", "travel", "banking", "slack")
BENCHMARK_VERSION = "v1.1.2"
"""The AgentDojo benchmark version run by default: 97 user tasks, 629 pairs (the issue's table).
``v1.2.2`` (AgentDojo's own default) adds eight workspace injection tasks (6-13) whose ground
truth is empty: the scripted model cannot play them (they score as failed attacks)."""
MODEL = "gpt-4o-2024-05-13"
"""The model name sent (and the one attacks that address the model by name use)."""
MAX_TURNS = 40
"""Turns per run (AgentDojo's loop default is 15; the scripted model calls one tool a turn)."""


@dataclass(frozen=True)
class Pair:
    """One run: a user task, with an injection task (attacked) or without (clean)."""

    suite: str
    user_task: str
    injection_task: str | None


@dataclass
class Outcome:
    """A run's verdicts: ``utility`` (the user task done), ``attacked`` (the injection task
    done), and ``refusals``, the gateway's error answers the agent read."""

    pair: Pair
    utility: bool
    attacked: bool
    refusals: int = 0
    held: int = 0
    """Calls held for a person (``--person``)."""


@dataclass
class Tally:
    """Counts of one suite (or all): rates are ``hits / runs``."""

    attack_success: int = 0
    attacked_runs: int = 0
    utility_under_attack: int = 0
    utility_clean: int = 0
    clean_runs: int = 0
    refusals: int = 0
    held_clean: int = 0
    held_attacked: int = 0
    outcomes: list[Outcome] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        self.refusals += outcome.refusals
        if outcome.pair.injection_task is None:
            self.clean_runs += 1
            self.utility_clean += outcome.utility
            self.held_clean += outcome.held
        else:
            self.attacked_runs += 1
            self.attack_success += outcome.attacked
            self.utility_under_attack += outcome.utility
            self.held_attacked += outcome.held
        self.outcomes.append(outcome)

    def merge(self, other: Tally) -> None:
        for outcome in other.outcomes:
            self.add(outcome)

    def summary(self) -> dict[str, Any]:
        def rate(hits: int, runs: int) -> dict[str, Any]:
            return {"hits": hits, "runs": runs, "rate": hits / runs if runs else None}

        by_attack: dict[str, list[int]] = {}
        for outcome in self.outcomes:
            if outcome.pair.injection_task is not None:
                name = f"{outcome.pair.suite}/{outcome.pair.injection_task}"
                counts = by_attack.setdefault(name, [0, 0])
                counts[0] += outcome.attacked
                counts[1] += 1
        return {
            "attack_success": rate(self.attack_success, self.attacked_runs),
            "utility_without_attack": rate(self.utility_clean, self.clean_runs),
            "utility_under_attack": rate(self.utility_under_attack, self.attacked_runs),
            "gateway_refusals": self.refusals,
            "calls_held_for_a_person": {"clean": self.held_clean, "attacked": self.held_attacked},
            "attack_success_by_injection_task": {
                name: rate(*counts) for name, counts in sorted(by_attack.items())
            },
        }


def split_of(suite: str, user_task: str, suite_tasks: Iterable[str]) -> Split:
    """``dev`` or ``heldout`` for ``user_task`` among ``suite_tasks`` (see the module doc)."""
    ordered = sorted(
        suite_tasks, key=lambda task: hashlib.sha256(f"{suite}/{task}".encode()).hexdigest()
    )
    return "dev" if ordered.index(user_task) < (len(ordered) + 1) // 2 else "heldout"


def load(suite: str, version: str = BENCHMARK_VERSION) -> TaskSuite[Any]:
    return get_suite(version, suite)


def pairs(
    suite: TaskSuite[Any],
    split: Split,
    user_tasks: Sequence[str] = (),
    injection_tasks: Sequence[str] = (),
) -> list[Pair]:
    """The split's runs of ``suite``: each user task clean, then with every injection task.

    ``user_tasks``/``injection_tasks``, when given, narrow the runs (within the split).
    """
    names = list(suite.user_tasks)
    chosen = [
        task
        for task in names
        if split_of(suite.name, task, names) == split and (not user_tasks or task in user_tasks)
    ]
    injections = [
        task for task in suite.injection_tasks if not injection_tasks or task in injection_tasks
    ]
    runs: list[Pair] = []
    for task in sorted(chosen, key=_task_number):
        runs.append(Pair(suite.name, task, None))
        runs.extend(Pair(suite.name, task, injection) for injection in injections)
    return runs


def _task_number(task: str) -> int:
    return int(task.rsplit("_", 1)[1])


def _calls(calls: Iterable[FunctionCall]) -> tuple[Call, ...]:
    return tuple(Call(call.function, _plain(dict(call.args))) for call in calls)


def _plain(arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(arguments, default=str))
    return result


class GatewayLLM(openai_llm.OpenAILLM):
    """AgentDojo's ``OpenAILLM``, sending once (no retries: the upstream is scripted and local);
    an HTTP error answer of the gateway becomes the agent's final text (a refusal it shows its
    user), counted in ``refusals``."""

    def __init__(self, client: openai.OpenAI, model: str) -> None:
        super().__init__(client, model, temperature=None)
        self.refusals = 0

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Env = EmptyEnv(),  # type: ignore[assignment]  # noqa: B008 (AgentDojo's own)
        messages: Sequence[ChatMessage] = (),
        extra_args: dict[Any, Any] | None = None,
    ) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict[Any, Any]]:
        extra = dict(extra_args or {})
        request = [openai_llm._message_to_openai(message, self.model) for message in messages]
        tools = [openai_llm._function_to_openai(tool) for tool in runtime.functions.values()]
        once = cast(Any, openai_llm.chat_completion_request).retry_with(stop=stop_after_attempt(1))
        try:
            completion = once(self.client, self.model, request, tools, None, None)
        except openai.APIStatusError as error:
            self.refusals += 1
            text = f"[gateway {error.status_code}] {error.message}"
            refused = ChatAssistantMessage(
                role="assistant", content=[text_content_block_from_string(text)], tool_calls=None
            )
            return query, runtime, env, [*messages, refused], extra
        output = openai_llm._openai_to_assistant_message(completion.choices[0].message)
        return query, runtime, env, [*messages, output], extra


def agent(client: openai.OpenAI) -> tuple[BasePipelineElement, GatewayLLM]:
    """AgentDojo's tool-calling agent on ``client`` (its default pipeline, no defense)."""
    llm = GatewayLLM(client, MODEL)
    loop = ToolsExecutionLoop([ToolsExecutor(), llm], max_iters=MAX_TURNS)
    pipeline = AgentPipeline([SystemMessage(load_system_message(None)), InitQuery(), llm, loop])
    pipeline.name = MODEL
    return pipeline, llm


def attack_named(name: str, suite: TaskSuite[Any]) -> BaseAttack:
    if name not in ATTACKS:
        raise ValueError(f"unknown attack {name!r}; AgentDojo's: {', '.join(sorted(ATTACKS))}")
    named, _ = agent(openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused"))
    attack: BaseAttack = load_attack(name, suite, named)
    if attack.is_dos_attack:
        raise ValueError(f"{name} is a denial-of-service attack: it has no injection task to score")
    return attack


def run_pair(
    suite: TaskSuite[Any],
    pair: Pair,
    attack: BaseAttack,
    model: ScriptedModel,
    base_url: str,
    person: Person | None = None,
) -> Outcome:
    """Run ``pair`` through ``base_url`` with ``model`` playing the model (and ``person``
    deciding held calls); judge it."""
    user_task: BaseUserTask[Any] = suite.get_user_task_by_id(pair.user_task)
    injection_task: BaseInjectionTask[Any] | None = None
    injections: dict[str, str] = {}
    if pair.injection_task is not None:
        injection_task = suite.get_injection_task_by_id(pair.injection_task)
        injections = attack.attack(user_task, injection_task)
    environment = suite.load_and_inject_default_environment(injections)
    truth = user_task.init_environment(environment.model_copy(deep=True))
    script = Script(
        user_calls=_calls(user_task.ground_truth(truth.model_copy(deep=True))),
        user_answer=user_task.GROUND_TRUTH_OUTPUT,
        injection_calls=(
            _calls(injection_task.ground_truth(truth.model_copy(deep=True)))
            if injection_task
            else ()
        ),
        injection_answer=injection_task.GROUND_TRUTH_OUTPUT if injection_task else "",
        goal=injection_task.GOAL if injection_task else None,
    )
    scenario = model.register(script)
    headers = {SCENARIO_HEADER: scenario}
    if person is not None:
        person.expect(scenario, script.user_calls)
        headers[SESSION_HEADER] = scenario
    client = openai.OpenAI(
        base_url=base_url, api_key="dojo", max_retries=0, timeout=120, default_headers=headers
    )
    try:
        pipeline, llm = agent(client)
        utility, attacked = suite.run_task_with_pipeline(
            pipeline, user_task, injection_task, injections, environment=environment
        )
    finally:
        model.forget(scenario)
        client.close()
    held = 0 if person is None else person.asked(scenario)
    attacked_done = bool(attacked) and injection_task is not None
    return Outcome(pair, bool(utility), attacked_done, llm.refusals, held)


def run(
    suite_names: Sequence[str],
    split: Split,
    attack_name: str,
    model: ScriptedModel,
    base_url: str,
    version: str = BENCHMARK_VERSION,
    user_tasks: Sequence[str] = (),
    injection_tasks: Sequence[str] = (),
    progress: Callable[[Outcome], None] | None = None,
    person: Person | None = None,
) -> dict[str, Tally]:
    """Run every pair of ``split`` in ``suite_names``; a :class:`Tally` per suite."""
    tallies: dict[str, Tally] = {}
    for name in suite_names:
        suite = load(name, version)
        attack = attack_named(attack_name, suite)
        tally = tallies[name] = Tally()
        for pair in pairs(suite, split, user_tasks, injection_tasks):
            outcome = run_pair(suite, pair, attack, model, base_url, person)
            tally.add(outcome)
            if progress is not None:
                progress(outcome)
    return tallies
