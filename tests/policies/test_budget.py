"""Budgets: reserve, then settle — never overspent under concurrency, streams included."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest

from hookgate.config.loader import load_text
from tests.conftest import ProxyFactory, config_text, openai_client
from tests.fakes import FakeUpstream, Status
from tests.spend import PER_REQUEST_USD, PRICE, audited, settled
from tests.waits import eventually


def budget_config(upstream: FakeUpstream, db: Path, limits: str, extra: str = "") -> str:
    return config_text(
        upstream.base_url,
        f"store: 'sqlite:///{db}'\n{PRICE}{extra}policies:\n  - budget: {{limits: [{limits}]}}\n",
        models='  "*": [{provider: up, model: fixed-model}]',
    )


def test_limit_is_enforced_with_headers(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 0.05}")))
    client = openai_client(url)
    remaining = []
    with pytest.raises(openai.RateLimitError) as refused:
        for _ in range(10):
            reply = client.chat.completions.with_raw_response.create(
                model="m", messages=[], max_tokens=5
            )
            remaining.append(float(reply.headers["x-hookgate-budget-remaining-usd"]))
    assert refused.value.code == "budget_exceeded"
    assert "model 'm'" in refused.value.message and "$0.05" in refused.value.message
    assert "has spent its $0.05" in refused.value.message
    with pytest.raises(openai.RateLimitError) as never:  # a worst case beyond the whole limit
        client.chat.completions.create(model="m", messages=[], max_tokens=1000)
    assert (
        "worst case ($1.0" in never.value.message and "fewer output tokens" in never.value.message
    )
    assert remaining == sorted(remaining, reverse=True)
    usd, count = settled(db)
    assert count == len(upstream.requests) and usd == pytest.approx(count * PER_REQUEST_USD)
    assert usd <= 0.05
    metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
    assert 'hookgate_refusals_total{policy="budget",scope="model"} 2.0' in metrics
    assert 'hookgate_budget_remaining_usd{scope="model",value="m",window="total"}' in metrics


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True])
def test_concurrent_requests_never_overspend(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, stream: bool
) -> None:
    db = tmp_path / "spend.db"
    budget = 1.0
    url = make_proxy(
        loaded=load_text(budget_config(upstream, db, f"{{scope: model, usd: {budget}}}"))
    )

    async def fire() -> list[str]:
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=3) as client:

            async def one(i: int) -> str:
                question = [{"role": "user", "content": f"Please answer question {i} briefly."}]
                try:
                    if stream:
                        chunks = await client.chat.completions.create(
                            model="m",
                            messages=question,
                            max_tokens=5,
                            stream=True,  # type: ignore[arg-type]
                        )
                        async for _ in chunks:
                            pass
                    else:
                        await client.chat.completions.create(
                            model="m",
                            messages=question,
                            max_tokens=5,  # type: ignore[arg-type]
                        )
                    return "ok"
                except openai.RateLimitError as exc:
                    return str(exc.code)

            return await asyncio.gather(*[one(i) for i in range(200)])

    outcomes = asyncio.run(fire())
    usd, count = settled(db)
    served = len(upstream.requests)
    assert outcomes.count("ok") == served == count
    assert usd <= budget + 1e-9, "overspent"
    assert usd == pytest.approx(served * PER_REQUEST_USD)
    assert usd >= 0.8 * budget, f"only {usd:.3f} of {budget} usable"


def test_stream_usage_added_upstream_and_hidden_from_client(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 10}")))
    question = [{"role": "user", "content": "How are you today?"}]
    chunks = list(
        openai_client(url).chat.completions.create(model="m", messages=question, stream=True)
    )
    assert upstream.last.json()["stream_options"] == {"include_usage": True}
    assert all(chunk.choices for chunk in chunks)  # no usage-only chunk reached the client
    assert settled(db) == (pytest.approx(PER_REQUEST_USD), 1)
    # the hidden usage still counts everywhere else: metrics read the upstream's events
    metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
    series = (
        'hookgate_tokens_total{agent="",key="",model="m",target="up/fixed-model",team="",'
        'type="output",user=""}'
    )
    assert f"{series} 5.0" in metrics
    # a client that asked for usage gets it
    chunks = list(
        openai_client(url).chat.completions.create(
            model="m", messages=[], stream=True, stream_options={"include_usage": True}
        )
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 15


def test_unpriced_model_is_refused_not_free(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    url = make_proxy(
        loaded=load_text(
            config_text(
                upstream.base_url,
                f"store: 'sqlite:///{tmp_path / 'x.db'}'\n"
                "policies:\n  - budget: {limits: [{scope: model, usd: 1}]}\n",
            )
        )
    )
    response = httpx.post(
        f"{url}/chat/completions", json={"model": "my-local-model", "messages": []}
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "model_unpriced"
    assert upstream.requests == []


def test_spend_report_matches_what_was_served(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    db = tmp_path / "spend.db"
    config = tmp_path / "hookgate.yaml"
    text = budget_config(
        upstream, db, "{scope: model, usd: 100}", extra="keys: {required: false}\n"
    )
    config.write_text(text)
    url = make_proxy(loaded=load_text(text))
    question = [{"role": "user", "content": "How are you today?"}]
    for _ in range(7):
        openai_client(url).chat.completions.create(model="m", messages=question)  # type: ignore[arg-type]
    # A request no budget settled (the upstream failed) is counted from its audit record.
    upstream.push(Status(500, {"error": {"message": "boom"}}))
    with pytest.raises(openai.InternalServerError):
        openai_client(url).chat.completions.create(model="m", messages=question)  # type: ignore[arg-type]
    command = [
        sys.executable,
        "-m",
        "hookgate",
        "spend",
        "--by",
        "model",
        "--json",
        "--config",
        str(config),
    ]
    report = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    rows = [json.loads(line) for line in report.stdout.splitlines()]
    assert rows == [
        {"model": "m", "usd": pytest.approx(7 * PER_REQUEST_USD), "tokens": 105, "requests": 7,
         "unbudgeted": 1}
    ]  # fmt: skip
    plain = [arg for arg in command if arg != "--json"]
    table = subprocess.run(plain, capture_output=True, text=True, timeout=30, check=True).stdout
    assert "0.105000" in table and "total" in table
    assert "(1 requests no budget settled are counted from the audit log)" in table


def test_stream_without_usage_is_charged_by_its_text(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    from hookgate.budgets.tokens import count, prompt_tokens
    from hookgate.wire import synth
    from tests.fakes import Events

    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 10}")))
    text = "A streamed answer from an upstream that ignores include_usage."
    upstream.push(
        Events(list(synth.chat_stream("fixed-model", synth.Reply(text=text), include_usage=False)))
    )
    question = [{"role": "user", "content": "How are you today?"}]
    chunks = openai_client(url).chat.completions.create(model="m", messages=question, stream=True)  # type: ignore[arg-type]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    expected = prompt_tokens("chat.completions", "m", {"messages": question}) + count("m", text)
    assert settled(db) == (pytest.approx(expected * 0.001), 1)
    assert _audit_settles(db) == (pytest.approx(expected * 0.001), expected, 1)


def _audit_settles(db: Path) -> tuple[float, int, int]:
    """The audit log's spend, once its record is written (off the response path)."""
    eventually(lambda: audited(db)[2] > 0)
    return audited(db)


@pytest.mark.parametrize(
    ("path", "body", "served"),
    [
        ("completions", {"prompt": [1] * 5000, "max_tokens": 1}, False),  # token ids
        ("completions", {"prompt": [[1] * 2000, [2] * 2000], "max_tokens": 1}, False),
        ("completions", {"prompt": [[1] * 100], "max_tokens": 1}, True),
        ("embeddings", {"input": [[1] * 2500, [2] * 2500]}, False),
        ("embeddings", {"input": [[1] * 10]}, True),  # no output tokens to reserve
        ("completions", {"prompt": "hi", "max_tokens": 200, "best_of": 20}, False),
        ("completions", {"prompt": "hi", "max_tokens": 200, "best_of": 2, "n": 2}, True),
    ],
)
def test_token_ids_and_best_of_are_reserved_at_what_they_cost(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    tmp_path: Path,
    path: str,
    body: dict[str, object],
    served: bool,
) -> None:
    """Token-id prompts were estimated at 0 tokens and ``best_of`` ignored: a $1 budget
    spent $5. A limit of 3000 tokens holds each of these to its worst case."""
    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, tokens: 3000}")))
    reply = httpx.post(f"{url}/{path}", json={"model": "m", **body}, timeout=10)
    if served:
        assert reply.status_code == 200, reply.text
    else:
        assert reply.status_code == 429, reply.text
        assert reply.json()["error"]["code"] == "budget_exceeded"
        assert upstream.requests == []


def test_a_reply_without_usage_is_charged_for_its_text(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    from hookgate.budgets.tokens import count, prompt_tokens
    from hookgate.wire import synth
    from tests.fakes import Raw

    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 10}")))
    text = "A long answer from an upstream that reports no usage at all. " * 20
    body = synth.chat_completion("fixed-model", synth.Reply(text=text))
    body.pop("usage")
    upstream.push(Raw(json.dumps(body).encode()))
    question = [{"role": "user", "content": "How are you today?"}]
    reply = openai_client(url).chat.completions.create(model="m", messages=question)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == text
    expected = prompt_tokens("chat.completions", "m", {"messages": question}) + count("m", text)
    assert settled(db) == (pytest.approx(expected * 0.001), 1)
    assert _audit_settles(db) == (pytest.approx(expected * 0.001), expected, 1)


@pytest.mark.parametrize("api", ["chat/completions", "responses"])
@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_without_usage_are_charged_for_their_arguments(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, api: str, stream: bool
) -> None:
    """The estimate counted only text: a reply of 2,000 tokens of tool-call arguments and
    no usage was charged nothing for its output."""
    from hookgate.budgets.tokens import count
    from hookgate.wire import synth
    from tests.fakes import Events, Raw

    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 10}")))
    arguments = json.dumps({"content": "word " * 2000})
    reply = synth.Reply(tool_calls=[synth.ToolCall("call_1", "write_file", arguments)], pieces=9)
    if api == "responses":
        events = list(synth.response_stream("fixed-model", reply))
        body = synth.response_object("fixed-model", reply)
        body.pop("usage")  # and the stream's terminal event loses it below
        events = [e.replace(b'"usage"', b'"no_usage"') for e in events]
        question: dict[str, object] = {"input": "write it"}
    else:
        events = list(synth.chat_stream("fixed-model", reply, include_usage=False))
        body = synth.chat_completion("fixed-model", reply)
        body.pop("usage")
        question = {"messages": [{"role": "user", "content": "write it"}]}
    upstream.push(Events(events) if stream else Raw(json.dumps(body).encode()))
    with httpx.stream(
        "POST", f"{url}/{api}", json={"model": "m", "stream": stream, **question}, timeout=10
    ) as response:
        assert response.status_code == 200
        response.read()
    usd, records = settled(db)
    written = count("m", arguments)
    assert records == 1 and written * 0.001 < usd < (written + 40) * 0.001, (usd, written)


def test_a_background_response_is_refused_not_left_unsettled(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """It came back "queued" with no usage and was settled at the prompt's estimate: 5
    background calls cost 1,150,000 tokens upstream and were charged 55."""
    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 10}")))
    body = {"model": "m", "input": "research this", "background": True}
    refused = httpx.post(f"{url}/responses", json=body)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "background_not_budgetable"
    assert upstream.requests == []
    assert httpx.post(f"{url}/responses", json={**body, "background": False}).is_success


def test_counting_a_huge_prompt_holds_up_no_other_request(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Counting ran on the event loop: a 6 MB one-word prompt held every client for 5 s."""
    import concurrent.futures

    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 1e9}")))

    def ask(content: str) -> float:
        started = time.monotonic()
        body = {"model": "m", "messages": [{"role": "user", "content": content}]}
        assert httpx.post(f"{url}/chat/completions", json=body, timeout=60).is_success
        return time.monotonic() - started

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        huge = pool.submit(ask, "a" * 4_000_000)  # seconds of tiktoken
        time.sleep(0.3)
        small = pool.submit(ask, "How are you today?").result()
        # on the loop, the small request waited out most of the huge one's count
        assert small < huge.result() / 3, (small, huge.result())


def test_client_gone_before_the_first_event_releases_the_reservation(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    from tests.fakes import Events

    db = tmp_path / "spend.db"
    # room for one reservation of this request's worst case at a time
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 0.03}")))
    upstream.push(Events([], end="hang"))
    body = {"model": "m", "messages": [{"role": "user", "content": "How are you today?"}],
            "max_tokens": 5, "stream": True}  # fmt: skip
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{url}/chat/completions", json=body, timeout=0.5)
    assert upstream.cancelled.wait(5)
    reply = httpx.post(f"{url}/chat/completions", json={**body, "stream": False}, timeout=5)
    assert reply.status_code == 200, reply.text  # the abandoned reservation was released
    assert settled(db) == (pytest.approx(PER_REQUEST_USD), 1)


@pytest.mark.parametrize("ending", ["client hangs up", "upstream cut", "id lines"])
def test_a_stream_that_produced_output_is_charged_however_it_ends(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, ending: str
) -> None:
    """Reading a whole answer and leaving before ``[DONE]``, an upstream that fails after
    its output, or a ``[DONE]`` block with an ``id:`` line: each once cost nothing."""
    from hookgate.budgets.tokens import count, prompt_tokens
    from hookgate.wire import synth
    from tests.fakes import Events

    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 10}")))
    text = "The whole answer, read before the stream ends."
    events = list(synth.chat_stream("fixed-model", synth.Reply(text=text), include_usage=False))
    done = events.pop()
    assert done == b"data: [DONE]\n\n"
    if ending == "client hangs up":
        upstream.push(Events(events, end="hang"))  # the terminal event never comes
    elif ending == "upstream cut":
        upstream.push(Events(events))  # closes without it
    else:
        upstream.push(Events([b"id: %d\n" % i + e for i, e in enumerate([*events, done])]))
    question = [{"role": "user", "content": "How are you today?"}]
    body = {"model": "m", "messages": question, "stream": True}
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=10) as response:
        got = ""
        for line in response.iter_lines():
            data = line.removeprefix("data: ")
            if line.startswith("data: {"):
                chunk = json.loads(data)
                got += "".join(c["delta"].get("content") or "" for c in chunk["choices"])
                if any(c.get("finish_reason") for c in chunk["choices"]):
                    break  # everything read; leave now
    assert got == text
    expected = prompt_tokens("chat.completions", "m", {"messages": question}) + count("m", text)
    eventually(lambda: settled(db)[1] > 0)  # the proxy settles as it sees the client go
    assert settled(db) == (pytest.approx(expected * 0.001), 1)
    # the audit log (what `hookgate spend` reads) says what the budget charged
    assert _audit_settles(db) == (pytest.approx(expected * 0.001), expected, 1)


def test_a_messages_stream_cut_before_its_final_usage_is_charged_for_what_it_streamed(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """``message_start`` reports the input and one output token; the count of the output
    comes only with ``message_delta``. Cut before it, the input is charged as reported and
    the output by what was streamed, not as one token."""
    from hookgate.budgets.tokens import count
    from hookgate.wire import synth
    from tests.fakes import Events

    db = tmp_path / "spend.db"
    config = (
        f"providers: {{claude: {{type: anthropic, base_url: '{upstream.base_url}', api_key: k}}}}\n"
        'models: {"*": [{provider: claude, model: fixed-model}]}\n'
        f"store: 'sqlite:///{db}'\n{PRICE}"
        "policies:\n  - budget: {limits: [{scope: model, usd: 10}]}\n"
    )
    url = make_proxy(loaded=load_text(config))
    text = "A long answer, cut before the model said how long it was, " * 5
    events = list(synth.message_stream("fixed-model", synth.Reply(text=text, input_tokens=40)))
    cut = [e for e in events if b"message_delta" not in e and b"message_stop" not in e]
    upstream.push(Events(cut))
    body = {"model": "m", "max_tokens": 500, "stream": True,
            "messages": [{"role": "user", "content": "Tell me."}]}  # fmt: skip
    with httpx.stream("POST", f"{url}/messages", json=body, timeout=10) as response:
        assert b"".join(response.iter_bytes()).count(b"text_delta") > 1
    expected = 40 + count("m", text)
    assert settled(db) == (pytest.approx(expected * 0.001), 1)


def test_a_translated_stream_cut_before_its_usage_is_charged_its_prompt_too(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """A Messages client on a chat server: the translated message_start states no usage
    (the chat stream has none yet), so a cut there is charged by estimate, prompt included."""
    from hookgate.budgets.tokens import count
    from hookgate.wire import synth
    from tests.fakes import Events

    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(budget_config(upstream, db, "{scope: model, usd: 10}")))
    text = "Half of an answer that never finishes, " * 4
    events = list(synth.chat_stream("fixed-model", synth.Reply(text=text), include_usage=False))
    upstream.push(Events([e for e in events if b'finish_reason":"stop' not in e][:-1]))
    question = "Tell me a long story about " + "many things " * 50
    body = {"model": "m", "max_tokens": 500, "stream": True,
            "messages": [{"role": "user", "content": question}]}  # fmt: skip
    with httpx.stream("POST", f"{url}/messages", json=body, timeout=10) as response:
        b"".join(response.iter_bytes())
    usd, rows = settled(db)
    assert rows == 1 and usd * 1000 > count("m", question) + count("m", text) / 2
