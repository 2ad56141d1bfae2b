"""The Gemini API's routes (``/v1beta/``): hookgate called as Gemini, by Gemini CLI
(``GOOGLE_GEMINI_BASE_URL``) and the ``google-genai`` SDKs (``base_url``).

* ``POST /v1beta/models/{model}:generateContent`` and
  ``:streamGenerateContent?alt=sse`` (and the same under ``/v1/models/``, where
  ``google-genai`` 3 sends them unless told ``api_version="v1beta"``): the request is
  translated to Chat Completions (:mod:`hookgate.wire.translate.gemini_to_chat`) and
  run through the pipeline as any chat call is (the policies see it in that shape: pii
  both ways, budgets, tool_guard, tracing, audit, sessions), routed by the model named
  in the path as the ``models`` section says; a Gemini target gets it back in its own API
  (:mod:`hookgate.wire.translate.chat_to_gemini`) with what chat cannot carry put back
  (:mod:`hookgate.wire.translate.gemini_native`: a Gemini model is sent what the client
  sent, apart from what the policies changed), an Anthropic one as Messages, an OpenAI
  one as it is. The answer, its stream and its errors come back in Gemini's
  shapes. A stream without ``alt=sse`` (Gemini's JSON array) is refused: Gemini CLI and
  the SDKs ask for SSE. Google's own tools (``googleSearch``, ``urlContext``: Gemini CLI's
  ``google_web_search`` and ``web_fetch``) go through when every target of the model is
  a Gemini provider, and are refused (400) when any is not; what they report
  (``groundingMetadata``, ``urlContextMetadata``) comes back on the candidate.
* ``POST /v1beta/models/{model}:countTokens``: hookgate's count of the prompt
  (``{"totalTokens"}``, the budget's tiktoken estimate, ``x-hookgate-token-count:
  estimated``), whatever the target: nothing goes upstream.
* ``GET /v1beta/models`` and ``GET /v1beta/models/{model}``: the models of ``GET
  /v1/models`` (the aliases, and behind ``"*"`` the providers' own) as Gemini model
  objects, those the caller's key may use.

The client's key comes in ``x-goog-api-key`` or ``?key=`` and is checked like any
client credential (:func:`hookgate.server.auth.bearer`). Every error has Google's shape,
``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

from hookgate.budgets import tokens
from hookgate.errors import InvalidRequest, NotFound
from hookgate.pipeline.types import JsonBody, ModelCall, Target
from hookgate.server.appkeys import GRANTS, HOLDER
from hookgate.server.auth import authenticate, check_model
from hookgate.server.calls import MAX_MODEL_CHARS
from hookgate.server.routes import Ingress, model_call, read_json
from hookgate.server.runtime import Runtime
from hookgate.wire import models
from hookgate.wire.translate import gemini_native, gemini_to_chat

_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]


def add_routes(app: web.Application) -> None:
    """Register the Gemini API's routes on ``app``, before the relay of other ``/v1/*``
    paths (a model method under ``/v1`` is the Gemini API's, never relayed)."""
    app.router.add_post("/v1beta/models/{target:[^/]+}", _post)
    app.router.add_post("/v1/models/{target:[^/:]+:[A-Za-z]+}", _post)
    app.router.add_get("/v1beta/models", list_models)
    app.router.add_get("/v1beta/models/{model:[^/:]+}", get_model)


def _split(request: web.Request) -> tuple[str, str]:
    """``(model, method)`` of ``.../models/{model}:{method}``; a 404 for anything else."""
    model, colon, method = request.match_info["target"].rpartition(":")
    if not colon or method not in _METHODS:
        raise NotFound(f"Unknown request URL: {request.method} {request.path}.")
    if not model or len(model) > MAX_MODEL_CHARS or not model.isprintable():
        raise InvalidRequest(
            f"the model in the URL must be a printable name of at most {MAX_MODEL_CHARS} "
            "characters",
            param="model",
        )
    return model, method


async def _post(request: web.Request) -> web.StreamResponse:
    model, method = _split(request)
    if method == "countTokens":
        return await count_tokens(request, model)
    stream = method == "streamGenerateContent"
    if stream and request.query.get("alt") != "sse":
        raise InvalidRequest(
            "hookgate streams the Gemini API as server-sent events only: add ?alt=sse",
            param="alt",
        )

    async def read(request: web.Request, runtime: Runtime) -> ModelCall:
        body = await read_json(request, runtime)
        targets = runtime.router.targets(model)
        chat = gemini_to_chat.request(body, model=model, stream=stream,
                                      reasoning=_all_reason(targets, model),
                                      google_tools=_all_gemini(runtime, targets))  # fmt: skip
        return ModelCall(
            api="chat.completions",
            payload=JsonBody.from_data(chat),
            model=model,
            stream=stream,
            targets=targets,
            headers=runtime.forward(request.headers),
            gemini=gemini_native.of(body, chat),
        )

    ingress = Ingress(
        runs="chat.completions",
        read=read,
        answer=lambda body, name: gemini_to_chat.response(body, model=name),
        stream=lambda name: gemini_to_chat.StreamTranslator(model=name),
    )
    return await model_call(request, "generate_content", ingress)


def _all_reason(targets: Sequence[Target], model: str) -> bool:
    """Whether every target is known to reason (the shipped table, or its ``reasoning``),
    so a thinking budget may be asked of whichever serves the call."""
    return all(
        models.limits_of(t.model or model, reasoning=t.reasoning).reasoning is True for t in targets
    )


def _all_gemini(runtime: Runtime, targets: Sequence[Target]) -> bool:
    """Whether every target is a Gemini provider's, so Google's own tools may go to
    whichever serves the call (a fallback takes only the route's targets)."""
    providers = runtime.config.providers
    return all(providers[t.provider].type == "gemini" for t in targets)


async def count_tokens(request: web.Request, model: str) -> web.Response:
    """``:countTokens``: the prompt of ``contents`` (or of a whole
    ``generateContentRequest``) counted as the budget counts it."""
    runtime = request.app[HOLDER].current
    caller = await authenticate(request, runtime, request.app[GRANTS])
    check_model(caller, model)
    runtime.router.targets(model)  # a 404 for a model no route serves
    body = await read_json(request, runtime)
    inner = body.get("generateContentRequest")
    if isinstance(inner, Mapping):
        body = dict(inner)
    chat = gemini_to_chat.request(body, model=model, stream=False, reasoning=False,
                                  google_tools=True)  # fmt: skip
    count = tokens.prompt_tokens("chat.completions", model, chat)
    return web.json_response(
        {"totalTokens": count}, headers={"x-hookgate-token-count": "estimated"}
    )


def _model_object(model: str) -> dict[str, Any]:
    return {
        "name": f"models/{model}",
        "baseModelId": model,
        "version": "hookgate",
        "displayName": model,
        "description": "",
        "supportedGenerationMethods": list(_METHODS),
    }


async def list_models(request: web.Request) -> web.Response:
    """``GET /v1beta/models``: see the module docstring."""
    runtime = request.app[HOLDER].current
    caller = await authenticate(request, runtime, request.app[GRANTS])
    listed = await runtime.models.models()
    names = [m["id"] for m in listed if isinstance(m.get("id"), str) and caller.allows(m["id"])]
    return web.json_response({"models": [_model_object(name) for name in names]})


async def get_model(request: web.Request) -> web.Response:
    """``GET /v1beta/models/{model}``: the model when a route serves it and the caller's
    key may use it."""
    runtime = request.app[HOLDER].current
    model = request.match_info["model"]
    caller = await authenticate(request, runtime, request.app[GRANTS])
    check_model(caller, model)
    runtime.router.targets(model)
    return web.json_response(_model_object(model))
