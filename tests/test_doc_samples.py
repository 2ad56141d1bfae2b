"""Every code sample of the docs runs: README.md and docs/**/*.md, as ``tests/test_references.py``
reads them.

* A ``python`` (or ``py``) block runs. A page's blocks run in order in one namespace, as a
  reader types them, and a ``test_…`` function they define is then called (awaited when it
  is a coroutine function). They run from the repository root, against a hookgate started on
  the shipped ``policies/default.yaml`` (the echo provider answers) that ``OPENAI_BASE_URL``
  and ``OPENAI_API_KEY`` point at, as the README's tour sets them.
* A ``yaml`` block is a hookgate config, loaded by :func:`hookgate.config.loader.load_text`:
  its policies are built, as ``hookgate check`` builds them. A fragment is completed with
  what it does not show: an echo provider for each provider its targets name when it has no
  ``providers``, a ``"*"`` alias when it has no ``models``, a value for each ``${NAME}`` that
  is unset. A block whose first line is indented continues the page's previous ``yaml``
  block. A policy named by import path (``acme_policies.mask:Mask``) is the class a
  ``python`` block of the docs defines, loaded as that module.
* A block that cannot run alone (a live framework, a network service) follows the line
  ``<!-- sample: no-run (why) -->``; :data:`NOT_RUN` counts those per page, so a block is
  never skipped without the test saying so.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hookgate.config.loader import load_text
from tests.fakes import start_serve

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(
    r"^(?:<!-- sample: no-run(?P<why>[^>]*)-->\n\n?)?```(?P<language>\w+)\n(?P<code>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
PYTHON = {"python", "py"}
YAML = {"yaml", "yml"}
NOT_RUN = {"docs/mcp.md": 1, "docs/sdk.md": 2}
"""Blocks marked ``no-run``, per page: each needs a live framework or network service."""
ENV_REF = re.compile(r"\$\{([A-Za-z_]\w*)\}")
CUSTOM_POLICY = re.compile(r"^\s*-\s*([\w.]+):(\w+):", re.MULTILINE)


@dataclass(frozen=True)
class Sample:
    """One fenced block of a page."""

    page: str
    line: int
    language: str
    code: str
    why_not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def samples() -> Iterator[Sample]:
    for path in PAGES:
        text = path.read_text()
        for found in BLOCK.finditer(text):
            line = text.count("\n", 0, found.start("code"))
            why = found["why"].strip(" ()") if found["why"] is not None else None
            page = str(path.relative_to(ROOT))
            yield Sample(page, line, found["language"], found["code"], why)


def runnable(languages: set[str]) -> list[Sample]:
    return [s for s in samples() if s.language in languages and s.why_not_run is None]


def test_the_samples_that_do_not_run_are_counted_and_say_why() -> None:
    marked = [s for s in samples() if s.why_not_run is not None]
    counts: dict[str, int] = {}
    for sample in marked:
        counts[sample.page] = counts.get(sample.page, 0) + 1
        assert sample.why_not_run, f"{sample.where}: say why it does not run"
    assert counts == NOT_RUN


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """hookgate on the shipped config, no provider key (the echo provider answers)."""
    store = tmp_path_factory.mktemp("store") / "hookgate.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HOOKGATE_"))}
    env["HOOKGATE_STORE"] = f"sqlite:///{store}"
    process, url, _ = start_serve("--config", str(ROOT / "policies/default.yaml"), env=env)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(10)
        assert process.stderr is not None
        process.stderr.close()


PYTHON_PAGES = sorted({s.page for s in runnable(PYTHON)})


@pytest.mark.parametrize("page", PYTHON_PAGES)
async def test_a_page_s_python_samples_run(
    page: str, served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{served}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    namespace: dict[str, Any] = {"__name__": "doc_sample"}
    for sample in runnable(PYTHON):
        if sample.page == page:
            exec(compile(sample.code, sample.where, "exec"), namespace)
    for name, value in list(namespace.items()):
        if name.startswith("test_") and inspect.isfunction(value):
            result = value()
            if inspect.isawaitable(result):
                await result


def policy_module(module: str, cls: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``module`` made of the docs' python block that defines ``cls``."""
    (source,) = [s for s in runnable(PYTHON) if re.search(rf"^class {cls}\(", s.code, re.MULTILINE)]
    built = types.ModuleType(module)
    exec(compile(source.code, source.where, "exec"), built.__dict__)
    parts = module.split(".")
    for i in range(1, len(parts)):
        monkeypatch.setitem(sys.modules, ".".join(parts[:i]), types.ModuleType(parts[0]))
    monkeypatch.setitem(sys.modules, module, built)


def configs() -> list[tuple[str, str]]:
    """Each yaml sample, with the blocks that continue it, and where it starts."""
    found: list[tuple[str, str]] = []
    page = None
    for sample in runnable(YAML):
        if sample.code[:1].isspace() and sample.page == page:
            found[-1] = (found[-1][0], found[-1][1] + sample.code)
        else:
            found.append((sample.where, sample.code))
        page = sample.page
    return found


def completed(text: str) -> str:
    """A fragment with the sections it does not show (see the module docstring)."""
    data = yaml.safe_load(text) or {}
    extra: dict[str, Any] = {}
    if "providers" not in data:
        targets = [t for ts in (data.get("models") or {}).values() for t in ts]
        named = [t["provider"] for t in targets] + [data.get("server", {}).get("relay_provider")]
        extra["providers"] = {name: {"type": "echo"} for name in named if name} or {
            "echo": {"type": "echo"}
        }
    if "models" not in data:
        providers = data.get("providers") or extra["providers"]
        extra["models"] = {"*": [{"provider": next(iter(providers))}]}
    return text + ("\n" + yaml.safe_dump(extra) if extra else "")


@pytest.mark.parametrize(("where", "text"), configs(), ids=[where for where, _ in configs()])
async def test_a_yaml_sample_is_a_valid_config(
    where: str, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ENV_REF.findall(text):
        if name not in os.environ:
            monkeypatch.setenv(name, f"doc-sample-{name.lower()}-value")
    for module, cls in CUSTOM_POLICY.findall(text):
        policy_module(module, cls, monkeypatch)
    loaded = load_text(completed(text), where)
    for policy in loaded.all_policies:
        await policy.aclose()


def test_every_config_key_is_described_in_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference ``make check`` builds (docs/hooks/config_reference.py) has every key
    of the config and of each built-in policy, each with its field's docstring."""
    spec = importlib.util.spec_from_file_location(
        "config_reference", ROOT / "docs/hooks/config_reference.py"
    )
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "config_reference", hook)  # its dataclasses look it up
    spec.loader.exec_module(hook)
    reference = hook.build()
    assert reference.undocumented == []
    rows = {
        f"{path}.{key.strip('`')}".lstrip(".")
        for section in reference.sections
        for path in section.paths
        for key, *_ in section.rows
    }
    assert {"server.host", "keys.jwt.issuer", "policies[].fallback.circuit.open_s"} <= rows
    assert "(secret)" in hook.markdown(reference) and hook.MARKER not in hook.markdown(reference)
