"""Config loading: every problem reported as file:line: path: message."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookgate.config.loader import ConfigError, format_loc, load_file, load_text

GOOD = """\
providers:
  openai: {base_url: "https://api.openai.com/v1", api_key: "${TEST_KEY}"}
  local: {base_url: "http://127.0.0.1:11434/v1"}
models:
  gpt-4o-mini:
    - {provider: openai, model: gpt-4o-mini}
    - {provider: local, model: llama3.1}
  "*": [{provider: openai}]
policies:
  - system_prompt: {prepend: "${ORG_TEXT:-Be nice.}"}
"""


def problems(text: str, source: str = "c.yaml") -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_text(text, source)
    return info.value.lines


def test_good_config_with_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_KEY", "sk-test")
    loaded = load_text(GOOD)
    assert loaded.config.providers["openai"].api_key is not None
    assert loaded.config.providers["openai"].api_key.get_secret_value() == "sk-test"
    assert [p.name for p in loaded.policies] == ["system_prompt"]
    assert loaded.policies[0].config.prepend == "Be nice."
    assert "sk-test" not in repr(loaded.config)


def test_unset_env_is_an_error_with_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_KEY", raising=False)
    assert problems(GOOD) == [
        "c.yaml:2: providers.openai.api_key: environment variable TEST_KEY is not set "
        "(use ${TEST_KEY:-} to allow that)"
    ]


def test_each_problem_has_file_line_and_path() -> None:
    text = """\
server:
  port: 99999
  colour: blue
providers:
  up: {base_url: "ftp://x"}
  ok: {base_url: "http://x"}
models:
  fast:
    - {provider: nowhere}
  empty: []
policies:
  - system_prompt: {prepend: 1, bogus: true}
  - no_such_policy: {}
  - {a: 1, b: 2}
"""
    lines = problems(text)
    assert "c.yaml:2: server.port: Input should be less than or equal to 65535" in lines
    assert "c.yaml:3: server.colour: unknown key" in lines
    assert "c.yaml:5: providers.up.base_url: must start with http:// or https://" in lines
    assert "c.yaml:10: models.empty: a model alias needs at least one target" in lines
    assert any(line.startswith("c.yaml:14: policies[2]: each policy entry") for line in lines)


def test_reference_and_policy_problems() -> None:
    text = """\
providers:
  ok: {base_url: "http://x"}
models:
  fast:
    - {provider: ok}
    - {provider: nowhere}
policies:
  - system_prompt: {prepend: 1, bogus: true}
  - no_such_policy: {}
"""
    lines = problems(text)
    assert lines[0] == "c.yaml:6: models.fast[1].provider: unknown provider 'nowhere' (known: ok)"
    assert "c.yaml:8: policies[0].system_prompt.prepend: Input should be a valid string" in lines
    assert "c.yaml:8: policies[0].system_prompt.bogus: unknown key" in lines
    assert any(
        line.startswith("c.yaml:9: policies[1].no_such_policy: unknown policy") for line in lines
    )


def test_duplicate_keys_and_yaml_syntax() -> None:
    dup = (
        'providers:\n  a: {base_url: "http://x"}\n  a: {base_url: "http://y"}\n'
        'models: {"*": [{provider: a}]}\n'
    )
    assert problems(dup) == ["c.yaml:3: providers.a: duplicate key"]
    assert problems("providers: [\n")[0].startswith("c.yaml:2: (yaml):")
    assert problems("") == ["c.yaml:1: (top level): the file is empty"]
    assert problems("- a\n") == ["c.yaml:1: (top level): the file must be a mapping of sections"]


def test_empty_key_refused_unless_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE", raising=False)
    text = (
        'providers:\n  o: {base_url: "http://x", api_key: "${NOPE:-}"}\n'
        'models: {"*": [{provider: o}]}\n'
    )
    assert problems(text)[0].startswith("c.yaml:2: providers.o.api_key: api_key is empty")
    echo = text.replace('"${NOPE:-}"', '"${NOPE:-}", missing_key: echo')
    assert load_text(echo).config.providers["o"].key_missing


def test_shipped_configs_are_valid() -> None:
    for path in sorted(Path("policies").glob("*.yaml")):
        load_file(path)


def test_format_loc() -> None:
    assert format_loc(("models", "gpt-4o", 0, "provider")) == "models.gpt-4o[0].provider"
    assert format_loc(("models", "*")) == 'models."*"'
    assert format_loc(()) == "(top level)"


def test_a_provider_takes_only_the_settings_of_its_type() -> None:
    """Providers are a union on ``type``: the same YAML loads, and a setting of another
    type, a missing one or an unknown type is an error at its own path."""

    def provider(settings: str) -> str:
        return f'providers:\n  p: {settings}\nmodels: {{"*": [{{provider: p}}]}}\n'

    loaded = load_text(provider("{base_url: 'http://x', apis: [chat.completions]}"))
    assert type(loaded.config.providers["p"]).__name__ == "OpenAIProviderConfig"
    assert load_text(provider("{type: anthropic, max_tokens: 8}")).config.providers["p"].type == (
        "anthropic"
    )
    assert problems(provider("{type: gemini, apis: [responses]}")) == [
        "c.yaml:2: providers.p.apis: a setting of type openai and azure, not gemini"
    ]
    assert problems(provider("{base_url: 'http://x', max_tokens: 8}")) == [
        "c.yaml:2: providers.p.max_tokens: a setting of type anthropic, not openai"
    ]
    assert problems(provider("{type: echo, colour: blue}")) == [
        "c.yaml:2: providers.p.colour: unknown key"
    ]
    assert problems(provider("{type: openai}")) == [
        "c.yaml:2: providers.p.base_url: Field required"
    ]
    assert problems(provider("{type: bedrock}")) == [
        "c.yaml:2: providers.p: type must be one of openai, azure, anthropic, gemini, echo"
    ]
    assert problems(provider("{base_url: 'http://x', apis: []}"))[0].startswith(
        "c.yaml:2: providers.p.apis: List should have at least 1 item"
    )
