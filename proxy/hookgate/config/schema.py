"""The YAML config file as strict pydantic models.

Every model forbids unknown keys, so a typo is an error with a path rather than a
setting silently ignored. Policy entries are validated here only for shape (one key
per entry); each policy's own ``Config`` model validates its settings in
:mod:`hookgate.pipeline.registry`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    field_validator,
    model_validator,
)

DEFAULT_PORT = 8787
MAX_WORKERS = 256
"""The most worker processes ``server.workers`` may ask for."""
OpenAIApi = Literal["chat.completions", "responses", "completions", "embeddings"]
"""The model APIs an OpenAI client calls (a provider's ``apis`` names some of them)."""
MIN_STATIC_KEY_CHARS = 16


class Strict(BaseModel):
    """Base for config models: unknown keys are errors; instances are immutable. A field's
    docstring is its description in the docs' configuration reference (docs/reference.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class TimeoutConfig(Strict):
    """Transport timeouts for one provider, in seconds.

    Defaults suit slow reasoning models: a first byte may take minutes.
    """

    connect_s: Annotated[float, Field(gt=0)] = 10.0
    """Longest wait for a connection (TCP and TLS) to the upstream."""
    read_s: Annotated[float, Field(gt=0)] = 600.0
    """Longest silence allowed while waiting for the next byte (headers or body)."""


DEFAULT_MAX_TOKENS = 4096
"""The ``max_tokens`` of a chat call translated to Messages when neither the client nor the
provider's settings say."""


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value


HttpUrl = Annotated[str, AfterValidator(_http_url)]


class ProviderSettings(Strict):
    """What every provider reached over HTTP takes (every ``type`` but ``echo``)."""

    base_url: HttpUrl | None = None
    """Where the provider's API is (its default when left out: a provider type's own, if it has
    one)."""
    api_key: SecretStr | None = None
    """The provider's key, sent upstream in place of the client's (use ``${ENV}``)."""
    missing_key: Literal["error", "echo"] = "error"
    """What to do when ``api_key`` is given but resolves to an empty string (an unset
    ``${ENV}``): ``error`` refuses the config; ``echo`` serves this provider's requests
    with the built-in echo provider and logs that it does."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra headers sent with every upstream request (e.g. ``api-version``)."""
    timeout: TimeoutConfig = Field(default_factory=TimeoutConfig)
    """Transport timeouts of this provider's requests."""

    @property
    def key_missing(self) -> bool:
        """True when ``api_key`` was configured but is empty."""
        return self.api_key is not None and not self.api_key.get_secret_value()


class OpenAICompatibleSettings(ProviderSettings):
    """What the providers that speak OpenAI's HTTP API (``openai``, ``azure``) take."""

    base_url: HttpUrl
    """Where the OpenAI-compatible API is, with its version segment (``https://api.openai.com/v1``);
    a query in it goes on every request."""
    apis: Annotated[list[OpenAIApi], Field(min_length=1)] | None = None
    """The APIs the provider serves, when not all of OpenAI's (many OpenAI-compatible
    servers have no Responses API). A Responses call to a provider without it is
    translated to Chat Completions; calls in other missing APIs are a 400."""


class OpenAIProviderConfig(OpenAICompatibleSettings):
    """``type: openai`` (the default): the OpenAI HTTP API at ``base_url`` (OpenAI itself,
    vLLM, Ollama, LiteLLM, ...)."""

    type: Literal["openai"] = "openai"
    """The provider's kind; ``openai`` when left out."""


class AzureProviderConfig(OpenAICompatibleSettings):
    """``type: azure``: Azure OpenAI at its resource's ``base_url``
    (``https://NAME.openai.azure.com``): the key in an ``api-key`` header, and either the
    deployments path (``/openai/deployments/{deployment}/...?api-version=...``, the
    default) or the v1 path (``azure_path: v1``: ``/openai/v1/...``, the deployment as the
    body's model)."""

    type: Literal["azure"]
    """The provider's kind."""
    api_version: str = "2024-10-21"
    """The ``api-version`` of the deployments path (the v1 path takes none)."""
    azure_path: Literal["deployments", "v1"] = "deployments"
    """Which of its two URL schemes to call."""
    deployments: dict[str, str] = Field(default_factory=dict)
    """Model name (as sent upstream) → deployment name; unmapped names are used as they
    are."""


class AnthropicProviderConfig(ProviderSettings):
    """``type: anthropic``: Anthropic's Messages API at ``base_url`` (default
    ``https://api.anthropic.com/v1``): the key in ``x-api-key``, and ``anthropic-version``
    unless the client sent one. Calls in OpenAI's APIs are translated (see
    ``hookgate.providers.translating``)."""

    type: Literal["anthropic"]
    """The provider's kind."""
    anthropic_version: str = "2023-06-01"
    """The ``anthropic-version`` sent when the client sends none."""
    max_tokens: Annotated[int, Field(gt=0)] = DEFAULT_MAX_TOKENS
    """The ``max_tokens`` of a chat call translated to Messages when the client set none
    (Anthropic requires one; OpenAI's APIs do not)."""


class GeminiProviderConfig(ProviderSettings):
    """``type: gemini``: Google's Gemini API at ``base_url`` (default
    ``https://generativelanguage.googleapis.com/v1beta``): the key in ``x-goog-api-key``;
    every call is translated."""

    type: Literal["gemini"]
    """The provider's kind."""


class EchoProviderConfig(Strict):
    """``type: echo``, built in: it answers every request locally by echoing the last user
    message, labelled as an echo; meant for trying hookgate out and for users' own
    tests. It takes no other setting."""

    type: Literal["echo"]
    """The provider's kind."""


HttpProviderConfig = (
    OpenAIProviderConfig | AzureProviderConfig | AnthropicProviderConfig | GeminiProviderConfig
)
"""A provider reached over HTTP."""


def _provider_type(value: Any) -> str | None:
    if isinstance(value, dict):
        kind = value.get("type", "openai")
        return kind if isinstance(kind, str) else None
    return getattr(value, "type", None)


ProviderConfig = Annotated[
    Annotated[OpenAIProviderConfig, Tag("openai")]
    | Annotated[AzureProviderConfig, Tag("azure")]
    | Annotated[AnthropicProviderConfig, Tag("anthropic")]
    | Annotated[GeminiProviderConfig, Tag("gemini")]
    | Annotated[EchoProviderConfig, Tag("echo")],
    Discriminator(
        _provider_type,
        custom_error_type="provider_type",
        custom_error_message="type must be one of openai, azure, anthropic, gemini, echo",
    ),
]
"""Where requests for a provider go: one model per ``type``, each with only its own
settings (a setting of another type is an unknown key)."""


PROVIDER_TYPES: dict[str, type[Strict]] = {
    "openai": OpenAIProviderConfig,
    "azure": AzureProviderConfig,
    "anthropic": AnthropicProviderConfig,
    "gemini": GeminiProviderConfig,
    "echo": EchoProviderConfig,
}
"""Each value of a provider's ``type`` (``openai`` when it is left out) and its model."""


def provider_types_with(setting: str) -> tuple[str, ...]:
    """The provider types that take ``setting`` (for an error that says where it goes)."""
    return tuple(kind for kind, model in PROVIDER_TYPES.items() if setting in model.model_fields)


class McpServerConfig(Strict):
    """An MCP server hookgate serves at ``/mcp/{name}`` over Streamable HTTP: one it
    reaches at ``url`` (Streamable HTTP), or one it starts from ``command`` (stdio, a
    process per client session; see :mod:`hookgate.server.mcp.stdio`).

    ``headers`` go with every request to a ``url`` server (its credentials: use
    ``${ENV}``), ``env`` to a ``command`` server's processes (beside ``PATH``); they never
    reach a client, and a client's own ``Authorization`` (its hookgate key) never goes to
    the server."""

    url: str | None = None
    """A Streamable HTTP server's endpoint (give this or ``command``)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """``url``: headers sent with every request to the server (its credentials)."""
    command: list[str] | None = None
    """A stdio server: the program and its arguments, started once per client session (give this or
    ``url``)."""
    env: dict[str, str] = Field(default_factory=dict)
    """``command``: environment variables of its processes (beside ``PATH``; nothing else of
    hookgate's environment)."""
    cwd: str | None = None
    """``command``: the working directory of its processes (default: hookgate's)."""
    max_sessions: Annotated[int, Field(gt=0)] = 16
    """``command``: processes (client sessions) at most; the least recently used one
    makes room."""
    idle_timeout_s: Annotated[float, Field(gt=0)] = 600.0
    """``command``: a session idle this long is closed (checked every half minute)."""
    timeout: TimeoutConfig = Field(default_factory=lambda: TimeoutConfig(read_s=300.0))
    """``read_s`` bounds one request's silence (a tool call's, say)."""

    @model_validator(mode="after")
    def _one_kind(self) -> McpServerConfig:
        if (self.url is None) == (self.command is None):
            raise ValueError("give exactly one of url (Streamable HTTP) and command (stdio)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.command is not None and not self.command:
            raise ValueError("command names the program to start, then its arguments")
        if self.url is None and self.headers:
            raise ValueError("headers go to a url server; a command server takes env")
        if self.url is not None and (self.env or self.cwd):
            raise ValueError("env and cwd are for a command server")
        return self


class TargetConfig(Strict):
    """One upstream target of a model alias."""

    provider: str
    """The provider (a name under ``providers``) that serves this target."""
    model: str | None = None
    """Upstream model name; ``None`` keeps the name the client sent."""
    priority: int | None = None
    """Targets are tried by ascending priority (default: their position in the list);
    targets of equal priority share load (see the ``fallback`` policy's ``balance``)."""
    weight: Annotated[float, Field(gt=0)] = 1.0
    """Share of load among targets of equal priority (``balance: weighted``)."""
    context_window: Annotated[int, Field(gt=0)] | None = None
    """Tokens the model accepts; a context-length error moves only to a larger window."""
    max_output_tokens: Annotated[int, Field(gt=0)] | None = None
    """The most tokens the model writes in one answer (default: the shipped table's, for
    well-known models): a call translated for it asks for no more."""
    reasoning: bool | None = None
    """Whether the model reasons (default: the shipped table's): a call translated for a
    model that does not is sent without reasoning or thinking."""
    prefill: bool | None = None
    """Whether the model continues a final assistant message rather than answering anew
    (default: the shipped table's, true for Claude): a stream that failed mid-way is then
    continued from the text delivered, else the answer is asked again and relayed from
    where the client is only if it repeats that text exactly."""


class OpsListenerConfig(Strict):
    """A second listener for ``/metrics``, ``/healthz``, ``/readyz`` and the admin UI
    (``/ui``) only."""

    host: str = "127.0.0.1"
    """The ops listener's address."""
    port: Annotated[int, Field(ge=0, le=65535)]
    """The ops listener's port (0: any free port)."""


class ServerConfig(Strict):
    """Listener and request-handling settings."""

    host: str = "127.0.0.1"
    """Listen address. Anything but a loopback address (``0.0.0.0``, ``::``, a host name)
    is a network listener: ``hookgate serve`` refuses to start one while callers can be
    anonymous (see ``keys.required``, ``keys.static`` and ``allow_anonymous``)."""
    port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_PORT
    """Listen port (0: any free port; ``hookgate serve --port`` overrides it)."""
    allow_anonymous: bool = False
    """Serve anonymous callers on a network listener anyway (behind a gateway that
    authenticates them, say). A warning at every start and on ``/readyz`` says so."""
    ops: OpsListenerConfig | None = None
    """A separate listener for ``/metrics``, ``/healthz``, ``/readyz`` and the admin UI;
    when set, the main listener no longer serves them. Read at start: changing it needs a
    restart."""
    ui: bool = True
    """The admin web UI at ``/ui`` (on the ``ops`` listener when that is set), open only
    to whoever logs in with ``keys.admin_key``. Off: ``/ui`` answers 404. Read at start."""
    max_body_bytes: Annotated[int, Field(gt=0)] = 32 * 1024 * 1024
    """Largest JSON request body accepted on the model endpoints (413 above it). The
    generic ``/v1/*`` relay streams bodies and is not bound by it."""
    body_timeout_s: Annotated[float, Field(gt=0)] = 60.0
    """Longest a client may take to send a model request's body (408 after it): a client
    that sends part of a body and stalls does not hold a connection for ever."""
    relay: bool = True
    """The generic ``/v1/*`` relay (files, batches, vector stores, ...). It runs no policy:
    no PII redaction, no budget. Off: those paths answer 404, and only the model
    endpoints and ``/v1/models`` reach a provider. Keys limited to some models never
    use it (403)."""
    responses_websocket: bool = True
    """The Responses API's WebSocket mode on ``GET /v1/responses`` (Codex CLI's first
    choice): every ``response.create`` frame is a model call through the pipeline, sent
    upstream over HTTP. Off: the upgrade is refused with 426, and Codex goes on over
    HTTP at once."""
    models_cache_s: Annotated[float, Field(gt=0)] = 60.0
    """How long ``GET /v1/models`` keeps each ``"*"`` provider's own model list before
    asking it again (a config reload asks again at once)."""
    relay_provider: str | None = None
    """Provider for the generic ``/v1/*`` relay. Default: the provider of the first
    target of ``"*"``, else the first provider listed."""
    forward_headers: list[str] = Field(default_factory=list)
    """Extra client request headers forwarded upstream, beyond the built-in allow-list
    (which has the agents' own identity headers: Codex's ``session-id``, ``x-codex-*``,
    opencode's ``x-session-id``, ...). A trailing ``*`` matches a prefix (``x-my-*``)."""
    metric_labels: list[Literal["team", "key", "user", "agent"]] = Field(default_factory=list)
    """Identity labels on the spend and token metrics (team and key also on the budget
    gauge). Off by default: a value per series multiplies them; turn on what your
    Prometheus can bear. Each is capped by ``metric_label_limit``."""
    metric_label_limit: Annotated[int, Field(gt=0)] = 100
    """Distinct values per identity label with series of their own; later ones are
    counted as ``other``. Read at start."""
    reload: bool = True
    """Watch the config file and swap in edits without a restart."""
    reload_interval_s: Annotated[float, Field(gt=0)] = 1.0
    """How often the config file is checked for edits (``reload``)."""
    shutdown_timeout_s: Annotated[float, Field(ge=0)] = 30.0
    """How long SIGTERM waits for in-flight requests before cancelling them."""
    workers: Annotated[int, Field(ge=1, le=MAX_WORKERS)] | Literal["auto"] = 1
    """Processes serving the listener(s): 1 (the default) is one process and no parent;
    N > 1 is a parent that binds the sockets and keeps N worker processes accepting on
    them (a worker that dies is replaced); ``auto`` is one per core this process may run
    on. ``hookgate serve --workers`` overrides it. Read at start. Each worker holds its own
    copy of the pipeline (with ``pii``, plan memory for N copies of its model). See
    "Workers" in the proxy docs for what is shared between workers and what is per worker."""


def _static_key(key: SecretStr) -> SecretStr:
    secret = key.get_secret_value()
    if secret and len(secret) < MIN_STATIC_KEY_CHARS:
        raise ValueError(
            f"a static key needs at least {MIN_STATIC_KEY_CHARS} characters "
            "(e.g. `openssl rand -hex 24`)"
        )
    if not secret.isascii() or not secret.isprintable():
        raise ValueError("a static key must be printable ASCII")
    return key


StaticKey = Annotated[SecretStr, AfterValidator(_static_key)]
"""A shared client key; empty (an unset ``${NAME:-}``) means none."""


JwtAlgorithm = Literal["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]


def _default_algorithms() -> list[JwtAlgorithm]:
    return ["RS256", "ES256"]


class JwtConfig(Strict):
    """Identity from signed tokens (JWT), beside virtual keys.

    A caller whose API key is a JWT (three dot-separated base64url segments) is
    authenticated by its signature, checked with the public keys of ``jwks_file`` or
    ``jwks_url``, and by its ``iss``, ``aud``, ``exp`` and ``nbf`` claims; its team and
    user come from the claims named by ``team_claim`` and ``user_claim`` (a dotted path
    reads a nested claim: ``org.team``). A token that fails any check is a 401 that says
    which.
    """

    jwks_file: str | None = None
    """A JSON Web Key Set on disk (re-read when it changes)."""
    jwks_url: str | None = None
    """A JSON Web Key Set over HTTP(S), kept for ``jwks_cache_s`` and fetched again at
    once (at most every ``jwks_min_refresh_s``) when a token names a key id it lacks."""
    jwks_cache_s: Annotated[float, Field(gt=0)] = 300.0
    """How long a key set read from ``jwks_url`` is used before it is fetched again."""
    jwks_min_refresh_s: Annotated[float, Field(ge=0)] = 10.0
    """The shortest time between two fetches of ``jwks_url`` (an unknown key id asks again no
    sooner)."""
    issuer: str
    """The required ``iss``."""
    audience: str
    """The required ``aud`` (one of the token's, when it names several)."""
    algorithms: list[JwtAlgorithm] = Field(default_factory=_default_algorithms)
    """Signature algorithms accepted (never ``none`` or a shared-secret HMAC)."""
    team_claim: str = "team"
    """The claim whose value is the caller's team (required in every token)."""
    user_claim: str = "sub"
    """The claim whose value is the caller's user (optional in a token)."""
    leeway_s: Annotated[float, Field(ge=0)] = 30.0
    """Clock skew allowed on ``exp``, ``nbf`` and ``iat``."""

    @model_validator(mode="after")
    def _one_source(self) -> JwtConfig:
        if (self.jwks_file is None) == (self.jwks_url is None):
            raise ValueError("give exactly one of jwks_file and jwks_url")
        if self.jwks_url is not None and not self.jwks_url.startswith(("http://", "https://")):
            raise ValueError("jwks_url must start with http:// or https://")
        if not self.algorithms:
            raise ValueError("algorithms must name at least one algorithm")
        return self


class KeysConfig(Strict):
    """Virtual keys (``hookgate keys create``) and the admin API."""

    required: bool = False
    """On: every request needs a valid virtual key (401 without, 403 for a model the
    key may not use). Off (a sidecar on localhost): callers are ``anonymous``."""
    static: list[StaticKey] = Field(default_factory=list)
    """Shared client keys for a simple single-tenant deployment (use
    ``${HOOKGATE_CLIENT_KEY}``). When one is set, every caller must send one of them (or,
    with ``required``, a virtual key) as its API key; callers are ``static-1``,
    ``static-2``, ... by position. Only their SHA-256 digests are kept in memory and
    compared in constant time. An entry that resolves empty (``${NAME:-}`` unset) is
    ignored; a shorter one than 16 characters is an error."""
    jwt: JwtConfig | None = None
    """Accept signed tokens (JWT) as API keys; see :class:`JwtConfig`."""
    admin_key: SecretStr | None = None
    """Bearer key of the ``/admin/`` API (use ``${HOOKGATE_ADMIN_KEY}``); unset: the
    admin API is off."""


class AuditConfig(Strict):
    """The audit log: one record per model request, in the store."""

    enabled: bool = True
    """Write an audit record per model request (and per MCP tool call)."""
    retention_days: Annotated[float, Field(ge=0)] = 90.0
    """Records older than this are deleted (hourly); 0 keeps them forever."""


class SdkConfig(Strict):
    """What only the in-process SDK reads (``hookgate.sdk.Gate.from_config``)."""

    paused_ttl_s: Annotated[float, Field(gt=0)] = 7 * 24 * 3600.0
    """How long the store keeps a reply paused for a human (``approval: pause``): a run
    resumed later finds no reply to continue. Default 7 days."""


class PriceConfig(Strict):
    """USD per 1M tokens for one model (overrides the shipped price table)."""

    input: Annotated[float, Field(ge=0)]
    """USD per 1M prompt tokens."""
    output: Annotated[float, Field(ge=0)]
    """USD per 1M output tokens."""
    cached_input: Annotated[float, Field(ge=0)] | None = None
    """Default: the ``input`` price."""
    reasoning: Annotated[float, Field(ge=0)] | None = None
    """Default: the ``output`` price."""
    cache_write: Annotated[float, Field(ge=0)] | None = None
    """Prompt-cache writes (Anthropic's ``cache_creation_input_tokens``). Default: the
    ``input`` price."""
    cache_write_1h: Annotated[float, Field(ge=0)] | None = None
    """Prompt-cache writes kept an hour (Anthropic's ``ephemeral_1h_input_tokens``).
    Default: twice the ``input`` price."""


def _one_key(entry: dict[str, Any]) -> dict[str, Any]:
    if len(entry) != 1:
        raise ValueError(
            "each policy entry is a mapping with exactly one key, the policy name "
            f"(got {sorted(entry) or 'an empty mapping'})"
        )
    return entry


def _some_targets(targets: list[TargetConfig]) -> list[TargetConfig]:
    if not targets:
        raise ValueError("a model alias needs at least one target")
    return targets


PolicyEntry = Annotated[dict[str, Any], AfterValidator(_one_key)]
"""``{name: settings}``; the settings are validated by the policy's own Config."""

PLACEMENT_KEYS = ("before", "after")
"""The keys a policy set's entry may have beside its policy's name."""


def _set_entry(entry: dict[str, Any]) -> dict[str, Any]:
    placed = [k for k in PLACEMENT_KEYS if k in entry]
    if len(placed) > 1:
        raise ValueError("an entry may say before or after, not both")
    for key in placed:
        if not isinstance(entry[key], str):
            raise ValueError(f"{key} names one policy of the set it extends")
    _one_key({k: v for k, v in entry.items() if k not in PLACEMENT_KEYS})
    return entry


SetEntry = Annotated[dict[str, Any], AfterValidator(_set_entry)]
"""``{name: settings}``, optionally with ``before: other`` or ``after: other``."""

Route = Literal[
    "chat.completions", "responses", "completions", "embeddings", "messages",
    "messages.count_tokens", "generate_content", "mcp",
]  # fmt: skip
"""The APIs a policy set may be matched on (``/v1/messages`` is ``messages``; the Gemini
API's ``generateContent`` is ``generate_content``; ``mcp`` is the MCP gateway,
``/mcp/{server}``)."""


class MatchConfig(Strict):
    """Which requests a policy set is for: every field given must match (values within a
    field are alternatives; shell-style globs, ``intern-*``). Values are the caller's key
    id (``hgk_...``), team, user, the model alias the client named, its
    ``x-hookgate-agent`` and the route's API."""

    keys: list[str] = Field(default_factory=list)
    """Key ids (``hgk_...``, ``static-1``, ``jwt:...``)."""
    teams: list[str] = Field(default_factory=list)
    """The caller's team."""
    users: list[str] = Field(default_factory=list)
    """The caller's user."""
    models: list[str] = Field(default_factory=list)
    """The model alias the client named."""
    agents: list[str] = Field(default_factory=list)
    """The ``x-hookgate-agent`` header."""
    routes: list[Route] = Field(default_factory=list)
    """The API the request came in by."""

    @model_validator(mode="after")
    def _some_field(self) -> MatchConfig:
        if not self.model_fields_set:
            raise ValueError("match needs at least one field (leave match out for a set "
                             "chosen only by assignment)")  # fmt: skip
        return self


class PolicySetConfig(Strict):
    """A named pipeline (see :mod:`hookgate.config.policy_sets`)."""

    extends: str | None = None
    """Another set (or ``default``, the top-level ``policies``) whose policies this set
    starts from: an entry naming one of them overrides its settings (merged key by key),
    any other entry is added (at the end, or ``before``/``after`` a named one), and
    ``remove`` drops some."""
    match: MatchConfig | None = None
    """The requests this set is for; without it, only keys and teams assigned to it (by
    the admin API) get it."""
    policies: list[SetEntry] = Field(default_factory=list)
    """Policies of this set: with ``extends``, each overrides an inherited one of its name or is
    added (``before``/``after`` places it); without, the whole list."""
    remove: list[str] = Field(default_factory=list)
    """Names of inherited policies this set drops (needs ``extends``)."""

    @model_validator(mode="after")
    def _remove_needs_extends(self) -> PolicySetConfig:
        if self.remove and self.extends is None:
            raise ValueError("remove drops inherited policies: it needs extends")
        return self


Targets = Annotated[list[TargetConfig], AfterValidator(_some_targets)]


class Config(Strict):
    """The whole config file."""

    server: ServerConfig = Field(default_factory=ServerConfig)
    """Listener and request-handling settings."""
    providers: dict[str, ProviderConfig]
    """Where requests go, by name: each an upstream API and its key (at least one)."""
    models: dict[str, Targets]
    """Model aliases the clients name, each with its targets in fallback order; ``"*"`` serves any
    other name (the client's model name kept when a target names none)."""
    policies: list[PolicyEntry] = Field(default_factory=list)
    """The ``default`` policy set: the pipeline of every request no other set takes."""
    policy_sets: dict[str, PolicySetConfig] = Field(default_factory=dict)
    """Named pipelines selected per request (see :mod:`hookgate.config.policy_sets`)."""
    pricing: dict[str, PriceConfig] = Field(default_factory=dict)
    """USD per 1M tokens by model name, over the shipped price table."""
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers served at ``/mcp/{name}`` with the tool policies (see
    :mod:`hookgate.server.mcp`)."""
    store: str = "sqlite:///hookgate.db"
    """Durable state: ``sqlite:///relative.db``, ``sqlite:////absolute.db`` (one host; end it
    in ``?shared=true`` where separate processes share the file, see
    :mod:`hookgate.store.sqlite_owners`), or ``redis://host:port/db`` (several hosts). Opened
    when first needed."""
    keys: KeysConfig = Field(default_factory=KeysConfig)
    """Who may call: virtual keys, shared client keys, signed tokens, the admin key."""
    audit: AuditConfig = Field(default_factory=AuditConfig)
    """The audit log."""
    sdk: SdkConfig = Field(default_factory=SdkConfig)
    """Settings only the in-process SDK reads."""

    @field_validator("store")
    @classmethod
    def _known_store(cls, value: str) -> str:
        if value.startswith(("redis://", "rediss://")):
            return value
        if not value.startswith("sqlite:///") or value == "sqlite:///":
            raise ValueError(
                "store must be sqlite:///path.db (relative), sqlite:////abs.db or redis://host:port/db"
            )
        return value

    @field_validator("policy_sets")
    @classmethod
    def _not_default(cls, value: dict[str, PolicySetConfig]) -> dict[str, PolicySetConfig]:
        if "default" in value:
            raise ValueError("'default' is the top-level policies list; name the set otherwise")
        return value

    @field_validator("providers")
    @classmethod
    def _some_provider(cls, value: dict[str, ProviderConfig]) -> dict[str, ProviderConfig]:
        if not value:
            raise ValueError("at least one provider is required")
        return value
