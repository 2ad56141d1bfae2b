"""The docs' "Writing a policy" (docs/writing-a-policy.md), run as a reader would: its policy
becomes a package of its own outside ``proxy/``, installed with pip, tested with its own
``hookgate.testing`` test, then loaded by ``hookgate serve`` under the name the page's YAML
gives it and called with the ``openai`` and ``anthropic`` clients."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.conftest import CLIENT_KEY, config_text
from tests.fakes import FakeUpstream, start_serve

PAGE = Path(__file__).parents[1] / "docs" / "writing-a-policy.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.DOTALL)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The page's policy module as package ``acme_policies``, pip-installed into a folder
    of its own (what a user's ``pip install acme-policies`` puts on the path)."""
    source = tmp_path_factory.mktemp("acme")
    (source / "acme_policies").mkdir()
    (source / "acme_policies" / "__init__.py").write_text("")
    (source / "acme_policies" / "mask.py").write_text(_blocks("python")[0])
    (source / "pyproject.toml").write_text(
        textwrap.dedent("""
            [build-system]
            requires = ["setuptools"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "acme-policies"
            version = "1.0"
            dependencies = ["hookgate"]
        """)
    )
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(site), str(source)],
        check=True,
    )  # fmt: skip
    sys.path.insert(0, str(site))
    yield site
    sys.path.remove(str(site))
    for name in [m for m in sys.modules if m.startswith("acme_policies")]:
        del sys.modules[name]


async def test_the_documented_test_passes_on_the_installed_policy(installed: Path) -> None:
    from acme_policies.mask import Mask, MaskConfig  # type: ignore[import-not-found]

    assert Path(sys.modules["acme_policies.mask"].__file__ or "").is_relative_to(installed)
    namespace: dict[str, Any] = {"Mask": Mask, "MaskConfig": MaskConfig}
    exec(_blocks("python")[1], namespace)
    await namespace["test_mask"]()


def test_serve_loads_it_by_the_documented_name(
    installed: Path, upstream: FakeUpstream, tmp_path: Path
) -> None:
    policies = _blocks("yaml")[0]
    assert "acme_policies.mask:Mask" in policies
    config = tmp_path / "hookgate.yaml"
    config.write_text(config_text(upstream.base_url, f"keys: {{static: ['{CLIENT_KEY}']}}\n"))
    config.write_text(config.read_text() + policies)
    path = [str(installed), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    checked = subprocess.run(
        [sys.executable, "-m", "hookgate", "check", str(config)],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr + checked.stdout
    process, url, _ = start_serve("--config", str(config), env=env)
    try:
        chat = openai.OpenAI(base_url=f"{url}/v1", api_key=CLIENT_KEY, max_retries=0)
        answer = chat.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Is a Sapphire harder than ruby?"}]
        )
        assert answer.choices[0].message.content
        sent = upstream.last.json()["messages"][0]["content"]
        assert sent == "Is a [masked] harder than [masked]?"
        with pytest.raises(openai.BadRequestError) as refused:
            chat.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "price of a diamond"}]
            )
        assert refused.value.code == "topic_refused"
        seen = len(upstream.requests)
        claude = anthropic.Anthropic(base_url=url, api_key=CLIENT_KEY, max_retries=0)
        claude.messages.create(
            model="m",
            max_tokens=64,
            messages=[{"role": "user", "content": [{"type": "text", "text": "ruby red"}]}],
        )
        sent = str(upstream.last.json()["messages"])  # translated to chat for this provider
        assert "[masked] red" in sent and "ruby" not in sent
        assert len(upstream.requests) == seen + 1  # the refused call never went upstream
        chat.close()
        claude.close()
    finally:
        process.terminate()
        process.wait(10)
        assert process.stderr is not None
        process.stderr.close()
