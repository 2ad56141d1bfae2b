"""hookgate called as the Gemini API (``/v1beta/``) by the real ``google-genai`` client:
to a Gemini upstream, and by translation to an OpenAI and an Anthropic one, through the
pipeline (pii both ways, streamed too; tool_guard; rate limits), errors in Google's
shape, token counting and the model list."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types

from hookgate.config.loader import load_text
from hookgate.store.sqlite import SQLiteStore
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, TEST_STORE, ProxyFactory
from tests.fakes import Events, FakeUpstream, LoopThread, Status
from tests.gemini_wire import response as gemini_response
from tests.gemini_wire import stream as gemini_stream
from tests.waits import eventually

EMAIL = "jane.doe@example.com"
SHELL = types.FunctionDeclaration(
    name="run_shell_command",
    description="Runs a shell command.",
    parameters_json_schema={"type": "object", "properties": {"command": {"type": "string"}}},
)
TOOLS = [types.Tool(function_declarations=[SHELL])]


def gemini_config(upstream: FakeUpstream, extra: str = "") -> str:
    return (
        "providers:\n"
        f"  google: {{type: gemini, base_url: '{upstream.gemini_base_url}', api_key: 'AIza-up'}}\n"
        f"  gpt: {{base_url: '{upstream.base_url}', api_key: 'sk-up'}}\n"
        f"  claude: {{type: anthropic, base_url: '{upstream.base_url}', api_key: 'sk-ant-up'}}\n"
        "models:\n"
        "  gpt-4o: [{provider: gpt}]\n"
        "  claude-sonnet-4-5: [{provider: claude}]\n"
        '  "*": [{provider: google}]\n'
        f"store: 'sqlite:///{TEST_STORE}'\n"
        f"{extra}"
    )


def client(url: str, key: str = "any-key", api_version: str | None = "v1beta") -> genai.Client:
    """The real client, its ``base_url`` hookgate's root; ``/v1beta`` as Gemini CLI sends
    (``google-genai`` 3 sends ``/v1`` unless told). Keep it in a variable while it is
    used: it closes its connections when it is collected."""
    options = types.HttpOptions(
        base_url=url.removesuffix("/v1"), api_version=api_version, timeout=30_000
    )
    return genai.Client(api_key=key, http_options=options)


def generate(gemini: genai.Client, stream: bool, model: str, contents: Any, **config: Any
             ) -> types.GenerateContentResponse:  # fmt: skip
    """One call, streamed or not; a stream's chunks merged into one response."""
    settings = types.GenerateContentConfig(**config)
    if not stream:
        return gemini.models.generate_content(model=model, contents=contents, config=settings)
    chunks = list(gemini.models.generate_content_stream(model=model, contents=contents,
                                                        config=settings))  # fmt: skip
    parts = [p for c in chunks if c.candidates for p in (c.candidates[0].content.parts or [])]
    last = chunks[-1]
    assert last.candidates is not None
    candidate = last.candidates[0].model_copy(update={"content": types.Content(
        role="model", parts=parts)})  # fmt: skip
    return last.model_copy(update={"candidates": [candidate]})


def text_of(response: types.GenerateContentResponse) -> str:
    parts = response.candidates[0].content.parts if response.candidates else None
    return "".join(p.text or "" for p in parts or [] if not p.thought)


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gpt-4o", "claude-sonnet-4-5"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_round_trip_through_hookgate_keeps_personal_data_from_the_upstream(
    make_proxy: ProxyFactory, upstream: FakeUpstream, model: str, stream: bool
) -> None:
    """The model asks for the shell with the e-mail (a placeholder to it); the tool gets
    the real value; its result goes back redacted; the user reads the real value."""
    url = make_proxy(loaded=load_text(gemini_config(upstream, "policies:\n  - pii: {}\n")))
    gemini = client(url)
    contents: list[Any] = [types.Content(role="user", parts=[
        types.Part(text=f"Send a greeting to {EMAIL} with the shell")])]  # fmt: skip

    generate(gemini, stream, model, contents, tools=TOOLS)
    sent = upstream.last.body.decode()
    assert EMAIL not in sent
    placeholder = _placeholder(sent)
    # a model quoting the prompt in the call's arguments
    upstream.push(synth.Reply(tool_calls=[synth.ToolCall(
        "x", "run_shell_command", f'{{"command": "echo hi {placeholder}"}}')]))  # fmt: skip
    second = generate(gemini, stream, model, contents, tools=TOOLS)
    (call,) = second.function_calls or []
    assert call.args == {"command": f"echo hi {EMAIL}"}  # the tool gets the real value

    upstream.push(synth.Reply(text=f"I greeted {placeholder}."))
    contents += [
        second.candidates[0].content,  # type: ignore[index]
        types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
            id=call.id, name=call.name, response={"output": f"hi {EMAIL}"}))]),
    ]  # fmt: skip
    final = generate(gemini, stream, model, contents, tools=TOOLS)
    sent = upstream.last.body.decode()
    assert EMAIL not in sent
    assert text_of(final) == f"I greeted {EMAIL}."
    assert final.usage_metadata is not None and final.usage_metadata.total_token_count


def _placeholder(sent: str) -> str:
    start = sent.index("<EMAIL_ADDRESS")
    return sent[start : sent.index(">", start) + 1]


def test_a_gemini_upstream_gets_the_call_in_its_own_api(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """The model in the path, the upstream's key (not the client's), the function call's
    id and thought signature given back as Gemini sent them."""
    signature = "CiQBIGEgc2lnbmF0dXJlIG9mIHRob3VnaHQ="
    url = make_proxy(loaded=load_text(gemini_config(upstream)))
    gemini = client(url, key="client-key-not-for-google")
    upstream.push(synth.Reply(
        tool_calls=[synth.ToolCall("x", "run_shell_command", '{"command": "ls"}')],
        thinking="Listing.", signature=signature))  # fmt: skip
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="list files")])]
    first = gemini.models.generate_content(
        model="gemini-2.5-flash", contents=contents,
        config=types.GenerateContentConfig(tools=TOOLS, system_instruction="Be brief.",
                                           max_output_tokens=200),
    )  # fmt: skip
    assert upstream.last.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert upstream.last.headers["x-goog-api-key"] == "AIza-up"
    sent = upstream.last.json()
    assert sent["systemInstruction"] == {"role": "user", "parts": [{"text": "Be brief."}]}
    assert sent["generationConfig"] == {"maxOutputTokens": 200}
    assert sent["tools"][0]["functionDeclarations"][0]["name"] == "run_shell_command"
    model_turn = first.candidates[0].content  # type: ignore[index]
    assert model_turn is not None and model_turn.parts is not None
    assert model_turn.parts[0].thought and model_turn.parts[0].text == "Listing."
    (call,) = first.function_calls or []
    contents += [model_turn, types.Content(role="user", parts=[types.Part(
        function_response=types.FunctionResponse(id=call.id, name=call.name,
                                                 response={"output": "a.txt"}))])]  # fmt: skip
    gemini.models.generate_content(model="gemini-2.5-flash", contents=contents,
                                   config=types.GenerateContentConfig(tools=TOOLS))  # fmt: skip
    replayed = upstream.last.json()["contents"]
    assert replayed[1]["parts"] == [{
        "functionCall": {"name": "run_shell_command", "args": {"command": "ls"}},
        "thoughtSignature": signature,
    }]  # fmt: skip
    assert replayed[2]["parts"][0]["functionResponse"]["response"] == {"output": "a.txt"}


RICH = types.GenerateContentConfig(
    system_instruction=types.Content(role="user", parts=[types.Part(text="Be brief.")]),
    temperature=0.5, top_p=0.9, top_k=40, seed=3, max_output_tokens=500,
    presence_penalty=0.0, frequency_penalty=0.25, stop_sequences=["END"],
    safety_settings=[types.SafetySetting(category=types.HarmCategory.HARM_CATEGORY_HARASSMENT,
                                         threshold=types.HarmBlockThreshold.BLOCK_ONLY_HIGH)],
    thinking_config=types.ThinkingConfig(thinking_budget=3000, include_thoughts=True),
    media_resolution=types.MediaResolution.MEDIA_RESOLUTION_LOW, response_modalities=["TEXT"],
    tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
        name="weather", description="The weather in a city", parameters=types.Schema(
            type=types.Type.OBJECT, properties={"city": types.Schema(type=types.Type.STRING)}),
    )]), *TOOLS],
    tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(
        mode=types.FunctionCallingConfigMode.VALIDATED)),
)  # fmt: skip
"""Settings chat has no field for, or carries only approximately."""


@pytest.mark.parametrize("stream", [False, True])
def test_a_gemini_upstream_gets_what_the_client_sent_apart_from_placeholders(
    make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool
) -> None:
    """The same call straight at the Gemini upstream and through hookgate with pii: the
    upstream gets the same body (``topK``, safety settings, the exact thinking budget,
    OpenAPI ``parameters``, mode ``VALIDATED``, the history's call id and signature...),
    the e-mail address as its placeholder."""
    contents = [
        types.Content(role="user", parts=[types.Part(text=f"Mail {EMAIL} the weather")]),
        types.Content(role="model", parts=[types.Part(
            function_call=types.FunctionCall(id="w1", name="weather", args={"city": "Oslo"}),
            thought_signature=b"signed")]),
        types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
            id="w1", name="weather", response={"output": f"3 degrees, for {EMAIL}"}))]),
    ]  # fmt: skip
    straight = client(upstream.server.url)
    generate(straight, stream, "gemini-2.5-flash", contents, **RICH.model_dump(exclude_none=True))
    sent = upstream.last.json()
    url = make_proxy(loaded=load_text(gemini_config(upstream, "policies:\n  - pii: {}\n")))
    through = client(url)
    generate(through, stream, "gemini-2.5-flash", contents, **RICH.model_dump(exclude_none=True))
    got = upstream.last.body.decode()
    assert EMAIL not in got
    assert json.loads(got.replace(_placeholder(got), EMAIL)) == sent
    assert upstream.last.path == upstream.requests[-2].path
    assert sent["generationConfig"]["topK"] == 40 and sent["safetySettings"]


def test_a_fallback_gets_the_clients_settings_only_on_a_gemini_target(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """The settings ride on the call through a fallback: a Gemini model after a failed
    GPT gets them (the exact thinking budget, though GPT-4o on the route takes none), an
    OpenAI model after a failed Gemini never does."""
    routes = (
        "policies:\n  - fallback: {retries: 0}\n"
        "models:\n"
        "  gpt-then-gemini: [{provider: gpt, model: gpt-4o}, {provider: google, model: g}]\n"
        "  gemini-then-gpt: [{provider: google, model: g}, {provider: gpt, model: gpt-4o}]\n"
    )
    url = make_proxy(loaded=load_text(gemini_config(upstream).replace("models:\n", routes, 1)))
    gemini = client(url)
    unavailable = Status(503, {"error": {"message": "overloaded", "type": "server_error"}})
    settings = {"top_k": 40, "thinking_config": {"thinking_budget": 3000}}

    upstream.push(unavailable)
    generate(gemini, False, "gpt-then-gemini", "hi", **settings)
    sent = upstream.last.json()["generationConfig"]
    assert sent["topK"] == 40
    assert list(sent["thinkingConfig"].values()) == [3000]  # the key as google-genai wrote it

    upstream.push(Status(503, {"error": {"code": 503, "message": "overloaded",
                                         "status": "UNAVAILABLE"}}))  # fmt: skip
    generate(gemini, False, "gemini-then-gpt", "hi", **settings)
    assert upstream.last.path == "/v1/chat/completions"
    assert not {"topK", "top_k", "thinkingConfig", "reasoning_effort"} & set(upstream.last.json())


SEARCH = [
    types.Tool(google_search=types.GoogleSearch()),
    types.Tool(url_context=types.UrlContext()),
]
"""Google's own tools, as Gemini CLI's ``google_web_search`` and ``web_fetch`` ask."""


def grounding(who: str) -> dict[str, Any]:
    """What Gemini reports of a search that names ``who`` (the model's query holds it)."""
    return {
        "groundingMetadata": {
            "webSearchQueries": [f"{who} homepage"],
            "searchEntryPoint": {"renderedContent": f'<div class="chip">{who} homepage</div>'},
            "groundingChunks": [{"web": {"uri": "https://example.com/j", "title": "example.com"}}],
            "groundingSupports": [{
                "segment": {"endIndex": len(f"{who} has a page.".encode()),
                            "text": f"{who} has a page."},
                "groundingChunkIndices": [0], "confidenceScores": [0.9],
            }],
        },
        "urlContextMetadata": {"urlMetadata": [{
            "retrievedUrl": "https://example.com/j",
            "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS",
        }]},
    }  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
def test_googles_own_tools_reach_a_gemini_model_and_what_they_found_comes_back(
    make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool
) -> None:
    """Google Search and URL context go to a model only Gemini serves, as the client sent
    them (the policies see the call without them); the answer's grounding and URL context
    metadata come back on the candidate, the placeholders in them restored (and the
    cited segment's end where its restored text ends)."""
    url = make_proxy(loaded=load_text(gemini_config(upstream, "policies:\n  - pii: {}\n")))
    gemini = client(url)
    ask = f"What does the web say about {EMAIL}?"
    generate(gemini, stream, "gemini-2.5-flash", ask, tools=SEARCH)
    assert upstream.last.json()["tools"] == [{"googleSearch": {}}, {"urlContext": {}}]
    placeholder = _placeholder(upstream.last.body.decode())

    reply = synth.Reply(text=f"{placeholder} has a page.")
    found = grounding(placeholder)
    upstream.push(
        Events(gemini_stream("gemini-2.5-flash", reply, **found)) if stream
        else Status(200, gemini_response("gemini-2.5-flash", reply, **found))
    )  # fmt: skip
    answer = generate(gemini, stream, "gemini-2.5-flash", ask, tools=SEARCH)
    assert EMAIL not in upstream.last.body.decode()
    assert text_of(answer) == f"{EMAIL} has a page."
    (candidate,) = answer.candidates or []
    got = candidate.model_dump(mode="json", by_alias=True, exclude_none=True)
    expected = grounding(EMAIL)
    assert got["groundingMetadata"] == expected["groundingMetadata"]
    assert got["urlContextMetadata"] == expected["urlContextMetadata"]


def test_googles_own_tools_are_refused_for_a_model_another_provider_may_serve(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """GPT, or a fallback to it after Gemini, would not know the tools: a 400 naming
    the tool, and nothing goes upstream."""
    routes = "models:\n  gemini-then-gpt: [{provider: google, model: g}, {provider: gpt}]\n"
    url = make_proxy(loaded=load_text(gemini_config(upstream).replace("models:\n", routes, 1)))
    gemini = client(url)
    for model in ("gpt-4o", "gemini-then-gpt"):
        with pytest.raises(errors.ClientError) as refused:
            generate(gemini, False, model, "news?", tools=SEARCH)
        assert (refused.value.code, refused.value.status) == (400, "INVALID_ARGUMENT")
        assert "tools[0].googleSearch" in (refused.value.message or "")
        assert "Gemini provider" in (refused.value.message or "")
    assert not upstream.requests


def test_an_openai_target_gets_chat_completions(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(gemini_config(upstream)))
    upstream.push(synth.Reply("Hi from GPT."))
    gemini = client(url, api_version=None)  # google-genai 3's default: /v1/models/...
    answer = gemini.models.generate_content(model="gpt-4o", contents="hello")
    assert answer.text == "Hi from GPT."
    assert upstream.last.path == "/v1/chat/completions"
    sent = upstream.last.json()
    assert sent["model"] == "gpt-4o"
    assert sent["messages"] == [{"role": "user", "content": "hello"}]
    assert "authorization" in upstream.last.headers
    assert "x-goog-api-key" not in upstream.last.headers


def test_a_stream_arrives_as_the_upstream_writes_it(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(gemini_config(upstream, "policies:\n  - pii: {}\n")))
    upstream.stream_delay = 0.4
    upstream.push(synth.Reply(f"one two three four {EMAIL}", pieces=4))
    started = time.perf_counter()
    arrivals: list[tuple[float, str]] = []
    gemini = client(url)
    for chunk in gemini.models.generate_content_stream(
        model="gemini-2.5-flash", contents=f"count to four and write {EMAIL}"
    ):
        arrivals.append((time.perf_counter() - started, chunk.text or ""))
    texts = [t for _, t in arrivals if t]
    assert len(texts) >= 3
    assert arrivals[0][0] < arrivals[-1][0] - 0.8  # the first text long before the end
    assert "".join(texts) == f"one two three four {EMAIL}"
    assert EMAIL not in upstream.last.body.decode()


def test_tool_guard_removes_a_denied_function_before_the_model_sees_it(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    extra = "policies:\n  - tool_guard: {deny: [run_shell_command]}\n"
    url = make_proxy(loaded=load_text(gemini_config(upstream, extra)))
    other = types.FunctionDeclaration(name="read_file", description="Reads a file.")
    gemini = client(url)
    gemini.models.generate_content(
        model="gemini-2.5-flash", contents="hi",
        config=types.GenerateContentConfig(tools=[types.Tool(
            function_declarations=[SHELL, other])]),
    )  # fmt: skip
    declared = upstream.last.json()["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declared] == ["read_file"]


def test_errors_have_googles_shape(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    """What google-genai raises for each: the HTTP status and Google's status name."""
    extra = (
        f'keys: {{static: ["{CLIENT_KEY}"]}}\n'
        "policies:\n  - rate_limit: {limits: [{scope: key, rpm: 1}]}\n"
    )
    url = make_proxy(loaded=load_text(gemini_config(upstream, extra)))
    root = url.removesuffix("/v1")
    stranger = client(url, key="not-the-key")
    with pytest.raises(errors.ClientError) as wrong_key:
        stranger.models.generate_content(model="gpt-4o", contents="hi")
    assert (wrong_key.value.code, wrong_key.value.status) == (401, "UNAUTHENTICATED")

    gemini = client(url, key=CLIENT_KEY)
    with pytest.raises(errors.ClientError) as refused:
        gemini.models.generate_content(model="gpt-4o", contents="hi", config={"candidate_count": 2})
    assert (refused.value.code, refused.value.status) == (400, "INVALID_ARGUMENT")
    assert "candidateCount" in (refused.value.message or "")

    upstream.push(Status(503, {"error": {"code": 503, "message": "overloaded",
                                         "status": "UNAVAILABLE"}}))  # fmt: skip
    with pytest.raises(errors.ServerError) as unavailable:
        gemini.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert (unavailable.value.code, unavailable.value.status) == (503, "UNAVAILABLE")
    assert unavailable.value.message == "overloaded"

    with pytest.raises(errors.ClientError) as limited:
        gemini.models.generate_content(model="gpt-4o", contents="hi")
    assert (limited.value.code, limited.value.status) == (429, "RESOURCE_EXHAUSTED")
    (retry,) = limited.value.details["error"]["details"]  # when to retry, as Google says it
    assert retry["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
    assert retry["retryDelay"].endswith("s") and int(retry["retryDelay"][:-1]) >= 1

    unknown = httpx.post(f"{root}/v1beta/models/gpt-4o:embedText?key={CLIENT_KEY}", json={})
    assert unknown.status_code == 404
    assert unknown.json()["error"]["status"] == "NOT_FOUND"
    array = httpx.post(f"{root}/v1beta/models/gpt-4o:streamGenerateContent",
                       headers={"x-goog-api-key": CLIENT_KEY}, json={"contents": []})  # fmt: skip
    assert array.json()["error"] == {
        "code": 400, "status": "INVALID_ARGUMENT",
        "message": "hookgate streams the Gemini API as server-sent events only: add ?alt=sse",
    }  # fmt: skip


def test_count_tokens_and_the_model_list(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    """Tokens are counted by hookgate (nothing goes upstream); the list names the aliases
    and the models behind ``"*"`` as ``models/<id>``; the key may come as ``?key=``."""
    url = make_proxy(
        loaded=load_text(gemini_config(upstream, f'keys: {{static: ["{CLIENT_KEY}"]}}\n'))
    )
    gemini = client(url, key=CLIENT_KEY)
    before = len(upstream.requests)
    counted = gemini.models.count_tokens(model="gpt-4o", contents="one two three four five")
    assert counted.total_tokens is not None and 5 <= counted.total_tokens < 20
    assert len(upstream.requests) == before
    upstream.models = ["gemini-2.5-pro"]
    names = [m.name for m in gemini.models.list()]
    assert {"models/gpt-4o", "models/claude-sonnet-4-5", "models/gemini-2.5-pro"} <= set(names)
    model = gemini.models.get(model="gpt-4o")
    assert model.name == "models/gpt-4o"
    assert "generateContent" in (model.supported_actions or [])
    root = url.removesuffix("/v1")
    assert httpx.get(f"{root}/v1beta/models?key={CLIENT_KEY}").status_code == 200
    assert httpx.get(f"{root}/v1beta/models?key=wrong").json()["error"]["status"] == (
        "UNAUTHENTICATED"
    )


def test_a_gemini_call_is_audited_with_its_session_and_its_routes_policy_set(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread, tmp_path: Path
) -> None:
    """A policy set matched on the route ``generate_content``; the audit record names the
    API, the session of ``x-hookgate-session-id``, the set and its findings (a stream too,
    with the usage Gemini's last chunk reported)."""
    db = tmp_path / "audit.db"
    extra = (
        "policy_sets:\n"
        "  gemini:\n"
        "    match: {routes: [generate_content]}\n"
        "    policies: [{pii: {}}]\n"
    )
    config = gemini_config(upstream, extra).replace(f"sqlite:///{TEST_STORE}", f"sqlite:///{db}")
    url = make_proxy(loaded=load_text(config))
    options = types.HttpOptions(
        base_url=url.removesuffix("/v1"), api_version="v1beta",
        headers={"x-hookgate-session-id": "gemini-session-1"},
    )  # fmt: skip
    gemini = genai.Client(api_key="k", http_options=options)
    upstream.push(synth.Reply("Hello.", input_tokens=12, output_tokens=3))
    answer = gemini.models.generate_content(model="gpt-4o", contents=f"mail {EMAIL}")
    assert answer.sdk_http_response is not None and answer.sdk_http_response.headers
    assert answer.sdk_http_response.headers["x-hookgate-policy-set"] == "gemini"
    upstream.push(synth.Reply("Streamed.", input_tokens=20, output_tokens=4))
    list(gemini.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))

    store = SQLiteStore(f"sqlite:///{db}")
    records: list[dict[str, Any]] = []

    def audited() -> bool:
        records[:] = loop_thread.run(store.audit_records(0))
        return len(records) == 2

    eventually(audited)
    first, second = records
    assert (first["api"], first["model"], first["session"], first["policy_set"]) == (
        "generate_content", "gpt-4o", "gemini-session-1", "gemini",
    )  # fmt: skip
    assert (first["input_tokens"], first["output_tokens"], first["status"]) == (12, 3, 200)
    assert json.loads(first["findings"]) == {"EMAIL_ADDRESS:pseudonymize": 1}
    assert (second["target"], second["input_tokens"], second["output_tokens"]) == (
        "google/gemini-2.5-flash", 20, 4,
    )  # fmt: skip


def test_a_stream_cut_by_the_upstream_ends_with_a_google_error(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """After its first byte a stream that fails is not cut short as if complete: its last
    event is Google's error object."""
    url = make_proxy(loaded=load_text(gemini_config(upstream)))
    blocks = gemini_stream("gemini-2.5-flash", synth.Reply("one two three", pieces=3))
    upstream.push(Events(blocks[:2]))  # no finishReason: the stream stops mid-answer
    root = url.removesuffix("/v1")
    with httpx.stream(
        "POST", f"{root}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        json={"contents": [{"parts": [{"text": "count"}]}]}, timeout=30,
    ) as response:  # fmt: skip
        assert response.status_code == 200
        events = [
            json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")
        ]
    texts = [e["candidates"][0]["content"]["parts"][0]["text"] for e in events[:-1]]
    assert texts == ["one t", "wo th"]
    assert events[-1]["error"]["status"] == "UNAVAILABLE"
    assert events[-1]["error"]["code"] == 502
